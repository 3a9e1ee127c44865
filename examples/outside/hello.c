/* A program traced with libvmstrace and built outside vmscope's tree, with pkg-config (see
 * examples/README.md, "Building outside the project"). It records 1000 events, says so, and
 * waits for a line on its standard input before it exits (meanwhile `vmscope ctl` can talk to
 * it). VMSCOPE_TRACE in the environment starts the tracer; without it nothing is recorded. */
#include <stdio.h>

#include "trace-hello.h"

int main(void)
{
	for (int i = 0; i < 1000; i++)
		trace_hello_tick(i, "hello");
	puts("1000 ticks traced; press Enter to exit");
	fflush(stdout);
	(void)getchar();
	return 0;
}
