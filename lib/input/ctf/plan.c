/* Compiling TSDL types into plans, and the interpreter that runs them (plan.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "tsdl_lex.h"

enum { PLAN_SWAP = 16 }; /* PLAN_FAST: the field's byte order is not this machine's */

struct cc {
	struct plan *pl;
	uint32_t cap_ops, cap_vopts;
	struct plan_regs *regs;
	enum plan_scope scope;
	uint8_t order;
	uint64_t *budget;
	const char *path, *what;
	struct vms_error *err;
	int depth;
	bool in_loop;
};

static bool host_be(void)
{
	union {
		uint16_t u;
		uint8_t b[2];
	} x = {.u = 1};
	return x.b[0] == 0;
}

static int cfail(struct cc *c, const char *why)
{
	return vms_error_set(c->err, VMS_ERR_FORMAT, "%s/metadata: %s: %s at byte offset 0",
			     c->path, c->what, why);
}

static int emit(struct cc *c, struct plan_op op, uint32_t *at)
{
	struct plan *pl = c->pl;
	if (pl->nops >= PLAN_MAX_OPS || *c->budget == 0)
		return cfail(c, "types too large to decode (too many fields)");
	if (pl->nops == c->cap_ops) {
		uint32_t cap = c->cap_ops ? 2 * c->cap_ops : 16;
		struct plan_op *n = realloc(pl->ops, cap * sizeof *n);
		if (!n)
			return tsdl_nomem_at(c->err, c->path, 0);
		pl->ops = n;
		c->cap_ops = cap;
	}
	(*c->budget)--;
	if (at)
		*at = pl->nops;
	pl->ops[pl->nops++] = op;
	return 0;
}

static const char *strip(const char *name)
{
	return name[0] == '_' ? name + 1 : name;
}

static int new_reg(struct cc *c, const char *name, const struct tsdl_type *ty, bool top,
		   uint32_t *reg)
{
	struct plan_regs *r = c->regs;
	if (r->n >= PLAN_MAX_REGS)
		return cfail(c, "too many fields");
	if (r->n == r->cap) {
		uint32_t cap = r->cap ? 2 * r->cap : 64;
		struct plan_reg *n = realloc(r->r, cap * sizeof *n);
		if (!n)
			return tsdl_nomem_at(c->err, c->path, 0);
		r->r = n;
		r->cap = cap;
	}
	r->r[r->n] = (struct plan_reg){strip(name), ty, (uint8_t)c->scope, c->in_loop, top};
	*reg = r->n++;
	return 0;
}

uint32_t plan_find(const struct plan_regs *regs, uint32_t from, int scope, const char *name,
		   bool top_only)
{
	for (uint32_t i = from; i < regs->n; i++) {
		const struct plan_reg *r = &regs->r[i];
		if ((scope < 0 || r->scope == scope) && !r->in_loop && (!top_only || r->top) &&
		    !strcmp(r->name, name))
			return i;
	}
	return PLAN_NOREG;
}

/* A sequence length or variant tag: a field declared before, by relative name (the
 * nearest before) or absolute path ("stream.event.header.id"). */
static uint32_t resolve(struct cc *c, const char *ref)
{
	static const struct {
		const char *prefix;
		int scope;
	} abs[] = {
		{"trace.packet.header.", PLAN_PH}, {"stream.packet.context.", PLAN_PC},
		{"stream.event.header.", PLAN_EH}, {"stream.event.context.", PLAN_SEC},
		{"event.context.", PLAN_EC},       {"event.fields.", PLAN_EF},
	};
	int scope = -1;
	for (size_t i = 0; i < sizeof abs / sizeof abs[0]; i++)
		if (!strncmp(ref, abs[i].prefix, strlen(abs[i].prefix))) {
			ref += strlen(abs[i].prefix);
			scope = abs[i].scope;
			break;
		}
	const char *dot = strrchr(ref, '.');
	const char *name = strip(dot ? dot + 1 : ref);
	for (uint32_t i = c->regs->n; i-- > 0;) {
		const struct plan_reg *r = &c->regs->r[i];
		if ((scope < 0 || r->scope == scope) && !strcmp(r->name, name))
			return i;
	}
	return PLAN_NOREG;
}

