/* The CTF decoder (lib/input/ctf) on hand-made traces: the metadata and the stream bytes are
 * written here, so every expected value below is the one put in (read the builder calls).
 * Covered: LTTng's compact event header (5-bit id + 27-bit timestamp bit fields) and its
 * wrap-around, the extended header (its struct starts at the next byte), a big-endian field, bit fields, a string, a char array,
 * a sequence, a variant selected by an enum, events_discarded -> LOST_BEFORE and the lost
 * total, the thread from sched_switch when no context gives it, an LTTng session directory of
 * two traces whose clocks have different offsets (one machine, one timebase), damage
 * (a sequence longer than the packet: one line with the file and byte offset), LTTng's other
 * spellings (kvm_entry, kvm_exit's `reason`, sched_waking, the TCP header of the net events
 * in a variant), overlapping packets whose events go back (counted, never fatal), and a UST
 * trace (lttng-ust's domain, provider:event names, vtid) beside a kernel one in a session. */
#include <sys/stat.h>

#include "testutil.h"
#include "vmscope/session.h"
#include "vmscope/source.h"

/* What both test traces share: the trace, its packets' context, LTTng's sched_switch. */
#define TRACE_AND_ENV \
	"trace { major = 1; minor = 8; uuid = \"00112233-4455-6677-8899-aabbccddeeff\";\n" \
	"  byte_order = le;\n" \
	"  packet.header := struct { uint32_t magic; uint8_t uuid[16]; uint32_t stream_id; };\n" \
	"};\n" \
	"env { domain = \"kernel\"; tracer_name = \"lttng-modules\"; };\n"
#define PACKET_CONTEXT \
	"struct packet_context { uint64_clock_t timestamp_begin; uint64_clock_t timestamp_end;\n" \
	"  uint64_t content_size; uint64_t packet_size; uint64_t events_discarded;\n" \
	"  uint32_t cpu_id; };\n"
#define SCHED_SWITCH_FIELDS \
	"  integer { size = 8; align = 8; signed = 1; encoding = UTF8; } _prev_comm[16];\n" \
	"  integer { size = 32; align = 8; signed = 1; } _prev_tid;\n" \
	"  integer { size = 32; align = 8; signed = 1; } _prev_prio;\n" \
	"  integer { size = 64; align = 8; signed = 1; } _prev_state;\n" \
	"  integer { size = 8; align = 8; signed = 1; encoding = UTF8; } _next_comm[16];\n" \
	"  integer { size = 32; align = 8; signed = 1; } _next_tid;\n" \
	"  integer { size = 32; align = 8; signed = 1; } _next_prio;\n"

/* The integer types and LTTng's compact event header (5-bit id, 27-bit timestamp). */
#define COMPACT_TYPES \
	"typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n" \
	"typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n" \
	"typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n" \
	"typealias integer { size = 5; align = 1; signed = false; } := uint5_t;\n" \
	"typealias integer { size = 27; align = 1; signed = false; map = clock.monotonic.value; }" \
	" := uint27_clock_t;\n" \
	"typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; }" \
	" := uint64_clock_t;\n"
#define COMPACT_HEADER \
	"struct event_header_compact {\n" \
	"  enum : uint5_t { compact = 0 ... 30, extended = 31 } id;\n" \
	"  variant <id> { struct { uint27_clock_t timestamp; } compact;\n" \
	"    struct { uint32_t id; uint64_clock_t timestamp; } extended; } v;\n" \
	"} align(8);\n"
#define COMPACT_STREAM \
	COMPACT_HEADER \
	"stream { id = 0; event.header := struct event_header_compact;\n" \
	"  packet.context := struct packet_context; };\n"

static const char META[] =
	"/* CTF 1.8 */\n"
	COMPACT_TYPES
	TRACE_AND_ENV
	"clock { name = monotonic; freq = 1000000000; offset_s = %d; offset = 0; };\n"
	PACKET_CONTEXT
	COMPACT_STREAM
	"event { name = probe; id = 1; stream_id = 0; fields := struct {\n"
	"  integer { size = 16; align = 8; signed = 0; byte_order = be; base = 16; } _be16;\n"
	"  string _s;\n"
	"  integer { size = 8; align = 8; signed = 0; } _n;\n"
	"  uint32_t _seq[ _n ];\n"
	"  integer { size = 3; align = 1; signed = 1; } _b3;\n"
	"  integer { size = 5; align = 1; signed = 0; } _b5;\n"
	"  enum : uint8_t { small = 0, big = 1 ... 9 } _sel;\n"
	"  variant <_sel> { uint8_t small; uint64_t big; } _val;\n"
	"}; };\n"
	"event { name = sched_switch; id = 2; stream_id = 0; fields := struct {\n"
	SCHED_SWITCH_FIELDS
	"}; };\n";

struct buf {
	uint8_t b[4096];
	size_t n;
};

