/* Hostile trace.dat shapes: see hostile_shapes.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "hostile_shapes.h"
#include "output/tracedat_writer.h"
#include "synth/kernel_formats.h"

enum { ID_SWITCH = 1, ID_WAKEUP = 2, ID_ENTRY = 3, ID_EXIT = 4 };

static const char common_fields[] =
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n";

/* A growing text. */
struct text {
	char *p;
	size_t n, cap;
};

static void put(struct text *t, const char *s, size_t n)
{
	if (t->n + n + 1 > t->cap) {
		t->cap = (t->n + n + 1) * 2;
		t->p = realloc(t->p, t->cap);
		if (!t->p)
			abort();
	}
	memcpy(t->p + t->n, s, n);
	t->n += n;
	t->p[t->n] = '\0';
}

static void puts_(struct text *t, const char *s)
{
	put(t, s, strlen(s));
}

static struct vms_tdw *open_trace(const char *path, uint32_t cpus, uint64_t trace_id,
				   struct vms_error *err)
{
	struct vms_tdw_config c = {
		.path = path, .compression = VMS_TDW_ZSTD, .nr_cpus = cpus,
		.header_page = vms_synth_header_page, .header_event = vms_synth_header_event,
		.buffer_clock = "local", .trace_clock = "[local] global",
		.version = "hostile shape", .trace_id = trace_id,
	};
	struct vms_tdw *w = NULL;
	return vms_tdw_open(&w, &c, err) == 0 ? w : NULL;
}

static struct vms_tdw *open_host(const char *path, uint32_t cpus, struct vms_error *err)
{
	return open_trace(path, cpus, 0x1234, err);
}

static int add_format(struct vms_tdw *w, const char *sys, const char *name, int id,
		      const char *after_format, struct vms_error *err)
{
	struct text t = {0};
	char head[256];
	snprintf(head, sizeof head, "name: %s\nID: %d\nformat:\n", name, id);
	puts_(&t, head);
	puts_(&t, after_format);
	int r = vms_tdw_add_event_format(w, sys, t.p, err);
	free(t.p);
	return r;
}

/* The four standard formats, `switch_body` replacing sched_switch's when not NULL. */
static int add_formats(struct vms_tdw *w, const char *switch_body, struct vms_error *err)
{
	if (add_format(w, "sched", "sched_switch", ID_SWITCH,
		       switch_body ? switch_body : vms_synth_fmt_sched_switch, err) ||
	    add_format(w, "sched", "sched_wakeup", ID_WAKEUP, vms_synth_fmt_sched_wakeup, err) ||
	    add_format(w, "kvm", "kvm_entry", ID_ENTRY, vms_synth_fmt_kvm_entry, err) ||
	    add_format(w, "kvm", "kvm_exit", ID_EXIT, vms_synth_fmt_kvm_exit, err))
		return -1;
	return 0;
}

static int switch_event(struct vms_tdw *w, uint32_t cpu, uint64_t ts, int32_t prev,
			const char *prev_comm, int32_t next, const char *next_comm,
			struct vms_error *err)
{
	struct vms_ev_sched_switch e;
	memset(&e, 0, sizeof e);
	e.c.type = ID_SWITCH;
	e.c.pid = prev;
	e.prev_pid = prev;
	e.next_pid = next;
	e.prev_prio = e.next_prio = 120;
	/* a kernel comm field: 16 bytes, NUL-padded, not always NUL-terminated */
	memcpy(e.prev_comm, prev_comm, strnlen(prev_comm, sizeof e.prev_comm));
	memcpy(e.next_comm, next_comm, strnlen(next_comm, sizeof e.next_comm));
	return vms_tdw_event(w, cpu, ts, &e, sizeof e, err);
}

static int finish(struct vms_tdw *w, struct vms_error *err, int r)
{
	if (r) {
		vms_tdw_discard(w);
		return -1;
	}
	return vms_tdw_close(w, err) ? -1 : 0;
}

/* A host file whose sched_switch format is `body` (after "format:"), one event. */
static int with_switch_format(const char *path, const char *body)
{
	struct vms_error err = {0};
	struct vms_tdw *w = open_host(path, 1, &err);
	if (!w)
		return -1;
	int r = add_formats(w, body, &err) ||
		switch_event(w, 0, 1000, 10, "a", 11, "b", &err);
	return finish(w, &err, r);
}

/* The fields of sched_switch with `decl` instead of the prev_state field, and print fmt. */
static int switch_fields_then(const char *path, const char *decl, const char *print)
{
	struct text t = {0};
	puts_(&t, common_fields);
	puts_(&t, "\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
		  "\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
		  "\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n");
	puts_(&t, decl);
	puts_(&t, "\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n"
		  "\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n"
		  "\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n\nprint fmt: ");
	puts_(&t, print);
	puts_(&t, "\n");
	int r = with_switch_format(path, t.p);
	free(t.p);
	return r;
}

/* sched_switch's own fields and the print format `print` */
static int switch_print(const char *path, const char *print)
{
	return switch_fields_then(path, "\tfield:long prev_state;\toffset:32;\tsize:8;"
				  "\tsigned:1;\n", print);
}

/* issue 7.1: the undeclared prev_state appears as text ("prev_state;") inside a declaration */
static int fmt_decl_in_brackets(const char *path, uint64_t n)
{
	(void)n;
	return switch_fields_then(path, "\tfield:char comm[prev_state;];\toffset:32;\tsize:8;"
				  "\tsigned:1;\n", "\"%lx %s\", REC->prev_state, "
				  "__print_flags(REC->prev_state, \"|\", { 1, \"S\" })");
}

/* issue 7.1: __print_symbolic on an undeclared field, "REC" and "->" apart */
static int fmt_symbolic_undeclared(const char *path, uint64_t n)
{
	(void)n;
	return switch_print(path, "\"%s\", __print_symbolic(REC -> nope, "
			    "{ 0, \"R\" }, { 1, \"S\" })");
}