/* The least bits a value of `ty` takes; 0 (may be empty) when the walk is too deep or too
 * long (*work: nodes left; aliases make type trees DAGs whose walk can be exponential). */
static uint64_t minbits(const struct tsdl_type *ty, int depth, uint32_t *work)
{
	if (depth > PLAN_MAX_DEPTH || *work == 0)
		return 0;
	(*work)--;
	switch (ty->kind) {
	case TSDL_INT:
	case TSDL_ENUM:
	case TSDL_FLOAT:
		return ty->size;
	case TSDL_STRING:
		return 8;
	case TSDL_STRUCT: {
		uint64_t s = 0;
		for (uint32_t i = 0; i < ty->nr_fields && s < (1ull << 40); i++)
			s += minbits(ty->fields[i].type, depth + 1, work);
		return s;
	}
	case TSDL_VARIANT: {
		uint64_t m = UINT64_MAX;
		for (uint32_t i = 0; i < ty->nr_fields; i++) {
			uint64_t b = minbits(ty->fields[i].type, depth + 1, work);
			if (b < m)
				m = b;
		}
		return ty->nr_fields ? m : 0;
	}
	case TSDL_ARRAY: {
		uint64_t e = minbits(ty->elem, depth + 1, work);
		return e && ty->length > (1ull << 40) / e ? 1ull << 40 : e * ty->length;
	}
	default:
		return 0;
	}
}

static bool label_is(const char *label, const char *option)
{
	return !strcmp(label, option) || !strcmp(strip(label), strip(option));
}

static int compile_type(struct cc *c, const struct tsdl_type *ty, const char *name, bool top);

static int compile_loop(struct cc *c, const struct tsdl_type *ty, const char *name, bool top)
{
	const struct tsdl_type *el = ty->elem;
	uint32_t lenreg = PLAN_NOREG;
	int rc;
	if (ty->kind == TSDL_SEQ) {
		lenreg = resolve(c, ty->length_ref);
		if (lenreg == PLAN_NOREG)
			return cfail(c, "sequence length field not found");
		const struct tsdl_type *lt = c->regs->r[lenreg].type;
		if (lt->kind != TSDL_INT && lt->kind != TSDL_ENUM)
			return cfail(c, "sequence length is not an integer");
	}
	/* arrays of bytes: one operation, and a register (char arrays are strings) */
	if ((el->kind == TSDL_INT || el->kind == TSDL_ENUM) && el->size == 8 && el->align % 8 == 0) {
		uint32_t reg;
		if ((rc = emit(c, (struct plan_op){.code = PLAN_ALIGN, .a = el->align}, NULL)) ||
		    (rc = new_reg(c, name, ty, top, &reg)))
			return rc;
		struct plan_op op = {.reg = reg, .flags = el->text ? PLAN_TEXT : 0};
		if (ty->kind == TSDL_ARRAY) {
			if (ty->length > UINT32_MAX)
				return cfail(c, "array too long");
			op.code = PLAN_BYTES;
			op.a = (uint32_t)ty->length;
		} else {
			op.code = PLAN_BYTESEQ;
			op.a = lenreg;
		}
		return emit(c, op, NULL);
	}
	uint32_t at;
	struct plan_op op = {.code = ty->kind == TSDL_ARRAY ? PLAN_ARRAY : PLAN_SEQ,
			     .reg = PLAN_NOREG, .a = lenreg, .n = ty->length};
	uint32_t work = 100000;
	uint64_t mb = minbits(el, 0, &work);
	op.minbits = mb > UINT32_MAX ? UINT32_MAX : (uint32_t)mb;
	if ((rc = emit(c, op, &at)))
		return rc;
	bool was = c->in_loop;
	c->in_loop = true;
	rc = compile_type(c, el, name, false);
	c->in_loop = was;
	if (rc)
		return rc;
	c->pl->ops[at].end = c->pl->nops;
	return 0;
}

