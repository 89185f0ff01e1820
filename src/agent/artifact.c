/* Fetching artifacts into a task directory; see artifact.h. */
#include <archive.h>
#include <archive_entry.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <nettle/nettle-meta.h>
#include <nettle/sha2.h>

/* The largest digest used: SHA-512. */
#define MAX_DIGEST SHA512_DIGEST_SIZE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/artifact.h"
#include "agent/confined.h"
#include "common/httpc.h"
#include "common/strbuf.h"
#include "common/units.h"
#include "common/xalloc.h"

#define MAX_ENTRIES 100000

/* Where the bytes go while they arrive: a file, a running digest, a cap. */
struct sink {
	int fd;
	const struct nettle_hash *hash;   /* NULL: no checksum */
	void *hctx;
	int64_t n, max;
	int error;                         /* -errno of a failed write / -EFBIG */
};

struct fetch {
	const char *task_dir;
	const struct artifact_spec *a;
	struct artifact_opts o;
	struct herd_err *err;
	const struct nettle_hash *hash;
	uint8_t want[MAX_DIGEST];
};

static int sink_write(struct sink *s, const void *data, size_t len)
{
	if (s->n + (int64_t)len > s->max) {
		s->error = -EFBIG;
		return -1;
	}
	const char *p = data;
	for (size_t done = 0; done < len; ) {
		ssize_t w = write(s->fd, p + done, len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			s->error = -errno;
			return -1;
		}
		done += (size_t)w;
	}
	if (s->hash)
		s->hash->update(s->hctx, len, data);
	s->n += (int64_t)len;
	return 0;
}

static void sink_reset(struct sink *s)
{
	if (ftruncate(s->fd, 0) == 0)
		lseek(s->fd, 0, SEEK_SET);
	if (s->hash)
		s->hash->init(s->hctx);
	s->n = 0;
	s->error = 0;
}

static int parse_checksum(struct fetch *f)
{
	const char *c = f->a->checksum;
	if (!c || !*c)
		return 0;
	static const struct nettle_hash *const hashes[] = {
		&nettle_sha256, &nettle_sha512, &nettle_sha1, &nettle_md5,
	};
	const char *colon = strchr(c, ':');
	if (!colon)
		return herd_errf(f->err, -EINVAL, "artifact %s: checksum '%s': expected TYPE:HEX",
				 f->a->source, c);
	for (size_t i = 0; i < 4; i++) {
		size_t l = strlen(hashes[i]->name);
		if ((size_t)(colon - c) == l && !strncasecmp(c, hashes[i]->name, l))
			f->hash = hashes[i];
	}
	if (!f->hash)
		return herd_errf(f->err, -EINVAL, "artifact %s: checksum type '%.*s': expected "
				 "sha256, sha512, sha1 or md5", f->a->source, (int)(colon - c), c);
	const char *hex = colon + 1;
	if (strlen(hex) != 2 * f->hash->digest_size)
		return herd_errf(f->err, -EINVAL, "artifact %s: %s checksum needs %u hex digits",
				 f->a->source, f->hash->name, 2 * f->hash->digest_size);
	for (unsigned i = 0; i < f->hash->digest_size; i++) {
		int hi = hex_digit((unsigned char)hex[2 * i]);
		int lo = hi >= 0 ? hex_digit((unsigned char)hex[2 * i + 1]) : -1;
		if (lo < 0)
			return herd_errf(f->err, -EINVAL, "artifact %s: checksum: bad hex digit",
					 f->a->source);
		f->want[i] = (uint8_t)(hi * 16 + lo);
	}
	return 0;
}

static void sleep_ns(int64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000), (long)(ns % 1000000000) };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Sleeps ns in slices of 100 ms, asking the cancel hook before each;
 * true when it said to stop. */
static bool sleep_or_cancel(const struct fetch *f, int64_t ns)
{
	const int64_t slice = 100000000;
	for (; ns > 0; ns -= slice) {
		if (f->o.cancelled && f->o.cancelled(f->o.cancel_arg))
			return true;
		sleep_ns(ns < slice ? ns : slice);
	}
	return f->o.cancelled && f->o.cancelled(f->o.cancel_arg);
}

