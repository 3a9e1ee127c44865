/* The text of one simpletrace event, in the shape of QEMU's simpletrace.py:
 *   NAME DELTA_US pid=PID arg=0xHEX str=TEXT
 * Written by hand rather than with printf: `vmscope dump` spends most of its time here, and
 * the conversions below are several times cheaper than the format-string machinery. */
#include <string.h>

#include "reader.h"

/* A bounded writer that still counts what the whole line would need (snprintf's contract). */
struct out {
	char *p, *end;   /* end: last byte kept for the NUL */
	size_t need;
};

static inline void put(struct out *o, const char *s, size_t n)
{
	o->need += n;
	size_t room = (size_t)(o->end - o->p);
	if (n > room)
		n = room;
	memcpy(o->p, s, n);
	o->p += n;
}

static inline void put_c(struct out *o, char c)
{
	o->need++;
	if (o->p < o->end)
		*o->p++ = c;
}

static const char digits2[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

static inline void put_dec(struct out *o, uint64_t v)
{
	char tmp[24];
	char *q = tmp + sizeof tmp;
	while (v >= 100) {
		unsigned d = (unsigned)(v % 100);
		v /= 100;
		q -= 2;
		memcpy(q, digits2 + 2 * d, 2);
	}
	if (v >= 10) {
		q -= 2;
		memcpy(q, digits2 + 2 * v, 2);
	} else {
		*--q = (char)('0' + v);
	}
	put(o, q, (size_t)(tmp + sizeof tmp - q));
}

static inline void put_hex(struct out *o, uint64_t v)
{
	static const char hex[16] = "0123456789abcdef";
	char tmp[18];
	char *q = tmp + sizeof tmp;
	do {
		*--q = hex[v & 15];
		v >>= 4;
	} while (v);
	*--q = 'x';
	*--q = '0';
	put(o, q, (size_t)(tmp + sizeof tmp - q));
}

/* microseconds with 3 decimals, as Python's f"{delta_ns / 1000:0.3f}" */
static inline void put_delta(struct out *o, int64_t d)
{
	uint64_t u = (uint64_t)d;
	if (d < 0) {
		put_c(o, '-');
		u = (uint64_t)0 - u;
	}
	put_dec(o, u / 1000);
	unsigned f = (unsigned)(u % 1000);
	char frac[4] = { '.', (char)('0' + f / 100), (char)('0' + f / 10 % 10), (char)('0' + f % 10) };
	put(o, frac, 4);
}

/* string bytes: printable ASCII as is, everything else (and '\') as \xNN */
static void put_str(struct out *o, const uint8_t *s, size_t n)
{
	static const char hex[16] = "0123456789abcdef";
	size_t i = 0;
	while (i < n) {
		size_t j = i;
		while (j < n && s[j] >= 0x20 && s[j] < 0x7f && s[j] != '\\')
			j++;
		put(o, (const char *)s + i, j - i);
		if (j < n) {
			char e[4] = { '\\', 'x', hex[s[j] >> 4], hex[s[j] & 15] };
			put(o, e, 4);
			j++;
		}
		i = j;
	}
}

/* ---- the fast path: the line surely fits, no bounds checks per piece ---- */

static inline char *f_copy(char *p, const char *s, size_t n)
{
	/* short pieces: an inline loop beats a call to memcpy */
	for (size_t i = 0; i < n; i++)
		p[i] = s[i];
	return p + n;
}

static inline char *f_dec(char *p, uint64_t v)
{
	unsigned n = 1;
	for (uint64_t t = v; t >= 10; t /= 10)
		n++;
	char *q = p + n;
	while (v >= 100) {
		unsigned d = (unsigned)(v % 100);
		v /= 100;
		q -= 2;
		q[0] = digits2[2 * d];
		q[1] = digits2[2 * d + 1];
	}
	if (v >= 10) {
		q -= 2;
		q[0] = digits2[2 * v];
		q[1] = digits2[2 * v + 1];
	} else {
		*--q = (char)('0' + v);
	}
	return p + n;
}

static inline char *f_hex(char *p, uint64_t v)
{
	static const char hex[16] = "0123456789abcdef";
	unsigned n = (unsigned)(64 - __builtin_clzll(v | 1) + 3) / 4;
	p[0] = '0';
	p[1] = 'x';
	char *q = p + 2 + n;
	for (unsigned i = 0; i < n; i++) {
		*--q = hex[v & 15];
		v >>= 4;
	}
	return p + 2 + n;
}

static inline char *f_str(char *p, const uint8_t *s, size_t n)
{
	static const char hex[16] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		uint8_t c = s[i];
		if (c >= 0x20 && c < 0x7f && c != '\\') {
			*p++ = (char)c;
		} else {
			p[0] = '\\';
			p[1] = 'x';
			p[2] = hex[c >> 4];
			p[3] = hex[c & 15];
			p += 4;
		}
	}
	return p;
}

