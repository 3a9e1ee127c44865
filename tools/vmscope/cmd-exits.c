#include <stdio.h>
#include "cmds.h"
int cmd_exits(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "vmscope exits: not built yet\n");
	return VMS_EXIT_FAIL;
}