/* Runs c's transfer.  With a cancel hook it goes through a multi handle
 * that comes back at least every 100 ms to ask the hook (curl's progress
 * callback may wait a second between calls while nothing arrives);
 * *cancelled then says whether the hook ended it. */
static CURLcode perform(const struct fetch *f, CURL *c, bool *cancelled)
{
	CURLcode res = CURLE_OK;
	CURLM *m;
	CURLMsg *msg;
	int running = 1, left;

	*cancelled = false;
	if (!f->o.cancelled)
		return curl_easy_perform(c);
	if (!(m = curl_multi_init()))
		return CURLE_OUT_OF_MEMORY;
	curl_multi_add_handle(m, c);
	while (running) {
		if (f->o.cancelled(f->o.cancel_arg)) {
			*cancelled = true;
			res = CURLE_ABORTED_BY_CALLBACK;
			break;
		}
		if (curl_multi_perform(m, &running) != CURLM_OK ||
		    (running && curl_multi_poll(m, NULL, 0, 100, NULL) != CURLM_OK)) {
			res = CURLE_RECV_ERROR;
			break;
		}
	}
	while ((msg = curl_multi_info_read(m, &left)))
		if (msg->msg == CURLMSG_DONE && msg->easy_handle == c)
			res = msg->data.result;
	curl_multi_remove_handle(m, c);
	curl_multi_cleanup(m);
	return res;
}

static size_t curl_write(char *data, size_t size, size_t n, void *arg)
{
	struct sink *s = arg;
	return sink_write(s, data, size * n) < 0 ? 0 : size * n;
}

/* One HTTP attempt.  Returns 0, or -errno with err; *retry says whether
 * another attempt may help. */
static int http_once(struct fetch *f, struct sink *s, bool *retry)
{
	char cerr[CURL_ERROR_SIZE] = "";
	struct curl_slist *hdrs = NULL;
	CURL *c = curl_easy_init();
	int rc = 0;
	if (!c)
		return herd_errf(f->err, -ENOMEM, "artifact %s: cannot start libcurl", f->a->source);
	for (size_t i = 0; f->a->headers && f->a->headers[i]; i++)
		hdrs = curl_slist_append(hdrs, f->a->headers[i]);
	curl_easy_setopt(c, CURLOPT_URL, f->a->source);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, curl_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
	curl_easy_setopt(c, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(f->o.connect_timeout_ns / 1000000));
	long stall = (long)(f->o.stall_timeout_ns / 1000000000);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, stall < 1 ? 1L : stall);
	curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)f->o.max_bytes);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "herd-agent");
	if (hdrs)
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	bool cancelled;
	CURLcode res = perform(f, c, &cancelled);
	long code = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	if (cancelled) {
		*retry = false;
		rc = herd_errf(f->err, -ECANCELED, "artifact %s: abandoned: the task is stopping",
			       f->a->source);
	} else if (s->error == -EFBIG || res == CURLE_FILESIZE_EXCEEDED) {
		*retry = false;
		rc = herd_errf(f->err, -EFBIG, "artifact %s: larger than %lld bytes", f->a->source,
			       (long long)f->o.max_bytes);
	} else if (s->error) {
		*retry = false;
		rc = herd_errf(f->err, s->error, "artifact %s: writing: %s", f->a->source,
			       strerror(-s->error));
	} else if (res != CURLE_OK) {
		*retry = true;
		rc = herd_errf(f->err, -EIO, "artifact %s: %s", f->a->source,
			       cerr[0] ? cerr : curl_easy_strerror(res));
	} else if (code >= 400) {
		*retry = code >= 500 || code == 408 || code == 429;
		rc = herd_errf(f->err, -EIO, "artifact %s: HTTP %ld", f->a->source, code);
	}
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(c);
	return rc;
}