/* a field named without REC-> (__get_str) that is not declared */
static int fmt_get_str_undeclared(const char *path, uint64_t n)
{
	(void)n;
	return switch_print(path, "\"%s\", __get_str(nope)");
}

/* a quote escaped as libtraceevent ends literals ("\\" does not close): REC->nope inside what
 * a C-style scanner would take for a string */
static int fmt_quote_desync(const char *path, uint64_t n)
{
	(void)n;
	return switch_print(path, "\"a\\\\\", REC->prev_pid, \" \", REC->nope");
}

/* a constant divided by a field ("0/REC->prev_pid"): libtraceevent parses it; printing it is
 * left to vmscope (print_arg_safe refuses a divisor that is not a non-zero constant) */
static int fmt_zero_over_field(const char *path, uint64_t n)
{
	(void)n;
	return switch_print(path, "\"%d\", 0/REC->prev_pid");
}

/* '.' after the else branch of a ?: ("\"\". REC->next_comm"): libtraceevent 1.7 segfaults in
 * tep_parse_event (its operator parser goes on with a NULL argument) */
static int fmt_dot_on_literal(const char *path, uint64_t n)
{
	(void)n;
	return switch_print(path, "\"%s %d\", REC->prev_pid ? \"+\" : \"\". "
			    "REC->next_comm, 0/REC->prev_pid");
}

/* the same after a subscript: "REC->prev_pid[1][2]" */
static int fmt_after_subscript(const char *path, uint64_t n)
{
	(void)n;
	return switch_print(path, "\"%d\", REC->prev_pid[1][2]");
}

/* an operator token without a priority, cut as libtraceevent cuts it ("<<==" is one token),
 * after a subscript (found by a differential fuzz of the guard against libtraceevent) */
static int fmt_op_token_after_subscript(const char *path, uint64_t n)
{
	(void)n;
	return switch_print(path, "\"%d\", REC->prev_pid[1]<<==(int)");
}

/* issue 7.2: n nested parentheses */
static int fmt_nested(const char *path, uint64_t n)
{
	struct text t = {0};
	puts_(&t, "\"%d\", ");
	for (uint64_t i = 0; i < n; i++)
		put(&t, "(", 1);
	puts_(&t, "REC->prev_pid");
	for (uint64_t i = 0; i < n; i++)
		put(&t, ")", 1);
	int r = switch_print(path, t.p);
	free(t.p);
	return r;
}

/* libtraceevent recurses per operator too: REC->prev_pid + 1 + 1 ... (n operators) */
static int fmt_op_chain(const char *path, uint64_t n)
{
	struct text t = {0};
	puts_(&t, "\"%d\", REC->prev_pid");
	for (uint64_t i = 0; i < n; i++)
		put(&t, "+1", 2);
	int r = switch_print(path, t.p);
	free(t.p);
	return r;
}

/* issue 7.5: many fields and n references to the last one (the old guard rescanned the field
 * text per reference) */
static int fmt_many_refs(const char *path, uint64_t n)
{
	struct text t = {0};
	char line[128];
	puts_(&t, common_fields);
	uint64_t fields = n / 4 + 1;
	for (uint64_t i = 0; i < fields; i++) {
		snprintf(line, sizeof line, "\tfield:int f%llu;\toffset:%llu;\tsize:4;\tsigned:1;\n",
			 (unsigned long long)i, (unsigned long long)(8 + 4 * (i % 8)));
		puts_(&t, line);
	}
	snprintf(line, sizeof line, "f%llu", (unsigned long long)(fields - 1));
	puts_(&t, "\nprint fmt: \"%d\"");
	for (uint64_t i = 0; i < n; i++) {
		puts_(&t, ", REC->");
		puts_(&t, line);
	}
	puts_(&t, "\n");
	int r = with_switch_format(path, t.p);
	free(t.p);
	return r;
}

/* ---- the BUFFER option rewritten: CPU entries the writer would never make ---- */

struct entry {
	uint32_t cpu;
	uint64_t off, size;
};

static void le32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void le64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* Writes the file at `path` again with `extra` appended, then a new second options section
 * (BUFFER with `entries`, whose offsets < 2^63 are relative to the start of `extra` when
 * `rel`), and the first options section chained to it. */
static int rewrite_buffer(const char *path, const struct entry *entries, uint32_t n,
			  const uint8_t *extra, size_t extra_len, int rel)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc((size_t)size);
	if (!b || fread(b, 1, (size_t)size, f) != (size_t)size) {
		fclose(f);
		free(b);
		return -1;
	}
	fclose(f);
	/* the writer's BUFFER option: u16 3, u32 size, u64 flyrecord, "", "local", page size */
	static const char clk[] = "\0local\0";
	uint8_t *p = NULL;
	for (long i = 16; i + 8 < size && !p; i++)
		if (memcmp(b + i, clk, sizeof clk - 1) == 0 && b[i - 14] == 3 && b[i - 13] == 0)
			p = b + i - 14;
	if (!p) {
		free(b);
		return -1;
	}
	uint64_t fly, old_sec = (uint64_t)(p - b) - 16;
	memcpy(&fly, p + 6, 8);
	uint64_t extra_at = (uint64_t)size;
	uint64_t sec_at = extra_at + extra_len;
	/* the first options section's DONE points at the old second one */
	int patched = 0;
	for (long i = 0; i + 8 <= (long)old_sec; i++) {
		uint64_t v;
		memcpy(&v, b + i, 8);
		if (v == old_sec && i >= 6 && b[i - 6] == 0 && b[i - 5] == 0 && b[i - 4] == 8) {
			le64(b + i, sec_at);
			patched++;
		}
	}
	size_t opt = 8 + 1 + 6 + 4 + 4 + (size_t)n * 20;
	size_t body = 6 + opt + 6 + 8;
	uint8_t *s = calloc(1, 16 + body);
	if (patched != 1 || !s) {
		free(b);
		free(s);
		return -1;
	}
	uint8_t *q = s;
	q[0] = 0, q[1] = 0;                       /* id: options */
	le64(q + 8, body);
	q += 16;
	q[0] = 3, q[1] = 0;
	le32(q + 2, (uint32_t)opt);
	q += 6;
	le64(q, fly);
	q += 8;
	*q++ = 0;
	memcpy(q, "local", 6);
	q += 6;
	le32(q, 4096);
	le32(q + 4, n);
	q += 8;
	for (uint32_t i = 0; i < n; i++, q += 20) {
		le32(q, entries[i].cpu);
		le64(q + 4, rel ? extra_at + entries[i].off : entries[i].off);
		le64(q + 12, entries[i].size);
	}
	q[0] = 0, q[1] = 0;                       /* DONE, next 0 */
	le32(q + 2, 8);
	f = fopen(path, "wb");
	int r = f && fwrite(b, 1, (size_t)size, f) == (size_t)size &&
		(!extra_len || fwrite(extra, 1, extra_len, f) == extra_len) &&
		fwrite(s, 1, 16 + body, f) == 16 + body ? 0 : -1;
	if (f && fclose(f) != 0)
		r = -1;
	free(b);
	free(s);
	return r;
}

