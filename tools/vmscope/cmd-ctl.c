/* placeholder until the ctl command lands */
#include <stdio.h>
#include "cmds.h"
int cmd_ctl(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "vmscope ctl: not built yet\n");
	return VMS_EXIT_FAIL;
}
