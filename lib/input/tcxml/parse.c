/* Pull parsing of a Trace Compass XML stub with libxml2's xmlTextReader: one <event> at a
 * time, so memory does not grow with the file. The input is untrusted: no network, no
 * entity substitution, no DTD loading, a DOCTYPE is refused outright (a stub trace never
 * needs one, and refusing it rules out entity expansion games), attribute values are capped,
 * and libxml2's messages are captured (the library never prints) and returned as one error
 * with the line and byte offset. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/xmlerror.h>

#include "tcxml.h"
#include "xml_dl.h"

static void capture_error(void *arg, xmlErrorPtr e)
{
	struct tcxml_parser *p = arg;
	if (!e || e->level < XML_ERR_ERROR || p->error_seen)
		return;
	p->error_seen = true;
	p->nomem = e->code == XML_ERR_NO_MEMORY;
	p->xml_line = e->line;
	snprintf(p->xml_msg, sizeof p->xml_msg, "%s", e->message ? e->message : "XML error");
	/* libxml2 messages end with a newline: keep the error to one line */
	for (char *c = p->xml_msg; *c; c++)
		if (*c == '\n' || *c == '\r')
			*c = *(c + 1) ? ' ' : '\0';
}

static void silent(void *ctx, const char *msg, ...)
{
	(void)ctx;
	(void)msg;
}

long tcxml_parser_offset(const struct tcxml_parser *p)
{
	long off = p->r ? xmlTextReaderByteConsumed(p->r) : 0;
	return off > p->last_off ? off : p->last_off;
}

static int fail(struct tcxml_parser *p, struct vms_error *err, const char *what)
{
	int line = p->r ? xmlTextReaderGetParserLineNumber(p->r) : 0;
	if (p->error_seen && p->nomem) {
		long off = tcxml_parser_offset(p);
		return vms_error_nomem_at(err, p->path, off > 0 ? (uint64_t)off : 0);
	}
	if (p->error_seen) {
		if (p->xml_line > 0)
			line = p->xml_line;
		return vms_error_set(err, VMS_ERR_FORMAT,
				     "%s: malformed XML: %s (line %d) at byte offset %ld", p->path,
				     p->xml_msg, line, tcxml_parser_offset(p));
	}
	return vms_error_set(err, VMS_ERR_FORMAT, "%s: %s (line %d) at byte offset %ld", p->path,
			     what, line, tcxml_parser_offset(p));
}

int tcxml_parser_open(struct tcxml_parser *p, const char *path, struct vms_error *err)
{
	memset(p, 0, sizeof *p);
	p->path = path;
	int lr = vms_xml_load(path, err);
	if (lr < 0)
		return lr;
	/* anything libxml2 would print outside the reader's handler goes nowhere */
	xmlSetGenericErrorFunc(NULL, silent);
	/* XML_PARSE_NONET: never fetch anything; no XML_PARSE_NOENT (no substitution), no
	 * XML_PARSE_DTDLOAD/DTDATTR/XINCLUDE, no XML_PARSE_HUGE (libxml2's own size limits). */
	p->r = xmlReaderForFile(path, NULL, XML_PARSE_NONET | XML_PARSE_NOWARNING |
						   XML_PARSE_NOERROR | XML_PARSE_NOCDATA);
	if (!p->r)
		return errno == EMFILE || errno == ENFILE || errno == ENOMEM
			? vms_error_open(err, path, errno, 0)
			: vms_error_set(err, VMS_ERR_IO, "%s: cannot open for XML reading", path);
	xmlTextReaderSetStructuredErrorHandler(p->r, capture_error, p);
	return 0;
}

void tcxml_parser_close(struct tcxml_parser *p)
{
	if (p->r)
		xmlFreeTextReader(p->r);
	p->r = NULL;
}

/* Copy s into the event's arena; NULL when it does not fit. */
static const char *keep(struct tcxml_raw *ev, const char *s)
{
	size_t n = strlen(s) + 1;
	if (n > TCXML_ARENA - ev->used)
		return NULL;
	char *d = ev->arena + ev->used;
	memcpy(d, s, n);
	ev->used += n;
	return d;
}

/* The value of attribute `name` of the current element, or NULL; leaves the reader on the
 * element. Values longer than TCXML_MAX_VALUE are an error (*too_long). */
static const char *attr(struct tcxml_parser *p, const char *name, bool *too_long)
{
	const char *v = NULL;
	if (xmlTextReaderMoveToAttribute(p->r, (const xmlChar *)name) == 1) {
		v = (const char *)xmlTextReaderConstValue(p->r);
		if (v && strnlen(v, TCXML_MAX_VALUE + 1) > TCXML_MAX_VALUE)
			*too_long = true;
	}
	xmlTextReaderMoveToElement(p->r);
	return v;
}