/* One compressed chunk of `usize` zero bytes (empty ring-buffer pages) as a CPU's data:
 * u32 chunk count 1, u32 csize, u32 usize, the zstd frame, and a skippable zstd frame of 4 KiB
 * so that the chunk is not implausibly small for what it claims (the reader's per-chunk
 * ratio bound, 4096:1 + 1 MiB). */
#define SKIP_PAD 4096u
static uint8_t *zero_chunk(uint32_t usize, size_t *len)
{
	uint8_t *zeros = calloc(1, usize);
	size_t cap = ZSTD_compressBound(usize);
	uint8_t *out = calloc(1, 12 + cap + 8 + SKIP_PAD);
	if (!zeros || !out) {
		free(zeros);
		free(out);
		return NULL;
	}
	size_t c = ZSTD_compress(out + 12, cap, zeros, usize, 19);
	free(zeros);
	if (ZSTD_isError(c)) {
		free(out);
		return NULL;
	}
	le32(out + 12 + c, 0x184D2A50);   /* skippable frame magic */
	le32(out + 12 + c + 4, SKIP_PAD);
	c += 8 + SKIP_PAD;
	le32(out, 1);
	le32(out + 4, (uint32_t)c);
	le32(out + 8, usize);
	*len = 12 + c;
	return out;
}

static int write_empty_host(const char *path)
{
	struct vms_error err = {0};
	struct vms_tdw *w = open_host(path, 1, &err);
	if (!w)
		return -1;
	int r = add_formats(w, NULL, &err) || switch_event(w, 0, 1000, 10, "a", 11, "b", &err);
	return finish(w, &err, r);
}

/* issue 7.3: n CPUs whose data is one and the same chunk of 16 MiB of zeros */
static int cpu_overlap(const char *path, uint64_t n)
{
	size_t len;
	uint8_t *chunk = zero_chunk(16u << 20, &len);
	if (!chunk || write_empty_host(path)) {
		free(chunk);
		return -1;
	}
	struct entry *e = calloc(n, sizeof *e);
	for (uint64_t i = 0; e && i < n; i++)
		e[i] = (struct entry){(uint32_t)i, 0, len - 4};
	int r = e ? rewrite_buffer(path, e, (uint32_t)n, chunk, len, 1) : -1;
	free(e);
	free(chunk);
	return r;
}

/* issue 7.3: n CPUs, each its own chunk claiming 16 MiB of zeros (~600 bytes each) */
static int chunk_bomb(const char *path, uint64_t n)
{
	size_t len;
	uint8_t *chunk = zero_chunk(16u << 20, &len);
	uint8_t *all = chunk ? malloc(len * n) : NULL;
	struct entry *e = calloc(n, sizeof *e);
	if (!all || !e || write_empty_host(path)) {
		free(chunk), free(all), free(e);
		return -1;
	}
	for (uint64_t i = 0; i < n; i++) {
		memcpy(all + i * len, chunk, len);
		e[i] = (struct entry){(uint32_t)i, i * len, len - 4};
	}
	int r = rewrite_buffer(path, e, (uint32_t)n, all, len * n, 1);
	free(chunk), free(all), free(e);
	return r;
}

/* issue 7.4: an event formats section that decompresses to n MiB (one format padded with
 * blank lines) */
static int section_bomb(const char *path, uint64_t n)
{
	struct vms_error err = {0};
	struct vms_tdw *w = open_host(path, 1, &err);
	if (!w)
		return -1;
	size_t pad = (size_t)n << 20;
	char *body = malloc(pad + 1);
	if (!body) {
		vms_tdw_discard(w);
		return -1;
	}
	memset(body, '\n', pad);
	body[pad] = '\0';
	/* and 64 KiB that do not compress much, so that the section is not implausibly small for
	 * what it claims (the reader's ratio bound, 4096:1 + 1 MiB) */
	char noise[65537];
	uint32_t x = 12345;
	for (size_t i = 0; i < sizeof noise - 1; i++) {
		x = x * 1103515245u + 12345u;
		noise[i] = (char)('!' + (x >> 16) % 90);
	}
	noise[sizeof noise - 1] = '\0';
	int r = add_formats(w, NULL, &err) ||
		add_format(w, "pad", "pad", 9, body, &err) ||
		add_format(w, "pad", "noise", 10, noise, &err) ||
		switch_event(w, 0, 1000, 10, "a", 11, "b", &err);
	free(body);
	return finish(w, &err, r);
}

/* issue 7.5: a GUEST option with n vCPUs (host threads 100000 + i) and as many kvm_entry
 * events, one per vCPU thread */
