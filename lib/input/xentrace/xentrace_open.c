/* xentrace: opening a file and the one walk that checks it.
 *
 * Layout (xen/include/public/trace.h, tools/xentrace/xentrace.c), host byte order: the file
 * is a chain of per-CPU blocks; each starts with a TRC_TRACE_CPU_CHANGE record without TSC
 * and with two extra words (the CPU, the size of the block's records in bytes), followed by
 * that CPU's records. A record is a u32 header `event:28 | extra_words:3 | cycles_present:1`,
 * a u64 TSC when bit 31 is set, then 0..7 u32 extra words.
 *
 * The file is mapped. At open every block and record is walked once: the framing of the
 * whole file is checked before any event is used (a damaged file is refused with the byte
 * offset of the damage), and what `info` shows is counted (CPUs, domains and vCPUs, record
 * classes, lost records). A file cut short inside its last block (xentrace killed) is read up
 * to its last complete record and flagged (meta.ended_abruptly). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xentrace.h"

static const char *const class_names[VMS_XEN_NR_CLASSES] = {
	"gen", "sched", "dom0op", "hvm", "mem", "pv", "shadow", "hw", "guest", "unknown",
};

const char *vms_xen_class_name(uint32_t cls)
{
	return cls < VMS_XEN_NR_CLASSES ? class_names[cls] : "unknown";
}

const char *vms_xen_runstate_name(unsigned state)
{
	static const char *const n[] = { "running", "runnable", "blocked", "offline" };
	return state < 4 ? n[state] : "?";
}

static const char *const type_names[VMS_XEN_T_COUNT] = {
	"xen:lost_records", "xen:wrap_buffer", "xen:lost_records_end", "xen:runstate_change", "xen:runstate_continue",
	"xen:sched_switch", "xen:vmentry", "xen:vmexit", "xen:gen", "xen:sched", "xen:dom0op",
	"xen:hvm", "xen:mem", "xen:pv", "xen:shadow", "xen:hw", "xen:guest", "xen:unknown",
};

static const uint16_t type_kinds[VMS_XEN_T_COUNT] = {
	[VMS_XEN_T_RUNSTATE_CHANGE] = VMS_K_SCHED_SWITCH,
	[VMS_XEN_T_RUNSTATE_CONTINUE] = VMS_K_OTHER,
	[VMS_XEN_T_VMENTRY] = VMS_K_KVM_ENTRY,
	[VMS_XEN_T_VMEXIT] = VMS_K_KVM_EXIT,
};

void xt_give_back(struct xt_reader *r, uint64_t upto)
{
	const uint64_t keep = 2u << 20;
	/* upto comes from a stream's position, which a damaged block header can put past the
	 * file: madvise(MADV_DONTNEED) past the mapping zeroes whatever the process has mapped
	 * there (the fuzzer saw the main thread's TLS header zeroed: a SEGV in calloc, later) */
	if (upto > r->size)
		upto = r->size;
	if (upto < keep)
		return;
	uint64_t end = (upto - keep) & ~(uint64_t)(keep - 1);
	if (end <= r->dropped)
		return;
	madvise((void *)(r->map + r->dropped), end - r->dropped, MADV_DONTNEED);
	r->dropped = end;
}

uint64_t vms_xen_cycles_to_ns(uint64_t cycles, uint64_t hz)
{
	__extension__ typedef unsigned __int128 u128;
	if (!hz)
		hz = VMS_XEN_DEFAULT_CPU_HZ;
	return (uint64_t)((u128)cycles * 1000000000u / hz);
}

/* ---- the walk ---- */

/* What the walk keeps per CPU number (one entry per number up to the highest seen) */
struct scan_cpu {
	int32_t cur;        /* domain << 16 | vcpu running, -1 unknown */
	bool seen, has_tsc;
	uint64_t first_tsc;
	uint64_t last_off;  /* where the CPU's last record is */
	uint64_t first_blk; /* where its first block is */
};

#define XT_DOM_PAGE 256u

/* The per-CPU table grows with the highest CPU number the file names and the domain slots by
 * pages of 256 ids as the file names them, not to the format's limits (4096 CPUs, 32768
 * domains: 150 KiB zeroed per open, most of the time of opening a small file) */