static void put(struct buf *b, const void *p, size_t n)
{
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void u8(struct buf *b, uint8_t v) { put(b, &v, 1); }
static void u32(struct buf *b, uint32_t v) { put(b, &v, 4); }
static void u64(struct buf *b, uint64_t v) { put(b, &v, 8); }

/* packet header + context; returns the offset of content_size to patch */
static size_t packet(struct buf *b, uint64_t begin, uint64_t discarded)
{
	static const uint8_t uuid[16] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
					 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff};
	u32(b, 0xC1FC1FC1);
	put(b, uuid, 16);
	u32(b, 0);
	u64(b, begin);
	u64(b, begin);
	size_t at = b->n;
	u64(b, 0);
	u64(b, 0);
	u64(b, discarded);
	u32(b, 3); /* cpu_id */
	return at;
}

static void end_packet(struct buf *b, size_t start, size_t at)
{
	uint64_t bits = (uint64_t)(b->n - start) * 8;
	memcpy(b->b + at, &bits, 8);
	memcpy(b->b + at + 8, &bits, 8);
}

static void compact(struct buf *b, uint32_t id, uint32_t ts27)
{
	u32(b, id | ts27 << 5); /* LE bit fields: id in bits 0-4, the timestamp in 5-31 */
}

static void probe(struct buf *b, uint8_t n, uint8_t sel)
{
	u8(b, 0x12);
	u8(b, 0x34); /* be16 = 0x1234 */
	put(b, "hi", 3);
	u8(b, n);
	for (uint32_t i = 0; i < 2; i++)
		u32(b, 100 + i);
	u8(b, (uint8_t)(0x5 | 17 << 3)); /* b3 = 0b101 = -3 (signed), b5 = 17 */
	u8(b, sel);
	if (sel == 0)
		u8(b, 42);
	else
		u64(b, 1ull << 40);
}

static void sswitch(struct buf *b, int32_t prev, int32_t next)
{
	char comm[16] = "prev-thread", ncomm[16] = "next-thread-name"; /* 16 bytes, no NUL */
	put(b, comm, 16);
	u32(b, (uint32_t)prev);
	u32(b, 20);
	u64(b, 1);
	put(b, ncomm, 16);
	u32(b, (uint32_t)next);
	u32(b, 20);
}

static void write_file(const char *dir, const char *name, const void *p, size_t n)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, n, f), n);
	fclose(f);
}

/* A trace directory with this metadata, and its stream's buffer emptied. */
static void start_trace(const char *dir, const char *meta, struct buf *b)
{
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
	assert_int_equal(system(cmd), 0);
	write_file(dir, "metadata", meta, strlen(meta));
	b->n = 0;
}

static void make_trace(const char *dir, int offset_s, uint8_t seq_len)
{
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
	assert_int_equal(system(cmd), 0);
	char meta[sizeof META + 32];
	snprintf(meta, sizeof meta, META, offset_s);
	write_file(dir, "metadata", meta, strlen(meta));
	static struct buf b;
	b.n = 0;
	size_t at = packet(&b, 1000, 0);
	compact(&b, 1, 1500);
	probe(&b, seq_len, 0);
	compact(&b, 2, 100); /* below 1500 in 27 bits: the clock wrapped */
	sswitch(&b, 7, 9);
	u8(&b, 31); /* extended: the 5-bit id, then the struct aligned to a byte */
	u32(&b, 1);
	u64(&b, 1ull << 40);
	probe(&b, 2, 3);
	end_packet(&b, 0, at);
	size_t p2 = b.n;
	at = packet(&b, (1ull << 40) + 10, 5);
	compact(&b, 2, (uint32_t)(((1ull << 40) + 20) & ((1u << 27) - 1)));
	sswitch(&b, 9, 0);
	end_packet(&b, p2, at);
	write_file(dir, "channel0_3", b.b, b.n);
}

static struct vms_source *open_ok(const char *dir)
{
	struct vms_error err = {0};
	struct vms_source *s = vms_source_open(dir, &err);
	if (!s)
		fail_msg("open %s: %s", dir, err.msg);
	return s;
}

static void check_events(struct vms_source *s, uint32_t stream, uint64_t add)
{
	struct vms_event ev;
	char text[512];
	/* 1: probe, compact header */
	assert_int_equal(s->ops->next(s, stream, &ev), 1);
	assert_int_equal(ev.ts, 1500 + add);
	assert_int_equal(ev.cpu, 3);
	assert_int_equal(ev.tid, -1); /* no context, no sched_switch yet: unknown */
	assert_int_equal(ev.kind, VMS_K_OTHER);
	s->ops->format_event(s, stream, text, sizeof text);
	assert_string_equal(text, "probe: be16=0x1234 s=\"hi\" n=2 b3=-3 b5=17 sel=0 small=42");
	/* 2: sched_switch after the 27-bit wrap */
	assert_int_equal(s->ops->next(s, stream, &ev), 1);
	assert_int_equal(ev.ts, (1ull << 27) + 100 + add);
	assert_int_equal(ev.kind, VMS_K_SCHED_SWITCH);
	assert_int_equal(ev.f[0], 7);
	assert_int_equal(ev.f[1], 1);
	assert_int_equal(ev.f[2], 9);
	assert_int_equal(ev.tid, 7);
	assert_string_equal(ev.s[0], "prev-thread");
	assert_string_equal(ev.s[1], "next-thread-name"); /* 16 bytes without a NUL: all 16 */
	/* 3: extended header; the thread is the one switched in */
	assert_int_equal(s->ops->next(s, stream, &ev), 1);
	assert_int_equal(ev.ts, (1ull << 40) + add);
	assert_int_equal(ev.tid, 9);
	s->ops->format_event(s, stream, text, sizeof text);
	assert_string_equal(text, "probe: be16=0x1234 s=\"hi\" n=2 b3=-3 b5=17 sel=3 big=1099511627776");
	assert_false(ev.flags & VMS_EVF_LOST_BEFORE);
	/* 4: the second packet, after 5 lost events */
	assert_int_equal(s->ops->next(s, stream, &ev), 1);
	assert_int_equal(ev.ts, (1ull << 40) + 20 + add);
	assert_true(ev.flags & VMS_EVF_LOST_BEFORE);
	assert_int_equal(s->ops->next(s, stream, &ev), 0);
}

