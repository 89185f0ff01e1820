/* cpulist: a set of CPU core ids and the kernel's list syntax for it.
 *
 * The syntax is the one of sysfs (/sys/devices/system/cpu/online), cpuset
 * files (cpuset.cpus), /proc/<pid>/status Cpus_allowed_list, taskset -c
 * and Nomad's reservable_cores: comma-separated ids and inclusive ranges,
 * "0-3,8,10-11".  cpulist_format writes the shortest such list, ranges for
 * runs of two or more ("0-1", not "0,1"), so what herd writes compares
 * equal to what the kernel prints.
 *
 * A set is a plain bitmap of CPULIST_MAX ids on the stack or embedded: no
 * allocation, so the task shim can use it between fork and exec.  Its
 * words are laid out as the kernel's CPU masks are on little- and
 * big-endian 64-bit machines alike (bit i of word i / 64), so
 * cpulist_words() can go to sched_setaffinity(2) as it is.
 *
 * Nothing here prints; parse errors come back through err. */
#ifndef HERD_COMMON_CPULIST_H
#define HERD_COMMON_CPULIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define CPULIST_MAX 4096          /* ids 0..4095: Linux's NR_CPUS on the largest configs */
#define CPULIST_WORDS (CPULIST_MAX / 64)

struct cpulist {
	uint64_t w[CPULIST_WORDS];
};

#define CPULIST_INIT { { 0 } }

/* Parses s ("0-3,8"; surrounding spaces and one trailing newline allowed;
 * "" is the empty set) into *out.  Returns 0, or -EINVAL with err naming
 * what is wrong ("reversed range 5-3", "core 9999 above 4095", "unexpected
 * 'x'").  *out is untouched on failure. */
int cpulist_parse(const char *s, struct cpulist *out, struct herd_err *err);

/* The list syntax of s, shortest form ("" for the empty set), into buf of
 * size len; returns the length it needed (like snprintf): a result >= len
 * means buf was too small and holds a truncated list. */
size_t cpulist_format(const struct cpulist *s, char *buf, size_t len);

/* The same as a new string the caller frees. */
char *cpulist_str(const struct cpulist *s);

static inline bool cpulist_has(const struct cpulist *s, int id)
{
	return id >= 0 && id < CPULIST_MAX && (s->w[id / 64] >> (id % 64)) & 1;
}

/* Adds id; an id outside 0..CPULIST_MAX-1 is ignored (and returns false). */
static inline bool cpulist_add(struct cpulist *s, int id)
{
	if (id < 0 || id >= CPULIST_MAX)
		return false;
	s->w[id / 64] |= (uint64_t)1 << (id % 64);
	return true;
}

static inline void cpulist_del(struct cpulist *s, int id)
{
	if (id >= 0 && id < CPULIST_MAX)
		s->w[id / 64] &= ~((uint64_t)1 << (id % 64));
}

int cpulist_count(const struct cpulist *s);
bool cpulist_empty(const struct cpulist *s);
bool cpulist_equal(const struct cpulist *a, const struct cpulist *b);

/* The smallest id >= from in s, or -1 (iterate: for (i = cpulist_next(s, 0);
 * i >= 0; i = cpulist_next(s, i + 1))). */
int cpulist_next(const struct cpulist *s, int from);

/* dst = dst AND src / dst = dst AND NOT src / dst = dst OR src. */
void cpulist_and(struct cpulist *dst, const struct cpulist *src);
void cpulist_andnot(struct cpulist *dst, const struct cpulist *src);
void cpulist_or(struct cpulist *dst, const struct cpulist *src);

/* The number of bytes of s that cover its highest id (at least 8), for
 * sched_setaffinity(0, cpulist_bytes(s), (cpu_set_t *)s->w). */
size_t cpulist_bytes(const struct cpulist *s);

#endif