struct scan {
	struct xt_reader *r;
	const char *path;
	struct vms_error *err;
	struct scan_cpu *cpu;
	uint32_t nr_cpu;                 /* entries in cpu: the highest CPU number seen + 1 */
	/* domain id -> index + 1 in r->dom, by pages */
	uint16_t *dom_slot[XT_NR_DOMIDS / XT_DOM_PAGE];
	uint32_t nr_dom, cap_dom;
	/* per domain (index in r->dom): the vCPUs records show running, a bitmap of 4096 bits
	 * made at the first of them (NULL none). A vCPU exists when it runs: a record that only
	 * names vCPU 4095 gives its domain no vCPU, and one that runs it gives one, not 4096
	 * (a domain was sized by the highest vCPU named: 1.6 KB of records made 409,600 vCPUs
	 * with a name, a model thread and a report line each) */
	uint64_t **ran;
};

#define XT_RAN_WORDS (XT_MAX_VCPUS / 64)

static void scan_free(struct scan *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; i < XT_NR_DOMIDS / XT_DOM_PAGE; i++)
		free(s->dom_slot[i]);
	for (uint32_t i = 0; s->ran && i < s->nr_dom; i++)
		free(s->ran[i]);
	free(s->ran);
	free(s->cpu);
	free(s);
}

/* s->cpu[cpu] exists (cpu < XT_MAX_CPUS, checked by the caller); false when out of memory */
static bool cpu_slot(struct scan *s, uint32_t cpu)
{
	if (cpu < s->nr_cpu)
		return true;
	uint32_t n = s->nr_cpu ? s->nr_cpu : 8;
	while (n <= cpu)
		n *= 2;
	if (n > XT_MAX_CPUS)
		n = XT_MAX_CPUS;
	struct scan_cpu *c = realloc(s->cpu, n * sizeof *c);
	if (!c)
		return false;
	for (uint32_t i = s->nr_cpu; i < n; i++)
		c[i] = (struct scan_cpu){ .cur = -1 };
	s->cpu = c;
	s->nr_cpu = n;
	return true;
}

static int damage(struct scan *s, uint64_t off, const char *what)
{
	return vms_error_set(s->err, VMS_ERR_FORMAT, "%s: %s at byte offset %llu", s->path, what,
			     (unsigned long long)off);
}

static struct vms_xen_domain *domain(struct scan *s, uint32_t id)
{
	if (id >= XT_NR_DOMIDS)
		return NULL;
	uint16_t **page = &s->dom_slot[id / XT_DOM_PAGE];
	if (!*page && !(*page = calloc(XT_DOM_PAGE, sizeof **page)))
		return NULL;
	uint16_t *slot = &(*page)[id % XT_DOM_PAGE];
	if (*slot)
		return &s->r->dom[*slot - 1];
	if (s->nr_dom == s->cap_dom) {
		uint32_t n = s->cap_dom ? 2 * s->cap_dom : 8;
		struct vms_xen_domain *d = realloc(s->r->dom, n * sizeof *d);
		if (!d)
			return NULL;
		s->r->dom = d;
		uint64_t **ran = realloc(s->ran, n * sizeof *ran);
		if (!ran)
			return NULL;
		s->ran = ran;
		s->cap_dom = n;
	}
	s->ran[s->nr_dom] = NULL;
	struct vms_xen_domain *d = &s->r->dom[s->nr_dom++];
	*d = (struct vms_xen_domain){ .id = id };
	*slot = (uint16_t)s->nr_dom;
	return d;
}

/* domain() with its common case inline: the domain is known (a call per runstate record and
 * per VMEXIT/VMENTRY cost the walk 1 M instructions on xen/xentrace.bin) */
static inline struct vms_xen_domain *dom_of(struct scan *s, uint32_t id)
{
	const uint16_t *page = id < XT_NR_DOMIDS ? s->dom_slot[id / XT_DOM_PAGE] : NULL;
	uint16_t k = page ? page[id % XT_DOM_PAGE] : 0;
	return k ? &s->r->dom[k - 1] : domain(s, id);
}

