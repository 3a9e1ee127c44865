/* trace.dat: event formats through libtraceevent.
 *
 * At open only each format's name and id lines are read (and where the common fields are);
 * libtraceevent parses a format on the first record of its type, and from then on the reader
 * only uses what is computed here — per event id, the kind it maps to and the
 * offset/size/sign of each field that kind needs — so no libtraceevent call happens per
 * record. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <traceevent/event-parse.h>

#include "tracedat.h"

int td_formats_init(struct td_formats *fm, struct td_file *f, struct vms_trace_meta *meta)
{
	(void)meta;
	memset(fm, 0, sizeof *fm);
	fm->tep = tep_alloc();
	if (!fm->tep)
		return vms_error_nomem_at(f->err, f->path, 0);
	bool host_big = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__;
	bool file_big = f->swap ? !host_big : host_big;
	tep_set_file_bigendian(fm->tep, file_big ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
	tep_set_local_bigendian(fm->tep, host_big ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
	tep_set_long_size(fm->tep, f->long_size);
	tep_set_page_size(fm->tep, (int)f->page_size);
	/* defaults: the layout every kernel since 2.6.32 uses */
	fm->common_type = (struct td_field){0, 2, TD_F_PRESENT};
	fm->common_pid = (struct td_field){4, 4, TD_F_PRESENT | TD_F_SIGNED};
	fm->commit_size = (uint32_t)f->long_size;
	fm->data_off = 8 + fm->commit_size;
	return 0;
}

int td_formats_header_page(struct td_formats *fm, struct td_file *f, const uint8_t *buf,
			   uint64_t len, uint64_t off)
{
	if (len > (1u << 20))
		return td_fail(f, off, "header_page text of %llu bytes is implausible",
			       (unsigned long long)len);
	if (!td_text_bytes_ok(buf, len))
		return td_fail(f, off, "header_page text holds bytes a kernel does not write");
	char *copy = malloc(len + 1);
	if (!copy)
		return vms_error_nomem_at(f->err, f->path, off);
	memcpy(copy, buf, len);
	copy[len] = '\0';
	int r = tep_parse_header_page(fm->tep, copy, len, f->long_size);
	free(copy);
	if (r < 0)
		return td_fail(f, off, "header_page text cannot be parsed");
	int cs = tep_get_header_page_size(fm->tep);
	/* The commit word is a local_t: 4 or 8 bytes. Anything else is a damaged header. */
	if (cs == 4 || cs == 8)
		fm->commit_size = (uint32_t)cs;
	else if (cs != 0)
		return td_fail(f, off, "header_page commit field of %d bytes", cs);
	fm->data_off = 8 + fm->commit_size;
	if (fm->data_off >= f->page_size)
		return td_fail(f, off, "page header larger than the page size %u", f->page_size);
	return 0;
}

/* The value of the "KEY: value" line of a format text, before its "format:" line. */
static bool format_line(const uint8_t *t, uint64_t len, const char *key, const uint8_t **v,
			size_t *vl)
{
	size_t kl = strlen(key);
	uint64_t i = 0;
	while (i < len) {
		uint64_t e = i;
		while (e < len && t[e] != '\n')
			e++;
		if (e - i >= 7 && memcmp(t + i, "format:", 7) == 0)
			return false;
		if (e - i >= kl && memcmp(t + i, key, kl) == 0) {
			*v = t + i + kl;
			*vl = (size_t)(e - i - kl);
			return true;
		}
		i = e + 1;
	}
	return false;
}

static void map_type(struct td_type *t, struct tep_event *ev);

/* The decimal after "key:" in [p, e), at most 65535. */
static bool line_number(const uint8_t *p, const uint8_t *e, const char *key, uint32_t *v)
{
	size_t kl = strlen(key);
	for (; p + kl <= e; p++)
		if (memcmp(p, key, kl) == 0) {
			p += kl;
			uint32_t n = 0;
			const uint8_t *d = p;
			while (p < e && *p >= '0' && *p <= '9' && n <= 65535)
				n = n * 10 + (uint32_t)(*p++ - '0');
			*v = n;
			return p > d && n <= 65535 && p < e && *p == ';';
		}
	return false;
}

