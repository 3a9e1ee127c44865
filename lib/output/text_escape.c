/* Text that comes from a trace, made safe for the writers.
 *
 * A guest writes its own trace, so a comm, a GUEST name, an event type or a string argument
 * may hold a newline (a fake report line), an escape sequence (ESC or the 8-bit CSI, driving
 * the terminal), a Unicode direction override (text shown in another order than it is
 * read), bytes that are not UTF-8 (invalid JSON) or a spreadsheet formula. Every writer goes
 * through here: the text writers (report, info, dump, CSV) show such characters as `\xHH`
 * escapes, with `\\` for a backslash, so that the text stays readable and unambiguous; JSON
 * has its own escapes (json_writer.c) and uses vms_utf8_seq() to replace what is not UTF-8. */
#include <string.h>

#include "vmscope/writers.h"

int vms_utf8_seq(const unsigned char *p, uint32_t *cp)
{
	unsigned char c = p[0];
	int n;
	uint32_t v, min;
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, v = c & 0x1f, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, v = c & 0x0f, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, v = c & 0x07, min = 0x10000;
	else
		return 0;
	for (int i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)   /* also stops at the terminating NUL */
			return 0;
		v = (v << 6) | (p[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return n;
}

bool vms_text_char_unsafe(uint32_t cp)
{
	return cp < 0x20 || cp == 0x7f ||
	       (cp >= 0x80 && cp <= 0x9f) ||          /* C1 controls: 0x9b is CSI */
	       (cp >= 0x200e && cp <= 0x200f) ||      /* LRM, RLM */
	       (cp >= 0x202a && cp <= 0x202e) ||      /* embeddings and overrides */
	       (cp >= 0x2066 && cp <= 0x2069) ||      /* isolates */
	       cp == 0x2028 || cp == 0x2029;          /* line and paragraph separators */
}

static size_t put(char *dst, size_t len, size_t n, const char *s, size_t k)
{
	for (size_t i = 0; i < k; i++, n++)
		if (n + 1 < len)
			dst[n] = s[i];
	return n;
}

size_t vms_text_escape(char *dst, size_t len, const char *src)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;
	const unsigned char *p = (const unsigned char *)(src ? src : "");
	while (*p) {
		uint32_t cp;
		int k = vms_utf8_seq(p, &cp);
		if (k > 0 && !vms_text_char_unsafe(cp)) {
			n = cp == '\\' ? put(dst, len, n, "\\\\", 2) : put(dst, len, n, (const char *)p,
									     (size_t)k);
			p += k;
			continue;
		}
		/* unsafe character or a byte that is not UTF-8: each byte as \xHH */
		for (int i = 0; i < (k > 0 ? k : 1); i++) {
			char e[4] = {'\\', 'x', hex[p[i] >> 4], hex[p[i] & 15]};
			n = put(dst, len, n, e, 4);
		}
		p += k > 0 ? k : 1;
	}
	if (len)
		dst[n < len ? n : len - 1] = '\0';
	return n;
}

bool vms_text_is_safe(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p >= 0x7f || *p == '\\')
			return false;
	return true;
}

void vms_text_string(FILE *f, const char *s)
{
	if (!s)
		return;
	if (vms_text_is_safe(s)) {
		fputs(s, f);
		return;
	}
	char buf[1024];
	size_t n = vms_text_escape(buf, sizeof buf, s);
	if (n < sizeof buf) {
		fputs(buf, f);
		return;
	}
	/* long: escape in pieces of whole characters */
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		char piece[256];
		size_t k = 0;
		uint32_t cp;
		while (p[k] && k < sizeof piece - 8) {
			int l = vms_utf8_seq(p + k, &cp);
			k += l > 0 ? (size_t)l : 1;
		}
		memcpy(piece, p, k);
		piece[k] = '\0';
		vms_text_escape(buf, sizeof buf, piece);
		fputs(buf, f);
		p += k;
	}
}
