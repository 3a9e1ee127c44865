/* A small Protocol Buffers wire encoder (see pb_wire.h). Wire types: 0 varint, 1 64-bit,
 * 2 length-delimited; a key is (field << 3) | wire type, itself a varint. */
#include <stdlib.h>
#include <string.h>

#include "pb_wire.h"

#define NESTED_MAX ((1u << 28) - 1)  /* what a 4-byte varint holds */

void vms_pb_init(struct vms_pb *pb)
{
	memset(pb, 0, sizeof *pb);
}

void vms_pb_free(struct vms_pb *pb)
{
	free(pb->buf);
	vms_pb_init(pb);
}

void vms_pb_reset(struct vms_pb *pb)
{
	pb->len = 0;
	pb->depth = 0;
	pb->failed = false;
	pb->nr_done = 0;
	pb->overflow = false;
}

static bool room(struct vms_pb *pb, size_t n)
{
	if (pb->failed)
		return false;
	if (pb->len + n <= pb->cap)
		return true;
	size_t cap = pb->cap ? pb->cap : 256;
	while (cap < pb->len + n)
		cap *= 2;
	uint8_t *b = realloc(pb->buf, cap);
	if (!b) {
		pb->failed = true;
		return false;
	}
	pb->buf = b;
	pb->cap = cap;
	return true;
}

static void put_varint(struct vms_pb *pb, uint64_t v)
{
	if (!room(pb, 10))
		return;
	while (v >= 0x80) {
		pb->buf[pb->len++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	pb->buf[pb->len++] = (uint8_t)v;
}

static void key(struct vms_pb *pb, uint32_t field, unsigned wire)
{
	put_varint(pb, (uint64_t)field << 3 | wire);
}

void vms_pb_uint(struct vms_pb *pb, uint32_t field, uint64_t v)
{
	key(pb, field, 0);
	put_varint(pb, v);
}

void vms_pb_int(struct vms_pb *pb, uint32_t field, int64_t v)
{
	vms_pb_uint(pb, field, (uint64_t)v);
}

void vms_pb_double(struct vms_pb *pb, uint32_t field, double v)
{
	uint64_t bits;
	memcpy(&bits, &v, sizeof bits);
	key(pb, field, 1);
	if (!room(pb, 8))
		return;
	for (int i = 0; i < 8; i++)   /* little endian on the wire */
		pb->buf[pb->len++] = (uint8_t)(bits >> (8 * i));
}

void vms_pb_string(struct vms_pb *pb, uint32_t field, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	key(pb, field, 2);
	put_varint(pb, n);
	if (n && room(pb, n)) {
		memcpy(pb->buf + pb->len, s, n);
		pb->len += n;
	}
}

void vms_pb_begin(struct vms_pb *pb, uint32_t field)
{
	key(pb, field, 2);
	if (pb->depth >= VMS_PB_DEPTH) {
		pb->failed = true;
		return;
	}
	if (!room(pb, 4))
		return;
	pb->open[pb->depth++] = pb->len;
	pb->len += 4;
}

void vms_pb_end(struct vms_pb *pb)
{
	if (pb->failed || pb->depth == 0) {
		pb->failed = true;
		return;
	}
	size_t at = pb->open[--pb->depth];
	size_t n = pb->len - at - 4;
	if (n > NESTED_MAX) {
		pb->failed = true;
		return;
	}
	for (int i = 0; i < 4; i++)
		pb->buf[at + (size_t)i] = (uint8_t)(((n >> (7 * i)) & 0x7f) | (i < 3 ? 0x80 : 0));
	if (pb->nr_done < VMS_PB_NESTED)
		pb->done[pb->nr_done++] = (struct vms_pb_nested){ .off = at, .len = n };
	else
		pb->overflow = true;
}

static unsigned varint_size(uint64_t v)
{
	unsigned n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

void vms_pb_compact(struct vms_pb *pb)
{
	unsigned n = pb->nr_done;
	if (pb->failed || pb->depth || pb->overflow || !n)
		return;
	/* by offset (a message closes after the ones inside it: insertion sort, n is small) */
	for (unsigned i = 1; i < n; i++)
		for (unsigned j = i; j > 0 && pb->done[j - 1].off > pb->done[j].off; j--) {
			struct vms_pb_nested t = pb->done[j];
			pb->done[j] = pb->done[j - 1];
			pb->done[j - 1] = t;
		}
	/* new lengths, innermost first: a message loses what the messages inside it save */
	size_t saved[VMS_PB_NESTED];
	for (unsigned i = n; i-- > 0;) {
		size_t end = pb->done[i].off + 4 + pb->done[i].len, less = 0;
		for (unsigned j = i + 1; j < n && pb->done[j].off < end; j++)
			less += saved[j];
		pb->done[i].len -= less;
		saved[i] = 4 - varint_size(pb->done[i].len);
	}
	/* one pass forward, in place (the output never overtakes the input) */
	size_t in = 0, out = 0;
	for (unsigned i = 0; i < n; i++) {
		size_t at = pb->done[i].off;
		memmove(pb->buf + out, pb->buf + in, at - in);
		out += at - in;
		uint64_t v = pb->done[i].len;
		while (v >= 0x80) {
			pb->buf[out++] = (uint8_t)(v | 0x80);
			v >>= 7;
		}
		pb->buf[out++] = (uint8_t)v;
		in = at + 4;
	}
	memmove(pb->buf + out, pb->buf + in, pb->len - in);
	pb->len = out + (pb->len - in);
}
