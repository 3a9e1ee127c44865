#include <stdio.h>
#include "cmds.h"
int cmd_demo(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "vmscope demo: not built yet\n");
	return VMS_EXIT_FAIL;
}