/* The longest the line can be (escapes counted at 4 bytes a string byte). */
static size_t worst_case(const struct vms_st_reader *r, const struct vms_st_type *t)
{
	size_t n = t->name_len + 1 + 26 + 5 + 10 + 64;
	const struct vms_st_desc *d = t->desc;
	if (d) {
		for (uint32_t i = 0; i < r->cur_nargs; i++)
			n += 2 + d->arg_name_len[i] +
			     ((d->str_mask & (1u << i)) ? 4 * (size_t)r->arg[i] : 18);
	}
	return n;
}

static size_t format_fast(const struct vms_source *src, const struct vms_st_reader *r,
			  const struct vms_st_type *t, char *buf)
{
	char *p = f_copy(buf, src->meta.type_names[r->cur_type], t->name_len);
	*p++ = ' ';
	int64_t d = r->cur_delta;
	uint64_t u = (uint64_t)d;
	if (d < 0) {
		*p++ = '-';
		u = (uint64_t)0 - u;
	}
	p = f_dec(p, u / 1000);
	unsigned f = (unsigned)(u % 1000);
	p[0] = '.';
	p[1] = (char)('0' + f / 100);
	p[2] = digits2[2 * (f % 100)];
	p[3] = digits2[2 * (f % 100) + 1];
	p = f_copy(p + 4, " pid=", 5);
	p = f_dec(p, r->cur_pid);
	const struct vms_st_desc *ds = t->desc;
	if (ds) {
		for (uint32_t i = 0; i < r->cur_nargs; i++) {
			*p++ = ' ';
			p = f_copy(p, ds->arg_name[i], ds->arg_name_len[i]);
			*p++ = '=';
			if (ds->str_mask & (1u << i))
				p = f_str(p, r->arg_str[i], (size_t)r->arg[i]);
			else
				p = f_hex(p, r->arg[i]);
		}
	}
	*p = '\0';
	return (size_t)(p - buf);
}

int vms_st_format_event(struct vms_source *src, uint32_t stream, char *buf, size_t len)
{
	struct vms_st_reader *r = src->impl;
	if (stream != 0 || !r->have_cur) {
		if (len)
			buf[0] = '\0';
		return -1;
	}
	if (len == 0) {
		char dummy[1];
		return vms_st_format_event(src, stream, dummy, 1);
	}
	const struct vms_st_type *t = &r->types[r->cur_type];
	/* undescribed arguments take the careful path, which says so in the line */
	if ((t->desc || !r->cur_arg_bytes) && worst_case(r, t) < len)
		return (int)format_fast(src, r, t, buf);
	struct out o = { buf, buf + len - 1, 0 };
	put(&o, src->meta.type_names[r->cur_type], t->name_len);
	put_c(&o, ' ');
	put_delta(&o, r->cur_delta);
	put(&o, " pid=", 5);
	put_dec(&o, r->cur_pid);
	const struct vms_st_desc *d = t->desc;
	if (d) {
		for (uint32_t i = 0; i < r->cur_nargs; i++) {
			put_c(&o, ' ');
			put(&o, d->arg_name[i], d->arg_name_len[i]);
			put_c(&o, '=');
			if (d->str_mask & (1u << i))
				put_str(&o, r->arg_str[i], (size_t)r->arg[i]);
			else
				put_hex(&o, r->arg[i]);
		}
	} else if (r->cur_arg_bytes) {
		put(&o, " args=<", 7);
		put_dec(&o, r->cur_arg_bytes);
		put(&o, " bytes, not described by an events file>", 40);
	}
	*o.p = '\0';
	return o.need > (size_t)INT32_MAX ? INT32_MAX : (int)o.need;
}
