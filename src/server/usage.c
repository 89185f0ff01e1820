/* usage: what the allocations on one node take (CPU, memory, device
 * compute/memory/tenants, ports), the input of a scheduling snapshot. */
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "server/server-int.h"

void node_usage_release(struct node_usage *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->ndevs; i++)
		free(u->devs[i].id);
	free(u->devs);
	free(u->ports);
	free(u->cores);
	memset(u, 0, sizeof(*u));
}

void node_usage_copy(struct node_usage *dst, const struct node_usage *src)
{
	memset(dst, 0, sizeof(*dst));
	dst->cpu = src->cpu;
	dst->memory = src->memory;
	dst->disk = src->disk;
	for (size_t i = 0; i < src->ndevs; i++) {
		ALLOC_GROW(dst->devs, dst->ndevs + 1, dst->adevs);
		dst->devs[dst->ndevs] = src->devs[i];
		dst->devs[dst->ndevs++].id = xstrdup(src->devs[i].id);
	}
	for (size_t i = 0; i < src->nports; i++) {
		ALLOC_GROW(dst->ports, dst->nports + 1, dst->aports);
		dst->ports[dst->nports++] = src->ports[i];
	}
	if (src->ncores) {
		dst->cores = xcalloc(src->ncores, sizeof(int));
		memcpy(dst->cores, src->cores, src->ncores * sizeof(int));
		dst->ncores = dst->acores = src->ncores;
	}
}

/* Adds (sign 1) or removes the cores the tasks of res hold. */
static void cores_add(struct node_usage *u, const json_t *res, int sign)
{
	const char *task;
	json_t *t, *c;
	size_t i;

	json_object_foreach((json_t *)json_object_get(res, "tasks"), task, t)
		json_array_foreach(json_object_get(t, "cores"), i, c) {
			int id = (int)json_integer_value(c);
			if (!json_is_integer(c))
				continue;
			if (sign > 0) {
				ALLOC_GROW(u->cores, u->ncores + 1, u->acores);
				u->cores[u->ncores++] = id;
				continue;
			}
			for (size_t k = 0; k < u->ncores; k++)
				if (u->cores[k] == id) {
					u->cores[k] = u->cores[--u->ncores];
					break;
				}
		}
}

static struct dev_usage *dev_of(struct node_usage *u, const char *id)
{
	for (size_t i = 0; i < u->ndevs; i++)
		if (!strcmp(u->devs[i].id, id))
			return &u->devs[i];
	ALLOC_GROW(u->devs, u->ndevs + 1, u->adevs);
	memset(&u->devs[u->ndevs], 0, sizeof(u->devs[0]));
	u->devs[u->ndevs].id = xstrdup(id);
	return &u->devs[u->ndevs++];
}

bool node_usage_port_used(const struct node_usage *u, int port)
{
	for (size_t i = 0; i < u->nports; i++)
		if (u->ports[i] == port)
			return true;
	return false;
}

static void port_remove(struct node_usage *u, int port)
{
	for (size_t i = 0; i < u->nports; i++) {
		if (u->ports[i] == port) {
			u->ports[i] = u->ports[--u->nports];
			return;
		}
	}
}

/* Amounts as stored are the server's own, but clamp them so that a
 * damaged record cannot overflow the sums. */
static int64_t amount(const json_t *o, const char *key)
{
	int64_t v = jint(o, key, 0);
	return v < 0 ? 0 : v > (INT64_C(1) << 40) ? (INT64_C(1) << 40) : v;
}

void node_usage_add_alloc(struct node_usage *u, const json_t *alloc, int sign)
{
	const json_t *res = json_object_get(alloc, "resources");
	size_t i;
	json_t *d;

	u->cpu += sign * amount(res, "cpu_milli");
	u->memory += sign * amount(res, "memory_mib");
	u->disk += sign * amount(res, "disk_mib");
	json_array_foreach(json_object_get(res, "devices"), i, d) {
		const char *id = jstr(d, "id", NULL);
		struct dev_usage *du;
		if (!id)
			continue;
		du = dev_of(u, id);
		du->compute += sign * (int32_t)(amount(d, "compute_milli") > SCHED_MILLI ? SCHED_MILLI : amount(d, "compute_milli"));
		du->memory += sign * amount(d, "memory_mib");
		du->tenants += sign;
	}
	cores_add(u, res, sign);
	json_array_foreach(json_object_get(res, "ports"), i, d) {
		int port = (int)jint(d, "value", 0);
		if (port <= 0)
			continue;
		if (sign > 0) {
			ALLOC_GROW(u->ports, u->nports + 1, u->aports);
			u->ports[u->nports++] = port;
		} else {
			port_remove(u, port);
		}
	}
}
