/* xentrace: the records `dump` names, and their fields.
 *
 * The names are xenalyze's (its --dump-all text, Xen 4.17), which are the names of the
 * records as they are recorded by this Xen version; where xenalyze prints none (it reports
 * "Unknown hvm event" or folds several records into one name), the name is the one of
 * xentrace_format's `formats` file (tools/xentrace/formats). The layouts are those of the
 * records Xen 4.17 writes (xen/common/sched/credit2.c, xen/arch/x86/hvm/, trace.h), checked
 * against xenalyze's decoding of the shared xen/xentrace.bin. A record with fewer words than
 * its layout shows the fields it has; one this table does not know is shown by its class and
 * id. Every word is shown: those no field covers (but a layout's padding) as raw words. */
#include <stdio.h>

#include "xentrace.h"

enum xf_kind {
	XF_U,      /* unsigned, decimal */
	XF_S,      /* signed, decimal */
	XF_X,      /* hex */
	XF_DV,     /* a vCPU as one word: domain in the high 16 bits, vCPU in the low 16: dNvM */
	XF_DV2,    /* a vCPU as two words: domain, then vCPU: dNvM */
	XF_U64,    /* two words, low then high: unsigned decimal */
	XF_X64,    /* the same, hex */
};

struct xt_field {
	uint8_t word, shift, bits, kind;   /* bits 0: the whole word (or two for 64-bit kinds) */
	const char *name;
};

#define XT_MAX_FIELDS 7

struct xt_layout {
	uint32_t event;
	uint8_t words;                     /* words the layout covers, padding included */
	const char *name;
	struct xt_field f[XT_MAX_FIELDS];
};

#define W(w, k, n) { w, 0, 0, k, n }
#define B(w, s, b, k, n) { w, s, b, k, n }