/* Offset and size of a field from its line as a kernel writes it ("\tfield:unsigned short
 * common_type;\toffset:0;\tsize:2;\tsigned:0;"), read without libtraceevent: only the
 * common fields are needed at open. The values are bounded by the caller; where
 * libtraceevent would read a damaged line otherwise, format_event renders only the format
 * it checked (td_format_event). */
static bool common_field(const uint8_t *t, uint64_t len, const char *name, uint32_t *off,
			 uint32_t *size)
{
	size_t nl = strlen(name);
	const uint8_t *p = t, *end = t + len;
	while (p < end) {
		const uint8_t *e = memchr(p, '\n', (size_t)(end - p));
		if (!e)
			e = end;
		const uint8_t *q = p;
		while (q < e && (*q == ' ' || *q == '\t'))
			q++;
		if (e - q > 6 && memcmp(q, "field:", 6) == 0) {
			const uint8_t *semi = memchr(q, ';', (size_t)(e - q));
			if (semi && (size_t)(semi - q) > 6 + nl && memcmp(semi - nl, name, nl) == 0 &&
			    (semi[-(ptrdiff_t)nl - 1] == ' ' || semi[-(ptrdiff_t)nl - 1] == '\t'))
				return line_number(semi, e, "offset:", off) &&
				       line_number(semi, e, "size:", size);
		}
		p = e + 1;
	}
	return false;
}

/* Whether libtraceevent can evaluate the print arguments of a parsed format on any record:
 * it divides without checking the divisor (SIGFPE on "REC->a / REC->b" with b = 0, found by
 * fuzzing), so a division or remainder is only accepted by a non-zero constant. Fields must
 * end within TD_PRINT_FIELD_END (see td_format_event). Depth is bounded against hostile
 * nesting. */
static bool print_arg_safe(const struct tep_print_arg *a, int depth)
{
	for (; a; a = a->next) {
		if (depth > 32)
			return false;
		switch (a->type) {
		case TEP_PRINT_OP:
			if (a->op.op && (strcmp(a->op.op, "/") == 0 || strcmp(a->op.op, "%") == 0)) {
				const struct tep_print_arg *r = a->op.right;
				if (!r || r->type != TEP_PRINT_ATOM || !r->atom.atom ||
				    strtoull(r->atom.atom, NULL, 0) == 0)
					return false;
			}
			if (!print_arg_safe(a->op.left, depth + 1) ||
			    !print_arg_safe(a->op.right, depth + 1))
				return false;
			break;
		case TEP_PRINT_TYPE:
			if (!print_arg_safe(a->typecast.item, depth + 1))
				return false;
			break;
		case TEP_PRINT_FLAGS:
			if (!print_arg_safe(a->flags.field, depth + 1))
				return false;
			break;
		case TEP_PRINT_SYMBOL:
			if (!print_arg_safe(a->symbol.field, depth + 1))
				return false;
			break;
		case TEP_PRINT_HEX:
		case TEP_PRINT_HEX_STR:
			if (!print_arg_safe(a->hex.field, depth + 1) ||
			    !print_arg_safe(a->hex.size, depth + 1))
				return false;
			break;
		case TEP_PRINT_INT_ARRAY:
			if (!print_arg_safe(a->int_array.field, depth + 1) ||
			    !print_arg_safe(a->int_array.count, depth + 1) ||
			    !print_arg_safe(a->int_array.el_size, depth + 1))
				return false;
			break;
		case TEP_PRINT_DYNAMIC_ARRAY:
			if (!print_arg_safe(a->dynarray.index, depth + 1))
				return false;
			break;
		case TEP_PRINT_FUNC:
			if (!print_arg_safe(a->func.args, depth + 1))
				return false;
			break;
		default:
			break;
		}
	}
	return true;
}

/* Fields libtraceevent can print from td_format_event's padded copy of a record: they end
 * within TD_PRINT_FIELD_END, and a dynamic array's word (__data_loc, __rel_loc) is 4 bytes
 * as kernels write it. For a 2-byte one libtraceevent 1.7 takes the length to be the record
 * size minus the offset, which wraps when the offset is past the record: its raw field
 * printer then reads gigabytes (SIGSEGV, found by fuzz_tracedat;
 * regress/tracedat/print-dynamic-field-2-bytes.dat). */
