/* Event matching for clock synchronization (vmscope/sync.h): a cause on one machine and its
 * effect on another, by key.
 *
 * Either side may come first (the events are read in an order the clocks being synchronized
 * cannot make exact), so each direction has its table of events waiting for a partner: an
 * effect looks among the waiting causes, a cause among the waiting effects. A table is a pool
 * of at most `cap` entries: a matched entry goes back to a free list (so the pool stays as
 * small as the events really waiting, and hot in cache), and when `cap` events wait at once
 * the oldest is forgotten (`expired`) for the new one. Memory is thus bounded by the cap,
 * never by the trace's length; an event that waits while `cap` newer ones wait too is lost as
 * a pair, the price of that bound (machines whose own clocks are offset by D need
 * rate x D < cap, since the model pass reads them merged by those clocks). Lookups go through
 * a chained hash over the pool, age through a list in arrival order. */
#include <stdlib.h>
#include <string.h>

#include "vmscope/sync.h"

enum { KEY_TCP = 1, KEY_GH, KEY_HG };

struct mkey {
	uint64_t a, b, c;
	uint32_t type;
};

#define NIL UINT32_MAX

struct mentry {
	struct mkey key;
	uint64_t t;
	uint32_t machine;
	uint32_t next;           /* hash chain; the free list for entries not live */
	uint32_t older, newer;   /* the age list of live entries */
	bool live;
};

struct mtable {
	struct mentry *e;
	uint32_t n, cap, max;    /* entries ever used, allocated, the bound */
	uint32_t free;           /* free list of entries matched (NIL when empty) */
	uint32_t oldest, newest; /* ends of the age list (NIL when empty) */
	uint32_t *bucket;
	uint32_t nbuckets;       /* power of two, >= 2 * cap */
};

struct vms_matcher {
	struct mtable cause, effect;
	struct vms_match_stats st;
};

bool vms_match_kind(enum vms_kind kind)
{
	switch (kind) {
	case VMS_K_NET_SEND:
	case VMS_K_NET_RECV:
	case VMS_K_VMSYNC_GH_GUEST:
	case VMS_K_VMSYNC_GH_HOST:
	case VMS_K_VMSYNC_HG_HOST:
	case VMS_K_VMSYNC_HG_GUEST:
		return true;
	default:
		return false;
	}
}

struct vms_matcher *vms_matcher_new(uint32_t cap)
{
	struct vms_matcher *m = calloc(1, sizeof *m);
	if (!m)
		return NULL;
	if (cap < 16)
		cap = 16;
	if (cap > (1u << 30))
		cap = 1u << 30;
	m->cause.max = m->effect.max = cap;
	m->cause.free = m->effect.free = NIL;
	m->cause.oldest = m->cause.newest = m->effect.oldest = m->effect.newest = NIL;
	return m;
}

static void table_free(struct mtable *t)
{
	free(t->e);
	free(t->bucket);
}

void vms_matcher_free(struct vms_matcher *m)
{
	if (!m)
		return;
	table_free(&m->cause);
	table_free(&m->effect);
	free(m);
}

const struct vms_match_stats *vms_matcher_stats(const struct vms_matcher *m)
{
	return &m->st;
}

