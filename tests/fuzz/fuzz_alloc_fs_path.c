/* Fuzz target: the path of a client file request (agent/alloc_fs.h), which
 * comes from the network, against a fixed allocation dir that holds what a
 * task may plant (symlinks out, up, into secrets/, loops, a FIFO).
 *
 * The input, up to its first NUL, is the query's path.  Whatever
 * alloc_fs_clean_path accepts has no "..", "." or empty component, no
 * leading or trailing '/', and is not in a task's secrets dir; whatever
 * alloc_fs_open then opens lies beneath the allocation's dir (its
 * /proc/self/fd path under the root's realpath, compared here, not by
 * alloc_fs_check_opened), and alloc_fs_open_path never hands out a fd
 * into secrets/. */
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/alloc_fs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[PATH_MAX];
static int rootfd = -1;

static void make(const char *rel, int kind, const char *target)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	if (kind == 'd')
		mkdir(p, 0755);
	else if (kind == 'l')
		(void)!symlink(target, p);
	else if (kind == 'p')
		mkfifo(p, 0644);
	else
		close(open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
}

static void cleanup(void)
{
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	(void)!system(cmd);
}

static void init(void)
{
	char tmpl[] = "/tmp/fuzz_alloc_fs.XXXXXX";
	static const struct { const char *rel; int kind; const char *target; } tree[] = {
		{ "alloc", 'd', NULL }, { "alloc/data", 'd', NULL }, { "alloc/data/f", 'f', NULL },
		{ "t", 'd', NULL }, { "t/local", 'd', NULL }, { "t/secrets", 'd', NULL },
		{ "t/secrets/token", 'f', NULL }, { "t/local/hello", 'f', NULL },
		{ "t/local/fifo", 'p', NULL },
		{ "t/local/out", 'l', "/etc/passwd" }, { "t/local/up", 'l', "../../.." },
		{ "t/local/in", 'l', "../local/hello" }, { "t/local/a", 'l', "../../alloc" },
		{ "t/local/sec", 'l', "../secrets/token" }, { "t/local/sd", 'l', "../secrets" },
		{ "t/local/loop", 'l', "loop" }, { "t/local/magic", 'l', "/proc/self/cwd" },
	};

	if (!mkdtemp(tmpl) || !realpath(tmpl, root))
		abort();
	for (size_t i = 0; i < sizeof(tree) / sizeof(tree[0]); i++)
		make(tree[i].rel, tree[i].kind, tree[i].target);
	rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		abort();
	atexit(cleanup);
}

/* Whether fd's path is the root or beneath it (an independent look). */
static bool beneath(int fd)
{
	char link[64], path[PATH_MAX];
	size_t len = strlen(root);
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n < 0)
		return true;   /* no /proc: nothing to compare with */
	path[n] = '\0';
	return !strncmp(path, root, len) && (path[len] == '\0' || path[len] == '/');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char in[ALLOC_FS_PATH_MAX + 64], rel[ALLOC_FS_PATH_MAX + 1];
	struct herd_err err = { 0, "" };
	struct stat st;
	size_t n = size < sizeof(in) - 1 ? size : sizeof(in) - 1;
	int fd;

	if (rootfd < 0)
		init();
	memcpy(in, data, n);
	in[n] = '\0';
	if (alloc_fs_clean_path(in, rel, sizeof(rel), &err) < 0)
		return 0;
	/* the cleaned form */
	if (rel[0] == '/' || (rel[0] && rel[strlen(rel) - 1] == '/') || strstr(rel, "//") ||
	    alloc_fs_is_secret(rel))
		abort();
	for (const char *p = rel; *p;) {
		size_t c = strcspn(p, "/");
		if ((c == 1 && p[0] == '.') || (c == 2 && p[0] == '.' && p[1] == '.'))
			abort();
		p += c + (p[c] == '/');
	}
	/* cleaning is idempotent */
	char again[ALLOC_FS_PATH_MAX + 1];
	if (alloc_fs_clean_path(rel, again, sizeof(again), &err) < 0 || strcmp(rel, again))
		abort();
	fd = alloc_fs_open(rootfd, rel, O_PATH, &err);
	if (fd >= 0) {
		if (!beneath(fd))
			abort();
		close(fd);
	}
	fd = alloc_fs_open_walk(rootfd, rel, O_PATH, &err);
	if (fd >= 0) {
		if (!beneath(fd) || (fstat(fd, &st) == 0 && S_ISLNK(st.st_mode)))
			abort();
		close(fd);
	}
	fd = alloc_fs_open_path(rootfd, rel, &st, &err);
	if (fd >= 0) {
		char link[64], path[PATH_MAX];
		ssize_t k;
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		k = readlink(link, path, sizeof(path) - 1);
		if (k > 0) {
			path[k] = '\0';
			if (strstr(path + strlen(root), "/t/secrets"))
				abort();
		}
		close(fd);
	}
	return 0;
}