/* One record of CPU `cpu` at `off` that is not a scheduler internal (walk counted it); checks
 * what its kind needs. By class first: most of these are HVM records that need nothing. */
static int scan_record(struct scan *s, uint32_t cpu, uint64_t off, uint32_t h)
{
	struct xt_reader *r = s->r;
	struct vms_xen_info *in = &r->info;
	uint32_t ev = h & 0x0fffffffu, extra = (h >> 28) & 7u;
	const uint8_t *data = r->map + off + (h >> 31 ? 12 : 4);
	switch (ev >> 16) {
	case 0x001: /* TRC_GEN */
		if (ev == VMS_XEN_TRC_CPU_CHANGE)
			return damage(s, off, "CPU-change record inside a block");
		if (ev == VMS_XEN_TRC_LOST_RECORDS) {
			if (extra < 4)
				return damage(s, off, "lost-records marker without its four words");
			in->lost_markers++;
			in->lost_records += xt_rd32(data);
			s->cpu[cpu].cur = -1;
		} else if (ev == VMS_XEN_TRC_WRAP_BUFFER) {
			in->wraps++;
		}
		return 0;
	case 0x002: { /* TRC_SCHED_MIN (the walk took the scheduler's internals) */
		if (!xt_is_runstate_change(ev) && ev != VMS_XEN_TRC_RUNSTATE_CONTINUE)
			return 0;
		if (extra < 1)
			return damage(s, off, "runstate record without its domain/vCPU word");
		uint32_t dv = xt_rd32(data), dom = dv >> 16, vcpu = dv & 0xffff;
		if (dom > VMS_XEN_IDLE_DOMAIN)
			return damage(s, off, "runstate record of a domain id above the idle domain's");
		if (vcpu >= XT_MAX_VCPUS)
			return damage(s, off, "runstate record of a vCPU number above 4095");
		uint32_t old = (ev >> 8) & 0xf, new = (ev >> 4) & 0xf;
		if (xt_is_runstate_change(ev) && (old > VMS_XEN_OFFLINE || new > VMS_XEN_OFFLINE))
			return damage(s, off, "runstate change to or from an unknown runstate");
		struct vms_xen_domain *d = dom_of(s, dom);
		if (!d)
			return vms_error_nomem_at(s->err, s->path, off);
		if (ev == VMS_XEN_TRC_RUNSTATE_CONTINUE || new == VMS_XEN_RUNNING) {
			uint64_t **ran = &s->ran[d - r->dom];
			if (!*ran && !(*ran = calloc(XT_RAN_WORDS, sizeof **ran)))
				return vms_error_nomem_at(s->err, s->path, off);
			(*ran)[vcpu / 64] |= 1ull << (vcpu % 64);
			s->cpu[cpu].cur = (int32_t)dv;
		}
		else if (old == VMS_XEN_RUNNING && s->cpu[cpu].cur == (int32_t)dv)
			s->cpu[cpu].cur = -1;
		return 0;
	}
	case 0x008: /* TRC_HVM */
		if (xt_is_vmexit(ev)) {
			uint32_t need = (ev & VMS_XEN_TRC_64_FLAG) ? 3 : 2;
			if (extra < need)
				return damage(s, off, "VMEXIT record without its reason and guest address");
			uint32_t isa = (ev & ~VMS_XEN_TRC_64_FLAG) == VMS_XEN_TRC_SVM_EXIT ? 2 : 1;
			if (!in->isa)
				in->isa = isa;
		} else if (ev != VMS_XEN_TRC_VMENTRY) {
			return 0;
		}
		/* a domain is HVM when it exits to Xen (other HVM records, such as emulated
		 * timers, are also written while dom0 runs) */
		if (s->cpu[cpu].cur >= 0) {
			struct vms_xen_domain *d = dom_of(s, (uint32_t)s->cpu[cpu].cur >> 16);
			if (d)
				d->hvm = true;
		}
		return 0;
	default:
		return 0;
	}
}

/* The record before the one at `p` in the block whose records begin at `body` (UINT64_MAX
 * none): the records up to p were found whole. */
