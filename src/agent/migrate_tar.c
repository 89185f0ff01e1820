/* migrate_tar: see migrate_tar.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/migrate_tar.h"
#include "common/xalloc.h"

#define BLOCK 512
#define MAX_DEPTH 64
#define MAX_PATH_LEN 255
#define COPY_BUF 65536

struct ustar {
	char name[100], mode[8], uid[8], gid[8], size[12], mtime[12], chksum[8];
	char typeflag, linkname[100], magic[6], version[2], uname[32], gname[32];
	char devmajor[8], devminor[8], prefix[155], pad[12];
};
_Static_assert(sizeof(struct ustar) == BLOCK, "a ustar header is one block");

/* ---- writer ------------------------------------------------------------ */

static int write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void put_octal(char *field, size_t len, uint64_t v)
{
	snprintf(field, len, "%0*llo", (int)len - 1, (unsigned long long)v);
}

/* size in octal, or base 256 (first byte 0x80) where octal cannot hold it */
static void put_size(char *field, uint64_t v)
{
	if (v < 077777777777ULL) {
		put_octal(field, 12, v);
		return;
	}
	memset(field, 0, 12);
	field[0] = (char)0x80;
	for (int i = 11; i > 3; i--, v >>= 8)
		field[i] = (char)(v & 0xff);
}

static int put_header(int out, const char *path, char type, mode_t mode, uint64_t size)
{
	struct ustar h;
	size_t len = strlen(path), cut = 0;
	unsigned sum = 0;

	memset(&h, 0, sizeof(h));
	if (len > MAX_PATH_LEN)
		return -ENAMETOOLONG;
	if (len > sizeof(h.name)) {
		/* split at a '/' so that the name part fits in 100 */
		for (cut = len - sizeof(h.name); cut < len && path[cut] != '/'; cut++)
			;
		if (cut >= len || cut > sizeof(h.prefix))
			return -ENAMETOOLONG;
		memcpy(h.prefix, path, cut);
		path += cut + 1;
		len -= cut + 1;
	}
	memcpy(h.name, path, len);
	put_octal(h.mode, sizeof(h.mode), mode & 0777);
	put_octal(h.uid, sizeof(h.uid), 0);
	put_octal(h.gid, sizeof(h.gid), 0);
	put_size(h.size, size);
	put_octal(h.mtime, sizeof(h.mtime), 0);
	h.typeflag = type;
	memcpy(h.magic, "ustar", 6);
	memcpy(h.version, "00", 2);
	memset(h.chksum, ' ', sizeof(h.chksum));
	for (size_t i = 0; i < sizeof(h); i++)
		sum += ((unsigned char *)&h)[i];
	snprintf(h.chksum, sizeof(h.chksum), "%06o", sum);
	return write_all(out, &h, sizeof(h));
}

/* Copies exactly size bytes of fd (zeros where it shrank) and the padding. */
static int put_data(int out, int fd, uint64_t size)
{
	char *buf = xmalloc(COPY_BUF);
	uint64_t left = size;
	int rc = 0;

	while (left && !rc) {
		size_t want = left < COPY_BUF ? (size_t)left : COPY_BUF;
		ssize_t r = read(fd, buf, want);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			break;
		}
		if (r == 0) { /* shrank meanwhile */
			memset(buf, 0, want);
			r = (ssize_t)want;
		}
		rc = write_all(out, buf, (size_t)r);
		left -= (uint64_t)r;
	}
	if (!rc && size % BLOCK) {
		memset(buf, 0, BLOCK);
		rc = write_all(out, buf, BLOCK - size % BLOCK);
	}
	free(buf);
	return rc;
}

struct walk {
	int out;
	struct herd_err *err;
};

static int walk_dir(struct walk *w, int dirfd, const char *path, unsigned depth);

static int walk_entry(struct walk *w, int dirfd, const char *name, const char *path,
		      unsigned depth)
{
	struct stat st;
	int fd, rc;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : herd_errf(w->err, -errno, "%s: %s", path, strerror(errno));
	if (S_ISDIR(st.st_mode)) {
		fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return herd_errf(w->err, -errno, "%s: %s", path, strerror(errno));
		rc = put_header(w->out, path, '5', st.st_mode, 0);
		if (rc < 0)
			rc = herd_errf(w->err, rc, "%s: %s", path, strerror(-rc));
		else
			rc = walk_dir(w, fd, path, depth + 1);
		close(fd);
		return rc;
	}
	if (!S_ISREG(st.st_mode))
		return 0; /* links, devices, FIFOs, sockets do not cross */
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return herd_errf(w->err, -errno, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return 0; /* replaced meanwhile by something that does not cross */
	}
	rc = put_header(w->out, path, '0', st.st_mode, (uint64_t)st.st_size);
	if (!rc)
		rc = put_data(w->out, fd, (uint64_t)st.st_size);
	close(fd);
	return rc < 0 ? herd_errf(w->err, rc, "%s: %s", path, strerror(-rc)) : 0;
}