static int parse_u64(const char *s, uint64_t *out)
{
	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

static int parse_event(struct tcxml_parser *p, struct tcxml_raw *ev, struct vms_error *err)
{
	bool too_long = false;
	char what[160];
	ev->used = 0;
	ev->nr_fields = 0;
	ev->line = (uint32_t)xmlTextReaderGetParserLineNumber(p->r);
	ev->offset = tcxml_parser_offset(p);
	const char *ts = attr(p, "timestamp", &too_long);
	const char *name = attr(p, "name", &too_long);
	if (too_long)
		return fail(p, err, "attribute value too long in <event>");
	if (!ts || parse_u64(ts, &ev->ts) != 0) {
		snprintf(what, sizeof what, "<event> without a valid timestamp (\"%.40s\")",
			 ts ? ts : "");
		return fail(p, err, what);
	}
	if (!name || !*name)
		return fail(p, err, "<event> without a name");
	if (!(ev->name = keep(ev, name)))
		return fail(p, err, "event too large");
	if (xmlTextReaderIsEmptyElement(p->r))
		return 1;
	for (;;) {
		int rc = xmlTextReaderRead(p->r);
		if (rc != 1 || p->error_seen)
			return fail(p, err, "unexpected end of file inside <event>");
		int type = xmlTextReaderNodeType(p->r);
		int depth = xmlTextReaderDepth(p->r);
		if (type == XML_READER_TYPE_END_ELEMENT && depth == 1)
			return 1;
		if (type != XML_READER_TYPE_ELEMENT || depth != 2)
			continue;
		const char *el = (const char *)xmlTextReaderConstLocalName(p->r);
		if (!el || strcmp(el, "field") != 0)
			continue;
		const char *fn = attr(p, "name", &too_long);
		const char *fv = attr(p, "value", &too_long);
		if (too_long)
			return fail(p, err, "attribute value too long in <field>");
		if (!fn || !fv)
			return fail(p, err, "<field> without name or value");
		if (ev->nr_fields == TCXML_MAX_FIELDS)
			return fail(p, err, "too many fields in one <event>");
		const char *kn = keep(ev, fn), *kv = keep(ev, fv);
		if (!kn || !kv)
			return fail(p, err, "event too large");
		ev->fname[ev->nr_fields] = kn;
		ev->fvalue[ev->nr_fields] = kv;
		ev->nr_fields++;
	}
}

int tcxml_parser_next(struct tcxml_parser *p, struct tcxml_raw *ev, struct vms_error *err)
{
	for (;;) {
		int rc = xmlTextReaderRead(p->r);
		if (rc < 0 || p->error_seen)
			return fail(p, err, "malformed XML");
		p->last_off = tcxml_parser_offset(p);
		if (rc == 0) {
			if (!p->in_trace)
				return fail(p, err, "no <trace> element");
			return 0;
		}
		int type = xmlTextReaderNodeType(p->r);
		if (type == XML_READER_TYPE_DOCUMENT_TYPE)
			return fail(p, err, "document type declaration not allowed");
		if (type != XML_READER_TYPE_ELEMENT)
			continue;
		int depth = xmlTextReaderDepth(p->r);
		const char *el = (const char *)xmlTextReaderConstLocalName(p->r);
		if (!el)
			return fail(p, err, "element without a name");
		if (depth == 0) {
			if (strcmp(el, "trace") != 0)
				return fail(p, err, "root element is not <trace>");
			p->in_trace = true;
			continue;
		}
		if (depth == 1 && strcmp(el, "event") == 0)
			return parse_event(p, ev, err);
		/* <set_aspects> and anything unknown: its nodes are skipped one by one */
	}
}

int tcxml_sniff(const char *path, struct vms_error *err)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return vms_error_open(err, path, errno, 0);
	char buf[4096];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *s = buf, *end = buf + n;
	if (n >= 3 && (unsigned char)s[0] == 0xef && (unsigned char)s[1] == 0xbb &&
	    (unsigned char)s[2] == 0xbf)
		s += 3;
	for (;;) {
		while (s < end && (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n'))
			s++;
		if (end - s >= 5 && memcmp(s, "<?xml", 5) == 0) {
			const char *q = strstr(s, "?>");
			if (!q)
				return 0;
			s = q + 2;
			continue;
		}
		if (end - s >= 4 && memcmp(s, "<!--", 4) == 0) {
			const char *q = strstr(s, "-->");
			if (!q)
				return 0;
			s = q + 3;
			continue;
		}
		break;
	}
	if (end - s < 7 || memcmp(s, "<trace", 6) != 0)
		return 0;
	char c = s[6];
	return c == '>' || c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '/';
}