/* A file source: checked against the roots, then copied. */
static int file_copy(struct fetch *f, const char *path, struct sink *s, mode_t *mode)
{
	char *real = realpath(path, NULL);
	if (!real)
		return herd_errf(f->err, -errno, "artifact %s: %s", f->a->source, strerror(errno));
	char *parent = NULL;
	const char *const *roots = f->o.file_roots;
	const char *defroots[2] = { NULL, NULL };
	if (!roots) {
		parent = xasprintf("%s/..", f->task_dir);
		defroots[0] = parent;
		roots = defroots;
	}
	bool inside = false;
	for (size_t i = 0; roots[i] && !inside; i++) {
		char *r = realpath(roots[i], NULL);
		if (!r)
			continue;
		size_t l = strlen(r);
		inside = !strncmp(real, r, l) && (real[l] == '/' || real[l] == '\0' || l == 1);
		free(r);
	}
	free(parent);
	int rc = 0, fd = -1;
	if (!inside) {
		rc = herd_errf(f->err, -EACCES, "artifact %s: file sources must be inside the "
			       "allocation directory or a configured artifact root", f->a->source);
		goto out;
	}
	fd = open(real, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		rc = herd_errf(f->err, -errno, "artifact %s: %s", f->a->source, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = herd_errf(f->err, -EINVAL, "artifact %s: not a regular file", f->a->source);
		goto out;
	}
	*mode = st.st_mode & 0777;
	char buf[65536];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = herd_errf(f->err, -errno, "artifact %s: %s", f->a->source, strerror(errno));
			break;
		}
		if (n == 0)
			break;
		if (sink_write(s, buf, (size_t)n) < 0) {
			rc = herd_errf(f->err, s->error, "artifact %s: %s", f->a->source,
				       s->error == -EFBIG ? "too large" : strerror(-s->error));
			break;
		}
	}
out:
	if (fd >= 0)
		close(fd);
	free(real);
	return rc;
}

/* The source's path part (without query and fragment), for names and
 * archive detection.  Caller frees. */
static char *source_path(const char *src)
{
	const char *p = src;
	const char *scheme = strstr(src, "://");
	if (scheme) {
		p = strchr(scheme + 3, '/');
		if (!p)
			return xstrdup("");
	}
	return xstrndup(p, strcspn(p, "?#"));
}

static bool is_archive(const char *path)
{
	static const char *const ext[] = { ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2",
					   ".tar.xz", ".txz", ".zip", NULL };
	size_t l = strlen(path);
	for (size_t i = 0; ext[i]; i++) {
		size_t e = strlen(ext[i]);
		if (l > e && !strcasecmp(path + l - e, ext[i]))
			return true;
	}
	return false;
}

/* Whether a symlink at entry path `at` with target `target` stays inside
 * the destination, judged by its text alone. */
static bool symlink_inside(const char *at, const char *target)
{
	if (!*target || target[0] == '/')
		return false;
	int depth = 0;
	for (const char *c = at; *c; ) {           /* the link's directory */
		size_t l = strcspn(c, "/");
		if (c[l] == '/')
			depth += !(l == 1 && c[0] == '.') && l > 0;
		c += l;
		while (*c == '/')
			c++;
	}
	for (const char *c = target; *c; ) {
		size_t l = strcspn(c, "/");
		if (l == 2 && c[0] == '.' && c[1] == '.')
			depth--;
		else if (l && !(l == 1 && c[0] == '.'))
			depth++;
		if (depth < 0)
			return false;
		c += l;
		while (*c == '/')
			c++;
	}
	return true;
}

static int entry_fail(struct fetch *f, const char *name, int code, const char *why)
{
	return herd_errf(f->err, code, "artifact %s: archive entry '%s': %s", f->a->source,
			 name, why);
}