static const struct xt_layout layouts[] = {
	/* gen */
	{ 0x0001f001, 4, "lost_records", { W(0, XF_U, "lost"), B(1, 0, 16, XF_U, "dom"),
					   B(1, 16, 16, XF_U, "vcpu"), W(2, XF_U64, "first_tsc") } },
	{ 0x0001f002, 0, "wrap_buffer", { { 0 } } },
	/* sched: runstates (runstate_change is named by the reader with its states) */
	{ 0x00021002, 1, "runstate_continue", { W(0, XF_DV, "vcpu") } },
	/* sched: credit2 (Xen 4.17 numbering) */
	{ 0x00022202, 2, "csched2:runq_insert", { W(0, XF_DV, "vcpu"), W(1, XF_U, "position") } },
	{ 0x00022203, 4, "csched2:burn_credits", { W(0, XF_DV, "vcpu"), W(1, XF_S, "credit"),
						   W(2, XF_S, "budget"), W(3, XF_S, "delta") } },
	{ 0x00022205, 3, "csched2:tickle_check", { W(0, XF_DV, "vcpu"), W(1, XF_S, "credit"),
						   W(2, XF_S, "score") } },
	{ 0x00022206, 1, "csched2:runq_tickle", { W(0, XF_U, "cpu") } },
	{ 0x00022207, 3, "csched2:reset_credits", { W(0, XF_DV, "vcpu"),
						    W(1, XF_S, "credit_start"),
						    W(2, XF_S, "credit_end") } },
	{ 0x00022209, 0, "csched2:update_load", { { 0 } } },
	{ 0x0002220b, 4, "csched2:update_vcpu_load", { W(0, XF_U64, "vcpu_load"),
						       W(2, XF_DV, "vcpu"), W(3, XF_U, "shift") } },
	{ 0x0002220c, 6, "csched2:update_rq_load", { W(0, XF_U64, "avgload"),
						     W(2, XF_U64, "b_avgload"),
						     B(4, 0, 16, XF_U, "load"),
						     B(4, 16, 8, XF_U, "rq"),
						     B(4, 24, 8, XF_U, "shift") } },
	{ 0x0002220d, 3, "csched2:runq_tickle_new", { W(0, XF_DV, "vcpu"),
						      W(1, XF_U, "processor"),
						      W(2, XF_S, "credit") } },
	{ 0x00022214, 3, "csched2:runq_candidate", { W(0, XF_DV, "vcpu"),
						     W(1, XF_S, "tickled_cpu"),
						     W(2, XF_S, "credit") } },
	{ 0x00022215, 2, "csched2:schedule", { B(0, 0, 16, XF_U, "cpu"), B(0, 16, 16, XF_U, "rq"),
					       B(1, 0, 8, XF_U, "tasklet"), B(1, 8, 8, XF_U, "idle"),
					       B(1, 16, 8, XF_U, "smt_idle"),
					       B(1, 24, 8, XF_U, "tickled") } },
	{ 0x00022216, 2, "csched2:ratelimit", { W(0, XF_DV, "vcpu"), W(1, XF_U, "runtime_ns") } },
	{ 0x00022217, 1, "csched2:runq_cand_check", { W(0, XF_DV, "vcpu") } },
	/* sched: the generic scheduler */
	{ 0x00028001, 1, "sched_add_domain", { W(0, XF_U, "dom") } },
	{ 0x00028002, 1, "sched_rem_domain", { W(0, XF_U, "dom") } },
	{ 0x00028003, 2, "vcpu_sleep", { W(0, XF_DV2, "vcpu") } },
	{ 0x00028004, 2, "vcpu_wake", { W(0, XF_DV2, "vcpu") } },
	{ 0x00028005, 2, "do_yield", { W(0, XF_DV2, "vcpu") } },
	{ 0x00028006, 2, "vcpu_block", { W(0, XF_DV2, "vcpu") } },
	{ 0x00028007, 3, "domain_shutdown", { W(0, XF_DV2, "vcpu"), W(2, XF_X, "reason") } },
	{ 0x00028008, 0, "sched_ctl", { { 0 } } },
	{ 0x00028009, 1, "sched_adjdom", { W(0, XF_U, "dom") } },
	{ 0x0002800a, 4, "sched_switch", { W(0, XF_DV2, "prev"), W(2, XF_DV2, "next") } },
	{ 0x0002800b, 0, "s_timer_fn", { { 0 } } },
	{ 0x0002800c, 0, "t_timer_fn", { { 0 } } },
	{ 0x0002800d, 0, "dom_timer_fn", { { 0 } } },
	/* xenalyze prints these three as "sched_switch prev/next/continue" */
	{ 0x0002800e, 3, "switch_infprev", { W(0, XF_DV2, "prev"), W(2, XF_U, "runtime_ns") } },
	{ 0x0002800f, 4, "switch_infnext", { W(0, XF_DV2, "next"), W(2, XF_U, "runnable_ns"),
					     W(3, XF_S, "slice_ns") } },
	{ 0x00028010, 3, "domain_shutdown_code", { W(0, XF_DV2, "vcpu"), W(2, XF_X, "reason") } },
	{ 0x00028011, 4, "switch_infcont", { W(0, XF_DV2, "vcpu"), W(2, XF_U, "runtime_ns"),
					     W(3, XF_S, "slice_ns") } },
	/* dom0op */
	{ 0x00041001, 1, "domain_create", { W(0, XF_U, "dom") } },
	{ 0x00041002, 1, "domain_destroy", { W(0, XF_U, "dom") } },
	/* hvm: entry and exit (VMEXIT's reason is the ISA's exit code) */
	{ 0x00081001, 0, "vmentry", { { 0 } } },
	{ 0x00081002, 2, "vmexit", { W(0, XF_U, "exit_reason"), W(1, XF_X, "rip") } },
	{ 0x00081003, 2, "vmexit", { W(0, XF_U, "exit_reason"), W(1, XF_X, "rip") } },
	{ 0x00081102, 3, "vmexit", { W(0, XF_U, "exit_reason"), W(1, XF_X64, "rip") } },
	{ 0x00081103, 3, "vmexit", { W(0, XF_U, "exit_reason"), W(1, XF_X64, "rip") } },
	/* hvm: handlers */
	{ 0x00082001, 2, "pf_xen", { W(0, XF_X, "virt"), W(1, XF_X, "errorcode") } },
	{ 0x00082002, 2, "pf_inject", { W(0, XF_X, "errorcode"), W(1, XF_X, "virt") } },
	{ 0x00082003, 2, "inj_exc", { W(0, XF_X, "vector"), W(1, XF_X, "errorcode") } },
	{ 0x00082004, 2, "inj_virq", { W(0, XF_U, "vector"), W(1, XF_U, "fake") } },
	{ 0x00082005, 1, "reinj_virq", { W(0, XF_U, "vector") } },
	{ 0x00082008, 2, "cr_read", { W(0, XF_U, "cr"), W(1, XF_X, "value") } },
	{ 0x00082009, 2, "cr_write", { W(0, XF_U, "cr"), W(1, XF_X, "value") } },
	{ 0x0008200c, 3, "msr_read", { W(0, XF_X, "msr"), W(1, XF_X64, "value") } },
	{ 0x0008200d, 3, "msr_write", { W(0, XF_X, "msr"), W(1, XF_X64, "value") } },
	{ 0x0008200e, 6, "cpuid", { W(0, XF_X, "leaf"), W(1, XF_X, "subleaf"), W(2, XF_X, "eax"),
				    W(3, XF_X, "ebx"), W(4, XF_X, "ecx"), W(5, XF_X, "edx") } },
	{ 0x0008200f, 1, "intr", { W(0, XF_X, "vector") } },
	{ 0x00082010, 0, "nmi", { { 0 } } },
	{ 0x00082011, 0, "smi", { { 0 } } },
	{ 0x00082012, 1, "vmcall", { W(0, XF_X, "func") } },
	{ 0x00082013, 1, "hlt", { W(0, XF_U, "intpending") } },
	{ 0x00082014, 2, "invlpg", { W(0, XF_U, "invlpga"), W(1, XF_X, "virt") } },
	{ 0x00082015, 0, "mce", { { 0 } } },
	{ 0x00082016, 2, "io_read", { W(0, XF_X, "port"), W(1, XF_X, "data") } },
	{ 0x00082017, 2, "mmio_read", { W(0, XF_X, "addr"), W(1, XF_X, "data") } },
	{ 0x00082018, 0, "clts", { { 0 } } },
	{ 0x00082019, 1, "lmsw", { W(0, XF_X, "value") } },
	{ 0x0008201a, 2, "rdtsc", { W(0, XF_X64, "value") } },
	{ 0x00082020, 3, "intr_window", { W(0, XF_U, "vector"), W(1, XF_U, "source"),
					  W(2, XF_S, "intr") } },
	{ 0x00082021, 6, "npf", { W(0, XF_X64, "gpa"), W(2, XF_X64, "mfn"), W(4, XF_X, "qual"),
				  W(5, XF_U, "p2mt") } },
	{ 0x00082023, 1, "trap", { W(0, XF_X, "vector") } },
	{ 0x00082025, 0, "vlapic", { { 0 } } },
	{ 0x00082101, 3, "pf_xen", { W(0, XF_X64, "virt"), W(2, XF_X, "errorcode") } },
	{ 0x00082102, 3, "pf_inject", { W(0, XF_X, "errorcode"), W(1, XF_X64, "virt") } },
	{ 0x00082108, 3, "cr_read", { W(0, XF_U, "cr"), W(1, XF_X64, "value") } },
	{ 0x00082109, 3, "cr_write", { W(0, XF_U, "cr"), W(1, XF_X64, "value") } },
	{ 0x00082114, 3, "invlpg", { W(0, XF_U, "invlpga"), W(1, XF_X64, "virt") } },
	{ 0x00082119, 2, "lmsw", { W(0, XF_X64, "value") } },
	{ 0x00082216, 2, "io_write", { W(0, XF_X, "port"), W(1, XF_X, "data") } },
	{ 0x00082217, 2, "mmio_write", { W(0, XF_X, "addr"), W(1, XF_X, "data") } },
	/* hvm: emulated devices (xenalyze: "Unknown hvm event"; names of the formats file) */
	{ 0x0008400e, 1, "vpic_irq_positive_edge", { W(0, XF_U, "irq") } },
	{ 0x0008400f, 1, "vpic_irq_negative_edge", { W(0, XF_U, "irq") } },
	{ 0x00084010, 2, "vpic_ack_pending_irq", { W(0, XF_U, "accept_pic_intr"),
						   W(1, XF_U, "int_output") } },
	{ 0x00084011, 2, "vlapic_accept_pic_intr", { W(0, XF_U, "i8259_target"),
						     W(1, XF_U, "accept_pic_intr") } },
};