static int guest_vcpus(const char *path, uint64_t n)
{
	struct vms_error err = {0};
	struct vms_tdw *w = open_host(path, 1, &err);
	int32_t *tids = malloc(n * sizeof *tids);
	if (!w || !tids) {
		if (w)
			vms_tdw_discard(w);
		free(tids);
		return -1;
	}
	for (uint64_t i = 0; i < n; i++)
		tids[i] = (int32_t)(100000 + i);
	int r = add_formats(w, NULL, &err) ||
		vms_tdw_add_guest(w, "big", 0x5678, (uint32_t)n, tids, &err);
	free(tids);
	for (uint64_t i = 0; !r && i < n; i++) {
		struct vms_ev_kvm_entry e = {.c = {.type = ID_ENTRY, .pid = (int32_t)(100000 + i)},
					     .vcpu_id = (uint32_t)i};
		r = vms_tdw_event(w, 0, 1000 + i, &e, sizeof e, &err);
	}
	return finish(w, &err, r);
}

/* issue 7.5: n kvm_entry events of n distinct threads (no GUEST option: one unnamed guest
 * per thread) */
static int entry_tids(const char *path, uint64_t n)
{
	struct vms_error err = {0};
	struct vms_tdw *w = open_host(path, 1, &err);
	if (!w)
		return -1;
	int r = add_formats(w, NULL, &err);
	for (uint64_t i = 0; !r && i < n; i++) {
		struct vms_ev_kvm_entry e = {.c = {.type = ID_ENTRY, .pid = (int32_t)(1000 + i)},
					     .vcpu_id = 0};
		r = vms_tdw_event(w, 0, 1000 + i, &e, sizeof e, &err);
	}
	return finish(w, &err, r);
}

/* issue 7.5: n CPUs (at most 4096 in one buffer) with one event each, then 100 more on CPU 0
 * (dump scanned every stream per event) */
static int many_streams(const char *path, uint64_t n)
{
	struct vms_error err = {0};
	struct vms_tdw *w = open_host(path, (uint32_t)n, &err);
	if (!w)
		return -1;
	int r = add_formats(w, NULL, &err);
	for (uint64_t c = 0; !r && c < n; c++)
		r = switch_event(w, (uint32_t)c, 1000 + c, 10, "a", 11, "b", &err);
	for (uint64_t i = 0; !r && i < 100 * n; i++)
		r = switch_event(w, 0, 1000 + n + i, 10, "a", 11, "b", &err);
	return finish(w, &err, r);
}

/* issue 7.8: OFFSET options whose sum overflows 64 bits */
static int offset_overflow(const char *path, uint64_t n)
{
	(void)n;
	struct vms_error err = {0};
	struct vms_tdw *w = open_host(path, 1, &err);
	if (!w)
		return -1;
	static const char big[] = "9223372036854775807";
	int r = add_formats(w, NULL, &err) ||
		vms_tdw_add_option(w, VMS_TDW_OPT_OFFSET, big, sizeof big, &err) ||
		vms_tdw_add_option(w, VMS_TDW_OPT_OFFSET, big, sizeof big, &err) ||
		switch_event(w, 0, 1000, 10, "a", 11, "b", &err);
	return finish(w, &err, r);
}

/* issue 7.8: a DATE option whose value in ns overflows */
static int date_overflow(const char *path, uint64_t n)
{
	(void)n;
	struct vms_error err = {0};
	struct vms_tdw *w = open_host(path, 1, &err);
	if (!w)
		return -1;
	static const char big[] = "0x7fffffffffffffff";
	int r = add_formats(w, NULL, &err) ||
		vms_tdw_add_option(w, VMS_TDW_OPT_DATE, big, sizeof big, &err) ||
		switch_event(w, 0, 1000, 10, "a", 11, "b", &err);
	return finish(w, &err, r);
}

/* issue 7.8: OFFSET and DATE each in range, their sum (added to every time stamp) not:
 * INT64_MAX ns and 2^39 us */
static int offset_date_overflow(const char *path, uint64_t n)
{
	(void)n;
	struct vms_error err = {0};
	struct vms_tdw *w = open_host(path, 1, &err);
	if (!w)
		return -1;
	static const char big[] = "9223372036854775807", date[] = "0x8000000000";
	int r = add_formats(w, NULL, &err) ||
		vms_tdw_add_option(w, VMS_TDW_OPT_OFFSET, big, sizeof big, &err) ||
		vms_tdw_add_option(w, VMS_TDW_OPT_DATE, date, sizeof date, &err) ||
		switch_event(w, 0, 1000, 10, "a", 11, "b", &err);
	return finish(w, &err, r);
}

/* issue 7.9: names that are escape sequences, newlines and bytes that are not UTF-8, in the
 * comm of the events, the saved cmdlines and the GUEST option */
static int names_escape(const char *path, uint64_t n)
{
	(void)n;
	struct vms_error err = {0};
	struct vms_tdw *w = open_host(path, 1, &err);
	if (!w)
		return -1;
	static const int32_t tids[1] = {77};
	int r = add_formats(w, NULL, &err) ||
		vms_tdw_add_cmdline(w, 10, "\x1b]0;pwn\x07\xff", &err) ||
		vms_tdw_add_cmdline(w, 11, "=cmd|' /C calc'!A0", &err) ||
		vms_tdw_add_guest(w, "=cmd|' /C calc'!A0\n[fake] line\x1b[31m\xc3\x28", 0x5678, 1,
				  tids, &err) ||
		switch_event(w, 0, 1000, 10, "\x1b[2J\xfe", 11, "=1+2\r\n", &err);
	struct vms_ev_kvm_entry e = {.c = {.type = ID_ENTRY, .pid = 77}};
	r = r || vms_tdw_event(w, 0, 2000, &e, sizeof e, &err) ||
	    switch_event(w, 0, 3000, 11, "=1+2\r\n", 77, "\"q\\\x01", &err);
	return finish(w, &err, r);
}