static void test_decode(void **state)
{
	(void)state;
	char dir[2100];
	snprintf(dir, sizeof dir, "%.2000s/t", vms_test_tmpdir("ctf-decode"));
	make_trace(dir, 100, 2);
	struct vms_source *s = open_ok(dir);
	assert_string_equal(s->meta.format, "CTF 1.8 (LTTng kernel)");
	assert_int_equal(s->meta.nr_cpus, 4);
	assert_int_equal(s->meta.lost_events, 5);
	assert_int_equal(s->meta.offset_ns, 100000000000ll);
	check_events(s, 0, 0);
	assert_int_equal(s->ops->rewind(s), 0);
	check_events(s, 0, 0);
	vms_source_close(s);
}

/* An LTTng session directory in the build's tmp (base, 2100 bytes): its kernel trace written
 * (make_trace, clock 100 s after the epoch); ust (2200 bytes) is where its UST trace goes. */
static void session_dirs(const char *name, char *base, char *ust)
{
	char d[2200];
	snprintf(base, 2100, "%.2000s", vms_test_tmpdir(name));
	snprintf(d, sizeof d, "%s/kernel", base);
	make_trace(d, 100, 2);
	snprintf(ust, 2200, "%s/ust/uid/0/64-bit", base);
}

/* An LTTng session: kernel/ and ust/uid/0/64-bit/, clocks 100 s and 103 s after the epoch:
 * one machine on the first trace's timebase, the second's events 3 s later on it. */
static void test_session(void **state)
{
	(void)state;
	char base[2100], d[2200];
	session_dirs("ctf-session", base, d);
	make_trace(d, 103, 2);
	struct vms_source *s = open_ok(base);
	assert_int_equal(s->ops->nr_streams(s), 2);
	assert_int_equal(s->meta.nr_types, 4);
	assert_int_equal(s->meta.lost_events, 10);
	check_events(s, 0, 0);
	check_events(s, 1, 3000000000ull);
	vms_source_close(s);
}

static void test_sequence_past_the_packet(void **state)
{
	(void)state;
	char dir[2100];
	snprintf(dir, sizeof dir, "%.2000s/t", vms_test_tmpdir("ctf-decode-bad"));
	make_trace(dir, 100, 250); /* 250 u32 elements in a packet of a few dozen bytes */
	struct vms_source *s = open_ok(dir);
	struct vms_event ev;
	assert_true(s->ops->next(s, 0, &ev) < 0);
	/* the sequence starts after 24 bytes of packet header, 44 of context, 4 of event header
	 * and 2 + 3 + 1 of fields: byte 78 */
	if (!strstr(s->err.msg, "channel0_3: sequence or array longer than the packet at byte "
				"offset 78"))
		fail_msg("error: %s", s->err.msg);
	vms_source_close(s);
}

/* LTTng's large event header (16-bit id; 65535: a 32-bit id and a 64-bit timestamp follow),
 * a tid in the stream's event context, and a kvm_x86_exit whose fields need padding the
 * reader must find: a byte, a 32-bit-aligned integer, 3 bits, a 64-bit-aligned integer, a
 * big-endian 16-bit one, then a byte-aligned 64-bit one. Byte offsets below are counted by
 * hand from the packet's start (24 bytes of header, 44 of context). */
static const char META_LARGE[] =
	"/* CTF 1.8 */\n"
	"typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
	"typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n"
	"typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
	"typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
	"typealias integer { size = 32; align = 8; signed = false; map = clock.monotonic.value; }"
	" := uint32_clock_t;\n"
	"typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; }"
	" := uint64_clock_t;\n"
	TRACE_AND_ENV
	"clock { name = monotonic; freq = 1000000000; offset_s = 0; offset = 0; };\n"
	PACKET_CONTEXT
	"struct event_header_large {\n"
	"  enum : uint16_t { compact = 0 ... 65534, extended = 65535 } id;\n"
	"  variant <id> { struct { uint32_clock_t timestamp; } compact;\n"
	"    struct { uint32_t id; uint64_clock_t timestamp; } extended; } v;\n"
	"} align(8);\n"
	"stream { id = 0; event.header := struct event_header_large;\n"
	"  packet.context := struct packet_context;\n"
	"  event.context := struct { integer { size = 32; align = 8; signed = 1; } _tid; }; };\n"
	"event { name = sched_switch; id = 0; stream_id = 0; fields := struct {\n"
	SCHED_SWITCH_FIELDS
	"}; };\n"
	"event { name = kvm_x86_exit; id = 3; stream_id = 0; fields := struct {\n"
	"  uint8_t _a;\n"
	"  integer { size = 32; align = 32; signed = 0; } _exit_reason;\n"
	"  integer { size = 3; align = 1; signed = 0; } _isa;\n"
	"  integer { size = 64; align = 64; signed = 0; } _guest_rip;\n"
	"  integer { size = 16; align = 8; signed = 0; byte_order = be; } _info1;\n"
	"  uint64_t _info2;\n"
	"}; };\n";

