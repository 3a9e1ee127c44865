/* LTTng-UST provider of bench_tracer: the same trace point (two 64-bit integers). */
#undef TRACEPOINT_PROVIDER
#define TRACEPOINT_PROVIDER bench_lttng

#undef TRACEPOINT_INCLUDE
#define TRACEPOINT_INCLUDE "bench_tracer_lttng.h"

#if !defined(BENCH_TRACER_LTTNG_H) || defined(TRACEPOINT_HEADER_MULTI_READ)
#define BENCH_TRACER_LTTNG_H

#include <lttng/tracepoint.h>

TRACEPOINT_EVENT(bench_lttng, ev,
	TP_ARGS(uint64_t, a, uint64_t, b),
	TP_FIELDS(ctf_integer(uint64_t, a, a) ctf_integer(uint64_t, b, b)))

TRACEPOINT_EVENT(bench_lttng, off,
	TP_ARGS(uint64_t, a, uint64_t, b),
	TP_FIELDS(ctf_integer(uint64_t, a, a) ctf_integer(uint64_t, b, b)))

#endif

#include <lttng/tracepoint-event.h>
