#include <stdio.h>
#include "cmds.h"
int cmd_info(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "vmscope info: not built yet\n");
	return VMS_EXIT_FAIL;
}