/* the guest of names-escape (TRACEID 0x5678, named by the host's GUEST option), whose own
 * threads have such names */
static int names_escape_guest(const char *path, uint64_t n)
{
	(void)n;
	struct vms_error err = {0};
	struct vms_tdw *w = open_trace(path, 1, 0x5678, &err);
	if (!w)
		return -1;
	int r = add_formats(w, NULL, &err) ||
		switch_event(w, 0, 1000, 0, "swapper", 500, "\x1b[2J\xfe", &err) ||
		switch_event(w, 0, 2500, 500, "\x1b[2J\xfe", 501, "@SUM(1+1)\n", &err) ||
		switch_event(w, 0, 3000, 501, "@SUM(1+1)\n", 0, "swapper", &err);
	return finish(w, &err, r);
}

/* issue 7.5: n ftrace print events, each a string of 1 MiB (pages of 2 MiB): dump took 0.35 s
 * per event */
static int print_big(const char *path, uint64_t n)
{
	struct vms_error err = {0};
	struct vms_tdw_config c = {
		.path = path, .compression = VMS_TDW_ZSTD, .nr_cpus = 1, .page_size = 1u << 21,
		.chunk_pages = 4,
		.header_page = vms_synth_header_page, .header_event = vms_synth_header_event,
		.buffer_clock = "local", .trace_clock = "[local] global", .version = "hostile shape",
	};
	struct vms_tdw *w = NULL;
	if (vms_tdw_open(&w, &c, &err) != 0)
		return -1;
	enum { LEN = 1 << 20 };
	uint8_t *e = malloc(16 + LEN + 1);
	if (!e) {
		vms_tdw_discard(w);
		return -1;
	}
	memset(e, 0, 16);
	e[0] = 5; /* common_type */
	/* letters that do not compress much: the reader refuses implausible compression ratios */
	uint32_t x = 2463534242u;
	for (uint32_t i = 0; i < LEN; i++) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		e[16 + i] = (uint8_t)('a' + x % 26);
	}
	e[16 + LEN] = '\0';
	int r = add_formats(w, NULL, &err) ||
		add_format(w, "ftrace", "print", 5,
			   "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
			   "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
			   "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
			   "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
			   "\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n"
			   "\tfield:char buf[];\toffset:16;\tsize:0;\tsigned:1;\n\n"
			   "print fmt: \"%ps: %s\", (void *)REC->ip, REC->buf\n", &err);
	for (uint64_t i = 0; !r && i < n; i++)
		r = vms_tdw_event(w, 0, 1000 + i, e, 16 + LEN + 1, &err);
	free(e);
	return finish(w, &err, r);
}

/* ---- QEMU simpletrace v4 ---- */

static void st64(FILE *f, uint64_t v)
{
	uint8_t b[8];
	le64(b, v);
	fwrite(b, 1, 8, f);
}

static void st32(FILE *f, uint32_t v)
{
	uint8_t b[4];
	le32(b, v);
	fwrite(b, 1, 4, f);
}

/* issue 7.5: n event ids of 65536 and above (7919 apart), each mapped, then 10 n events
 * without arguments using them in another order (ids >= 65536 were looked up linearly: 0.5
 * MB/s) */
static int st_big_ids(const char *path, uint64_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	st64(f, ~(uint64_t)0);
	st64(f, 0xf2b177cb0aa429b4ull);   /* magic */
	st64(f, 4);                        /* version */
	char name[32];
	for (uint64_t i = 0; i < n; i++) {
		int len = snprintf(name, sizeof name, "ev_%llu", (unsigned long long)i);
		st64(f, 0);                    /* mapping record: id, name */
		st64(f, 65536 + i * 7919);
		st32(f, (uint32_t)len);
		fwrite(name, 1, (size_t)len, f);
	}
	for (uint64_t k = 0; k < 10 * n; k++) {
		uint64_t i = (k * 40503) % n;  /* scattered over the ids */
		st64(f, 1);                    /* event record: id, ts, length, pid */
		st64(f, 65536 + i * 7919);
		st64(f, 1000 + k);
		st32(f, 24);
		st32(f, 1);
	}
	return fclose(f) ? -1 : 0;
}

/* ---- xentrace ---- */

#define XEN_LOST_VCPUS 30000u

/* A per-CPU block of `size` bytes of records (xen/include/public/trace.h: a CPU-change record,
 * no TSC, two words: the CPU and the size of what follows) */
static void xt_block(FILE *f, uint32_t cpu, uint32_t size)
{
	st32(f, 0x0001f003u | 2u << 28);
	st32(f, cpu);
	st32(f, size);
}

static void xt_rec(FILE *f, uint32_t event, uint64_t tsc, uint32_t n, const uint32_t *w)
{
	st32(f, event | n << 28 | 1u << 31);
	st64(f, tsc);
	for (uint32_t i = 0; i < n; i++)
		st32(f, w[i]);
}

/* issue 7.5: 30,000 vCPUs (domains of 16) run once on CPU 0 and block, then n lost-records
 * markers on CPU 1 (each lost from 1 cycle before it, naming the idle vCPU 1 as running when
 * it ended). xenalyze's accounting makes every vCPU not running LOST at every marker: done
 * so, 30,000 n updates (the Xen model now does it lazily). */
