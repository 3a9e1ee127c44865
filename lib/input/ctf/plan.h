/* Decoding plans: a TSDL type tree compiled into a flat list of operations (align, read an
 * integer, a string, bytes; loops for arrays and sequences; jumps for variants), run by a
 * small interpreter over a packet in memory. Every scalar a plan reads lands in a register
 * (value, auxiliary length, and the number of the event that set it), so that sequence
 * lengths, variant tags, the packet's sizes and the fields vmscope maps are found by index,
 * never by name, while decoding.
 *
 * Bounds: a plan has at most PLAN_MAX_OPS operations and registers, types nest at most
 * PLAN_MAX_DEPTH deep (so the interpreter's recursion is bounded), and every read is checked
 * against the packet's content end; loops are checked against the bits left before they
 * start, so no hostile length makes the interpreter spin. */
#ifndef VMS_CTF_PLAN_H
#define VMS_CTF_PLAN_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "tsdl.h"

#define PLAN_MAX_OPS 65536
#define PLAN_MAX_REGS 8192
#define PLAN_MAX_DEPTH 64
#define PLAN_NOREG UINT32_MAX
#define PLAN_MAX_EMPTY (1u << 20)  /* elements of loops whose elements may be empty, per event */

enum plan_code {
	PLAN_ALIGN,   /* a = alignment in bits */
	PLAN_FAST,    /* byte-aligned 8/16/32/64-bit integer: size bits, flags */
	PLAN_INT,     /* any integer (bit fields, any order): size bits, flags */
	PLAN_STRING,  /* NUL-terminated: reg.val = byte offset, reg.aux = length */
	PLAN_BYTES,   /* a = count of 8-bit elements: reg.val = byte offset, reg.aux = count */
	PLAN_BYTESEQ, /* as PLAN_BYTES, the count in register a */
	PLAN_ARRAY,   /* n elements of the body [i + 1, end) */
	PLAN_SEQ,     /* register a elements of the body [i + 1, end) */
	PLAN_VARIANT, /* register a selects an option (vopts[n .. n + b)); then on at end */
	PLAN_FIXED,   /* lean plans only: fields at fixed bit offsets from here, n bits in all;
	               * fx[a .. a + b) are read into registers, fx[reg .. reg + minbits) are
	               * all of them (to name the field a packet ends in) */
};

/* One field of a PLAN_FIXED run. */
enum plan_fx_how { FX_8, FX_16, FX_32, FX_64, FX_16S, FX_32S, FX_64S, FX_BITS, FX_BYTES };

struct plan_fx {
	uint32_t off;       /* bits from the run's start */
	uint32_t size;      /* bits */
	uint32_t reg;
	uint8_t how;        /* enum plan_fx_how (S: byte-swapped) */
	uint8_t flags;      /* enum plan_flag */
};

enum plan_flag { PLAN_SIGNED = 1, PLAN_BE = 2, PLAN_TEXT = 4, PLAN_FLOAT = 8 };

struct plan_op {
	uint8_t code;
	uint8_t flags;
	uint16_t size;      /* bits */
	uint32_t reg;       /* destination register or PLAN_NOREG */
	uint32_t a, b;
	uint32_t end;       /* loops and variants: the op after their bodies */
	uint32_t minbits;   /* loops: the least bits one element takes */
	uint64_t n;
};

struct plan_vopt {
	int64_t lo, hi;     /* tag values (as the tag's signedness reads them) */
	uint32_t start, end;
};

struct plan_reg {
	const char *name;   /* the field's name without LTTng's leading '_' */
	const struct tsdl_type *type;
	uint8_t scope;      /* enum plan_scope */
	bool in_loop;       /* inside an array or sequence: the last element's value */
	bool top;           /* a direct field of its scope's struct */
};

enum plan_scope { PLAN_PH, PLAN_PC, PLAN_EH, PLAN_SEC, PLAN_EC, PLAN_EF };

struct plan {
	struct plan_op *ops;
	uint32_t nops;
	struct plan_vopt *vopts;
	uint32_t nvopts;
	struct plan_fx *fx;            /* lean plans: the fields of PLAN_FIXED runs */
	uint32_t nfx;
	uint32_t reg_first, reg_end;   /* the registers its fields use */
};

/* The registers of one stream class and the event class being compiled: names and types
 * for look-ups, shared by the plans of the scopes in decoding order. */
struct plan_regs {
	struct plan_reg *r;
	uint32_t n, cap;
	uint32_t mark;      /* registers below belong to the stream class */
};

/* Compile `st` (a struct, may be NULL: an empty plan) of scope `scope`, appending its
 * registers. Returns 0, or a negative status with err set (naming `what`). `budget` is
 * decremented by the ops made (the caller bounds a whole trace's plans). */
int plan_compile(struct plan *pl, const struct tsdl_type *st, enum plan_scope scope,
		 uint8_t trace_order, struct plan_regs *regs, uint64_t *budget, const char *path,
		 const char *what, struct vms_error *err);
void plan_free(struct plan *pl);

/* A lean plan that reads what `full` reads and moves as it moves, faster: alignments that
 * the fields before already give are dropped, every run of fixed-size fields (integers,
 * byte arrays of fixed length, the padding between them) is one PLAN_FIXED operation
 * checked against the packet end once, and of those fields only the ones whose register is
 * marked in keep[] (indexed by register) are stored. Lengths and tags are always kept.
 * Errors are those `full` gives, at the same offsets. Returns 0, or -1 out of memory. */
