/* store_dir_lock (store.h): one herd server per data dir.  Two servers on
 * one state.db would each believe they own the index and hand the same
 * GPU out twice; a restore must not replace the file under a running one.
 * The lock is flock(2) on <dir>/server.lock, held by an open fd for the
 * process's life (the kernel drops it however the process ends, so a
 * kill -9 leaves nothing stale); the file holds the holder's pid, for the
 * message the next one gets. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "store/store.h"

int store_dir_lock(const char *dir, int *fd_out, struct herd_err *err)
{
	char path[4096], pid[32];
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/server.lock", dir) >= sizeof(path))
		return herd_errf(err, -ENAMETOOLONG, "%s: path too long", dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return herd_errf(err, -errno, "%s: %s", path, strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;
		ssize_t n = pread(fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		close(fd);
		if (e == EWOULDBLOCK)
			return herd_errf(err, -EBUSY, "%s is in use by another herd server%s%s%s", dir,
					 *pid ? " (pid " : "", pid, *pid ? ")" : "");
		return herd_errf(err, -e, "%s: %s", path, strerror(e));
	}
	int len = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)len, 0) != len) {
		int e = errno;
		close(fd);
		return herd_errf(err, -e, "%s: %s", path, strerror(e));
	}
	*fd_out = fd;
	return 0;
}