/* Unpacks one entry beneath dirfd. */
static int unpack_entry(struct fetch *f, struct archive *ar, struct archive_entry *e,
			int dirfd, int64_t *total)
{
	const char *raw = archive_entry_pathname(e);
	if (!raw)
		return entry_fail(f, "?", -EINVAL, "no usable name");
	const char *name = raw;
	while (name[0] == '.' && name[1] == '/')
		name += 2;
	if (name[0] == '/')
		return entry_fail(f, raw, -EXDEV, "absolute path");
	char *rel = NULL;
	int rc = confined_relpath("/", name[0] ? name : ".", "entry", &rel, NULL);
	if (rc < 0)
		return entry_fail(f, raw, -EXDEV, "'..' leaves the destination");
	if (archive_entry_hardlink(e)) {
		rc = entry_fail(f, raw, -EINVAL, "hard links are not supported");
		goto out;
	}
	/* Trailing slashes (directories) do not make a name. */
	size_t l = strlen(rel);
	while (l > 1 && rel[l - 1] == '/')
		rel[--l] = '\0';
	mode_t type = archive_entry_filetype(e);
	mode_t perm = archive_entry_perm(e) & 0777;
	if (type == AE_IFDIR) {
		if (!strcmp(rel, ".")) {
			rc = 0;
			goto out;
		}
		int fd = confined_mkdirs(dirfd, rel, 0755, NULL);
		if (fd < 0) {
			rc = entry_fail(f, raw, fd, fd == -EXDEV ? "leaves the destination (symlink)"
							       : strerror(-fd));
			goto out;
		}
		char *p = xasprintf("/proc/self/fd/%d", fd);
		chmod(p, perm | 0700);
		free(p);
		close(fd);
		rc = 0;
		goto out;
	}
	if (type != AE_IFREG && type != AE_IFLNK) {
		rc = entry_fail(f, raw, -EINVAL, "device nodes, fifos and sockets are not allowed");
		goto out;
	}
	const char *slash = strrchr(rel, '/');
	const char *base = slash ? slash + 1 : rel;
	char *dir = slash ? xstrndup(rel, (size_t)(slash - rel)) : xstrdup(".");
	int pfd = confined_mkdirs(dirfd, dir, 0755, NULL);
	free(dir);
	if (pfd < 0) {
		rc = entry_fail(f, raw, pfd, pfd == -EXDEV ? "leaves the destination (symlink)"
							 : strerror(-pfd));
		goto out;
	}
	if (!strcmp(base, ".")) {
		close(pfd);
		rc = entry_fail(f, raw, -EINVAL, "not a file name");
		goto out;
	}
	if (type == AE_IFLNK) {
		const char *target = archive_entry_symlink(e);
		if (!target || !symlink_inside(rel, target)) {
			rc = entry_fail(f, raw, -EXDEV, "symlink points outside the destination");
		} else {
			unlinkat(pfd, base, 0);
			rc = symlinkat(target, pfd, base) < 0 ? -errno : 0;
			if (rc < 0)
				entry_fail(f, raw, rc, strerror(-rc));
		}
		close(pfd);
		goto out;
	}
	int fd = openat(pfd, base, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	close(pfd);
	if (fd < 0) {
		rc = entry_fail(f, raw, -errno, errno == ELOOP ? "a symlink is in the way"
							       : strerror(errno));
		goto out;
	}
	for (;;) {
		const void *buf;
		size_t size;
		la_int64_t off;
		int r = archive_read_data_block(ar, &buf, &size, &off);
		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_WARN) {
			rc = entry_fail(f, raw, -EIO, archive_error_string(ar));
			break;
		}
		*total += (int64_t)size;
		if (*total > f->o.max_unpacked_bytes) {
			rc = entry_fail(f, raw, -EFBIG, "the archive unpacks to more than the limit");
			break;
		}
		if (size && pwrite(fd, buf, size, (off_t)off) != (ssize_t)size) {
			rc = entry_fail(f, raw, -errno, strerror(errno));
			break;
		}
	}
	/* The file's full size, also when it ends in a hole. */
	if (rc == 0 && archive_entry_size_is_set(e) &&
	    ftruncate(fd, (off_t)archive_entry_size(e)) < 0)
		rc = entry_fail(f, raw, -errno, strerror(errno));
	if (rc == 0)
		fchmod(fd, perm);  /* never set-id: perm holds 0777 bits only */
	close(fd);
out:
	free(rel);
	return rc;
}

