/* idle_track: the pure half of idle_gpu.h: the idle_gpu block, one round
 * of samples, and the per-allocation clocks.  No I/O, no locks, no clock:
 * the caller passes `now`. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"
#include "common/xalloc.h"
#include "server/idle_gpu.h"

/* ---- the block ------------------------------------------------------------ */

const char *idle_action_name(enum idle_action a)
{
	return a == IDLE_ACTION_STOP ? "stop" : "warn";
}

static int check_fields(const json_t *block, const char *where, struct herd_err *err)
{
	static const char *const keys[] = { "utilization_below", "after", "action", NULL };
	const char *k;
	json_t *v;

	if (!json_is_object(block))
		return herd_errf(err, -EINVAL, "%s must be an object", where);
	json_object_foreach((json_t *)block, k, v) {
		bool known = false;
		(void)v;
		for (size_t i = 0; keys[i]; i++)
			known = known || !strcmp(keys[i], k);
		if (!known)
			return herd_errf(err, -EINVAL, "unknown field \"%s\" in %s", k, where);
	}
	return 0;
}

json_t *idle_policy_check(const json_t *block, const char *where, struct herd_err *err)
{
	const json_t *below = json_object_get(block, "utilization_below");
	const char *after = json_string_value(json_object_get(block, "after"));
	const json_t *action = json_object_get(block, "action");
	const char *act = action ? json_string_value(action) : "warn";
	struct herd_err derr = { 0 };
	int64_t pct = 5, ns = 0;
	char buf[64];

	if (check_fields(block, where, err) < 0)
		return NULL;
	if (below) {
		/* 5.0 from a hand-written JSON body is the same percent as 5 */
		double d = json_is_number(below) ? json_number_value(below) : -1;
		if (!json_is_number(below) || d != (double)(int64_t)d || d < 1 || d > 100) {
			herd_errf(err, -EINVAL, "%s.utilization_below must be a whole percent from 1 to 100",
				  where);
			return NULL;
		}
		pct = (int64_t)d;
	}
	if (!json_object_get(block, "after")) {
		herd_errf(err, -EINVAL, "%s needs after, how long the GPUs must stay idle (after = \"2h\")",
			  where);
		return NULL;
	}
	if (!after || parse_duration(after, &ns, &derr) < 0) {
		herd_errf(err, -EINVAL, "%s.after must be a duration such as \"2h\" or \"30m\"%s%s", where,
			  after ? ": " : "", after ? derr.msg : "");
		return NULL;
	}
	if (ns < IDLE_MIN_AFTER_NS || ns > IDLE_MAX_AFTER_NS) {
		herd_errf(err, -EINVAL, "%s.after must be from 1s to 8784h, not \"%s\"", where, after);
		return NULL;
	}
	if (!act || (strcmp(act, "warn") && strcmp(act, "stop"))) {
		herd_errf(err, -EINVAL, "%s.action must be \"warn\" or \"stop\"", where);
		return NULL;
	}
	return json_pack("{s:I, s:s, s:s}", "utilization_below", (json_int_t)pct, "after",
			 format_duration(ns, buf, sizeof(buf)), "action", act);
}

bool idle_policy_from_json(const json_t *block, struct idle_policy *p)
{
	int64_t below = json_integer_value(json_object_get(block, "utilization_below"));
	const char *after = json_string_value(json_object_get(block, "after"));
	const char *act = json_string_value(json_object_get(block, "action"));
	int64_t ns = 0;

	memset(p, 0, sizeof(*p));
	if (!json_is_object(block) || below < 1 || below > 100 || !after ||
	    parse_duration(after, &ns, NULL) < 0 || ns < IDLE_MIN_AFTER_NS)
		return false;
	p->below = (int)below;
	p->after_ns = ns;
	p->action = act && !strcmp(act, "stop") ? IDLE_ACTION_STOP : IDLE_ACTION_WARN;
	return true;
}

void idle_policy_merge(struct idle_policy *a, const struct idle_policy *b)
{
	if (b->below <= 0)
		return;
	if (a->below <= 0) {
		*a = *b;
		return;
	}
	if (b->below > a->below)
		a->below = b->below;
	if (b->after_ns < a->after_ns)
		a->after_ns = b->after_ns;
	if (b->action == IDLE_ACTION_STOP)
		a->action = IDLE_ACTION_STOP;
}