static bool fields_within(struct tep_format_field *fd)
{
	for (; fd; fd = fd->next)
		if (fd->offset < 0 || fd->size < 0 ||
		    (uint64_t)fd->offset + (uint64_t)fd->size > TD_PRINT_FIELD_END ||
		    ((fd->flags & TEP_FIELD_IS_DYNAMIC) && fd->size != 4))
			return false;
	return true;
}

/* Let libtraceevent parse one registered format; 0 when it could, VMS_ERR_NOMEM when the
 * guard ran out of memory (not tried: a later call may), -1 when refused or not parsed. */
static int tep_parse_type(struct td_formats *fm, struct td_type *t)
{
	if (!t->text || t->id < 0)
		return t->tried = true, -1;
	int ok = td_format_text_ok(t->text, t->text_len);
	if (ok == VMS_ERR_NOMEM)
		return ok;
	t->tried = true;
	if (!ok)
		return -1;
	/* A format libtraceevent cannot parse is not fatal (trace-cmd also warns and goes on):
	 * its records keep their type and kind OTHER but no fields. */
	tep_parse_event(fm->tep, (const char *)t->text, t->text_len, t->sys);
	t->tev = tep_find_event(fm->tep, t->id);
	if (t->tev)
		t->no_print = !print_arg_safe(t->tev->print_fmt.args, 0) ||
			      !fields_within(t->tev->format.common_fields) ||
			      !fields_within(t->tev->format.fields);
	return t->tev ? 0 : -1;
}

/* The kind a format's name maps to (OTHER for the names vmscope does not read). Known from
 * the name line alone: the format itself is parsed on the first record of that type. */
static uint16_t name_kind(const char *sys, const char *n)
{
	static const struct {
		const char *sys, *name;
		uint16_t kind;
	} names[] = {
		{"sched", "sched_switch", VMS_K_SCHED_SWITCH},
		{"sched", "sched_wakeup", VMS_K_SCHED_WAKEUP},
		{"sched", "sched_wakeup_new", VMS_K_SCHED_WAKEUP},
		{"sched", "sched_process_fork", VMS_K_PROCESS_FORK},
		{"sched", "sched_process_exec", VMS_K_PROCESS_EXEC},
		{"sched", "sched_process_exit", VMS_K_PROCESS_EXIT},
		{"task", "task_rename", VMS_K_THREAD_NAME},
		{"kvm", "kvm_entry", VMS_K_KVM_ENTRY},
		{"kvm", "kvm_exit", VMS_K_KVM_EXIT},
		{"kvm", "kvm_vcpu_wakeup", VMS_K_KVM_VCPU_WAKEUP},
		{"kvm", "kvm_nested_vmenter", VMS_K_KVM_NESTED_VMENTER},
		{"kvm", "kvm_nested_vmrun", VMS_K_KVM_NESTED_VMENTER},
		{"kvm", "kvm_nested_vmexit", VMS_K_KVM_NESTED_VMEXIT},
		{"kvm", "kvm_nested_vmexit_inject", VMS_K_KVM_NESTED_INJECT},
		{"kvm", "kvm_nested_intr_vmexit", VMS_K_KVM_NESTED_INJECT},
		/* the vmsync events of any system (the tracer's own, or a module's) */
		{NULL, "vmsync_gh_guest", VMS_K_VMSYNC_GH_GUEST},
		{NULL, "vmsync_gh_host", VMS_K_VMSYNC_GH_HOST},
		{NULL, "vmsync_hg_host", VMS_K_VMSYNC_HG_HOST},
		{NULL, "vmsync_hg_guest", VMS_K_VMSYNC_HG_GUEST},
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(n, names[i].name) == 0 && (!names[i].sys || strcmp(sys, names[i].sys) == 0))
			return names[i].kind;
	return VMS_K_OTHER;
}

/* A type whose format was parsed (or refused) takes its final kind: its fields mapped, or
 * kind OTHER and counted as a format not read. meta is NULL at open (finish counts them). */
