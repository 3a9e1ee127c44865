/* The event registry: generated tables, the enable state the user asked for, and the state
 * bytes the trace points read (requested AND recording). */
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct reg {
	struct vmst_table *t;
	uint8_t *req;              /* requested state per event */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct reg *regs;
static size_t nregs;
static uint32_t total;
uint32_t vmst__tables_gen;
/* patterns given at start-up, kept for tables that register later */
static struct vmst_pattern *saved;
static size_t nsaved;

static void refresh_locked(void)
{
	uint8_t rec = (uint8_t)(__atomic_load_n(&vmst__recording, __ATOMIC_ACQUIRE) != 0);
	for (size_t r = 0; r < nregs; r++)
		for (uint32_t i = 0; i < regs[r].t->n; i++)
			__atomic_store_n(&regs[r].t->state[i], (uint8_t)(regs[r].req[i] & rec),
					 __ATOMIC_RELEASE);
}

static void apply_locked(struct reg *r, const struct vmst_pattern *pat, size_t npat)
{
	for (size_t p = 0; p < npat; p++)
		for (uint32_t i = 0; i < r->t->n; i++)
			if (fnmatch(pat[p].glob, r->t->events[i].name, 0) == 0)
				r->req[i] = pat[p].enable;
}

void vmst_register(struct vmst_table *t)
{
	pthread_mutex_lock(&lock);
	struct reg *nr = realloc(regs, (nregs + 1) * sizeof *nr);
	uint8_t *req = calloc(t->n ? t->n : 1, 1);
	if (!nr || !req || total + t->n > 65535) {
		/* ids are 16 bits; a table that does not fit stays disabled forever */
		if (nr)
			regs = nr;
		free(req);
		pthread_mutex_unlock(&lock);
		return;
	}
	regs = nr;
	t->base = total;
	total += t->n;
	regs[nregs].t = t;
	regs[nregs].req = req;
	apply_locked(&regs[nregs], saved, nsaved);
	nregs++;
	__atomic_add_fetch(&vmst__tables_gen, 1, __ATOMIC_RELEASE);
	refresh_locked();
	pthread_mutex_unlock(&lock);
	/* the first table starts the tracer when the environment asks for it */
	const char *env = getenv("VMSCOPE_TRACE");
	if (env && *env && !__atomic_load_n(&vmst__started, __ATOMIC_ACQUIRE))
		vmst_init(NULL);
}

void vmst_events_apply(const struct vmst_pattern *pat, size_t npat)
{
	pthread_mutex_lock(&lock);
	struct vmst_pattern *s = realloc(saved, (nsaved + npat) * sizeof *s);
	if (s) {
		saved = s;
		for (size_t i = 0; i < npat; i++) {
			saved[nsaved].glob = strdup(pat[i].glob);
			saved[nsaved].enable = pat[i].enable;
			if (saved[nsaved].glob)
				nsaved++;
		}
	}
	for (size_t r = 0; r < nregs; r++)
		apply_locked(&regs[r], pat, npat);
	refresh_locked();
	pthread_mutex_unlock(&lock);
}

void vmst_events_refresh(void)
{
	pthread_mutex_lock(&lock);
	refresh_locked();
	pthread_mutex_unlock(&lock);
}

static bool locate(size_t i, size_t *r, uint32_t *k)
{
	for (size_t x = 0; x < nregs; x++) {
		if (i < regs[x].t->n) {
			*r = x;
			*k = (uint32_t)i;
			return true;
		}
		i -= regs[x].t->n;
	}
	return false;
}

size_t vmst_event_count(void)
{
	pthread_mutex_lock(&lock);
	size_t n = total;
	pthread_mutex_unlock(&lock);
	return n;
}

const char *vmst_event_name(size_t i)
{
	size_t r;
	uint32_t k;
	const char *name = NULL;
	pthread_mutex_lock(&lock);
	if (locate(i, &r, &k))
		name = regs[r].t->events[k].name;
	pthread_mutex_unlock(&lock);
	return name;
}

bool vmst_event_get(size_t i)
{
	size_t r;
	uint32_t k;
	bool on = false;
	pthread_mutex_lock(&lock);
	if (locate(i, &r, &k))
		on = regs[r].req[k];
	pthread_mutex_unlock(&lock);
	return on;
}

int vmst_event_set(size_t i, bool enable)
{
	size_t r;
	uint32_t k;
	int rc = -EINVAL;
	pthread_mutex_lock(&lock);
	if (locate(i, &r, &k)) {
		regs[r].req[k] = enable;
		refresh_locked();
		rc = 0;
	}
	pthread_mutex_unlock(&lock);
	return rc;
}

int vmst_event_set_glob(const char *glob, bool enable)
{
	int n = 0;
	if (!glob)
		return 0;
	pthread_mutex_lock(&lock);
	for (size_t r = 0; r < nregs; r++)
		for (uint32_t i = 0; i < regs[r].t->n; i++)
			if (fnmatch(glob, regs[r].t->events[i].name, 0) == 0) {
				regs[r].req[i] = enable;
				n++;
			}
	refresh_locked();
	pthread_mutex_unlock(&lock);
	return n;
}

void vmst_events_foreach(void (*fn)(void *arg, uint32_t id, const struct vmst_event_desc *ev),
			 void *arg)
{
	pthread_mutex_lock(&lock);
	for (size_t r = 0; r < nregs; r++)
		for (uint32_t i = 0; i < regs[r].t->n; i++)
			fn(arg, regs[r].t->base + i, &regs[r].t->events[i]);
	pthread_mutex_unlock(&lock);
}

const struct vmst_event_desc *vmst_events_desc(uint32_t id)
{
	size_t r;
	uint32_t k;
	const struct vmst_event_desc *d = NULL;
	pthread_mutex_lock(&lock);
	if (locate(id, &r, &k))
		d = &regs[r].t->events[k];
	pthread_mutex_unlock(&lock);
	return d;
}

uint32_t vmst_events_total(void)
{
	return (uint32_t)vmst_event_count();
}

void vmst_events_fork_lock(bool hold)
{
	if (hold)
		pthread_mutex_lock(&lock);
	else
		pthread_mutex_unlock(&lock);
}

void vmst_events_after_fork(void)
{
	/* the child is single-threaded: no lock needed, and the parent's holder is gone */
	pthread_mutex_init(&lock, NULL);
	for (size_t r = 0; r < nregs; r++)
		for (uint32_t i = 0; i < regs[r].t->n; i++)
			__atomic_store_n(&regs[r].t->state[i], 0, __ATOMIC_RELAXED);
}