static uint64_t record_before(const uint8_t *m, uint64_t body, uint64_t p)
{
	uint64_t prev = UINT64_MAX;
	for (uint64_t q = body; q < p; q += xt_size(xt_rd32(m + q)))
		prev = q;
	return prev;
}

/* A block's offset kept for seek (xentrace_seek.c): one in XT_MARK_EVERY, so at most one
 * word per 64 blocks of at least 12 bytes each */
static int add_mark(struct xt_reader *r, uint64_t off)
{
	if ((r->nr_marks & (r->nr_marks - 1)) == 0) { /* (0, 1, 2, 4...: doubled) */
		uint64_t n = r->nr_marks ? 2 * r->nr_marks : 1;
		uint64_t *m = realloc(r->marks, n * sizeof *m);
		if (!m)
			return -1;
		r->marks = m;
	}
	r->marks[r->nr_marks++] = off;
	return 0;
}

/* The walk maps the file's pages 2 MiB at a time, ahead of it (MADV_POPULATE_READ, Linux
 * 5.14): one call instead of a page fault per 64 KiB (1% of report's CPU-time samples on
 * xen/xentrace.bin); the pages stay bounded (xt_give_back drops them 2 MiB behind). */
#define XT_POPULATE (2u << 20)

static void populate_ahead(struct xt_reader *r, uint64_t off, uint64_t *populated)
{
#ifdef MADV_POPULATE_READ
	if (off + XT_POPULATE / 2 <= *populated || *populated >= r->size)
		return;
	uint64_t from = *populated > off ? *populated : off & ~(uint64_t)4095;
	uint64_t len = r->size - from < XT_POPULATE ? r->size - from : XT_POPULATE;
	madvise((void *)(r->map + from), len, MADV_POPULATE_READ); /* (a hint: failure is fine) */
	*populated = from + len;
#else
	(void)r, (void)off, (void)populated;
#endif
}

/* The walk is the first to read the file (from the page cache): the hardware prefetchers
 * stop at each 4 KiB page, so it prefetches a page ahead itself (perf, cpu-clock
 * samples of 150 runs of report on xen/xentrace.bin: the walk 2,303 -> 1,607) */
#define XT_WALK_PREFETCH 4096

/* The one walk over the records at open. It keeps only what the model needs before the first
 * event (the domains and their vCPUs: a machine each, linked before the analysis pass) and
 * what a damaged file must be refused for before any event is used (the framing, the words
 * of the records that the Xen model reads), with the counts `info` shows. Per record it
 * reads the header only, in locals; what a TSC says is left to the stream pass (a CPU's
 * first TSC excepted, found once). */