static int xen_lost_markers(const char *path, uint64_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	uint64_t t = 1000;
	xt_block(f, 0, XEN_LOST_VCPUS * 2 * 16);
	for (uint32_t i = 0; i < XEN_LOST_VCPUS; i++) {
		uint32_t dv = (1 + i / 16) << 16 | (i % 16);
		xt_rec(f, 0x00021001u | 1u << 8 | 0u << 4, t++, 1, &dv); /* runnable -> running */
		xt_rec(f, 0x00021001u | 0u << 8 | 2u << 4, t++, 1, &dv); /* running -> blocked */
	}
	for (uint64_t k = 0; k < n; k += 1u << 20) {
		uint64_t m = n - k < 1u << 20 ? n - k : 1u << 20; /* blocks of at most 28 MiB */
		xt_block(f, 1, (uint32_t)(m * 28));
		for (uint64_t j = 0; j < m; j++, t += 2) {
			uint32_t w[4] = { 1, 1u << 16 | 32767u, (uint32_t)(t - 1),
					  (uint32_t)((t - 1) >> 32) };
			xt_rec(f, 0x0001f001u, t, 4, w); /* lost records: count, did/vid, first TSC */
		}
	}
	return fclose(f) ? -1 : 0;
}

/* issue 20.8: n domains (1..n) on CPU 0, each running only its vCPU 4095 (runnable ->
 * running, running -> blocked) and naming vCPU 4094 in a wake-up (blocked -> runnable)
 * that never runs: 48 bytes per domain. Sized by the highest vCPU named, each domain had
 * 4,096 vCPUs with a name, a model thread and a report line (100 domains, 4.8 KB: 409,600
 * vCPUs); by those seen running, one each. */
static int xen_high_vcpus(const char *path, uint64_t n)
{
	if (n > 32766)
		n = 32766;
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	uint64_t t = 1000;
	xt_block(f, 0, (uint32_t)n * 3 * 16);
	for (uint32_t d = 1; d <= n; d++) {
		uint32_t run = d << 16 | 4095u, named = d << 16 | 4094u;
		xt_rec(f, 0x00021001u | 1u << 8 | 0u << 4, t++, 1, &run);   /* runnable -> running */
		xt_rec(f, 0x00021001u | 0u << 8 | 2u << 4, t++, 1, &run);   /* running -> blocked */
		xt_rec(f, 0x00021001u | 2u << 8 | 1u << 4, t++, 1, &named); /* blocked -> runnable */
	}
	return fclose(f) ? -1 : 0;
}

/* ---- CTF (LTTng kernel layout) ---- */

static const char ctf_metadata[] =
	"/* CTF 1.8 */\n"
	"typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
	"typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
	"typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
	"typealias integer { size = 5; align = 1; signed = false; } := uint5_t;\n"
	"typealias integer { size = 27; align = 1; signed = false; map = clock.monotonic.value; }"
	" := uint27_clock_t;\n"
	"typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; }"
	" := uint64_clock_t;\n"
	"trace { major = 1; minor = 8; uuid = \"00112233-4455-6677-8899-aabbccddeeff\";\n"
	"  byte_order = le;\n"
	"  packet.header := struct { uint32_t magic; uint8_t uuid[16]; uint32_t stream_id; };\n"
	"};\n"
	"env { domain = \"kernel\"; tracer_name = \"lttng-modules\"; };\n"
	"clock { name = monotonic; freq = 1000000000; offset_s = 0; offset = 0; };\n"
	"struct packet_context { uint64_clock_t timestamp_begin; uint64_clock_t timestamp_end;\n"
	"  uint64_t content_size; uint64_t packet_size; uint64_t events_discarded;\n"
	"  uint32_t cpu_id; };\n"
	"struct event_header_compact {\n"
	"  enum : uint5_t { compact = 0 ... 30, extended = 31 } id;\n"
	"  variant <id> { struct { uint27_clock_t timestamp; } compact;\n"
	"    struct { uint32_t id; uint64_clock_t timestamp; } extended; } v;\n"
	"} align(8);\n"
	"stream { id = 0; event.header := struct event_header_compact;\n"
	"  packet.context := struct packet_context; };\n"
	"event { name = sched_switch; id = 2; stream_id = 0; fields := struct {\n"
	"  integer { size = 8; align = 8; signed = 1; encoding = UTF8; } _prev_comm[16];\n"
	"  integer { size = 32; align = 8; signed = 1; } _prev_tid;\n"
	"  integer { size = 32; align = 8; signed = 1; } _prev_prio;\n"
	"  integer { size = 64; align = 8; signed = 1; } _prev_state;\n"
	"  integer { size = 8; align = 8; signed = 1; encoding = UTF8; } _next_comm[16];\n"
	"  integer { size = 32; align = 8; signed = 1; } _next_tid;\n"
	"  integer { size = 32; align = 8; signed = 1; } _next_prio;\n"
	"}; };\n";

/* issue 7.6: a CTF trace directory of 16 stream files that are one file (hard links): one
 * packet of n MiB of sched_switch events (60 bytes each: a 4-byte compact header, 56 of
 * fields). The reader walked each stream's packet keeping every page it touched: 16 x
 * 64 MiB = 1 GB. Events per stream: hostile_ctf_events(n). Issue 20.8: and 2,000 symlinks
 * to it; each name was a stream decoded in full (past 60 s at 64 MiB); now the file is one
 * stream, read once. */
uint64_t hostile_ctf_events(uint64_t n)
{
	return ((n << 20) - 24 - 44) / 60;
}

