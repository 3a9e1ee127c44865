#include <stdio.h>
#include "cmds.h"
int cmd_sync(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "vmscope sync: not built yet\n");
	return VMS_EXIT_FAIL;
}