static int compile_variant(struct cc *c, const struct tsdl_type *ty, const char *name)
{
	if (!ty->tag)
		return cfail(c, "variant without a tag");
	uint32_t tag = resolve(c, ty->tag);
	if (tag == PLAN_NOREG)
		return cfail(c, "variant tag field not found");
	const struct tsdl_type *tt = c->regs->r[tag].type;
	if (tt->kind != TSDL_ENUM)
		return cfail(c, "variant tag is not an enumeration");
	uint32_t at;
	int rc = emit(c, (struct plan_op){.code = PLAN_VARIANT, .reg = PLAN_NOREG, .a = tag}, &at);
	if (rc)
		return rc;
	struct plan_vopt *v = NULL;
	uint32_t nv = 0;
	for (uint32_t i = 0; i < ty->nr_fields && !rc; i++) {
		uint32_t start = c->pl->nops;
		if ((rc = compile_type(c, ty->fields[i].type, ty->fields[i].name, false)))
			break;
		for (uint32_t m = 0; m < tt->nr_maps; m++) {
			if (!label_is(tt->maps[m].label, ty->fields[i].name))
				continue;
			struct plan_vopt *n = realloc(v, (nv + 1) * sizeof *n);
			if (!n) {
				rc = tsdl_nomem_at(c->err, c->path, 0);
				break;
			}
			v = n;
			v[nv++] = (struct plan_vopt){tt->maps[m].lo, tt->maps[m].hi, start,
						     c->pl->nops};
		}
	}
	(void)name;
	struct plan *pl = c->pl;
	if (!rc && pl->nvopts + nv > c->cap_vopts) {
		uint32_t cap = c->cap_vopts ? c->cap_vopts : 8;
		while (cap < pl->nvopts + nv)
			cap *= 2;
		struct plan_vopt *n = realloc(pl->vopts, cap * sizeof *n);
		if (!n)
			rc = tsdl_nomem_at(c->err, c->path, 0);
		else {
			pl->vopts = n;
			c->cap_vopts = cap;
		}
	}
	if (!rc) {
		if (nv)
			memcpy(pl->vopts + pl->nvopts, v, nv * sizeof *v);
		pl->ops[at].n = pl->nvopts;
		pl->ops[at].b = nv;
		pl->ops[at].end = pl->nops;
		pl->nvopts += nv;
	}
	free(v);
	return rc;
}

static int compile_type(struct cc *c, const struct tsdl_type *ty, const char *name, bool top)
{
	int rc;
	if (++c->depth > PLAN_MAX_DEPTH) {
		c->depth--;
		return cfail(c, "types nested too deep");
	}
	if (ty->align > 1 && ty->kind != TSDL_VARIANT && ty->kind != TSDL_ARRAY &&
	    ty->kind != TSDL_SEQ && (rc = emit(c, (struct plan_op){.code = PLAN_ALIGN,
								     .a = ty->align}, NULL)))
		goto out;
	switch (ty->kind) {
	case TSDL_INT:
	case TSDL_ENUM:
	case TSDL_FLOAT: {
		uint32_t reg;
		if ((rc = new_reg(c, name, ty, top, &reg)))
			break;
		uint8_t order = ty->order == TSDL_NATIVE ? c->order : ty->order;
		struct plan_op op = {.code = PLAN_INT, .size = (uint16_t)ty->size, .reg = reg};
		if (ty->is_signed && ty->kind != TSDL_FLOAT)
			op.flags |= PLAN_SIGNED;
		if (order == TSDL_BE)
			op.flags |= PLAN_BE;
		if (ty->kind == TSDL_FLOAT)
			op.flags |= PLAN_FLOAT;
		if (ty->align % 8 == 0 &&
		    (ty->size == 8 || ty->size == 16 || ty->size == 32 || ty->size == 64)) {
			op.code = PLAN_FAST;
			if ((order == TSDL_BE) != host_be())
				op.flags |= PLAN_SWAP;
		}
		rc = emit(c, op, NULL);
		break;
	}
	case TSDL_STRING: {
		uint32_t reg;
		if (!(rc = emit(c, (struct plan_op){.code = PLAN_ALIGN, .a = 8}, NULL)) &&
		    !(rc = new_reg(c, name, ty, top, &reg)))
			rc = emit(c, (struct plan_op){.code = PLAN_STRING, .reg = reg,
						      .flags = PLAN_TEXT}, NULL);
		break;
	}
	case TSDL_STRUCT:
		rc = 0;
		for (uint32_t i = 0; i < ty->nr_fields && !rc; i++)
			rc = compile_type(c, ty->fields[i].type, ty->fields[i].name, c->depth == 1);
		break;
	case TSDL_ARRAY:
	case TSDL_SEQ:
		rc = compile_loop(c, ty, name, top);
		break;
	case TSDL_VARIANT:
		rc = compile_variant(c, ty, name);
		break;
	default:
		rc = cfail(c, "unknown type");
	}
out:
	c->depth--;
	return rc;
}