static int unpack(struct fetch *f, int srcfd, int dirfd)
{
	struct archive *ar = archive_read_new();
	archive_read_support_filter_all(ar);
	archive_read_support_format_tar(ar);
	archive_read_support_format_gnutar(ar);
	archive_read_support_format_zip(ar);
	int rc = 0;
	lseek(srcfd, 0, SEEK_SET);
	if (archive_read_open_fd(ar, srcfd, 65536) != ARCHIVE_OK) {
		rc = herd_errf(f->err, -EINVAL, "artifact %s: %s", f->a->source,
			       archive_error_string(ar));
		goto out;
	}
	int64_t total = 0;
	for (size_t n = 0; ; n++) {
		struct archive_entry *e;
		int r = archive_read_next_header(ar, &e);
		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_WARN) {
			rc = herd_errf(f->err, -EINVAL, "artifact %s: not a valid archive: %s",
				       f->a->source, archive_error_string(ar));
			break;
		}
		if (n >= MAX_ENTRIES) {
			rc = herd_errf(f->err, -EFBIG, "artifact %s: more than %d archive entries",
				       f->a->source, MAX_ENTRIES);
			break;
		}
		if ((rc = unpack_entry(f, ar, e, dirfd, &total)) < 0)
			break;
	}
out:
	archive_read_free(ar);
	return rc;
}

static void init_opts(struct artifact_opts *o, const struct artifact_opts *in)
{
	*o = in ? *in : (struct artifact_opts){ 0 };
	if (o->attempts <= 0)
		o->attempts = 3;
	if (o->backoff_ns <= 0)
		o->backoff_ns = 1000000000;
	if (o->connect_timeout_ns <= 0)
		o->connect_timeout_ns = 30000000000LL;
	if (o->stall_timeout_ns <= 0)
		o->stall_timeout_ns = 60000000000LL;
	if (o->max_bytes <= 0)
		o->max_bytes = 16LL << 30;
	if (o->max_unpacked_bytes <= 0)
		o->max_unpacked_bytes = o->max_bytes > INT64_MAX / 4 ? INT64_MAX : 4 * o->max_bytes;
}

