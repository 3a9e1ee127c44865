/* vmscope internal: the Trace Compass XML stub reader.
 *
 *   <trace> [<set_aspects>...</set_aspects>]
 *     <event timestamp="NS" name="NAME"> <field name= value= type=/>... </event> ...
 *   </trace>
 *
 * parse.c pulls one <event> at a time out of a libxml2 xmlTextReader (streaming: the file
 * is never held in memory); kinds.c maps event names to vms_kind and fields to vms_event;
 * tcxml.c is the vms_source (a validating pre-scan at open, then the streams). */
#ifndef VMS_TCXML_H
#define VMS_TCXML_H

#include <stdbool.h>
#include <stdint.h>

#include <libxml/xmlreader.h>

#include "vmscope/error.h"
#include "vmscope/event.h"

#define TCXML_MAX_FIELDS 64       /* fields of one event */
#define TCXML_MAX_VALUE 4096      /* bytes of one attribute value */
#define TCXML_ARENA 16384         /* bytes of all field names + values of one event */
#define TCXML_MAX_CPUS 4096
#define TCXML_MAX_TYPES 4096      /* distinct event names */

/* One parsed <event>: strings point into `arena`, valid until the next parse. */
struct tcxml_raw {
	uint64_t ts;
	const char *name;
	uint32_t nr_fields;
	const char *fname[TCXML_MAX_FIELDS];
	const char *fvalue[TCXML_MAX_FIELDS];
	uint32_t line;
	long offset;               /* bytes consumed by the parser when the event began */
	char arena[TCXML_ARENA];
	size_t used;
};

struct tcxml_parser {
	const char *path;
	xmlTextReaderPtr r;
	bool in_trace;            /* inside the root <trace> */
	bool error_seen;          /* libxml2 reported an error (captured, never printed) */
	bool nomem;               /* ... and it was libxml2 running out of memory */
	char xml_msg[256];
	int xml_line;
	/* where the last node read at the top level ended: libxml2 halts its parser on a fatal
	 * error and then says it consumed 0 bytes (a 100 MB attribute was "at byte offset 0") */
	long last_off;
};

/* Open the parser on path (no network, no entity substitution, no DTD loading, and a
 * document type declaration is refused). Returns 0 or a negative status with err set. */
int tcxml_parser_open(struct tcxml_parser *p, const char *path, struct vms_error *err);
void tcxml_parser_close(struct tcxml_parser *p);
/* Next <event>: 1 with *ev filled, 0 at the end of the document, negative with err set. */
int tcxml_parser_next(struct tcxml_parser *p, struct tcxml_raw *ev, struct vms_error *err);
/* Where the parser is, for messages: byte offset consumed so far. */
long tcxml_parser_offset(const struct tcxml_parser *p);

/* Does the file start (after an optional BOM, XML declaration, comments and whitespace) with
 * "<trace"? 1 yes, 0 no, negative (err set) when it cannot be read. */
int tcxml_sniff(const char *path, struct vms_error *err);

/* kinds.c */
enum vms_kind tcxml_kind_of(const char *name);
/* The value of field `name` of ev, or NULL. */
const char *tcxml_field(const struct tcxml_raw *ev, const char *name);
/* Fill out->kind fields (f[], s[]) from ev. `cpu` is out of the raw "cpu" field. Returns 0,
 * or a negative status with err set when a field the kind needs is not a number. */
int tcxml_decode(const char *path, const struct tcxml_raw *ev, enum vms_kind kind,
		 struct vms_event *out, struct vms_error *err);
/* Parse the "cpu" field (0 when absent): 0 or negative with err set. */
int tcxml_cpu(const char *path, const struct tcxml_raw *ev, uint32_t *cpu,
	      struct vms_error *err);

#endif