static void settle(struct td_type *t, bool parsed, struct vms_trace_meta *meta, uint32_t ti)
{
	t->pending = false;
	if (parsed) {
		map_type(t, t->tev);
		return;
	}
	t->kind = VMS_K_OTHER;
	t->unread = true;
	if (meta) {
		meta->type_kinds[ti] = VMS_K_OTHER;
		if (!meta->nr_formats_unread++)
			meta->format_unread = meta->type_names[ti];
	}
}

int td_formats_parse(struct td_formats *fm, struct td_file *f, const uint8_t *text,
		     uint64_t len, const char *sys, uint64_t off)
{
	const uint8_t *nv, *iv;
	size_t nl, il;
	if (len > UINT32_MAX || !format_line(text, len, "name: ", &nv, &nl))
		return 0; /* not a format: ignored, like trace-cmd ignores what it cannot parse */
	if (nl > 127)
		nl = 127;
	int32_t id = -1;
	if (format_line(text, len, "ID: ", &iv, &il)) {
		long v = 0;
		size_t k = 0;
		while (k < il && iv[k] >= '0' && iv[k] <= '9' && v < 65536)
			v = v * 10 + (iv[k++] - '0');
		if (k > 0 && v < 65536)
			id = (int32_t)v;
	}
	if (fm->nr_types >= (1u << 16))
		return td_fail(f, off, "more than %u event formats", 1u << 16);
	if (fm->nr_types == fm->cap_types) {
		uint32_t nc = fm->cap_types ? fm->cap_types * 2 : 256;
		struct td_type *nt = realloc(fm->types, nc * sizeof *nt);
		if (!nt)
			return vms_error_nomem_at(f->err, f->path, off);
		fm->types = nt;
		fm->cap_types = nc;
	}
	struct td_type *t = &fm->types[fm->nr_types];
	memset(t, 0, sizeof *t);
	size_t sl = strnlen(sys, 127);
	t->name = malloc(sl + nl + 2);
	if (!t->name)
		return vms_error_nomem_at(f->err, f->path, off);
	fm->nr_types++;
	memcpy(t->name, sys, sl);
	t->name[sl] = ':';
	memcpy(t->name + sl + 1, nv, nl);
	t->name[sl + 1 + nl] = '\0';
	t->text = text;
	t->text_len = (uint32_t)len;
	t->id = id;
	t->sys = sys;
	t->off = off;
	t->kind = name_kind(sys, t->name + sl + 1);
	t->pending = t->kind != VMS_K_OTHER;
	/* Where the common fields are (all formats share them) is read from the first format
	 * that says it; every format is parsed when a record of its type comes
	 * (td_formats_resolve): a trace.dat holds 1,500-2,000 formats, and even the ten
	 * vmscope maps cost more to parse than a small trace's events cost to read. */
	if (!fm->have_common) {
		uint32_t to, ts, po, ps;
		if (common_field(text, len, "common_type", &to, &ts) &&
		    common_field(text, len, "common_pid", &po, &ps) && to < 64 && po < 64 &&
		    (ts == 1 || ts == 2 || ts == 4) && ps == 4) {
			fm->common_type = (struct td_field){(uint16_t)to, (uint8_t)ts, TD_F_PRESENT};
			fm->common_pid = (struct td_field){(uint16_t)po, 4, TD_F_PRESENT | TD_F_SIGNED};
			fm->have_common = true;
		}
	}
	return 0;
}

int td_formats_resolve(struct td_formats *fm, uint32_t ti, struct vms_trace_meta *meta,
		       struct vms_error *err, const char *path)
{
	struct td_type *t = &fm->types[ti];
	int parsed = tep_parse_type(fm, t);
	if (parsed == VMS_ERR_NOMEM)
		return vms_error_nomem_at(err, path, t->off);
	settle(t, parsed == 0, meta, ti);
	meta->type_kinds[ti] = t->kind;
	return 0;
}

int td_formats_tep_event(struct td_formats *fm, uint32_t type, struct tep_event **tev)
{
	*tev = NULL;
	if (type >= fm->nr_types)
		return 0;
	struct td_type *t = &fm->types[type];
	if (!t->tried && tep_parse_type(fm, t) == VMS_ERR_NOMEM)
		return VMS_ERR_NOMEM;
	*tev = t->no_print ? NULL : t->tev;
	return 0;
}

