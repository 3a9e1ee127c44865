/* The commands, in the order `vmscope help` lists them: name and one-line summary. The one
 * table behind the dispatcher and `vmscope help` (main.c) and the COMMANDS section of
 * vmscope(1), which man/commands.py writes from this file at build time (tests/cli checks
 * that the page in the tree, `vmscope help` and this table agree). One entry a line,
 * VMS_COMMAND(name, "summary"), so that the script can read it. */
VMS_COMMAND(demo, "synthesize a host + guest pair and report on it, with no file needed")
VMS_COMMAND(info, "what a trace is: format, role, clock, CPUs, events, options")
VMS_COMMAND(report, "the truth per guest and vCPU: run, VMM, preempted, exits, steal")
VMS_COMMAND(html, "the report as one self-contained HTML page with a timeline")
VMS_COMMAND(serve, "the timeline in the browser from a local server, down to single events")
VMS_COMMAND(index, "keep what serve shows at its start, so the same traces start at once")
VMS_COMMAND(vcpus, "vCPU state intervals (text, CSV or JSON Lines)")
VMS_COMMAND(pcpus, "what really ran on each physical CPU: host thread or guest thread")
VMS_COMMAND(threads, "when a guest thread its guest thought running was stopped")
VMS_COMMAND(export, "the timeline for Perfetto UI (.pftrace) or as Chrome JSON")
VMS_COMMAND(latency, "why guest threads were late: each wake-up split into causes")
VMS_COMMAND(containers, "threads by container: running, run queue, VMM, preempted")
VMS_COMMAND(exits, "VM exits per guest, vCPU and reason with cost percentiles")
VMS_COMMAND(db, "the results as SQL tables in SQLite or ClickHouse; fleet queries")
VMS_COMMAND(sync, "how each machine's clock was brought to the reference")
VMS_COMMAND(synth, "write a realistic simulated host + guest trace.dat pair")
VMS_COMMAND(dump, "print the events of a trace as text")
VMS_COMMAND(ctl, "talk to a traced program's control socket")