static int walk(struct scan *s)
{
	struct xt_reader *r = s->r;
	const uint8_t *m = r->map;
	uint64_t size = r->size, off = 0, populated = 0;
	r->valid_end = 0;
	while (off < size) {
		populate_ahead(r, off, &populated);
		if (size - off < 12) {
			r->info.truncated = true;
			r->info.truncated_at = off;
			break;
		}
		struct xt_rec h;
		xt_decode(m + off, &h);
		if (h.event != VMS_XEN_TRC_CPU_CHANGE || h.has_tsc || h.extra != 2)
			return damage(s, off, "expected a CPU-change block header");
		uint32_t cpu = xt_rd32(m + off + 4), win = xt_rd32(m + off + 8);
		if (cpu >= XT_MAX_CPUS)
			return damage(s, off + 4, "CPU number above 4095");
		if (win % 4)
			return damage(s, off + 8, "block size not a multiple of 4");
		if (r->info.blocks % XT_MARK_EVERY == 0 && add_mark(r, off) < 0)
			return vms_error_nomem_at(s->err, s->path, off);
		r->info.blocks++;
		if (!cpu_slot(s, cpu))
			return vms_error_nomem_at(s->err, s->path, off);
		if (!s->cpu[cpu].seen)
			s->cpu[cpu].first_blk = off;
		s->cpu[cpu].seen = true;
		uint64_t body = off + 12, end = body + win;
		/* a block cut by the file's end is read to its last whole record: its end is put
		 * on a record boundary (a multiple of 4 from the body), so that below p < end
		 * always leaves a whole header to read */
		bool cut = end > size;
		if (cut)
			end = body + ((size - body) & ~(uint64_t)3);
		if (!s->cpu[cpu].has_tsc) {
			/* the CPU's first TSC (records without one before it take it) */
			for (uint64_t q = body; end - q >= 4 && xt_size(xt_rd32(m + q)) <= end - q;
			     q += xt_size(xt_rd32(m + q))) {
				if (xt_rd32(m + q) >> 31) {
					s->cpu[cpu].has_tsc = true;
					s->cpu[cpu].first_tsc = xt_rd64(m + q + 4);
					break;
				}
			}
		}
		/* every record is counted here, in locals (stores through the info would have to
		 * be assumed to alias the mapping). The scheduler's internals, most of a real
		 * file, only have their header read: whether they fit in the block is checked
		 * once, after the loop (a record that crosses the end is the last one the loop
		 * takes); the others (runstate, VMENTRY/VMEXIT, TRC_GEN records: scan_record)
		 * are checked before their words are read. */
		uint64_t p = body, last = UINT64_MAX, ntsc = 0, nsched = 0, nother = 0;
		while (p < end) {
			__builtin_prefetch(m + p + XT_WALK_PREFETCH);
			uint32_t h = xt_rd32(m + p);
			uint32_t rsize = xt_size(h);
			if ((h & 0x0fff0000u) == 0x00020000u && (h & 0xf000u) != 0x1000u) {
				ntsc += h >> 31;
				nsched++;
				last = p;
				p += rsize;
				continue;
			}
			if (rsize > end - p)
				break;
			ntsc += h >> 31;
			nother++;
			r->info.class_records[xt_class(h & 0x0fffffffu)]++;
			if ((h & 0x0ffff000u) == 0x00021000u || (h & 0x0ffff000u) == 0x00081000u ||
			    (h & 0x0fff0000u) == 0x00010000u) {
				int rc = scan_record(s, cpu, p, h);
				if (rc)
					return rc;
			}
			last = p;
			p += rsize;
		}
		if (p > end) {
			/* the scheduler record at `last` crosses the end: it is not counted, and the
			 * CPU's last record is the one before it */
			p = last;
			ntsc -= xt_rd32(m + p) >> 31;
			nsched--;
			last = record_before(m, body, p);
		}
		if (p < end && !cut)
			return damage(s, p, "record crosses the end of its block");
		uint64_t n = nsched + nother;
		r->info.records += n;
		r->info.notsc_records += n - ntsc;
		r->info.class_records[1] += nsched; /* TRC_SCHED */
		if (last != UINT64_MAX)
			s->cpu[cpu].last_off = last;
		if (cut) {
			r->info.truncated = true;
			r->info.truncated_at = p;
			r->valid_end = p;
			return 0;
		}
		off = end;
		r->valid_end = off;
		xt_give_back(r, off);
	}
	return 0;
}

static int dom_cmp(const void *a, const void *b)
{
	const struct vms_xen_domain *x = a, *y = b;
	return x->id < y->id ? -1 : x->id > y->id;
}

static char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

/* Each domain's vCPUs seen running, ascending, from the walk's bitmaps (in r->vcpu_ids) */
static int domain_vcpus(struct xt_reader *r, const struct scan *s)
{
	uint64_t total = 0;
	for (uint32_t i = 0; i < s->nr_dom; i++)
		for (uint32_t w = 0; s->ran[i] && w < XT_RAN_WORDS; w++)
			total += (uint64_t)__builtin_popcountll(s->ran[i][w]);
	r->vcpu_ids = malloc((total ? total : 1) * sizeof *r->vcpu_ids);
	if (!r->vcpu_ids)
		return -1;
	uint32_t *ids = r->vcpu_ids;
	for (uint32_t i = 0; i < s->nr_dom; i++) {
		struct vms_xen_domain *d = &r->dom[i];
		d->vcpus = ids;
		for (uint32_t w = 0; s->ran[i] && w < XT_RAN_WORDS; w++)
			for (uint64_t b = s->ran[i][w]; b; b &= b - 1)
				*ids++ = w * 64 + (uint32_t)__builtin_ctzll(b);
		d->nr_vcpus = (uint32_t)(ids - d->vcpus);
	}
	return 0;
}

