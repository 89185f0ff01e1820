/* metrics_process: the standard process_* families of a Prometheus
 * client library (resident and virtual memory, CPU time, start time, open
 * and most file descriptors), read from /proc/self at scrape time. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "server/metrics_text.h"
#include "server/server-int.h"

/* Reads a small /proc file whole into buf (NUL-terminated); 0 or -1. */
static int read_small(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

/* The boot time (unix seconds) from /proc/stat's "btime" line; 0 when
 * unknown. */
static long long boot_time(void)
{
	FILE *f = fopen("/proc/stat", "re");
	char *line = NULL;
	size_t cap = 0;
	long long bt = 0;

	if (!f)
		return 0;
	while (getline(&line, &cap, f) > 0)
		if (!strncmp(line, "btime ", 6)) {
			bt = strtoll(line + 6, NULL, 10);
			break;
		}
	free(line);
	fclose(f);
	return bt;
}

/* Open descriptors: the entries of /proc/self/fd but the one listing it. */
static long open_fds(void)
{
	DIR *d = opendir("/proc/self/fd"); /* glibc opens it O_CLOEXEC */
	struct dirent *e;
	long n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;
}

void metrics_add_process(struct metrics *m)
{
	char buf[1024], *p;
	unsigned long utime, stime, vsize;
	unsigned long long start;
	long rss, tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE), fds;
	long long bt = boot_time();
	struct rlimit rl;

	/* fields 14, 15 (utime, stime), 22 (starttime), 23 (vsize), 24 (rss)
	 * of proc(5), counted after the command name, which may hold spaces
	 * and parentheses: the last ')' ends it */
	if (read_small("/proc/self/stat", buf, sizeof(buf)) == 0 && (p = strrchr(buf, ')')) &&
	    sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %*d %*d %*d %*d "
		   "%*d %*d %llu %lu %ld", &utime, &stime, &start, &vsize, &rss) == 5 &&
	    tick > 0) {
		metrics_add(metrics_family(m, "process_cpu_seconds_total", METRICS_COUNTER,
					   "User and system CPU time the server spent."),
			    (double)(utime + stime) / (double)tick, NULL);
		metrics_add(metrics_family(m, "process_resident_memory_bytes", METRICS_GAUGE,
					   "The server's resident memory."),
			    (double)rss * (double)page, NULL);
		metrics_add(metrics_family(m, "process_virtual_memory_bytes", METRICS_GAUGE,
					   "The server's virtual memory."),
			    (double)vsize, NULL);
		if (bt > 0)
			metrics_add(metrics_family(m, "process_start_time_seconds", METRICS_GAUGE,
						   "When the server's process started (unix seconds)."),
				    (double)bt + (double)start / (double)tick, NULL);
	}
	fds = open_fds();
	if (fds >= 0)
		metrics_add(metrics_family(m, "process_open_fds", METRICS_GAUGE,
					   "File descriptors the server has open."),
			    (double)fds, NULL);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		metrics_add(metrics_family(m, "process_max_fds", METRICS_GAUGE,
					   "The most file descriptors the server may open."),
			    (double)rl.rlim_cur, NULL);
}
