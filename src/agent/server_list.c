/* server_list: see server_list.h. */
#include "agent/server_list.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/xalloc.h"

struct server_list {
	pthread_mutex_t lock;
	char **addrs;
	size_t n;
	size_t cur;        /* index of the current server */
	uint64_t gen;      /* bumped at each move */
	size_t failures;   /* failures in a row since the last answer */
	bool all_failed_seen;
};

struct server_list *server_list_new(const char *const *addrs, size_t n)
{
	struct server_list *l = xcalloc(1, sizeof(*l));

	pthread_mutex_init(&l->lock, NULL);
	l->addrs = xcalloc(n ? n : 1, sizeof(*l->addrs));
	for (size_t i = 0; i < n; i++)
		l->addrs[i] = xstrdup(addrs[i]);
	l->n = n;
	return l;
}

void server_list_free(struct server_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		free(l->addrs[i]);
	free(l->addrs);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

size_t server_list_size(const struct server_list *l)
{
	return l->n;
}

uint64_t server_list_current(struct server_list *l, char *buf, size_t size)
{
	uint64_t gen;

	pthread_mutex_lock(&l->lock);
	snprintf(buf, size, "%s", l->n ? l->addrs[l->cur] : "");
	gen = l->gen;
	pthread_mutex_unlock(&l->lock);
	return gen;
}

void server_list_failed(struct server_list *l, uint64_t gen, struct server_move *mv)
{
	struct server_move m = { 0 };

	pthread_mutex_lock(&l->lock);
	if (gen == l->gen && l->n) {
		m.in_outage = l->all_failed_seen;
		size_t next = (l->cur + 1) % l->n;
		l->failures++;
		if (next != l->cur) {
			m.moved = true;
			snprintf(m.from, sizeof(m.from), "%s", l->addrs[l->cur]);
			snprintf(m.to, sizeof(m.to), "%s", l->addrs[next]);
			l->cur = next;
		}
		/* A list of one moves nowhere, yet a new generation still
		 * tells the threads that failed with it apart from a later
		 * try. */
		l->gen++;
		if (l->failures >= l->n) {
			m.all_failed = true;
			m.first_all_failed = !l->all_failed_seen;
			l->all_failed_seen = true;
		}
	}
	pthread_mutex_unlock(&l->lock);
	if (mv)
		*mv = m;
}

bool server_list_answered(struct server_list *l, uint64_t gen)
{
	bool back;

	(void)gen;
	pthread_mutex_lock(&l->lock);
	back = l->all_failed_seen;
	l->failures = 0;
	l->all_failed_seen = false;
	pthread_mutex_unlock(&l->lock);
	return back;
}
