/* The CTF 1.8 metadata (TSDL) of a vmstrace trace, generated from the event table.
 *
 * Layout (all fields byte-aligned, native byte order):
 *   packet header:  u32 magic 0xC1FC1FC1, u8 uuid[16], u32 stream_id
 *   packet context: timestamp_begin, timestamp_end (clock), content_size, packet_size (bits),
 *                   packet_seq_num, events_discarded (running total per stream), u32 cpu_id
 *                   (CPU when the packet's sub-buffer was opened), s32 vtid (the thread)
 *   event header:   u16 id, u64 timestamp (clock)
 *   event context:  u16 cpu_id (the CPU this record was written on)
 *   event fields:   the trace-events arguments in order; field names get a leading '_'
 *                   (CTF strips one, and it keeps names off TSDL keywords).
 * vmscope's CTF reader (lib/input/ctf) parses exactly this shape. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static void put_escaped(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c > 0x7e)
			fputc('?', f);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void put_uuid(FILE *f, const uint8_t u[16])
{
	fprintf(f, "\"");
	for (int i = 0; i < 16; i++) {
		fprintf(f, "%02x", u[i]);
		if (i == 3 || i == 5 || i == 7 || i == 9)
			fputc('-', f);
	}
	fprintf(f, "\"");
}

static void put_event(void *arg, uint32_t id, const struct vmst_event_desc *ev)
{
	FILE *f = arg;
	fprintf(f, "event {\n\tname = ");
	put_escaped(f, ev->name);
	fprintf(f, ";\n\tid = %u;\n\tstream_id = 0;\n", id);
	if (ev->nargs == 0) {
		/* an empty struct is valid TSDL but some readers choke on it */
		fprintf(f, "};\n\n");
		return;
	}
	fprintf(f, "\tfields := struct {\n");
	for (uint32_t a = 0; a < ev->nargs; a++) {
		const struct vmst_arg_desc *d = &ev->args[a];
		if (d->kind == VMST_ARG_STR)
			fprintf(f, "\t\tstring { encoding = UTF8; } _%s;\n", d->name);
		else
			fprintf(f,
				"\t\tinteger { size = %u; align = 8; signed = %s; base = %u; } _%s;\n",
				d->size * 8u, d->is_signed ? "true" : "false",
				d->kind == VMST_ARG_PTR ? 16u : 10u, d->name);
	}
	fprintf(f, "\t};\n};\n\n");
}

int vmst_metadata_write(FILE *f, const uint8_t uuid[16], const struct vmst_clockinfo *ci)
{
	union {
		uint16_t u;
		uint8_t b[2];
	} bo = {.u = 1};
	const char *order = bo.b[0] ? "le" : "be";
	char host[256] = "";
	gethostname(host, sizeof host - 1);
	char comm[64] = "";
	FILE *c = fopen("/proc/self/comm", "r");
	if (c) {
		if (fgets(comm, sizeof comm, c))
			comm[strcspn(comm, "\n")] = 0;
		fclose(c);
	}

	fprintf(f, "/* CTF 1.8 */\n\n");
	fprintf(f, "/* vmstrace: written by the vmscope tracer library */\n\n");
	fprintf(f, "typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n");
	fprintf(f, "typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n");
	fprintf(f, "typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n");
	fprintf(f, "typealias integer { size = 32; align = 8; signed = true; } := int32_t;\n");
	fprintf(f, "typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n");
	fprintf(f, "typealias integer { size = 64; align = 8; signed = false; "
		   "map = clock.vmst_clock.value; } := vmst_clock_t;\n\n");
	fprintf(f, "trace {\n\tmajor = 1;\n\tminor = 8;\n\tuuid = ");
	put_uuid(f, uuid);
	fprintf(f, ";\n\tbyte_order = %s;\n", order);
	fprintf(f, "\tpacket.header := struct {\n\t\tuint32_t magic;\n\t\tuint8_t uuid[16];\n"
		   "\t\tuint32_t stream_id;\n\t} align(8);\n};\n\n");
	fprintf(f, "env {\n\ttracer_name = \"vmstrace\";\n\ttracer_major = 0;\n"
		   "\ttracer_minor = 1;\n\thostname = ");
	put_escaped(f, host);
	fprintf(f, ";\n\tprocname = ");
	put_escaped(f, comm);
	fprintf(f, ";\n\tvpid = %d;\n\tclock_source = \"%s\";\n};\n\n", (int)getpid(),
		ci->tsc ? "tsc" : "monotonic");
	fprintf(f, "clock {\n\tname = vmst_clock;\n\tuuid = ");
	put_uuid(f, uuid);
	fprintf(f, ";\n\tdescription = ");
	put_escaped(f, ci->description);
	fprintf(f, ";\n\tfreq = %llu;\n\tprecision = %u;\n\toffset_s = %lld;\n\toffset = %llu;\n"
		   "\tabsolute = FALSE;\n};\n\n",
		(unsigned long long)ci->freq, ci->tsc ? 100u : 1u, (long long)ci->offset_s,
		(unsigned long long)ci->offset);
	fprintf(f, "stream {\n\tid = 0;\n\tpacket.context := struct {\n"
		   "\t\tvmst_clock_t timestamp_begin;\n\t\tvmst_clock_t timestamp_end;\n"
		   "\t\tuint64_t content_size;\n\t\tuint64_t packet_size;\n"
		   "\t\tuint64_t packet_seq_num;\n\t\tuint64_t events_discarded;\n"
		   "\t\tuint32_t cpu_id;\n\t\tint32_t vtid;\n\t} align(8);\n"
		   "\tevent.header := struct {\n\t\tuint16_t id;\n\t\tvmst_clock_t timestamp;\n"
		   "\t} align(8);\n"
		   "\tevent.context := struct {\n\t\tuint16_t cpu_id;\n"
		   "\t} align(8);\n};\n\n");
	vmst_events_foreach(put_event, f);
	return ferror(f) ? -5 : 0;
}