int plan_compile(struct plan *pl, const struct tsdl_type *st, enum plan_scope scope,
		 uint8_t trace_order, struct plan_regs *regs, uint64_t *budget, const char *path,
		 const char *what, struct vms_error *err)
{
	memset(pl, 0, sizeof *pl);
	pl->reg_first = pl->reg_end = regs->n;
	if (!st)
		return 0;
	struct cc c = {.pl = pl, .regs = regs, .scope = scope, .order = trace_order,
		       .budget = budget, .path = path, .what = what, .err = err};
	int rc = compile_type(&c, st, "", false);
	pl->reg_end = regs->n;
	if (rc)
		plan_free(pl);
	return rc;
}

void plan_free(struct plan *pl)
{
	free(pl->ops);
	free(pl->vopts);
	free(pl->fx);
	pl->ops = NULL;
	pl->vopts = NULL;
	pl->fx = NULL;
	pl->nops = pl->nvopts = pl->nfx = 0;
}

/* ---- lean plans ---- */

/* What is known of the position statically: p % m == r (m a power of two; 1: nothing). */
struct align_state {
	uint64_t m, r;
};

struct lean {
	const struct plan *in;
	struct plan *out;
	const bool *keep;
	uint32_t *newidx;              /* old op index -> new, at range boundaries */
	uint32_t cap_ops, cap_fx, cap_vopts;
	struct plan_fx *run;           /* the fields of the run being built */
	uint32_t nrun, cap_run;
};

static int grow(void **p, uint32_t *cap, uint32_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	uint32_t c = *cap ? *cap : 16;
	while (c < need)
		c *= 2;
	void *n = realloc(*p, c * size);
	if (!n)
		return -1;
	*p = n;
	*cap = c;
	return 0;
}

static int lean_emit(struct lean *l, struct plan_op op)
{
	struct plan *o = l->out;
	if (grow((void **)&o->ops, &l->cap_ops, o->nops + 1, sizeof *o->ops))
		return -1;
	o->ops[o->nops++] = op;
	return 0;
}

static int run_add(struct lean *l, struct plan_fx f)
{
	if (grow((void **)&l->run, &l->cap_run, l->nrun + 1, sizeof *l->run))
		return -1;
	l->run[l->nrun++] = f;
	return 0;
}