int artifact_fetch(const char *task_dir, const struct artifact_spec *a,
		   const struct artifact_opts *opts, struct herd_err *err)
{
	static bool curl_ready;
	struct fetch f = { .task_dir = task_dir, .a = a, .err = err };
	char *spath = NULL, *rel = NULL, *decoded = NULL, *tmp = NULL;
	int root = -1, dirfd = -1, rc;
	struct sink s = { .fd = -1 };
	init_opts(&f.o, opts);

	if (!a->source || !*a->source)
		return herd_errf(err, -EINVAL, "artifact: no source");
	const char *mode = a->mode ? a->mode : "any";
	if (strcmp(mode, "any") && strcmp(mode, "file") && strcmp(mode, "dir"))
		return herd_errf(err, -EINVAL, "artifact %s: mode '%s': expected any, file or dir",
				 a->source, mode);
	if ((rc = parse_checksum(&f)) < 0)
		return rc;
	bool http = !strncasecmp(a->source, "http://", 7) || !strncasecmp(a->source, "https://", 8);
	bool file_url = !strncasecmp(a->source, "file://", 7);
	if (!http && !file_url && a->source[0] != '/')
		return herd_errf(err, -EINVAL, "artifact %s: expected an http(s):// or file:// URL "
				 "or an absolute path", a->source);
	spath = source_path(a->source);
	const char *sbase = strrchr(spath, '/') ? strrchr(spath, '/') + 1 : spath;
	bool unpack_it = strcmp(mode, "file") && is_archive(spath) &&
			 !(a->archive && !strcmp(a->archive, "false"));
	if (!strcmp(mode, "dir") && !unpack_it) {
		rc = herd_errf(err, -EINVAL, "artifact %s: mode dir needs an archive", a->source);
		goto out;
	}
	if (!strcmp(mode, "any") && !unpack_it && (!*sbase || !strcmp(sbase, "..") ||
						   !strcmp(sbase, "."))) {
		rc = herd_errf(err, -EINVAL, "artifact %s: no file name in the source", a->source);
		goto out;
	}

	const char *dest = a->destination && *a->destination ? a->destination : "local/";
	if ((rc = confined_relpath(task_dir, dest, "artifact destination", &rel, err)) < 0)
		goto out;
	root = open(task_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0) {
		rc = herd_errf(err, -errno, "task dir %s: %s", task_dir, strerror(errno));
		goto out;
	}
	/* The directory that receives the file or the unpacked tree. */
	const char *fname = sbase;
	if (!strcmp(mode, "file")) {
		char *slash = strrchr(rel, '/');
		fname = slash ? slash + 1 : rel;
		if (!*fname || !strcmp(fname, ".")) {
			rc = herd_errf(err, -EINVAL, "artifact %s: mode file needs a file destination",
				       a->source);
			goto out;
		}
		if (slash)
			*slash = '\0';
		dirfd = confined_mkdirs(root, slash ? rel : ".", 0755, err);
	} else {
		dirfd = confined_mkdirs(root, rel, 0755, err);
	}
	if (dirfd < 0) {
		rc = herd_err_prefix(err, "artifact %s", a->source);
		goto out;
	}
	int wdir = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	close(dirfd);
	dirfd = wdir;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	tmp = xasprintf(".herd-artifact.%d.%ld", (int)getpid(), ts.tv_nsec);
	s.fd = dirfd < 0 ? -1 : openat(dirfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
				       O_CLOEXEC, 0600);
	if (s.fd < 0) {
		rc = herd_errf(err, -errno, "artifact %s: temporary file: %s", a->source,
			       strerror(errno));
		goto out;
	}
	s.max = f.o.max_bytes;
	s.hash = f.hash;
	if (f.hash)
		s.hctx = xmalloc(f.hash->context_size);
	mode_t fmode = 0644;
	if (http) {
		if (!curl_ready) {
			curl_global_init(CURL_GLOBAL_DEFAULT);
			curl_ready = true;
		}
		int64_t delay = f.o.backoff_ns;
		int attempt;
		for (attempt = 1; ; attempt++) {
			bool retry = false;
			sink_reset(&s);
			rc = http_once(&f, &s, &retry);
			if (rc == 0 || !retry || attempt >= f.o.attempts)
				break;
			if (sleep_or_cancel(&f, delay)) {
				rc = herd_errf(err, -ECANCELED, "artifact %s: abandoned: the task is "
					       "stopping", a->source);
				break;
			}
			delay *= 2;
		}
		if (rc < 0) {
			/* Name the attempts actually made: a 404 fails on the
			 * first, and "after 3 attempts" would say it was retried. */
			if (attempt > 1)
				herd_err_prefix(err, "after %d attempts", attempt);
			goto out_tmp;
		}
	} else {
		const char *path = a->source;
		if (file_url) {
			if (a->source[7] != '/' || httpc_unescape(a->source + 7, strlen(a->source + 7), true, &decoded) < 0) {
				rc = herd_errf(err, -EINVAL, "artifact %s: expected file:///absolute/path",
					       a->source);
				goto out_tmp;
			}
			path = decoded;
		}
		sink_reset(&s);
		if ((rc = file_copy(&f, path, &s, &fmode)) < 0)
			goto out_tmp;
	}
	if (f.hash) {
		uint8_t got[MAX_DIGEST];
		f.hash->digest(s.hctx, f.hash->digest_size, got);
		if (memcmp(got, f.want, f.hash->digest_size)) {
			char hex[2 * MAX_DIGEST + 1];
			for (unsigned i = 0; i < f.hash->digest_size; i++)
				snprintf(hex + 2 * i, 3, "%02x", got[i]);
			rc = herd_errf(err, -EBADMSG, "artifact %s: checksum mismatch: expected %s, "
				       "got %s:%s", a->source, a->checksum, f.hash->name, hex);
			goto out_tmp;
		}
	}
	if (unpack_it) {
		rc = unpack(&f, s.fd, dirfd);
		goto out_tmp;
	}
	if (fchmod(s.fd, fmode) < 0 || fsync(s.fd) < 0 || renameat(dirfd, tmp, dirfd, fname) < 0) {
		rc = herd_errf(err, -errno, "artifact %s: saving %s: %s", a->source, fname,
			       strerror(errno));
		goto out_tmp;
	}
	rc = 0;
	goto out;
out_tmp:
	unlinkat(dirfd, tmp, 0);
out:
	if (s.fd >= 0)
		close(s.fd);
	free(s.hctx);
	if (dirfd >= 0)
		close(dirfd);
	if (root >= 0)
		close(root);
	free(tmp);
	free(decoded);
	free(rel);
	free(spath);
	return rc;
}
