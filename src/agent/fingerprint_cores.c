/* The node's CPU topology: online cores and their NUMA nodes, from sysfs
 * or from a GPU simulation file; see fingerprint.h. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/fingerprint-int.h"
#include "agent/fingerprint.h"
#include "common/cpulist.h"
#include "common/xalloc.h"

/* The cores of set, each with numa from node_of (indexed by id; -1). */
static void cores_from(const struct cpulist *set, const int *node_of, struct node_core **out,
		       size_t *n)
{
	size_t nr = (size_t)cpulist_count(set), k = 0;
	struct node_core *v = nr ? xcalloc(nr, sizeof(*v)) : NULL;
	for (int id = cpulist_next(set, 0); id >= 0; id = cpulist_next(set, id + 1))
		v[k++] = (struct node_core){ id, node_of[id] };
	*out = v;
	*n = nr;
}

void fp_read_cores(const char *root, int processors, struct node_core **out, size_t *n)
{
	struct cpulist online = CPULIST_INIT;
	int *node_of = xmalloc(CPULIST_MAX * sizeof(*node_of));
	char *line = fp_read_line(root, "sys/devices/system/cpu/online");

	if (!line || cpulist_parse(line, &online, NULL) < 0 || cpulist_empty(&online)) {
		online = (struct cpulist)CPULIST_INIT;
		for (int i = 0; i < processors; i++)
			cpulist_add(&online, i);
	}
	free(line);
	for (int i = 0; i < CPULIST_MAX; i++)
		node_of[i] = -1;
	char *dir = xasprintf("%s/sys/devices/system/node", root);
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char *end;
		if (strncmp(e->d_name, "node", 4) || !e->d_name[4])
			continue;
		long node = strtol(e->d_name + 4, &end, 10);
		if (*end || node < 0 || node > 65535)
			continue;
		char *rel = xasprintf("sys/devices/system/node/%s/cpulist", e->d_name);
		char *list = fp_read_line(root, rel);
		struct cpulist cpus;
		/* an empty list (a memory-only node) reads as NULL */
		if (list && cpulist_parse(list, &cpus, NULL) == 0)
			for (int id = cpulist_next(&cpus, 0); id >= 0; id = cpulist_next(&cpus, id + 1))
				node_of[id] = (int)node;
		free(list);
		free(rel);
	}
	if (d)
		closedir(d);
	free(dir);
	cores_from(&online, node_of, out, n);
	free(node_of);
}

void fp_set_core_attrs(struct node_fingerprint *fp)
{
	struct cpulist nodes = CPULIST_INIT;

	/* what an earlier topology (the real one, before a simulated one) set */
	for (size_t i = fp->nr_attrs; i-- > 0; ) {
		const char *name = fp->attrs[i].name;
		if (!strncmp(name, "numa.node", 9) || !strcmp(name, "cpu.numa_nodes")) {
			char *copy = xstrdup(name);
			fp_attr_remove(fp, copy);
			free(copy);
		}
	}
	for (size_t i = 0; i < fp->nr_cores; i++)
		if (fp->cores[i].numa >= 0)
			cpulist_add(&nodes, fp->cores[i].numa);
	fp->numa_nodes = cpulist_count(&nodes);
	if (!fp->numa_nodes)
		return;
	char buf[16];
	snprintf(buf, sizeof(buf), "%d", fp->numa_nodes);
	node_fingerprint_set_attr(fp, "cpu.numa_nodes", buf);
	node_fingerprint_set_attr(fp, "numa.node.count", buf);
	for (int node = cpulist_next(&nodes, 0); node >= 0; node = cpulist_next(&nodes, node + 1)) {
		struct cpulist cores = CPULIST_INIT;
		for (size_t i = 0; i < fp->nr_cores; i++)
			if (fp->cores[i].numa == node)
				cpulist_add(&cores, fp->cores[i].id);
		char *name = xasprintf("numa.node%d.cores", node);
		char *list = cpulist_str(&cores);
		node_fingerprint_set_attr(fp, name, list);
		free(list);
		free(name);
	}
}

int node_fingerprint_core_numa(const struct node_fingerprint *fp, int id)
{
	size_t lo = 0, hi = fp->nr_cores;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (fp->cores[mid].id == id)
			return fp->cores[mid].numa;
		if (fp->cores[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

int node_fingerprint_sim_cores(struct node_fingerprint *fp, const char *path,
			       struct herd_err *err)
{
	json_error_t jerr;
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	struct cpulist all = CPULIST_INIT;
	int *node_of = NULL;
	int rc = 0;

	if (!root)
		return herd_errf(err, -EINVAL, "%s: %s", path, jerr.text);
	json_t *cpu = json_object_get(root, "cpu"), *nodes, *v;
	size_t i;
	if (!cpu)
		goto out;
	nodes = json_object_get(cpu, "numa_nodes");
	if (!json_is_object(cpu) || !json_is_array(nodes) || !json_array_size(nodes)) {
		rc = herd_errf(err, -EINVAL, "%s: cpu: expected {\"numa_nodes\": [{\"id\": 0, "
			       "\"cores\": \"0-55\"}, ...]}", path);
		goto out;
	}
	node_of = xmalloc(CPULIST_MAX * sizeof(*node_of));
	for (int k = 0; k < CPULIST_MAX; k++)
		node_of[k] = -1;
	json_array_foreach(nodes, i, v) {
		json_t *id = json_object_get(v, "id");
		const char *list = json_string_value(json_object_get(v, "cores"));
		struct cpulist cores, both;
		struct herd_err perr = { 0, "" };
		if (!json_is_integer(id) || json_integer_value(id) < 0 ||
		    json_integer_value(id) > 65535) {
			rc = herd_errf(err, -EINVAL, "%s: cpu.numa_nodes[%zu]: expected an \"id\" "
				       "from 0 to 65535", path, i);
			goto out;
		}
		if (!list || cpulist_parse(list, &cores, &perr) < 0) {
			rc = herd_errf(err, -EINVAL, "%s: cpu.numa_nodes[%zu].cores: %s", path, i,
				       list ? perr.msg : "expected a core list such as \"0-55\"");
			goto out;
		}
		both = cores;
		cpulist_and(&both, &all);
		if (!cpulist_empty(&both)) {
			rc = herd_errf(err, -EINVAL, "%s: cpu.numa_nodes[%zu].cores: core %d is "
				       "in another node too", path, i, cpulist_next(&both, 0));
			goto out;
		}
		cpulist_or(&all, &cores);
		for (int c = cpulist_next(&cores, 0); c >= 0; c = cpulist_next(&cores, c + 1))
			node_of[c] = (int)json_integer_value(id);
	}
	free(fp->cores);
	cores_from(&all, node_of, &fp->cores, &fp->nr_cores);
	fp->cores_simulated = true;
	fp_set_core_attrs(fp);
	rc = 1;
out:
	free(node_of);
	json_decref(root);
	return rc;
}
