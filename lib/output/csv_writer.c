#include <string.h>

#include "vmscope/writers.h"

void vms_csv_string(FILE *f, const char *s)
{
	if (!s)
		return;
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}
