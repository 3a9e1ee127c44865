/* placeholder until the dump command lands */
#include <stdio.h>
#include "cmds.h"
int cmd_dump(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "vmscope dump: not built yet\n");
	return VMS_EXIT_FAIL;
}