static bool field_at(struct td_field *out, struct tep_event *ev, const char *const *names,
		     bool string)
{
	for (; *names; names++) {
		struct tep_format_field *fd = tep_find_field(ev, *names);
		if (!fd)
			continue;
		if (fd->offset < 0 || fd->offset > 65535 || fd->size <= 0)
			continue;
		uint8_t fl = TD_F_PRESENT;
		if (fd->flags & TEP_FIELD_IS_SIGNED)
			fl |= TD_F_SIGNED;
		if (fd->flags & TEP_FIELD_IS_DYNAMIC) {
			fl |= TD_F_DYNAMIC;
			if (fd->flags & TEP_FIELD_IS_RELATIVE)
				fl |= TD_F_RELATIVE;
			if (fd->size != 4)
				continue;
		} else if (string) {
			if (!(fd->flags & TEP_FIELD_IS_ARRAY))
				continue;
		} else if (fd->size != 1 && fd->size != 2 && fd->size != 4 && fd->size != 8) {
			continue;
		}
		if (!string && (fl & TD_F_DYNAMIC))
			continue;
		out->off = (uint16_t)fd->offset;
		out->size = fd->size > 255 ? 255 : (uint8_t)fd->size;
		out->flags = fl;
		return true;
	}
	return false;
}

#define NAMES(...) ((const char *const[]){__VA_ARGS__, NULL})

/* Where the fields of the type's kind (from its name, name_kind) are in its parsed format. */
static void map_type(struct td_type *t, struct tep_event *ev)
{
	switch (t->kind) {
	case VMS_K_SCHED_SWITCH:
		field_at(&t->f[0], ev, NAMES("prev_pid"), false);
		field_at(&t->f[1], ev, NAMES("prev_state"), false);
		field_at(&t->f[2], ev, NAMES("next_pid"), false);
		field_at(&t->f[3], ev, NAMES("prev_prio"), false);
		field_at(&t->f[4], ev, NAMES("next_prio"), false);
		field_at(&t->s[0], ev, NAMES("prev_comm"), true);
		field_at(&t->s[1], ev, NAMES("next_comm"), true);
		break;
	case VMS_K_SCHED_WAKEUP:
		field_at(&t->f[0], ev, NAMES("pid"), false);
		field_at(&t->f[1], ev, NAMES("target_cpu"), false);
		field_at(&t->f[2], ev, NAMES("prio"), false);
		field_at(&t->s[0], ev, NAMES("comm"), true);
		break;
	case VMS_K_PROCESS_FORK:
		field_at(&t->f[0], ev, NAMES("parent_pid"), false);
		field_at(&t->f[1], ev, NAMES("child_pid"), false);
		field_at(&t->f[2], ev, NAMES("child_tgid"), false);
		field_at(&t->s[0], ev, NAMES("child_comm"), true);
		break;
	case VMS_K_PROCESS_EXEC:
		t->tid_from_pid = !field_at(&t->f[0], ev, NAMES("pid"), false);
		field_at(&t->s[0], ev, NAMES("filename"), true);
		break;
	case VMS_K_PROCESS_EXIT:
		t->tid_from_pid = !field_at(&t->f[0], ev, NAMES("pid"), false);
		break;
	case VMS_K_THREAD_NAME:
		/* newer kernels dropped the pid field: the renamed task is the current one */
		t->tid_from_pid = !field_at(&t->f[0], ev, NAMES("pid"), false);
		field_at(&t->s[0], ev, NAMES("newcomm"), true);
		break;
	case VMS_K_KVM_ENTRY:
		field_at(&t->f[0], ev, NAMES("vcpu_id"), false);
		field_at(&t->f[1], ev, NAMES("rip", "guest_rip"), false);
		/* arch/x86/kvm/trace.h: `bool guest_mode` (is_guest_mode at the entry) */
		t->mode_plus1 = field_at(&t->f[2], ev, NAMES("guest_mode"), false);
		break;
	case VMS_K_KVM_NESTED_VMEXIT:
	case VMS_K_KVM_NESTED_INJECT:
		/* kvm_nested_vmexit has kvm_exit's fields since 5.12 (exit_code before) */
		field_at(&t->f[0], ev, NAMES("exit_reason", "exit_code"), false);
		field_at(&t->f[1], ev, NAMES("isa"), false);
		break;
	case VMS_K_KVM_EXIT:
		/* field names differ between kernels: 'reason' before 3.x, 'exit_reason' since;
		 * 'guest_rip' on x86, 'vcpu_pc' on arm64 */
		field_at(&t->f[0], ev, NAMES("exit_reason", "reason", "esr_ec"), false);
		field_at(&t->f[1], ev, NAMES("isa"), false);
		field_at(&t->f[2], ev, NAMES("guest_rip", "rip", "vcpu_pc"), false);
		field_at(&t->f[3], ev, NAMES("info1"), false);
		field_at(&t->f[4], ev, NAMES("info2"), false);
		break;
	case VMS_K_KVM_VCPU_WAKEUP:
		field_at(&t->f[0], ev, NAMES("ns"), false);
		field_at(&t->f[1], ev, NAMES("waited"), false);
		field_at(&t->f[2], ev, NAMES("valid"), false);
		break;
	case VMS_K_VMSYNC_GH_GUEST:
	case VMS_K_VMSYNC_GH_HOST:
	case VMS_K_VMSYNC_HG_HOST:
	case VMS_K_VMSYNC_HG_GUEST:
		field_at(&t->f[0], ev, NAMES("vm_uid"), false);
		field_at(&t->f[1], ev, NAMES("cnt"), false);
		break;
	default:
		break;
	}
}

