#include <stdio.h>
#include "cmds.h"
int cmd_vcpus(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "vmscope vcpus: not built yet\n");
	return VMS_EXIT_FAIL;
}