/* The run built so far as one PLAN_FIXED operation of `bits` bits. */
static int run_close(struct lean *l, uint64_t bits)
{
	if (!l->nrun && !bits)
		return 0;
	struct plan *o = l->out;
	uint32_t kept = 0;
	for (uint32_t k = 0; k < l->nrun; k++)
		kept += !l->keep || l->keep[l->run[k].reg];
	if (grow((void **)&o->fx, &l->cap_fx, o->nfx + l->nrun + kept, sizeof *o->fx))
		return -1;
	struct plan_op op = {.code = PLAN_FIXED, .n = bits, .reg = o->nfx, .minbits = l->nrun};
	memcpy(o->fx + o->nfx, l->run, l->nrun * sizeof *l->run);
	o->nfx += l->nrun;
	op.a = o->nfx;
	op.b = kept;
	for (uint32_t k = 0; k < l->nrun; k++)
		if (!l->keep || l->keep[l->run[k].reg])
			o->fx[o->nfx++] = l->run[k];
	l->nrun = 0;
	return lean_emit(l, op);
}

static uint8_t fx_how(const struct plan_op *op)
{
	if (op->code == PLAN_INT)
		return FX_BITS;
	bool swap = op->flags & PLAN_SWAP;
	switch (op->size) {
	case 8:
		return FX_8;
	case 16:
		return swap ? FX_16S : FX_16;
	case 32:
		return swap ? FX_32S : FX_32;
	default:
		return swap ? FX_64S : FX_64;
	}
}

/* Runs stay short enough for 32-bit offsets. */
#define RUN_MAX_BITS (1ull << 30)

static int lean_range(struct lean *l, uint32_t from, uint32_t to, struct align_state *st);

static struct align_state meet(struct align_state a, struct align_state b)
{
	uint64_t m = a.m < b.m ? a.m : b.m;
	while (m > 1 && a.r % m != b.r % m)
		m /= 2;
	return (struct align_state){m, a.r % m};
}

static int by_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static int lean_variant(struct lean *l, const struct plan_op *op, uint32_t i,
			struct align_state *st)
{
	const struct plan *in = l->in;
	uint32_t at = l->out->nops;
	if (lean_emit(l, *op))
		return -1;
	/* the options' ranges partition the body: lean each alone */
	uint32_t nb = 2 + 2 * op->b, *b = malloc(nb * sizeof *b);
	if (!b)
		return -1;
	b[0] = i + 1;
	b[1] = op->end;
	for (uint32_t k = 0; k < op->b; k++) {
		b[2 + 2 * k] = in->vopts[op->n + k].start;
		b[3 + 2 * k] = in->vopts[op->n + k].end;
	}
	qsort(b, nb, sizeof *b, by_u32);
	struct align_state after = {0, 0};
	int rc = 0;
	for (uint32_t k = 0; k + 1 < nb && !rc; k++) {
		if (b[k] == b[k + 1])
			continue;
		struct align_state s = *st;
		rc = lean_range(l, b[k], b[k + 1], &s);
		after = after.m ? meet(after, s) : s;
	}
	free(b);
	if (rc)
		return rc;
	l->newidx[op->end] = l->out->nops;
	if (after.m)
		*st = after;
	struct plan *o = l->out;
	if (grow((void **)&o->vopts, &l->cap_vopts, o->nvopts + op->b, sizeof *o->vopts))
		return -1;
	o->ops[at].n = o->nvopts;
	o->ops[at].end = o->nops;
	for (uint32_t k = 0; k < op->b; k++) {
		struct plan_vopt v = in->vopts[op->n + k];
		v.start = l->newidx[v.start];
		v.end = l->newidx[v.end];
		o->vopts[o->nvopts++] = v;
	}
	return 0;
}

