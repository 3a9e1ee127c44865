#include <stdio.h>
#include "cmds.h"
int cmd_report(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "vmscope report: not built yet\n");
	return VMS_EXIT_FAIL;
}