static void u16(struct buf *b, uint16_t v) { put(b, &v, 2); }

static void zeros(struct buf *b, size_t n)
{
	memset(b->b + b->n, 0, n);
	b->n += n;
}

/* A kvm_x86_exit's fields from byte b->n (a packet starts at 0): the struct is aligned as
 * its most aligned field, 8 bytes; then the padding the fields need. */
static void x86_exit(struct buf *b, uint32_t reason, uint64_t rip)
{
	zeros(b, (8 - b->n % 8) % 8);
	u8(b, 0xaa);
	zeros(b, (4 - b->n % 4) % 4);
	u32(b, reason);
	u8(b, 1); /* isa = 1 in bits 0-2 */
	zeros(b, (8 - b->n % 8) % 8);
	u64(b, rip);
	u8(b, 0xbe);
	u8(b, 0xef); /* info1 = 0xbeef, big-endian */
	u64(b, 77);
}

/* The large-header trace: at 68 a compact kvm_x86_exit (tid at 74, fields at 80: the exit
 * reason at 84, the 3 bits at 88, the RIP at 96); at 114 an extended sched_switch (its id at
 * 116, timestamp at 120, fields at 132); at 188 a compact kvm_x86_exit whose 32-bit clock
 * wrapped (timestamp at 190, tid at 194, fields at 200: reason at 204, the 3 bits at 208,
 * RIP at 216); the packet ends at `cut` bytes when not 0 (a damaged trace). */
static void make_large(const char *dir, size_t cut)
{
	static struct buf b;
	start_trace(dir, META_LARGE, &b);
	size_t at = packet(&b, 0xffffff00u, 0);
	assert_int_equal(b.n, 68);
	u16(&b, 3);
	u32(&b, 0xffffff10u);
	u32(&b, 41); /* tid */
	x86_exit(&b, 48, 0x1234);
	assert_int_equal(b.n, 114);
	u16(&b, 65535);
	u32(&b, 0);
	u64(&b, 0xfffffff0ull);
	u32(&b, 42);
	sswitch(&b, 42, 43);
	assert_int_equal(b.n, 188);
	u16(&b, 3);
	u32(&b, 0x20); /* below 0xfffffff0 in 32 bits: wrapped */
	u32(&b, 43);
	x86_exit(&b, 12, 0xfedcba9876543210ull);
	assert_int_equal(b.n, 234);
	if (cut)
		b.n = cut;
	end_packet(&b, 0, at);
	write_file(dir, "channel0_0", b.b, b.n);
}

static void check_exit(const struct vms_event *ev, uint64_t ts, int32_t tid, uint32_t reason,
		       uint64_t rip)
{
	assert_int_equal(ev->kind, VMS_K_KVM_EXIT);
	assert_int_equal(ev->ts, ts);
	assert_int_equal(ev->tid, tid);
	assert_int_equal(ev->f[0], reason);
	assert_int_equal(ev->f[1], 1);
	assert_int_equal(ev->f[2], rip);
	assert_int_equal(ev->f[3], 0xbeef);
	assert_int_equal(ev->f[4], 77);
}

static void test_large_header(void **state)
{
	(void)state;
	char dir[2100];
	snprintf(dir, sizeof dir, "%.2000s/t", vms_test_tmpdir("ctf-large"));
	make_large(dir, 0);
	struct vms_source *s = open_ok(dir);
	struct vms_event ev;
	char text[512];
	for (int pass = 0; pass < 2; pass++) {
		assert_int_equal(s->ops->next(s, 0, &ev), 1);
		check_exit(&ev, 0xffffff10u, 41, 48, 0x1234);
		s->ops->format_event(s, 0, text, sizeof text);
		assert_string_equal(text, "kvm_x86_exit: a=170 exit_reason=48 isa=1 guest_rip=4660 "
					  "info1=48879 info2=77");
		assert_int_equal(s->ops->next(s, 0, &ev), 1);
		assert_int_equal(ev.kind, VMS_K_SCHED_SWITCH);
		assert_int_equal(ev.ts, 0xfffffff0ull);
		assert_int_equal(ev.tid, 42);
		assert_int_equal(ev.f[0], 42);
		assert_int_equal(ev.f[1], 1);
		assert_int_equal(ev.f[2], 43);
		assert_int_equal(ev.f[3], 20);
		assert_string_equal(ev.s[0], "prev-thread");
		assert_int_equal(s->ops->next(s, 0, &ev), 1);
		check_exit(&ev, 0x100000020ull, 43, 12, 0xfedcba9876543210ull);
		assert_int_equal(s->ops->next(s, 0, &ev), 0);
		assert_int_equal(s->ops->rewind(s), 0);
	}
	vms_source_close(s);
}

