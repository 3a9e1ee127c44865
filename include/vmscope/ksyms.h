/* vmscope: kernel symbols, to name a guest RIP ("virtio_queue_notify+0x2a" instead of an
 * address). From a trace.dat's kallsyms section, or from a /proc/kallsyms copy given with
 * --kallsyms NAME=FILE. Lines "ADDRESS TYPE NAME [MODULE]"; only code symbols (t, T, w, W)
 * are kept. Untrusted text: every line is checked, the table is sized by what is really
 * there, and a lookup is a binary search. */
#ifndef VMSCOPE_KSYMS_H
#define VMSCOPE_KSYMS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct vms_ksyms;

/* Parse text (not NUL-terminated). NULL when out of memory; an empty table (no symbol)
 * is a valid result. */
struct vms_ksyms *vms_ksyms_parse(const char *text, size_t len);
/* The same line by line, for a text that is never held whole: new, one line (without its
 * '\n') at a time (0, or -1 when out of memory), done before the first lookup. */
struct vms_ksyms *vms_ksyms_new(void);
int vms_ksyms_add_line(struct vms_ksyms *k, const char *line, size_t n);
void vms_ksyms_done(struct vms_ksyms *k);
/* Read a file; NULL with errno set when it cannot be read. */
struct vms_ksyms *vms_ksyms_load(const char *path);
void vms_ksyms_free(struct vms_ksyms *k);
uint32_t vms_ksyms_count(const struct vms_ksyms *k);
/* The symbol at or below addr ("name" with *off = addr - its address), NULL when addr lies
 * before the first symbol or more than 1 MiB past the last one (not kernel text). */
const char *vms_ksyms_lookup(const struct vms_ksyms *k, uint64_t addr, uint64_t *off);
/* "name+0x2a" into buf, or "0xADDRESS" when unknown (k may be NULL). */
const char *vms_ksyms_format(const struct vms_ksyms *k, uint64_t addr, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