/* ---- one round -------------------------------------------------------------- */

enum idle_obs idle_observe(const struct idle_dev *devs, size_t n, int below, int64_t *first_at)
{
	bool missing = false;
	int64_t first = 0;

	if (n == 0 || below <= 0)
		return IDLE_OBS_BUSY;
	for (size_t i = 0; i < n; i++) {
		const struct idle_window *w = devs[i].w;
		/* never judged idle: a MIG instance has no utilization of its own */
		if (devs[i].mig)
			return IDLE_OBS_BUSY;
		if (!w || w->n <= 0) {
			missing = true;
			continue;
		}
		if (w->unknown || !(w->max_util < (double)below))
			return IDLE_OBS_BUSY;
		if (w->first_at > first)
			first = w->first_at;
	}
	if (missing)
		return IDLE_OBS_NONE;
	*first_at = first;
	return IDLE_OBS_IDLE;
}

enum idle_decision idle_step(struct idle_state *st, enum idle_obs obs, int64_t first_at,
			     const struct idle_policy *p, int64_t now)
{
	if (obs == IDLE_OBS_BUSY) {
		st->idle_since = 0;
		st->acted = false;
		return IDLE_NOTHING;
	}
	if (obs == IDLE_OBS_IDLE && st->idle_since == 0)
		st->idle_since = first_at > 0 && first_at <= now ? first_at : now;
	if (st->idle_since == 0 || st->acted || p->below <= 0 || now - st->idle_since < p->after_ns)
		return IDLE_NOTHING;
	st->acted = true;
	return p->action == IDLE_ACTION_STOP ? IDLE_DO_STOP : IDLE_DO_WARN;
}

/* ---- the clocks --------------------------------------------------------------- */

void idle_tracker_init(struct idle_tracker *t)
{
	memset(t, 0, sizeof(*t));
}

static void entry_release(struct idle_entry *e)
{
	free(e->alloc_id);
	free(e->ns);
}

void idle_tracker_release(struct idle_tracker *t)
{
	for (size_t i = 0; i < t->n; i++)
		entry_release(&t->e[i]);
	free(t->e);
	memset(t, 0, sizeof(*t));
}

void idle_tracker_begin(struct idle_tracker *t)
{
	for (size_t i = 0; i < t->n; i++)
		t->e[i].seen = false;
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct idle_entry *)a)->alloc_id, ((const struct idle_entry *)b)->alloc_id);
}

static int cmp_key(const void *key, const void *e)
{
	return strcmp(key, ((const struct idle_entry *)e)->alloc_id);
}

/* The sorted part by bisection, then the entries added this round. */
static struct idle_entry *lookup(const struct idle_tracker *t, const char *id)
{
	/* bsearch's base must not be NULL even for no entries (C17 7.22.5) */
	struct idle_entry *e = t->nsorted ? bsearch(id, t->e, t->nsorted, sizeof(*t->e), cmp_key)
					  : NULL;
	for (size_t i = t->nsorted; !e && i < t->n; i++)
		if (!strcmp(t->e[i].alloc_id, id))
			e = &t->e[i];
	return e;
}

struct idle_entry *idle_tracker_touch(struct idle_tracker *t, const char *alloc_id, const char *ns)
{
	struct idle_entry *e = lookup(t, alloc_id);
	if (!e) {
		ALLOC_GROW(t->e, t->n + 1, t->alloc);
		e = &t->e[t->n++];
		memset(e, 0, sizeof(*e));
		e->alloc_id = xstrdup(alloc_id);
		e->ns = xstrdup(ns ? ns : "");
	}
	e->seen = true;
	return e;
}

void idle_tracker_end(struct idle_tracker *t)
{
	size_t k = 0;
	for (size_t i = 0; i < t->n; i++) {
		if (!t->e[i].seen) {
			entry_release(&t->e[i]);
			continue;
		}
		t->e[k++] = t->e[i];
	}
	t->n = k;
	if (t->n)
		qsort(t->e, t->n, sizeof(*t->e), cmp_entry);
	t->nsorted = t->n;
}

const struct idle_entry *idle_tracker_find(const struct idle_tracker *t, const char *alloc_id)
{
	return lookup(t, alloc_id);
}