static const struct xt_layout *layout_of(uint32_t ev)
{
	size_t lo = 0, hi = sizeof layouts / sizeof layouts[0];
	while (lo < hi) {   /* the table is in ascending order of event (tests/xen checks) */
		size_t mid = (lo + hi) / 2;
		if (layouts[mid].event < ev)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < sizeof layouts / sizeof layouts[0] && layouts[lo].event == ev ? &layouts[lo]
										   : NULL;
}

bool vms_xt_names_sorted(void)
{
	for (size_t i = 1; i < sizeof layouts / sizeof layouts[0]; i++)
		if (layouts[i - 1].event >= layouts[i].event)
			return false;
	return true;
}

/* The words a field needs (64-bit kinds and DV2 take two). */
static uint32_t field_end(const struct xt_field *f)
{
	return f->word + (f->kind == XF_DV2 || f->kind == XF_U64 || f->kind == XF_X64 ? 2u : 1u);
}

static int put_field(char *buf, size_t len, const struct xt_field *f, const uint8_t *w)
{
	uint32_t x = xt_rd32(w + 4u * f->word);
	if (f->bits)
		x = (x >> f->shift) & (f->bits == 32 ? 0xffffffffu : (1u << f->bits) - 1u);
	switch (f->kind) {
	case XF_S: {
		int64_t s = f->bits && f->bits < 32 && (x >> (f->bits - 1)) ?
			(int64_t)x - ((int64_t)1 << f->bits) : (int64_t)(int32_t)x;
		return snprintf(buf, len, " %s=%lld", f->name, (long long)s);
	}
	case XF_X:
		return snprintf(buf, len, " %s=0x%x", f->name, x);
	case XF_DV:
		return snprintf(buf, len, " %s=d%uv%u", f->name, x >> 16, x & 0xffff);
	case XF_DV2:
		return snprintf(buf, len, " %s=d%uv%u", f->name, x, xt_rd32(w + 4u * f->word + 4));
	case XF_U64:
	case XF_X64: {
		uint64_t v = (uint64_t)xt_rd32(w + 4u * f->word + 4) << 32 | x;
		return snprintf(buf, len, f->kind == XF_U64 ? " %s=%llu" : " %s=0x%llx", f->name,
				(unsigned long long)v);
	}
	default:
		return snprintf(buf, len, " %s=%u", f->name, x);
	}
}

int vms_xt_format_record(const struct xt_rec *rec, char *buf, size_t len)
{
	uint32_t ev = rec->event;
	const struct xt_layout *l = layout_of(ev);
	int n;
	uint32_t from = 0;   /* the first word not shown by a field */
	if (l) {
		/* the fields whose words the record has (a record may carry fewer than its
		 * layout: Xen traces an I/O port without its data, for one) */
		n = snprintf(buf, len, "%s", l->name);
		for (int i = 0; i < XT_MAX_FIELDS && l->f[i].name && n >= 0 && (size_t)n < len; i++) {
			if (field_end(&l->f[i]) > rec->extra)
				break;
			n += put_field(buf + n, len - (size_t)n, &l->f[i], rec->data);
			if (field_end(&l->f[i]) > from)
				from = field_end(&l->f[i]);
		}
		if (from && l->words > from && rec->extra >= l->words)
			from = l->words;   /* padding is not shown */
	} else {
		n = snprintf(buf, len, "%s event=0x%07x", vms_xen_class_name(xt_class(ev)), ev);
	}
	for (uint32_t i = from; i < rec->extra && n >= 0 && (size_t)n < len; i++)
		n += snprintf(buf + n, len - (size_t)n, " 0x%x", xt_rd32(rec->data + 4 * i));
	return n;
}
