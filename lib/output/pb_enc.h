/* vmscope internal: a Protocol Buffers wire encoder, enough to write Perfetto traces without
 * a protobuf library at run time. Wire types: 0 varint, 1 64-bit, 2 length-delimited; a key
 * is (field << 3) | wire type, itself a varint.
 *
 * Each function writes at p and returns the end of what it wrote. The caller owns buffers
 * big enough for what it puts in them (its messages have bounded sizes); a nested message is
 * built in a buffer of its own, then written as bytes, so that its length is known and is
 * the shortest varint (no length reserved and patched afterwards). */
#ifndef VMS_PB_ENC_H
#define VMS_PB_ENC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define PB_VARINT_MAX 10

static inline uint8_t *pb_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static inline uint8_t *pb_key(uint8_t *p, uint32_t field, unsigned wire)
{
	return pb_varint(p, (uint64_t)field << 3 | wire);
}

static inline uint8_t *pb_uint(uint8_t *p, uint32_t field, uint64_t v)
{
	return pb_varint(pb_key(p, field, 0), v);
}

/* int32/int64 fields: two's complement (a negative value takes ten bytes) */
static inline uint8_t *pb_int(uint8_t *p, uint32_t field, int64_t v)
{
	return pb_uint(p, field, (uint64_t)v);
}

static inline uint8_t *pb_double(uint8_t *p, uint32_t field, double v)
{
	uint64_t bits;
	memcpy(&bits, &v, sizeof bits);
	p = pb_key(p, field, 1);
	for (int i = 0; i < 8; i++)   /* little endian on the wire */
		*p++ = (uint8_t)(bits >> (8 * i));
	return p;
}

/* a string, bytes or an already encoded nested message */
static inline uint8_t *pb_bytes(uint8_t *p, uint32_t field, const void *b, size_t n)
{
	p = pb_varint(pb_key(p, field, 2), n);
	if (n)
		memcpy(p, b, n);
	return p + n;
}

#endif