static int ctf_shared_packet(const char *path, uint64_t n)
{
	char p[600];
	if (mkdir(path, 0755) != 0 && errno != EEXIST)
		return -1;
	snprintf(p, sizeof p, "%s/metadata", path);
	FILE *f = fopen(p, "wb");
	if (!f || fputs(ctf_metadata, f) < 0 || fclose(f) != 0)
		return -1;
	uint64_t size = n << 20, events = hostile_ctf_events(n);
	uint8_t *b = calloc(1, size);
	if (!b)
		return -1;
	static const uint8_t uuid[16] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
					 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff};
	le32(b, 0xC1FC1FC1);
	memcpy(b + 4, uuid, 16);                    /* stream_id 0 at 20 */
	le64(b + 24, 1000);                         /* timestamp_begin */
	le64(b + 32, 1000 + events);                /* timestamp_end */
	le64(b + 40, (24 + 44 + events * 60) * 8);  /* content_size, bits */
	le64(b + 48, size * 8);                     /* packet_size */
	uint8_t *e = b + 68;                        /* events_discarded 0, cpu_id 0 */
	for (uint64_t i = 0; i < events; i++, e += 60) {
		le32(e, 2u | (uint32_t)((1000 + i) & ((1u << 27) - 1)) << 5);
		e[4] = 'a';                                  /* prev_comm */
		le32(e + 20, (uint32_t)(10 + (i & 1)));      /* prev_tid */
		le32(e + 24, 120);
		le64(e + 28, 1);                             /* prev_state */
		e[36] = 'b';                                 /* next_comm */
		le32(e + 52, (uint32_t)(11 - (i & 1)));      /* next_tid */
		le32(e + 56, 120);
	}
	snprintf(p, sizeof p, "%s/channel0_0", path);
	f = fopen(p, "wb");
	int r = !f || fwrite(b, 1, size, f) != size;
	if (f && fclose(f) != 0)
		r = 1;
	free(b);
	for (int s = 1; !r && s < 16; s++) {
		char q[600];
		snprintf(q, sizeof q, "%s/channel0_%d", path, s);
		unlink(q);
		r = link(p, q) != 0;
	}
	/* and symlinks (issue 20.8: 2,000 links to one 64 MiB packet were each decoded) */
	for (int s = 0; !r && s < HOSTILE_CTF_SYMLINKS; s++) {
		char q[600];
		snprintf(q, sizeof q, "%s/link%d", path, s);
		unlink(q);
		r = symlink("channel0_0", q) != 0;
	}
	return r ? -1 : 0;
}

/* ---- Trace Compass XML stubs ---- */

/* issue 20.8: an attribute value of n MiB in the second <event> (libxml2 refuses one past
 * 10,000,000 bytes; the message said byte offset 0, now 98: where that <event> starts) */
static int xml_huge_attr(const char *path, uint64_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	fputs("<trace>\n<event timestamp=\"1\" name=\"sched_switch\"><field name=\"cpu\" "
	      "value=\"0\" type=\"int\"/></event>\n<event timestamp=\"2\" name=\"", f);
	static char a[1 << 16];
	memset(a, 'a', sizeof a);
	for (uint64_t i = 0; i < n * 16; i++)
		fwrite(a, 1, sizeof a, f);
	fputs("\"/>\n</trace>\n", f);
	return fclose(f) ? -1 : 0;
}

static void xml_event(FILE *f, uint64_t ts, const char *name, uint64_t cpu)
{
	fprintf(f, "<event timestamp=\"%llu\" name=\"%s\"><field name=\"cpu\" value=\"%llu\" "
		"type=\"int\"/>", (unsigned long long)ts, name, (unsigned long long)cpu);
}

/* issue 7.5: n CPUs, 100 events each, written CPU after CPU (out of time order across CPUs:
 * one stream per CPU; the reader parsed the file once per CPU) */
static int xml_unordered(const char *path, uint64_t n)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fputs("<trace>\n", f);
	for (uint64_t cpu = 0; cpu < n; cpu++)
		for (uint64_t k = 0; k < 100; k++) {
			xml_event(f, 1000 + k, "x", cpu);
			fputs("</event>\n", f);
		}
	fputs("</trace>\n", f);
	return fclose(f) ? -1 : 0;
}

/* issue 7.5: kvm_entry from n distinct threads, in XML (each switched in on CPU 0 first) */
static int xml_entry_tids(const char *path, uint64_t n)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fputs("<trace>\n", f);
	for (uint64_t i = 0; i < n; i++) {
		xml_event(f, 1000 + 2 * i, "sched_switch", 0);
		fprintf(f, "<field name=\"prev_comm\" value=\"t\" type=\"string\"/>"
			"<field name=\"prev_tid\" value=\"%llu\" type=\"long\"/>"
			"<field name=\"prev_state\" value=\"0\" type=\"long\"/>"
			"<field name=\"next_comm\" value=\"t\" type=\"string\"/>"
			"<field name=\"next_tid\" value=\"%llu\" type=\"long\"/></event>\n",
			(unsigned long long)(i ? 1000 + i - 1 : 0), (unsigned long long)(1000 + i));
		xml_event(f, 1001 + 2 * i, "kvm_entry", 0);
		fputs("<field name=\"vcpu_id\" value=\"0\" type=\"int\"/></event>\n", f);
	}
	fputs("</trace>\n", f);
	return fclose(f) ? -1 : 0;
}

/* issue 7.5: one vCPU thread exiting N times, each with another exit reason (a u32 from the
 * trace): the exit tables, each guest thread's reasons and the exit storms found a reason's
 * row by a scan of the rows (N^2) */
static int xml_exit_reasons(const char *path, uint64_t n)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fputs("<trace>\n", f);
	xml_event(f, 1000, "sched_switch", 0);
	fputs("<field name=\"prev_comm\" value=\"t\" type=\"string\"/>"
	      "<field name=\"prev_tid\" value=\"0\" type=\"long\"/>"
	      "<field name=\"prev_state\" value=\"0\" type=\"long\"/>"
	      "<field name=\"next_comm\" value=\"t\" type=\"string\"/>"
	      "<field name=\"next_tid\" value=\"500\" type=\"long\"/></event>\n", f);
	for (uint64_t i = 0; i < n; i++) {
		xml_event(f, 1001 + 3 * i, "kvm_entry", 0);
		fputs("<field name=\"vcpu_id\" value=\"0\" type=\"int\"/></event>\n", f);
		xml_event(f, 1002 + 3 * i, "kvm_exit", 0);
		fprintf(f, "<field name=\"exit_reason\" value=\"%llu\" type=\"int\"/>"
			"<field name=\"isa\" value=\"1\" type=\"int\"/>"
			"<field name=\"guest_rip\" value=\"%llu\" type=\"long\"/></event>\n",
			(unsigned long long)(1000 + i), (unsigned long long)(4096 + i));
	}
	fputs("</trace>\n", f);
	return fclose(f) ? -1 : 0;
}

