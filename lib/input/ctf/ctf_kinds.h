/* LTTng's event and field names mapped onto vmscope's kinds (include/vmscope/event.h),
 * decided once per event class at open: which registers of its plan fill f[] and s[]. */
#ifndef VMS_CTF_KINDS_H
#define VMS_CTF_KINDS_H

#include <stdbool.h>
#include <stdint.h>

#include "plan.h"

#define CTF_MAP_CAND 4

struct ctf_evmap {
	uint16_t kind;                 /* enum vms_kind */
	uint8_t nf[5], ns[2];
	uint32_t f[5][CTF_MAP_CAND];   /* candidate registers, the first one set wins */
	uint32_t s[2][CTF_MAP_CAND];
	uint8_t required;              /* f slots that must be set, else this event is OTHER */
	bool basename;                 /* s[0] is a path: the comm is its last component */
};

enum ctf_domain { CTF_DOM_KERNEL, CTF_DOM_UST, CTF_DOM_VMSTRACE };

/* The map of event `name` whose registers are regs->r[from .. regs->n). `no_wakeup`: the
 * trace has no sched_wakeup class (then sched_waking counts as the wakeup). */
void ctf_map_event(const char *name, const struct plan_regs *regs, uint32_t from,
		   enum ctf_domain dom, bool no_wakeup, struct ctf_evmap *m);

#endif