static int lean_range(struct lean *l, uint32_t from, uint32_t to, struct align_state *st)
{
	const struct plan *in = l->in;
	uint64_t off = 0;               /* bits of the open run (l->nrun fields) */
	for (uint32_t i = from; i < to;) {
		const struct plan_op *op = &in->ops[i];
		if (!l->nrun && !off)
			l->newidx[i] = l->out->nops;
		if (op->code == PLAN_ALIGN && op->a <= st->m) {
			/* known to land at a fixed distance: padding in the run */
			uint64_t pad = (op->a - st->r % op->a) % op->a;
			off += pad;
			st->r = (st->r + pad) % st->m;
			i++;
			continue;
		}
		bool fixed = op->code == PLAN_FAST || op->code == PLAN_INT ||
			     (op->code == PLAN_BYTES && st->m >= 8 && st->r % 8 == 0);
		if (fixed && off + op->size + (op->code == PLAN_BYTES ? 8ull * op->a : 0) <
				     RUN_MAX_BITS) {
			struct plan_fx f = {.off = (uint32_t)off, .reg = op->reg, .flags = op->flags};
			if (op->code == PLAN_BYTES) {
				f.how = FX_BYTES;
				f.size = op->a * 8;
			} else {
				f.how = fx_how(op);
				f.size = op->size;
			}
			if (run_add(l, f))
				return -1;
			off += f.size;
			st->r = (st->r + f.size) % st->m;
			i++;
			continue;
		}
		if (run_close(l, off))
			return -1;
		l->newidx[i] = l->out->nops;
		bool was_run = off != 0;
		off = 0;
		if (fixed && was_run)
			continue; /* the run was full: this field opens the next */
		switch (op->code) {
		case PLAN_ALIGN:
			if (lean_emit(l, *op))
				return -1;
			*st = (struct align_state){op->a, 0};
			i++;
			break;
		case PLAN_STRING:
			if (lean_emit(l, *op))
				return -1;
			*st = (struct align_state){8, 0};
			i++;
			break;
		case PLAN_BYTES:
		case PLAN_BYTESEQ:
			if (lean_emit(l, *op))
				return -1;
			*st = st->m >= 8 && st->r % 8 == 0 ? (struct align_state){8, 0}
							   : (struct align_state){1, 0};
			i++;
			break;
		case PLAN_ARRAY:
		case PLAN_SEQ: {
			uint32_t at = l->out->nops;
			if (lean_emit(l, *op))
				return -1;
			struct align_state body = {1, 0};
			if (lean_range(l, i + 1, op->end, &body))
				return -1;
			l->out->ops[at].end = l->out->nops;
			*st = (struct align_state){1, 0};
			i = op->end;
			break;
		}
		case PLAN_VARIANT:
			if (lean_variant(l, op, i, st))
				return -1;
			i = op->end;
			break;
		default: /* a single field too large for a run: as it was */
			if (lean_emit(l, *op))
				return -1;
			*st = (struct align_state){1, 0};
			i++;
		}
	}
	if (run_close(l, off))
		return -1;
	l->newidx[to] = l->out->nops;
	return 0;
}

int plan_lean(const struct plan *full, const bool *keep, struct plan *out)
{
	memset(out, 0, sizeof *out);
	out->reg_first = full->reg_first;
	out->reg_end = full->reg_end;
	if (!full->nops)
		return 0;
	struct lean l = {.in = full, .out = out, .keep = keep};
	l.newidx = malloc((full->nops + 1) * sizeof *l.newidx);
	struct align_state st = {1, 0};
	int rc = l.newidx ? lean_range(&l, 0, full->nops, &st) : -1;
	free(l.newidx);
	free(l.run);
	if (rc)
		plan_free(out);
	return rc;
}

int plan_concat(const struct plan *const *parts, uint32_t n, struct plan *out)
{
	memset(out, 0, sizeof *out);
	uint32_t nops = 0, nv = 0;
	for (uint32_t k = 0; k < n; k++) {
		nops += parts[k]->nops;
		nv += parts[k]->nvopts;
	}
	out->ops = malloc((nops ? nops : 1) * sizeof *out->ops);
	out->vopts = malloc((nv ? nv : 1) * sizeof *out->vopts);
	if (!out->ops || !out->vopts) {
		plan_free(out);
		return -1;
	}
	if (n) {
		out->reg_first = parts[0]->reg_first;
		out->reg_end = parts[n - 1]->reg_end;
	}
	for (uint32_t k = 0; k < n; k++) {
		const struct plan *p = parts[k];
		uint32_t ob = out->nops, vb = out->nvopts;
		for (uint32_t i = 0; i < p->nops; i++) {
			struct plan_op op = p->ops[i];
			if (op.code == PLAN_ARRAY || op.code == PLAN_SEQ || op.code == PLAN_VARIANT)
				op.end += ob;
			if (op.code == PLAN_VARIANT)
				op.n += vb;
			out->ops[out->nops++] = op;
		}
		for (uint32_t i = 0; i < p->nvopts; i++) {
			struct plan_vopt v = p->vopts[i];
			v.start += ob;
			v.end += ob;
			out->vopts[out->nvopts++] = v;
		}
	}
	return 0;
}