static uint32_t hash(const struct mkey *k, uint32_t nbuckets)
{
	uint64_t h = k->a * 0x9e3779b97f4a7c15ull;
	h ^= (k->b + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull;
	h ^= (k->c + k->type) * 0x94d049bb133111ebull;
	h ^= h >> 31;
	return (uint32_t)(h & (nbuckets - 1));
}

static bool same_key(const struct mkey *x, const struct mkey *y)
{
	return x->type == y->type && x->a == y->a && x->b == y->b && x->c == y->c;
}

static uint32_t find(const struct mtable *t, const struct mkey *k)
{
	if (!t->nbuckets)
		return NIL;
	for (uint32_t i = t->bucket[hash(k, t->nbuckets)]; i != NIL; i = t->e[i].next)
		if (same_key(&t->e[i].key, k))
			return i;
	return NIL;
}

/* Take a live entry out of its hash chain and of the age list. */
static void unlink_entry(struct mtable *t, uint32_t i)
{
	struct mentry *e = &t->e[i];
	uint32_t *pp = &t->bucket[hash(&e->key, t->nbuckets)];
	while (*pp != NIL && *pp != i)
		pp = &t->e[*pp].next;
	if (*pp == i)
		*pp = e->next;
	if (e->older != NIL)
		t->e[e->older].newer = e->newer;
	else
		t->oldest = e->newer;
	if (e->newer != NIL)
		t->e[e->newer].older = e->older;
	else
		t->newest = e->older;
	e->live = false;
}

/* A matched entry: back to the free list. */
static void release(struct mtable *t, uint32_t i)
{
	unlink_entry(t, i);
	t->e[i].next = t->free;
	t->free = i;
}

/* Rebuild the chains for a larger pool (entries keep their indexes; it grows only when the
 * free list is empty, so every entry is live). */
static int grow(struct mtable *t)
{
	uint32_t ncap = t->cap ? t->cap * 2 : 256;
	if (ncap > t->max)
		ncap = t->max;
	struct mentry *ne = realloc(t->e, (size_t)ncap * sizeof *ne);
	if (!ne)
		return -1;
	t->e = ne;
	uint32_t nb = 2;
	while (nb < 2 * ncap)
		nb *= 2;
	uint32_t *b = malloc((size_t)nb * sizeof *b);
	if (!b)
		return -1;
	free(t->bucket);
	t->bucket = b;
	t->nbuckets = nb;
	t->cap = ncap;
	memset(b, 0xff, (size_t)nb * sizeof *b);
	for (uint32_t i = 0; i < t->n; i++) {
		if (!t->e[i].live)
			continue;
		uint32_t h = hash(&t->e[i].key, nb);
		t->e[i].next = b[h];
		b[h] = i;
	}
	return 0;
}

/* Remember an event; returns 1 when an older unmatched event was forgotten for it. */
static int insert(struct mtable *t, const struct mkey *k, uint32_t machine, uint64_t ts)
{
	uint32_t i;
	int expired = 0;
	if (t->free != NIL) {
		i = t->free;
		t->free = t->e[i].next;
	} else if (t->n < t->max) {
		if (t->n == t->cap && grow(t) < 0)
			return 0; /* out of memory: the event simply cannot wait */
		i = t->n++;
	} else {
		i = t->oldest; /* cap events wait: the oldest is forgotten */
		unlink_entry(t, i);
		expired = 1;
	}
	uint32_t h = hash(k, t->nbuckets);
	t->e[i] = (struct mentry){ .key = *k, .t = ts, .machine = machine, .next = t->bucket[h],
				   .older = t->newest, .newer = NIL, .live = true };
	t->bucket[h] = i;
	if (t->newest != NIL)
		t->e[t->newest].newer = i;
	else
		t->oldest = i;
	t->newest = i;
	return expired;
}

/* The key of an event and whether it is a cause (sent) or an effect (received). */
static bool key_of(enum vms_kind kind, const uint64_t f[3], struct mkey *k, bool *cause)
{
	memset(k, 0, sizeof *k);
	switch (kind) {
	case VMS_K_NET_SEND:
	case VMS_K_NET_RECV:
		k->type = KEY_TCP;
		k->a = f[0];
		k->b = f[1];
		k->c = f[2];
		*cause = kind == VMS_K_NET_SEND;
		return true;
	case VMS_K_VMSYNC_GH_GUEST:
	case VMS_K_VMSYNC_GH_HOST:
		k->type = KEY_GH;
		k->a = f[0];
		k->b = f[1];
		*cause = kind == VMS_K_VMSYNC_GH_GUEST;
		return true;
	case VMS_K_VMSYNC_HG_HOST:
	case VMS_K_VMSYNC_HG_GUEST:
		k->type = KEY_HG;
		k->a = f[0];
		k->b = f[1];
		*cause = kind == VMS_K_VMSYNC_HG_HOST;
		return true;
	default:
		return false;
	}
}

int vms_matcher_event(struct vms_matcher *m, uint32_t machine, enum vms_kind kind,
		      const uint64_t f[3], uint64_t t_ns, struct vms_sync_pair *pair)
{
	struct mkey k;
	bool cause;
	if (!key_of(kind, f, &k, &cause))
		return 0;
	if (cause)
		m->st.causes++;
	else
		m->st.effects++;
	struct mtable *mine = cause ? &m->cause : &m->effect;
	struct mtable *other = cause ? &m->effect : &m->cause;
	uint32_t i = find(other, &k);
	if (i != NIL) {
		struct mentry *e = &other->e[i];
		uint32_t om = e->machine;
		uint64_t ot = e->t;
		release(other, i);
		if (om == machine) {
			m->st.same_machine++;
			return 0;
		}
		m->st.matched++;
		if (cause)
			*pair = (struct vms_sync_pair){ .from = machine, .to = om, .t_send = t_ns,
							.t_recv = ot };
		else
			*pair = (struct vms_sync_pair){ .from = om, .to = machine, .t_send = ot,
							.t_recv = t_ns };
		return 1;
	}
	if (find(mine, &k) != NIL) {
		m->st.duplicates++; /* the first event for a key wins */
		return 0;
	}
	m->st.expired += (uint64_t)insert(mine, &k, machine, t_ns);
	return 0;
}