static int walk_dir(struct walk *w, int dirfd, const char *path, unsigned depth)
{
	int fd, rc = 0;
	DIR *d;
	struct dirent *e;

	if (depth > MAX_DEPTH)
		return herd_errf(w->err, -ELOOP, "%s: more than %d levels deep", path, MAX_DEPTH);
	fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0 || !(d = fdopendir(fd))) {
		rc = herd_errf(w->err, -errno, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return rc;
	}
	while (!rc && (e = readdir(d))) {
		char *sub;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		sub = xasprintf("%s/%s", path, e->d_name);
		rc = walk_entry(w, dirfd, e->d_name, sub, depth);
		free(sub);
	}
	closedir(d);
	return rc;
}

int migrate_tar_write(int out, int dirfd, const char *const *tasks, size_t ntasks,
		      struct herd_err *err)
{
	struct walk w = { out, err };
	char zero[2 * BLOCK];
	int rc, fd;

	for (size_t i = 0; i <= ntasks; i++) {
		const char *top = i < ntasks ? tasks[i] : "alloc";
		const char *sub = i < ntasks ? "local" : "data";
		char *path = xasprintf("%s/%s", top, sub);
		fd = openat(dirfd, top, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			free(path);
			if (errno == ENOENT)
				continue;
			return herd_errf(err, -errno, "%s: %s", top, strerror(errno));
		}
		rc = walk_entry(&w, fd, sub, path, 0);
		close(fd);
		free(path);
		if (rc < 0)
			return rc;
	}
	memset(zero, 0, sizeof(zero));
	rc = write_all(out, zero, sizeof(zero));
	return rc < 0 ? herd_errf(err, rc, "writing the archive: %s", strerror(-rc)) : 0;
}

/* ---- reader ------------------------------------------------------------ */

/* Whether the component p[0..len) is name. */
static bool comp_is(const char *p, size_t len, const char *name)
{
	return strlen(name) == len && !strncmp(p, name, len);
}

bool migrate_tar_path_ok(const char *path, const char *const *tasks, size_t ntasks)
{
	const char *p = path, *slash;
	size_t n = 0, len;
	bool is_alloc = false, is_task = false;

	if (!*path || *path == '/' || strlen(path) > MAX_PATH_LEN)
		return false;
	for (;; p = slash + 1, n++) {
		slash = strchr(p, '/');
		len = slash ? (size_t)(slash - p) : strlen(p);
		if (!len || comp_is(p, len, ".") || comp_is(p, len, ".."))
			return false;
		if (n == 0) {
			is_alloc = comp_is(p, len, "alloc");
			for (size_t i = 0; i < ntasks && !is_task; i++)
				is_task = comp_is(p, len, tasks[i]);
		} else if (n == 1 && !((is_alloc && comp_is(p, len, "data")) ||
				       (is_task && comp_is(p, len, "local")))) {
			return false;
		}
		if (!slash)
			break;
	}
	return n >= 1 && (is_alloc || is_task);
}

struct migrate_untar {
	int dirfd;
	char **tasks;
	size_t ntasks;
	unsigned char block[BLOCK];
	size_t have;          /* bytes of block filled */
	uint64_t data_left;   /* of the current file */
	uint64_t pad_left;
	int file;             /* the file being written, or -1 */
	int zeros;            /* zero blocks in a row */
	bool ended, failed;
};

struct migrate_untar *migrate_untar_new(int dirfd, const char *const *tasks, size_t ntasks)
{
	struct migrate_untar *u = xcalloc(1, sizeof(*u));

	u->dirfd = dirfd;
	u->file = -1;
	u->tasks = xcalloc(ntasks + 1, sizeof(*u->tasks));
	for (size_t i = 0; i < ntasks; i++)
		u->tasks[i] = xstrdup(tasks[i]);
	u->ntasks = ntasks;
	return u;
}

void migrate_untar_free(struct migrate_untar *u)
{
	if (!u)
		return;
	if (u->file >= 0)
		close(u->file);
	for (size_t i = 0; i < u->ntasks; i++)
		free(u->tasks[i]);
	free(u->tasks);
	free(u);
}

static int parse_octal(const char *f, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i = 0;

	if ((unsigned char)f[0] == 0x80) { /* base 256 */
		for (i = 1; i < len; i++) {
			if (v >> 55)
				return -1;
			v = (v << 8) | (unsigned char)f[i];
		}
		*out = v;
		return 0;
	}
	while (i < len && f[i] == ' ')
		i++;
	for (; i < len && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v >> 60)
			return -1;
		v = v * 8 + (uint64_t)(f[i] - '0');
	}
	if (i < len && f[i] != '\0' && f[i] != ' ')
		return -1;
	*out = v;
	return 0;
}

/* Opens (making what is missing) the directory path beneath u->dirfd,
 * component by component, never following a link. */
static int open_parents(struct migrate_untar *u, char *path, bool all, const char **base)
{
	int fd = fcntl(u->dirfd, F_DUPFD_CLOEXEC, 0);
	char *p = path, *slash;

	while (fd >= 0) {
		int next;
		slash = strchr(p, '/');
		if (!slash && !all)
			break;
		if (slash)
			*slash = '\0';
		if (mkdirat(fd, p, 0700) < 0 && errno != EEXIST) {
			close(fd);
			return -errno;
		}
		next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		if (next < 0)
			return -errno;
		fd = next;
		if (!slash) {
			p = NULL;
			break;
		}
		*slash = '/';
		p = slash + 1;
	}
	*base = p;
	return fd;
}