int td_formats_finish(struct td_formats *fm, struct td_file *f, struct vms_trace_meta *meta,
		      uint64_t off)
{
	/* the catch-all type for ids without a format */
	if (fm->nr_types == fm->cap_types) {
		struct td_type *nt = realloc(fm->types, (fm->cap_types + 1) * sizeof *nt);
		if (!nt)
			return vms_error_nomem_at(f->err, f->path, off);
		fm->types = nt;
		fm->cap_types++;
	}
	struct td_type *u = &fm->types[fm->nr_types];
	memset(u, 0, sizeof *u);
	u->id = -1;
	u->tried = true;
	u->name = strdup("unknown");
	if (!u->name)
		return vms_error_nomem_at(f->err, f->path, off);
	fm->nr_types++;
	uint32_t nt = fm->nr_types;
	uint32_t nid = 1;
	for (uint32_t i = 0; i < nt; i++)
		if (fm->types[i].id >= 0 && fm->types[i].id < 65536 &&
		    (uint32_t)fm->types[i].id >= nid)
			nid = (uint32_t)fm->types[i].id + 1;
	fm->by_id = malloc(nid * sizeof *fm->by_id);
	meta->type_names = calloc(nt, sizeof *meta->type_names);
	meta->type_kinds = calloc(nt, sizeof *meta->type_kinds);
	if (!fm->by_id || !meta->type_names || !meta->type_kinds)
		return vms_error_nomem_at(f->err, f->path, off);
	meta->nr_types = nt;
	fm->nr_by_id = nid;
	for (uint32_t i = 0; i < nid; i++)
		fm->by_id[i] = nt - 1;
	for (uint32_t i = 0; i < nt; i++) {
		struct td_type *t = &fm->types[i];
		meta->type_kinds[i] = t->kind;
		meta->type_names[i] = t->name; /* ownership moves to meta */
		if (t->unread && !meta->nr_formats_unread++)
			meta->format_unread = t->name;
		t->name = NULL;
		if (t->id >= 0 && t->id < 65536)
			fm->by_id[t->id] = i;
	}
	return 0;
}

void td_formats_free(struct td_formats *fm)
{
	if (fm->tep)
		tep_free(fm->tep);
	if (fm->types)
		for (uint32_t i = 0; i < fm->nr_types; i++)
			free(fm->types[i].name);
	free(fm->types);
	free(fm->by_id);
	for (uint32_t i = 0; i < fm->nr_keep; i++)
		free(fm->keep[i]);
	memset(fm, 0, sizeof *fm);
}