/* set_wanted: an unwanted kind keeps its kind, time, tid and CPU, its fields are skipped
 * (zero, no strings), and the events after it are read at the right place. */
static void test_filter(void **state)
{
	(void)state;
	char dir[2100];
	snprintf(dir, sizeof dir, "%.2000s/t", vms_test_tmpdir("ctf-filter"));
	make_large(dir, 0);
	struct vms_source *s = open_ok(dir);
	assert_non_null(s->ops->set_wanted);
	bool wanted[VMS_K_COUNT] = {false};
	wanted[VMS_K_KVM_EXIT] = true;
	s->ops->set_wanted(s, wanted);
	struct vms_event ev;
	assert_int_equal(s->ops->next(s, 0, &ev), 1);
	check_exit(&ev, 0xffffff10u, 41, 48, 0x1234);
	assert_int_equal(s->ops->next(s, 0, &ev), 1);
	assert_int_equal(ev.kind, VMS_K_SCHED_SWITCH);
	assert_int_equal(ev.ts, 0xfffffff0ull);
	assert_int_equal(ev.tid, 42);
	assert_int_equal(ev.cpu, 3);
	assert_int_equal(ev.f[0], 0);
	assert_int_equal(ev.f[2], 0);
	assert_null(ev.s[0]);
	assert_int_equal(s->ops->next(s, 0, &ev), 1);
	check_exit(&ev, 0x100000020ull, 43, 12, 0xfedcba9876543210ull);
	/* all kinds again */
	s->ops->set_wanted(s, NULL);
	assert_int_equal(s->ops->rewind(s), 0);
	assert_int_equal(s->ops->next(s, 0, &ev), 1);
	assert_int_equal(s->ops->next(s, 0, &ev), 1);
	assert_int_equal(ev.f[2], 43);
	assert_string_equal(ev.s[1], "next-thread-name");
	vms_source_close(s);
}

/* The error a damaged event gives, with and without a filter. */
static void cut_error(size_t cut, bool filter, char *msg, size_t len)
{
	char dir[2100];
	snprintf(dir, sizeof dir, "%.2000s/t", vms_test_tmpdir("ctf-cut"));
	make_large(dir, cut);
	struct vms_source *s = open_ok(dir);
	bool wanted[VMS_K_COUNT] = {false};
	if (filter)
		s->ops->set_wanted(s, wanted);
	struct vms_event ev;
	int r;
	while ((r = s->ops->next(s, 0, &ev)) > 0)
		;
	assert_true(r < 0);
	snprintf(msg, len, "%s", s->err.msg);
	vms_source_close(s);
}

/* A packet that ends inside an event: the field it ends in, whether the event's fields are
 * read or skipped (filter), wherever in a run of fields or in a header it ends. */
