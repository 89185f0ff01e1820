/* Private to the fingerprint files: readers of single facts under a root. */
#ifndef HERD_AGENT_FINGERPRINT_INT_H
#define HERD_AGENT_FINGERPRINT_INT_H

#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"

/* Reads root/rel (at most 1 MiB) into sb (reset first).  Returns 0 or
 * -errno. */
int fp_read_file(const char *root, const char *rel, struct strbuf *sb);

/* The first line of root/rel, trimmed, as a new string; NULL when absent
 * or empty. */
char *fp_read_line(const char *root, const char *rel);

/* The value of KEY in os-release text (quotes removed); NULL when absent. */
char *fp_os_release_value(const char *text, const char *key);

/* Counts the CPUs of a sysfs cpu list ("0-7,16-23"); 0 when malformed. */
int fp_count_cpu_list(const char *list);

/* From /proc/cpuinfo text: number of "processor" entries, the highest
 * "cpu MHz" (0 when none), and the first "model name" (NULL when none;
 * caller frees). */
void fp_parse_cpuinfo(const char *text, int *processors, int64_t *mhz, char **model);

struct node_core;
struct node_fingerprint;

/* The online cores under root with their NUMA nodes (fingerprint_cores.c):
 * sys/devices/system/cpu/online (else 0..processors-1 when processors >
 * 0), each core's node from sys/devices/system/node/node<N>/cpulist.  A
 * new array sorted by id into *out (NULL when none) and *n. */
void fp_read_cores(const char *root, int processors, struct node_core **out, size_t *n);

/* Sets fp's NUMA attributes (cpu.numa_nodes, numa.node.count,
 * numa.node<N>.cores) and numa_nodes from fp->cores, removing those a
 * previous topology set. */
void fp_set_core_attrs(struct node_fingerprint *fp);

/* Removes attribute name (absent: nothing happens). */
void fp_attr_remove(struct node_fingerprint *fp, const char *name);

/* MemTotal of /proc/meminfo text in bytes; 0 when absent. */
int64_t fp_parse_meminfo(const char *text);

/* From /proc/mounts text: 2 when a cgroup2 file system is mounted at
 * /sys/fs/cgroup, 1 when cgroup (v1) hierarchies are mounted, else 0;
 * *mountpoint receives where (a new string), or NULL. */
int fp_parse_cgroup_mounts(const char *text, char **mountpoint);

#endif
