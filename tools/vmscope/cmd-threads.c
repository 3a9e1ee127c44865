#include <stdio.h>
#include "cmds.h"
int cmd_threads(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "vmscope threads: not built yet\n");
	return VMS_EXIT_FAIL;
}