static void test_filter_damage(void **state)
{
	(void)state;
	static const struct {
		size_t cut;
		const char *what;
	} cases[] = {
		{158, "event field past the packet content at byte offset 156"}, /* prev_state */
		{123, "event field past the packet content at byte offset 120"}, /* extended ts */
		{117, "event field past the packet content at byte offset 116"}, /* extended id */
		{140, "sequence or array longer than the packet at byte offset 132"}, /* prev_comm */
		{191, "event field past the packet content at byte offset 190"}, /* compact ts */
		{199, "event field past the packet content at byte offset 200"}, /* fields' padding */
		{208, "event field past the packet content at byte offset 208"}, /* the 3 bits */
		{211, "event field past the packet content at byte offset 216"}, /* RIP's padding */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		for (int filter = 0; filter < 2; filter++) {
			char msg[1024];
			cut_error(cases[i].cut, filter, msg, sizeof msg);
			if (!strstr(msg, cases[i].what))
				fail_msg("cut at %zu, filter %d: %s", cases[i].cut, filter, msg);
		}
}

/* LTTng's other spellings, each onto its kind with the values put in: kvm_entry (vcpu_id,
 * rip), kvm_exit with `reason` (not exit_reason), sched_waking (no sched_wakeup class in the
 * trace), and the TCP header of net_dev_queue / netif_receive_skb / net_if_receive_skb nested
 * in a variant, as lttng-modules writes it (a packet without one stays OTHER). The second
 * packet claims a begin time below the first packet's last event: read whole, and the merge
 * counts the one event that goes backwards instead of stopping. */
static const char META_NAMES[] =
	"/* CTF 1.8 */\n"
	COMPACT_TYPES
	TRACE_AND_ENV
	"clock { name = monotonic; freq = 1000000000; offset_s = 0; offset = 0; };\n"
	PACKET_CONTEXT
	COMPACT_STREAM
	"event { name = kvm_entry; id = 1; stream_id = 0; fields := struct {\n"
	"  uint32_t _vcpu_id; uint64_t _rip; }; };\n"
	"event { name = kvm_exit; id = 2; stream_id = 0; fields := struct {\n"
	"  uint32_t _reason; uint64_t _guest_rip; uint32_t _isa; uint64_t _info1; uint64_t _info2;"
	" }; };\n"
	"event { name = sched_waking; id = 3; stream_id = 0; fields := struct {\n"
	"  integer { size = 8; align = 8; signed = 1; encoding = UTF8; } _comm[16];\n"
	"  uint32_t _tid; uint32_t _prio; uint32_t _target_cpu; }; };\n"
#define NET_FIELDS \
	"  uint64_t _skbaddr;\n" \
	"  enum : uint8_t { unknown = 0, tcp = 6 } _transport_header_type;\n" \
	"  variant <_transport_header_type> { uint8_t unknown;\n" \
	"    struct { uint32_t _seq; uint32_t _ack_seq; uint8_t _flags; } tcp; }" \
	" _transport_header;\n"
	"event { name = net_dev_queue; id = 4; stream_id = 0; fields := struct {\n" NET_FIELDS
	"}; };\n"
	"event { name = netif_receive_skb; id = 5; stream_id = 0; fields := struct {\n" NET_FIELDS
	"}; };\n"
	"event { name = net_if_receive_skb; id = 6; stream_id = 0; fields := struct {\n" NET_FIELDS
	"}; };\n";

static void net(struct buf *b, uint32_t id, uint32_t ts, bool tcp, uint32_t seq)
{
	compact(b, id, ts);
	u64(b, 0xffff8880deadbeefull);
	u8(b, tcp ? 6 : 0);
	if (!tcp) {
		u8(b, 0);
		return;
	}
	u32(b, seq);
	u32(b, seq + 1000);
	u8(b, 0x18);
}

static void kvm_exit_old(struct buf *b, uint32_t ts, uint32_t reason)
{
	compact(b, 2, ts);
	u32(b, reason);
	u64(b, 0xffffffff81000000ull + reason);
	u32(b, 1);
	u64(b, 7);
	u64(b, 8);
}

static void kvm_entry_old(struct buf *b, uint32_t ts, uint32_t vcpu)
{
	compact(b, 1, ts);
	u32(b, vcpu);
	u64(b, 0x401000);
}

static void make_names(const char *dir)
{
	static struct buf b;
	start_trace(dir, META_NAMES, &b);
	size_t at = packet(&b, 1000, 0);
	kvm_entry_old(&b, 1100, 2);
	kvm_exit_old(&b, 1200, 30);
	compact(&b, 3, 1300);
	char comm[16] = "waker";
	put(&b, comm, 16);
	u32(&b, 4242);
	u32(&b, 120);
	u32(&b, 1);
	net(&b, 4, 1400, true, 5000);
	net(&b, 4, 1500, false, 0);
	net(&b, 5, 1600, true, 6000);
	net(&b, 6, 1700, true, 7000);
	end_packet(&b, 0, at);
	size_t p2 = b.n;
	at = packet(&b, 1050, 0); /* below 1700: the packets overlap */
	kvm_entry_old(&b, 1060, 3);
	kvm_exit_old(&b, 1800, 12);
	end_packet(&b, p2, at);
	write_file(dir, "channel0_3", b.b, b.n);
}

struct seen {
	uint64_t n, backwards_flagged, t[16];
};

static void on_event(void *ctx, const struct vms_event *ev, uint64_t t)
{
	struct seen *s = ctx;
	if (ev->flags & VMS_EVF_TIME_BACKWARDS)
		s->backwards_flagged++;
	if (s->n < 16)
		s->t[s->n] = t;
	s->n++;
}

/* The directory as one machine through the session's merge, every event seen. */
static struct vms_session *merge_all(const char *dir, struct seen *seen)
{
	const char *paths[1] = {dir};
	struct vms_error err = {0};
	struct vms_session_opts o = {0};
	struct vms_session *ss = vms_session_open(paths, 1, &o, &err);
	if (!ss)
		fail_msg("%s", err.msg);
	if (vms_session_iterate(ss, on_event, seen, &err) < 0)
		fail_msg("%s", err.msg);
	return ss;
}

static void test_names_and_backwards(void **state)
{
	(void)state;
	char dir[2100];
	snprintf(dir, sizeof dir, "%.2000s/t", vms_test_tmpdir("ctf-names"));
	make_names(dir);
	struct vms_source *s = open_ok(dir);
	struct vms_event ev;
	assert_int_equal(s->ops->next(s, 0, &ev), 1);
	assert_int_equal(ev.kind, VMS_K_KVM_ENTRY);
	assert_int_equal(ev.f[0], 2);
	assert_int_equal(ev.f[1], 0x401000);
	assert_int_equal(s->ops->next(s, 0, &ev), 1);
	assert_int_equal(ev.kind, VMS_K_KVM_EXIT);
	assert_int_equal(ev.f[0], 30); /* `reason` */
	assert_int_equal(ev.f[1], 1);
	assert_int_equal(ev.f[2], 0xffffffff81000000ull + 30);
	assert_int_equal(ev.f[3], 7);
	assert_int_equal(ev.f[4], 8);
	assert_int_equal(s->ops->next(s, 0, &ev), 1);
	assert_int_equal(ev.kind, VMS_K_SCHED_WAKEUP);
	assert_int_equal(ev.f[0], 4242);
	assert_int_equal(ev.f[1], 1);
	assert_int_equal(ev.f[2], 120);
	assert_string_equal(ev.s[0], "waker");
	static const struct {
		uint16_t kind;
		uint64_t seq;
	} nets[] = {
		{VMS_K_NET_SEND, 5000}, {VMS_K_OTHER, 0}, {VMS_K_NET_RECV, 6000},
		{VMS_K_NET_RECV, 7000},
	};
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(s->ops->next(s, 0, &ev), 1);
		assert_int_equal(ev.kind, nets[i].kind);
		if (nets[i].kind == VMS_K_OTHER)
			continue;
		assert_int_equal(ev.f[0], nets[i].seq);
		assert_int_equal(ev.f[1], nets[i].seq + 1000);
		assert_int_equal(ev.f[2], 0x18);
	}
	assert_int_equal(s->ops->next(s, 0, &ev), 1);
	assert_int_equal(ev.ts, 1060); /* the second packet's first event, as written */
	assert_int_equal(ev.kind, VMS_K_KVM_ENTRY);
	assert_int_equal(ev.f[0], 3);
	assert_int_equal(s->ops->next(s, 0, &ev), 1);
	assert_int_equal(ev.ts, 1800);
	assert_int_equal(s->ops->next(s, 0, &ev), 0);
	vms_source_close(s);

	/* the merge: all 9 events, the one at 1060 flagged and counted, none lost */
	struct seen seen = {0};
	struct vms_session *ss = merge_all(dir, &seen);
	assert_int_equal(seen.n, 9);
	assert_int_equal(seen.backwards_flagged, 1);
	assert_int_equal(vms_session_backwards(ss), 1);
	assert_int_equal(seen.t[8], 1800);
	vms_session_free(ss);
}