/* meta: types, vCPU thread names, domains */
static int fill_meta(struct vms_source *src, struct xt_reader *r, struct scan *s)
{
	struct vms_trace_meta *m = &src->meta;
	snprintf(m->format, sizeof m->format, "xentrace%s",
		 r->info.isa == 1 ? " (VMX)" : r->info.isa == 2 ? " (SVM)" : "");
	snprintf(m->clock, sizeof m->clock, "tsc");
	m->ts_in_ns = false;
	m->nr_types = VMS_XEN_T_COUNT;
	m->type_names = calloc(VMS_XEN_T_COUNT, sizeof *m->type_names);
	m->type_kinds = calloc(VMS_XEN_T_COUNT, sizeof *m->type_kinds);
	if (!m->type_names || !m->type_kinds)
		return -1;
	for (uint32_t t = 0; t < VMS_XEN_T_COUNT; t++) {
		if (!(m->type_names[t] = xstrdup(type_names[t])))
			return -1;
		m->type_kinds[t] = type_kinds[t];
	}
	m->lost_events = r->info.lost_records;
	m->ended_abruptly = r->info.truncated;
	/* streams = CPUs with blocks, ascending */
	uint32_t n = 0, top = 0;
	for (uint32_t c = 0; c < s->nr_cpu; c++)
		if (s->cpu[c].seen)
			n++, top = c + 1;
	m->nr_cpus = top;
	/* a CPU without any TSC of its own takes the earliest first TSC of the others */
	for (uint32_t c = 0; c < s->nr_cpu; c++)
		if (s->cpu[c].has_tsc && (!r->info.first_tsc || s->cpu[c].first_tsc < r->info.first_tsc))
			r->info.first_tsc = s->cpu[c].first_tsc;
	r->pcpu = calloc(n ? n : 1, sizeof *r->pcpu);
	/* (the streams are cache-line aligned: see struct xt_stream) */
	size_t st_bytes = (size_t)(n ? n : 1) * sizeof *r->st;
	r->st = aligned_alloc(_Alignof(struct xt_stream), st_bytes);
	if (!r->pcpu || !r->st)
		return -1;
	memset(r->st, 0, st_bytes);
	for (uint32_t c = 0, k = 0; c < s->nr_cpu; c++) {
		if (!s->cpu[c].seen)
			continue;
		r->pcpu[k] = c;
		r->st[k].cpu = c;
		r->st[k].first_tsc = s->cpu[c].has_tsc ? s->cpu[c].first_tsc : r->info.first_tsc;
		r->st[k].final_off = s->cpu[c].last_off;
		r->st[k].first_blk = s->cpu[c].first_blk;
		k++;
	}
	r->nr_st = n;
	r->info.nr_pcpus = n;
	r->info.pcpu = r->pcpu;
	if (domain_vcpus(r, s) != 0)
		return -1;
	if (s->nr_dom) /* (r->dom is NULL when no runstate record named a domain) */
		qsort(r->dom, s->nr_dom, sizeof *r->dom, dom_cmp);
	r->info.nr_domains = s->nr_dom;
	r->info.domains = r->dom;
	m->nr_xen_domains = s->nr_dom;
	m->xen_domains = r->dom;
	uint32_t nc = 0;
	for (uint32_t i = 0; i < s->nr_dom; i++)
		nc += r->dom[i].id == VMS_XEN_IDLE_DOMAIN ? 0 : r->dom[i].nr_vcpus;
	/* (names only for the vCPUs seen running: at most one per runstate record) */
	m->comm_tid = calloc(nc ? nc : 1, sizeof *m->comm_tid);
	m->comm_name = calloc(nc ? nc : 1, sizeof *m->comm_name);
	if (!m->comm_tid || !m->comm_name)
		return -1;
	for (uint32_t i = 0; i < s->nr_dom; i++) {
		if (r->dom[i].id == VMS_XEN_IDLE_DOMAIN)
			continue;
		for (uint32_t k = 0; k < r->dom[i].nr_vcpus; k++) {
			char name[24];
			uint32_t v = r->dom[i].vcpus[k];
			snprintf(name, sizeof name, "d%uv%u", r->dom[i].id, v);
			m->comm_tid[m->nr_comms] = VMS_XEN_TID(r->dom[i].id, v);
			if (!(m->comm_name[m->nr_comms] = xstrdup(name)))
				return -1;
			m->nr_comms++;
		}
	}
	return 0;
}