const struct hostile_shape hostile_shapes[] = {
	{"fmt-decl-in-brackets", "print format naming an undeclared field that appears as text "
	 "in a declaration", fmt_decl_in_brackets, 1, 1},
	{"fmt-symbolic-undeclared", "__print_symbolic(REC -> undeclared)", fmt_symbolic_undeclared,
	 1, 1},
	{"fmt-get-str-undeclared", "__get_str(undeclared)", fmt_get_str_undeclared, 1, 1},
	{"fmt-quote-desync", "a string literal ended as libtraceevent ends it", fmt_quote_desync, 1,
	 1},
	{"fmt-zero-over-field", "a constant divided by a field", fmt_zero_over_field, 1, 1},
	{"fmt-dot-on-literal", "'.' after the else branch of a ?:", fmt_dot_on_literal, 1, 1},
	{"fmt-after-subscript", "a subscript after a subscript", fmt_after_subscript, 1, 1},
	{"fmt-op-token-after-subscript", "an operator token without a priority after a subscript",
	 fmt_op_token_after_subscript, 1, 1},
	{"fmt-nested", "print format nested N levels", fmt_nested, 30000, 30000},
	{"fmt-op-chain", "print format with N chained operators", fmt_op_chain, 30000, 30000},
	{"fmt-many-refs", "print format with N references to one of N/4 fields", fmt_many_refs,
	 2000, 12000},
	{"cpu-overlap", "N CPUs sharing one chunk of 16 MiB of zeros", cpu_overlap, 64, 4096},
	{"chunk-bomb", "N CPUs, each a chunk of 16 MiB of zeros", chunk_bomb, 64, 4096},
	{"section-bomb", "an event formats section of N MiB", section_bomb, 80, 500},
	{"guest-vcpus", "a GUEST option with N vCPUs, each entered once", guest_vcpus, 20000,
	 1000000},
	{"entry-tids", "kvm_entry from N distinct threads", entry_tids, 20000, 200000},
	{"many-streams", "N CPUs, one event each, then 100 N on one CPU", many_streams, 256, 4096},
	{"xml-unordered", "Trace Compass XML: N CPUs of 100 events, CPU after CPU", xml_unordered,
	 64, 4096},
	/* each thread switched out stays preempted on CPU 0, so N vCPUs wait there at once and
	 * N threads run in turn: N^2 (vCPU, thief) pairs. Was quadratic (release, CPU s / peak
	 * MB: N 4,000 4.4 / 436; cubic before that, 66 s) from the state machine telling every
	 * waiting vCPU of every switch and the steal table keeping every pair; now the first
	 * VMS_INSTEAD_MAX_WAITERS waiters are told (the rest "unattributed") and at most
	 * VMS_STEAL_MAX_THIEVES thieves per vCPU itemised (the rest "other threads"): N 4,000
	 * 0.15 s / 18 MB, 200,000 8.8 s / 539 MB (the model's ~2.5 KiB per unnamed guest, as
	 * entry-tids: 1.2 s / 508 MB) */
	{"xml-entry-tids", "Trace Compass XML: kvm_entry from N distinct threads", xml_entry_tids,
	 200, 200000},
	/* release, report: N 5,000 0.13 s, 20,000 1.83 s (quadratic); now 20,000 0.4 s, 80,000
	 * 2.1 s / 143 MB, 200,000 4.7 s / 336 MB */
	{"xml-huge-attr", "Trace Compass XML: an attribute of N MiB", xml_huge_attr, 12, 100},
	{"xml-exit-reasons", "Trace Compass XML: one vCPU exiting with N distinct reasons",
	 xml_exit_reasons, 200, 200000},
	{"print-big", "N ftrace print events of 1 MiB each", print_big, 2, 20},
	{"ctf-shared-packet", "CTF: 16 hard links and 2,000 symlinks to one stream file of one "
	 "packet of N MiB (a directory)",
	 ctf_shared_packet, 32, 64},
	/* release, report, CPU s / peak MiB: N 10,000 was 5.5 / 81, N 100,000 52.8 / 83 (the
	 * loop over every vCPU at every marker); now N 100,000 0.30-0.44 / 84, N 1,000,000
	 * 0.56 / 101 (N 1,000: 0.40 / 82, the 30,000 vCPUs) */
	{"xen-lost-markers", "xentrace: 30,000 vCPUs blocked, then N lost-records markers",
	 xen_lost_markers, 1000, 100000},
	{"xen-high-vcpus", "xentrace: N domains, each running vCPU 4095 and waking vCPU 4094",
	 xen_high_vcpus, 100, 32000},
	{"st-big-ids", "QEMU simpletrace: N mapped ids >= 65536, 10 N events", st_big_ids, 1000,
	 100000},
	{"offset-overflow", "two OFFSET options of INT64_MAX", offset_overflow, 1, 1},
	{"date-overflow", "a DATE option of INT64_MAX microseconds", date_overflow, 1, 1},
	{"offset-date-overflow", "OFFSET and DATE in range, their sum not", offset_date_overflow,
	 1, 1},
	{"names-escape", "names holding escape sequences, newlines, non-UTF-8, =cmd|",
	 names_escape, 1, 1},
	{"names-escape-guest", "the guest of names-escape", names_escape_guest, 1, 1},
};
const unsigned hostile_nr_shapes = sizeof hostile_shapes / sizeof hostile_shapes[0];

const struct hostile_shape *hostile_shape(const char *name)
{
	for (unsigned i = 0; i < hostile_nr_shapes; i++)
		if (strcmp(hostile_shapes[i].name, name) == 0)
			return &hostile_shapes[i];
	return NULL;
}