/* PID namespaces as lttng-modules 2.x writes them: sched_process_fork with the child's tid in
 * each namespace level (__vtids_length, _vtids) and the namespaces' inodes, and
 * lttng_statedump_process_pid_ns (2.11+: one record per level of a thread). babeltrace2 reads
 * this trace with the same values (_vtids_length = 3, vtids [43, 4, 2], ns_inum 654321). */
static const char META_NS[] =
	"/* CTF 1.8 */\n"
	COMPACT_TYPES
	TRACE_AND_ENV
	"clock { name = monotonic; freq = 1000000000; offset_s = 0; offset = 0; };\n"
	PACKET_CONTEXT
	COMPACT_STREAM
	"event { name = sched_process_fork; id = 1; stream_id = 0; fields := struct {\n"
	"  integer { size = 8; align = 8; signed = 1; encoding = UTF8; } _parent_comm[16];\n"
	"  uint32_t _parent_tid; uint32_t _parent_pid; uint32_t _parent_ns_inum;\n"
	"  integer { size = 8; align = 8; signed = 1; encoding = UTF8; } _child_comm[16];\n"
	"  uint32_t _child_tid; uint8_t __vtids_length; uint32_t _vtids[ __vtids_length ];\n"
	"  uint32_t _child_pid; uint32_t _child_ns_inum; }; };\n"
	"event { name = lttng_statedump_process_pid_ns; id = 2; stream_id = 0; fields := struct {\n"
	"  uint32_t _tid; uint32_t _vtid; uint32_t _pid; uint32_t _vpid; uint32_t _ppid;\n"
	"  uint32_t _vppid; uint32_t _ns_level; uint32_t _ns_inum; }; };\n";

static void test_namespaces(void **state)
{
	(void)state;
	char dir[2100];
	snprintf(dir, sizeof dir, "%.2000s/t", vms_test_tmpdir("ctf-ns"));
	static struct buf b;
	start_trace(dir, META_NS, &b);
	size_t at = packet(&b, 1000, 0);
	compact(&b, 1, 1100); /* 42 forks 43 in ns 987654, three levels: tids 43, 4, 2 */
	char pc[16] = "init", cc[16] = "myapp";
	put(&b, pc, 16);
	u32(&b, 42);
	u32(&b, 42);
	u32(&b, 987654);
	put(&b, cc, 16);
	u32(&b, 43);
	u8(&b, 3);
	u32(&b, 43);
	u32(&b, 4);
	u32(&b, 2);
	u32(&b, 43);
	u32(&b, 987654);
	compact(&b, 2, 1200); /* 41 at level 1 in ns 654321 (vtid 2) */
	uint32_t sd[] = {41, 2, 41, 2, 40, 1, 1, 654321};
	for (size_t i = 0; i < 8; i++)
		u32(&b, sd[i]);
	end_packet(&b, 0, at);
	write_file(dir, "channel0_3", b.b, b.n);
	struct vms_source *s = open_ok(dir);
	struct vms_event ev;
	assert_int_equal(s->ops->next(s, 0, &ev), 1);
	assert_int_equal(ev.kind, VMS_K_PROCESS_FORK);
	assert_int_equal(ev.f[0], 42);
	assert_int_equal(ev.f[1], 43);
	assert_int_equal(ev.f[2], 43);
	assert_int_equal(ev.f[3], 987654); /* child_ns_inum, after the sequence */
	assert_int_equal(ev.f[4], 3);      /* the levels: __vtids_length */
	assert_string_equal(ev.s[0], "myapp");
	assert_int_equal(s->ops->next(s, 0, &ev), 1);
	assert_int_equal(ev.kind, VMS_K_THREAD_NAME);
	assert_int_equal(ev.f[0], 41);
	assert_int_equal(ev.f[1], 41);
	assert_int_equal(ev.f[2], 654321);
	assert_int_equal(ev.f[3], 1);
	assert_int_equal(s->ops->next(s, 0, &ev), 0);
	vms_source_close(s);
}

