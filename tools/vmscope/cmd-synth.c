/* placeholder until the synth command lands */
#include <stdio.h>
#include "cmds.h"
int cmd_synth(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "vmscope synth: not built yet\n");
	return VMS_EXIT_FAIL;
}
