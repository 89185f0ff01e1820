/* Process helpers: start times and pidfds; see drivers-int.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "drivers/drivers-int.h"

int proc_start_time(pid_t pid, uint64_t *out)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	int saved = errno;
	close(fd);
	if (n <= 0)
		return n < 0 ? -saved : -ESRCH;
	buf[n] = '\0';
	/* The command name (field 2) is in parentheses and may hold spaces
	 * and parentheses itself: fields resume after the last ')'. */
	char *p = strrchr(buf, ')');
	if (!p)
		return -EINVAL;
	p++;
	/* p is before field 3; starttime is field 22. */
	for (int field = 3; field < 22; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -EINVAL;
	}
	char *end;
	unsigned long long v = strtoull(p + 1, &end, 10);
	if (end == p + 1)
		return -EINVAL;
	*out = v;
	return 0;
}

int proc_pidfd_checked(pid_t pid, uint64_t start_time)
{
	if (pid <= 0)
		return -ESRCH;
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0)
		return -errno;
	/* The pidfd pins this process; checking its start time after opening
	 * closes the window in which the pid could be reused. */
	uint64_t t;
	int rc = proc_start_time(pid, &t);
	if (rc < 0 || t != start_time) {
		close(fd);
		return rc < 0 ? rc : -ESRCH;
	}
	return fd;
}

int shim_read_exit_file(const char *path, struct driver_exit *out)
{
	char buf[128];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EINVAL;
	buf[n] = '\0';
	int code, sig;
	long long ns;
	if (sscanf(buf, "%d %d %lld", &code, &sig, &ns) != 3)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->exit_code = code;
	out->signal = sig;
	out->finished_ns = ns;
	return 0;
}