/* A UST trace as lttng-ust writes one (env domain "ust", "provider:event" names, the thread
 * in a vtid context), beside a kernel trace in one LTTng session directory: one machine,
 * the UST event a trace point with its integers and strings in order and the vtid as its
 * thread, both traces' events on one timebase in the merge. */
static const char META_UST[] =
	"/* CTF 1.8 */\n"
	COMPACT_TYPES
	"trace { major = 1; minor = 8; uuid = \"00112233-4455-6677-8899-aabbccddeeff\";\n"
	"  byte_order = le;\n"
	"  packet.header := struct { uint32_t magic; uint8_t uuid[16]; uint32_t stream_id; };\n"
	"};\n"
	"env { domain = \"ust\"; tracer_name = \"lttng-ust\"; };\n"
	"clock { name = monotonic; freq = 1000000000; offset_s = 100; offset = 0; };\n"
	PACKET_CONTEXT
	COMPACT_HEADER
	"stream { id = 0; event.header := struct event_header_compact;\n"
	"  packet.context := struct packet_context;\n"
	"  event.context := struct { integer { size = 32; align = 8; signed = 1; } _vtid; }; };\n"
	"event { name = \"vmm:io_start\"; id = 1; stream_id = 0; fields := struct {\n"
	"  uint64_t _addr; string _what; uint32_t _len; }; };\n";

static void test_ust_session(void **state)
{
	(void)state;
	char base[2100], d[2200];
	session_dirs("ctf-ust", base, d);
	static struct buf b;
	start_trace(d, META_UST, &b);
	size_t at = packet(&b, 1000, 0);
	compact(&b, 1, 1600); /* between the kernel trace's first two events (1500, 2^27 + 100) */
	u32(&b, 4321);        /* vtid */
	u64(&b, 0xfee00000);
	put(&b, "mmio", 5);
	u32(&b, 4);
	end_packet(&b, 0, at);
	write_file(d, "channel0_3", b.b, b.n);
	struct vms_source *s = open_ok(base);
	assert_string_equal(s->meta.format, "CTF 1.8 (LTTng session, 2 traces)");
	assert_int_equal(s->ops->nr_streams(s), 2);
	struct vms_event ev;
	assert_int_equal(s->ops->next(s, 1, &ev), 1);
	assert_int_equal(ev.kind, VMS_K_TRACEPOINT);
	assert_string_equal(s->meta.type_names[ev.type], "vmm:io_start");
	assert_int_equal(ev.ts, 1600);
	assert_int_equal(ev.tid, 4321);
	assert_int_equal(ev.f[0], 0xfee00000);
	assert_int_equal(ev.f[1], 4);
	assert_string_equal(ev.s[0], "mmio");
	assert_int_equal(s->ops->next(s, 1, &ev), 0);
	vms_source_close(s);
	/* the merge: kernel 1500, UST 1600, then the kernel's other three */
	struct seen seen = {0};
	struct vms_session *ss = merge_all(base, &seen);
	assert_int_equal(vms_session_nr_sources(ss), 1);
	assert_int_equal(seen.n, 5);
	assert_int_equal(seen.t[0] + 100, seen.t[1]);
	assert_int_equal(vms_session_backwards(ss), 0);
	vms_session_free(ss);
}

/* An event class of no bits (no header, no fields) in a packet with content: damage, said
 * once at the event, not an endless stream of events. */
static void test_event_of_no_bits(void **state)
{
	(void)state;
	char dir[2100];
	snprintf(dir, sizeof dir, "%s/nobits", vms_test_tmpdir("ctf-decode-nobits"));
	static struct buf b;
	start_trace(dir,
		    "/* CTF 1.8 */\n"
		    "typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
		    "typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
		    "clock { name = c; freq = 1000000000; };\n"
		    "trace { major = 1; minor = 8; byte_order = le;\n"
		    "  packet.header := struct { uint32_t magic; }; };\n"
		    "stream { packet.context := struct { uint64_t content_size;\n"
		    "  uint64_t packet_size; }; };\n"
		    "event { name = empty; };\n", &b);
	u32(&b, 0xC1FC1FC1);
	u64(&b, 64 * 8);
	u64(&b, 64 * 8);
	while (b.n < 64)
		u8(&b, 0);
	write_file(dir, "chan_0", b.b, b.n);
	struct vms_source *src = open_ok(dir);
	struct vms_event ev;
	assert_true(src->ops->next(src, 0, &ev) < 0);
	assert_non_null(strstr(src->err.msg, "event of no bits at byte offset 20"));
	vms_source_close(src);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode),
		cmocka_unit_test(test_session),
		cmocka_unit_test(test_sequence_past_the_packet),
		cmocka_unit_test(test_large_header),
		cmocka_unit_test(test_filter),
		cmocka_unit_test(test_filter_damage),
		cmocka_unit_test(test_names_and_backwards),
		cmocka_unit_test(test_ust_session),
		cmocka_unit_test(test_namespaces),
		cmocka_unit_test(test_event_of_no_bits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
