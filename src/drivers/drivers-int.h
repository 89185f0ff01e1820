/* Private to src/drivers: process helpers shared by the drivers. */
#ifndef HERD_DRIVERS_INT_H
#define HERD_DRIVERS_INT_H

#include <stdint.h>
#include <sys/types.h>

#include "drivers/driver.h"

/* The start time of pid (field 22 of /proc/<pid>/stat, clock ticks since
 * boot): with the pid it names one process for the life of the machine.
 * Returns 0 or -errno (-ESRCH when no such process). */
int proc_start_time(pid_t pid, uint64_t *out);

/* A pidfd (O_CLOEXEC by definition) for pid, but only if that process
 * still has start time start_time (so a reused pid is not mistaken for
 * ours).  Returns the fd, -ESRCH when the process is gone or is another
 * one, -errno otherwise. */
int proc_pidfd_checked(pid_t pid, uint64_t start_time);

/* Reads an exit file the shim wrote.  Returns 0 with *out, -ENOENT when
 * absent, -EINVAL when malformed. */
int shim_read_exit_file(const char *path, struct driver_exit *out);

#endif