void plan_mark_refs(const struct plan *pl, bool *keep)
{
	for (uint32_t i = 0; i < pl->nops; i++) {
		const struct plan_op *o = &pl->ops[i];
		if (o->code == PLAN_SEQ || o->code == PLAN_BYTESEQ || o->code == PLAN_VARIANT)
			keep[o->a] = true;
	}
}

bool plan_fixed_layout(const struct plan *pl, uint64_t *align, const struct plan_op **run)
{
	uint32_t i = pl->nops == 2 && pl->ops[0].code == PLAN_ALIGN ? 1 : 0;
	if (pl->nops != i + 1 || pl->ops[i].code != PLAN_FIXED)
		return false;
	*align = i ? pl->ops[0].a : 1;
	*run = &pl->ops[i];
	return true;
}

void plan_regs_free(struct plan_regs *regs)
{
	free(regs->r);
	memset(regs, 0, sizeof *regs);
}

const char *plan_err_text(int e)
{
	switch (e) {
	case PLAN_E_END:
		return "event field past the packet content";
	case PLAN_E_STRING:
		return "unterminated string";
	case PLAN_E_LENGTH:
		return "sequence or array longer than the packet";
	case PLAN_E_TAG:
		return "variant tag selects no option";
	default:
		return "decoding error";
	}
}

/* ---- the interpreter ---- */

static inline void put(struct plan_rf *rf, uint32_t reg, uint64_t v, uint32_t aux)
{
	rf->val[reg] = v;
	rf->aux[reg] = aux;
	rf->gen[reg] = rf->cur;
}

/* A run that does not fit before `end`: the error the full plan gives, at the field the
 * packet ends in (byte arrays say their length; padding alone, the end). */
static int fixed_fail(const struct plan *pl, const struct plan_op *o, uint64_t *p, uint64_t end)
{
	for (uint32_t k = 0; k < o->minbits; k++) {
		const struct plan_fx *f = &pl->fx[o->reg + k];
		if (end - *p < (uint64_t)f->off + f->size) {
			bool past = end - *p < f->off; /* the alignment before it fails */
			*p += f->off;
			return f->how == FX_BYTES && !past ? PLAN_E_LENGTH : PLAN_E_END;
		}
	}
	*p += o->n;
	return PLAN_E_END;
}

static inline void fixed_run(const struct plan *pl, const struct plan_op *o, const uint8_t *buf,
			     uint64_t p, struct plan_rf *rf)
{
	for (const struct plan_fx *f = pl->fx + o->a, *e = f + o->b; f < e; f++) {
		uint64_t q = p + f->off;
		if (f->how == FX_BYTES)
			put(rf, f->reg, q >> 3, f->size / 8);
		else
			put(rf, f->reg, plan_fx_read(buf, q, f), (uint32_t)(q >> 3));
	}
}

