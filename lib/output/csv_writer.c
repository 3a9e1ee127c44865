#include <stdlib.h>
#include <string.h>

#include "vmscope/writers.h"

void vms_csv_string(FILE *f, const char *s)
{
	if (!s)
		return;
	char buf[1024];
	char *e = buf;
	size_t n = vms_text_escape(buf, sizeof buf, s);
	if (n >= sizeof buf) {
		e = malloc(n + 1);
		if (!e) {
			fputs("?", f);
			return;
		}
		vms_text_escape(e, n + 1, s);
	}
	bool formula = strchr("=+-@", e[0]) != NULL && e[0];
	if (!formula && !strpbrk(e, ",\"")) {
		fputs(e, f);
	} else {
		fputc('"', f);
		if (formula)
			fputc('\'', f);
		for (const char *p = e; *p; p++) {
			if (*p == '"')
				fputc('"', f);
			fputc(*p, f);
		}
		fputc('"', f);
	}
	if (e != buf)
		free(e);
}