int plan_lean(const struct plan *full, const bool *keep, struct plan *out);

/* One plan doing what the n plans `parts` do one after the other (full plans only: the
 * scopes of one event, run as one). Returns 0, or -1 out of memory. */
int plan_concat(const struct plan *const *parts, uint32_t n, struct plan *out);

/* Mark in keep[] the registers `pl` reads lengths and tags from (they may belong to the
 * plans of an earlier scope: those must keep them). */
void plan_mark_refs(const struct plan *pl, bool *keep);

/* Is lean plan `pl` one fixed run, after at most one alignment ([ALIGN] FIXED: every event
 * of the class has the same layout)? Then *align (bits; 1 if none) and the run's op. Such
 * a plan needs no interpreter: its fields lie at fixed offsets from the aligned start. */
bool plan_fixed_layout(const struct plan *pl, uint64_t *align, const struct plan_op **run);
void plan_regs_free(struct plan_regs *regs);

/* The first register at or after `from` named `name` (without the leading '_') in `scope`
 * (any scope if scope < 0), outside loops; PLAN_NOREG if none. */
uint32_t plan_find(const struct plan_regs *regs, uint32_t from, int scope, const char *name,
		   bool top_only);

/* The register file the interpreter writes: integers' aux is their byte offset in the
 * buffer (for error messages), strings' and bytes' their length. */
struct plan_rf {
	uint64_t *val;
	uint32_t *aux;
	uint32_t *gen;
	uint32_t cur;       /* generation of the event being decoded (never 0) */
	uint32_t spin;      /* iterations of possibly empty elements so far (reset per event) */
	uint32_t n;
};

enum plan_err {
	PLAN_E_END = -1,        /* a field past the packet content */
	PLAN_E_STRING = -2,     /* a string without its NUL */
	PLAN_E_LENGTH = -3,     /* a sequence or array longer than the packet */
	PLAN_E_TAG = -4,        /* a variant tag that selects no option */
};

/* Run ops [from, to) at bit *pos of buf (whose content ends at bit `end`). Returns 0 or a
 * plan_err with *pos at the offending field. */
int plan_run(const struct plan *pl, uint32_t from, uint32_t to, const uint8_t *buf,
	     uint64_t *pos, uint64_t end, struct plan_rf *rf);

static inline int plan_exec(const struct plan *pl, const uint8_t *buf, uint64_t *pos,
			    uint64_t end, struct plan_rf *rf)
{
	return pl->nops ? plan_run(pl, 0, pl->nops, buf, pos, end, rf) : 0;
}

/* A new generation: registers set before no longer count (wraps without a false match). */
static inline void plan_next_gen(struct plan_rf *rf)
{
	if (++rf->cur == 0) {
		for (uint32_t i = 0; i < rf->n; i++)
			rf->gen[i] = 0;
		rf->cur = 1;
	}
	rf->spin = 0;
}

/* The register's value if the current event set it. */
static inline bool plan_get(const struct plan_rf *rf, uint32_t reg, uint64_t *v)
{
	if (reg == PLAN_NOREG || rf->gen[reg] != rf->cur)
		return false;
	*v = rf->val[reg];
	return true;
}

const char *plan_err_text(int e);

static inline uint64_t plan_read_bits(const uint8_t *buf, uint64_t pos, unsigned size, bool be)
{
	const uint8_t *p = buf + (pos >> 3);
	unsigned shift = (unsigned)(pos & 7), nbytes = (shift + size + 7) >> 3;
	unsigned __int128 x = 0;
	if (be) {
		for (unsigned i = 0; i < nbytes; i++)
			x = x << 8 | p[i];
		x >>= nbytes * 8 - shift - size;
	} else {
		for (unsigned i = nbytes; i-- > 0;)
			x = x << 8 | p[i];
		x >>= shift;
	}
	return size == 64 ? (uint64_t)x : (uint64_t)x & ((1ull << size) - 1);
}

static inline uint64_t plan_sign(uint64_t v, unsigned size)
{
	if (size < 64 && (v >> (size - 1)) & 1)
		v |= ~0ull << size;
	return v;
}

/* The integer field f of a fixed run, at bit q of buf (not FX_BYTES). */
static inline uint64_t plan_fx_read(const uint8_t *buf, uint64_t q, const struct plan_fx *f)
{
	const uint8_t *b = buf + (q >> 3);
	uint64_t v;
	switch (f->how) {
	case FX_8:
		v = b[0];
		break;
	case FX_16:
	case FX_16S: {
		uint16_t x;
		memcpy(&x, b, 2);
		v = f->how == FX_16S ? __builtin_bswap16(x) : x;
		break;
	}
	case FX_32:
	case FX_32S: {
		uint32_t x;
		memcpy(&x, b, 4);
		v = f->how == FX_32S ? __builtin_bswap32(x) : x;
		break;
	}
	case FX_64:
		memcpy(&v, b, 8);
		break;
	case FX_64S:
		memcpy(&v, b, 8);
		v = __builtin_bswap64(v);
		break;
	default:
		v = plan_read_bits(buf, q, f->size, f->flags & PLAN_BE);
	}
	return f->flags & PLAN_SIGNED ? plan_sign(v, f->size) : v;
}

#endif