int plan_run(const struct plan *pl, uint32_t from, uint32_t to, const uint8_t *buf,
	     uint64_t *pos, uint64_t end, struct plan_rf *rf)
{
	uint64_t p = *pos;
	int rc = 0;
	for (uint32_t i = from; i < to;) {
		const struct plan_op *o = &pl->ops[i];
		switch (o->code) {
		case PLAN_ALIGN:
			p = (p + o->a - 1) & ~(uint64_t)(o->a - 1);
			if (p > end) {
				rc = PLAN_E_END;
				goto out;
			}
			i++;
			break;
		case PLAN_FAST: {
			if (end - p < o->size) {
				rc = PLAN_E_END;
				goto out;
			}
			const uint8_t *q = buf + (p >> 3);
			uint64_t v;
			switch (o->size) {
			case 8:
				v = q[0];
				break;
			case 16: {
				uint16_t x;
				memcpy(&x, q, 2);
				v = o->flags & PLAN_SWAP ? __builtin_bswap16(x) : x;
				break;
			}
			case 32: {
				uint32_t x;
				memcpy(&x, q, 4);
				v = o->flags & PLAN_SWAP ? __builtin_bswap32(x) : x;
				break;
			}
			default:
				memcpy(&v, q, 8);
				if (o->flags & PLAN_SWAP)
					v = __builtin_bswap64(v);
			}
			if (o->flags & PLAN_SIGNED)
				v = plan_sign(v, o->size);
			put(rf, o->reg, v, (uint32_t)(p >> 3));
			p += o->size;
			i++;
			break;
		}
		case PLAN_FIXED:
			if (end - p < o->n) {
				rc = fixed_fail(pl, o, &p, end);
				goto out;
			}
			fixed_run(pl, o, buf, p, rf);
			p += o->n;
			i++;
			break;
		case PLAN_INT: {
			if (end - p < o->size) {
				rc = PLAN_E_END;
				goto out;
			}
			uint64_t v = plan_read_bits(buf, p, o->size, o->flags & PLAN_BE);
			if (o->flags & PLAN_SIGNED)
				v = plan_sign(v, o->size);
			put(rf, o->reg, v, (uint32_t)(p >> 3));
			p += o->size;
			i++;
			break;
		}
		case PLAN_STRING: {
			const uint8_t *s = buf + (p >> 3);
			const uint8_t *nul = memchr(s, 0, (size_t)((end >> 3) - (p >> 3)));
			if (!nul) {
				rc = PLAN_E_STRING;
				goto out;
			}
			put(rf, o->reg, p >> 3, (uint32_t)(nul - s));
			p = (uint64_t)(nul + 1 - buf) * 8;
			i++;
			break;
		}
		case PLAN_BYTES:
		case PLAN_BYTESEQ: {
			uint64_t n = o->code == PLAN_BYTES ? o->a : rf->val[o->a];
			if ((end - p) / 8 < n || n > UINT32_MAX) {
				rc = PLAN_E_LENGTH;
				goto out;
			}
			put(rf, o->reg, p >> 3, (uint32_t)n);
			p += n * 8;
			i++;
			break;
		}
		case PLAN_ARRAY:
		case PLAN_SEQ: {
			uint64_t n = o->code == PLAN_ARRAY ? o->n : rf->val[o->a];
			/* elements that may take no bits: bounded by a budget per event that nested
			 * loops share (n * m iterations of nothing would otherwise spin) */
			if (o->minbits ? n > (end - p) / o->minbits
				       : n > PLAN_MAX_EMPTY || (rf->spin += n) > PLAN_MAX_EMPTY) {
				rc = PLAN_E_LENGTH;
				goto out;
			}
			for (uint64_t k = 0; k < n; k++)
				if ((rc = plan_run(pl, i + 1, o->end, buf, &p, end, rf)))
					goto out;
			i = o->end;
			break;
		}
		case PLAN_VARIANT: {
			int64_t v = (int64_t)rf->val[o->a];
			const struct plan_vopt *opt = NULL;
			for (uint32_t k = 0; k < o->b; k++) {
				const struct plan_vopt *c = &pl->vopts[o->n + k];
				if (v >= c->lo && v <= c->hi) {
					opt = c;
					break;
				}
			}
			if (!opt || rf->gen[o->a] != rf->cur) {
				rc = PLAN_E_TAG;
				goto out;
			}
			if (opt->end > opt->start &&
			    (rc = plan_run(pl, opt->start, opt->end, buf, &p, end, rf)))
				goto out;
			i = o->end;
			break;
		}
		default:
			rc = PLAN_E_END;
			goto out;
		}
	}
out:
	*pos = p;
	return rc;
}