static int untar_header(struct migrate_untar *u, struct herd_err *err)
{
	const struct ustar *h = (const struct ustar *)u->block;
	char path[MAX_PATH_LEN + 2];
	unsigned sum = 0, want;
	uint64_t size, mode, chk;
	const char *base;
	int fd;
	size_t plen = strnlen(h->prefix, sizeof(h->prefix));

	for (size_t i = 0; i < BLOCK; i++)
		sum += i >= offsetof(struct ustar, chksum) && i < offsetof(struct ustar, typeflag)
			       ? ' ' : u->block[i];
	if (parse_octal(h->chksum, sizeof(h->chksum), &chk) < 0 || (want = (unsigned)chk) != sum)
		return herd_errf(err, -EPROTO, "not a tar header (bad checksum)");
	if (memcmp(h->magic, "ustar", 5))
		return herd_errf(err, -EPROTO, "not a ustar header");
	if (parse_octal(h->size, sizeof(h->size), &size) < 0 ||
	    parse_octal(h->mode, sizeof(h->mode), &mode) < 0)
		return herd_errf(err, -EPROTO, "bad size or mode in a tar header");
	snprintf(path, sizeof(path), "%.*s%s%.*s", (int)plen, h->prefix, plen ? "/" : "",
		 (int)strnlen(h->name, sizeof(h->name)), h->name);
	/* a directory entry may end with '/' */
	if (h->typeflag == '5' && strlen(path) > 1 && path[strlen(path) - 1] == '/')
		path[strlen(path) - 1] = '\0';
	if (!migrate_tar_path_ok(path, (const char *const *)u->tasks, u->ntasks))
		return herd_errf(err, -EPERM, "refused path in the archive: \"%s\"", path);
	if (h->typeflag == '5') {
		fd = open_parents(u, path, true, &base);
		if (fd < 0)
			return herd_errf(err, fd, "%s: %s", path, strerror(-fd));
		fchmod(fd, (mode_t)(mode & 0777) | 0700);
		close(fd);
		u->data_left = u->pad_left = 0;
		return 0;
	}
	if (h->typeflag != '0' && h->typeflag != '\0')
		return herd_errf(err, -EPERM, "refused entry \"%s\": only files and directories "
				 "cross", path);
	fd = open_parents(u, path, false, &base);
	if (fd < 0)
		return herd_errf(err, fd, "%s: %s", path, strerror(-fd));
	u->file = openat(fd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			 (mode_t)(mode & 0777) | 0600);
	close(fd);
	if (u->file < 0)
		return herd_errf(err, -errno, "%s: %s", path, strerror(errno));
	u->data_left = size;
	u->pad_left = size % BLOCK ? BLOCK - size % BLOCK : 0;
	if (!size) {
		close(u->file);
		u->file = -1;
	}
	return 0;
}

int migrate_untar_feed(struct migrate_untar *u, const void *buf, size_t n, struct herd_err *err)
{
	const unsigned char *p = buf;
	int rc = 0;

	if (u->failed)
		return herd_errf(err, -EPROTO, "the archive failed already");
	while (n && !rc) {
		if (u->data_left) {
			size_t k = n < u->data_left ? n : (size_t)u->data_left;
			rc = write_all(u->file, p, k);
			if (rc < 0) {
				rc = herd_errf(err, rc, "writing a file: %s", strerror(-rc));
				break;
			}
			p += k;
			n -= k;
			u->data_left -= k;
			if (!u->data_left) {
				close(u->file);
				u->file = -1;
			}
			continue;
		}
		if (u->pad_left) {
			size_t k = n < u->pad_left ? n : (size_t)u->pad_left;
			p += k;
			n -= k;
			u->pad_left -= k;
			continue;
		}
		if (u->ended) { /* what follows the end marker is ignored */
			n = 0;
			break;
		}
		{
			size_t k = BLOCK - u->have < n ? BLOCK - u->have : n;
			memcpy(u->block + u->have, p, k);
			u->have += k;
			p += k;
			n -= k;
		}
		if (u->have < BLOCK)
			continue;
		u->have = 0;
		{
			bool zero = true;
			for (size_t i = 0; i < BLOCK && zero; i++)
				zero = !u->block[i];
			if (zero) {
				if (++u->zeros == 2)
					u->ended = true;
				continue;
			}
		}
		if (u->zeros)
			rc = herd_errf(err, -EPROTO, "a header after an empty block");
		else
			rc = untar_header(u, err);
	}
	if (rc < 0)
		u->failed = true;
	return rc;
}

int migrate_untar_finish(struct migrate_untar *u, struct herd_err *err)
{
	if (u->failed)
		return herd_errf(err, -EPROTO, "the archive failed");
	if (!u->ended)
		return herd_errf(err, -EPROTO, "the archive was cut short");
	return 0;
}