void vms_xentrace_set_cpu_hz(struct vms_source *src, uint64_t hz)
{
	if (!vms_source_is_xentrace(src))
		return;
	struct xt_reader *r = src->impl;
	r->info.cpu_hz = hz;
	r->info.cpu_hz_given = hz != 0;
}

/* stream side (xentrace_stream.c) */
extern const struct vms_source_ops vms_xentrace_ops;

bool vms_source_is_xentrace(const struct vms_source *src)
{
	return src && src->ops == &vms_xentrace_ops;
}

const struct vms_xen_info *vms_xentrace_info(const struct vms_source *src)
{
	return vms_source_is_xentrace(src) ? &((const struct xt_reader *)src->impl)->info : NULL;
}

void vms_xt_free(struct xt_reader *r)
{
	if (!r)
		return;
	xt_pool_stop(r); /* (its workers read the mapping) */
	if (r->map && r->map != MAP_FAILED && r->size)
		munmap((void *)r->map, r->size);
	if (r->fd >= 0)
		close(r->fd);
	free(r->st);
	free(r->pcpu);
	free(r->dom);
	free(r->vcpu_ids);
	free(r->marks);
	free(r);
}

struct vms_source *vms_xentrace_open(const char *path, struct vms_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL; /* a directory or unreadable: another reader's or open.c's to say */
	struct stat st;
	uint8_t head[12];
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 12 ||
	    pread(fd, head, 12, 0) != 12) {
		close(fd);
		return NULL;
	}
	/* the signature: a CPU-change record without TSC, two extra words, a sane CPU and size */
	struct xt_rec h;
	xt_decode(head, &h);
	if (h.event != VMS_XEN_TRC_CPU_CHANGE || h.has_tsc || h.extra != 2 ||
	    xt_rd32(head + 4) >= XT_MAX_CPUS || xt_rd32(head + 8) % 4) {
		close(fd);
		return NULL;
	}
	struct vms_source *src = calloc(1, sizeof *src);
	struct xt_reader *r = calloc(1, sizeof *r);
	struct scan *s = calloc(1, sizeof *s);
	if (!src || !r || !s) {
		close(fd);
		free(src);
		free(r);
		free(s);
		vms_error_nomem_at(err, path, 0);
		return NULL;
	}
	r->fd = fd;
	r->size = (size_t)st.st_size;
	r->map = mmap(NULL, r->size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (r->map == MAP_FAILED) {
		if (errno == ENOMEM)
			vms_error_open(err, path, ENOMEM, 0);
		else
			vms_error_set(err, VMS_ERR_IO, "%s: cannot map: %s", path, strerror(errno));
		goto fail;
	}
	madvise((void *)r->map, r->size, MADV_SEQUENTIAL);
	s->r = r;
	s->path = path;
	s->err = err;
	if (walk(s) != 0)
		goto fail;
	if (r->info.records == 0) {
		/* a file cut before its first whole record holds nothing to read: damaged */
		vms_error_set(err, VMS_ERR_FORMAT, "%s: no whole record (the file ends in its first "
			      "block) at byte offset %llu", path,
			      (unsigned long long)(r->info.truncated ? r->info.truncated_at : r->size));
		goto fail;
	}
	src->ops = &vms_xentrace_ops;
	src->impl = r;
	if (!(src->path = xstrdup(path)) || fill_meta(src, r, s) != 0) {
		vms_error_nomem_at(err, path, r->valid_end); /* (the meta of all that was read) */
		goto fail;
	}
	scan_free(s);
	src->ops->rewind(src); /* (it also gives the whole mapping back: the streams start over) */
	xt_pool_start(r);
	return src;
fail:
	scan_free(s);
	vms_trace_meta_free(&src->meta);
	free(src->path);
	free(src);
	vms_xt_free(r);
	return NULL;
}
