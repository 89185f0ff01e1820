/* artifact: downloads from a local HTTP server (libmicrohttpd on
 * 127.0.0.1, started here), file sources, checksums, retries, HTTP errors,
 * tar/tar.gz/zip unpacking and malicious archives built with libarchive. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/artifact.h"

static char root[] = "/tmp/herd-artifact-XXXXXX";
static char alloc_dir[160], task_dir[160], outside[160];
static struct MHD_Daemon *httpd;
static int port;
static int flaky_left;   /* /flaky answers 503 this many times */
static int hits_404;

struct blob { const char *path; void *data; size_t len; };
static struct blob blobs[16];
static size_t nblobs;

static void serve(const char *path, const void *data, size_t len)
{
	blobs[nblobs].path = path;
	blobs[nblobs].data = malloc(len ? len : 1);
	memcpy(blobs[nblobs].data, data, len);
	blobs[nblobs].len = len;
	nblobs++;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **con_cls)
{
	struct MHD_Response *r;
	unsigned status = MHD_HTTP_OK;
	if (!strcmp(url, "/flaky") && flaky_left > 0) {
		flaky_left--;
		status = MHD_HTTP_SERVICE_UNAVAILABLE;
		r = MHD_create_response_from_buffer(4, (void *)"busy", MHD_RESPMEM_PERSISTENT);
	} else if (!strcmp(url, "/auth")) {
		const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Token");
		bool ok = h && !strcmp(h, "s3cret");
		status = ok ? MHD_HTTP_OK : MHD_HTTP_FORBIDDEN;
		r = MHD_create_response_from_buffer(2, (void *)"ok", MHD_RESPMEM_PERSISTENT);
	} else if (!strcmp(url, "/redirect-file")) {
		status = MHD_HTTP_FOUND;
		r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
		MHD_add_response_header(r, "Location", "file:///etc/passwd");
	} else {
		size_t i;
		for (i = 0; i < nblobs; i++)
			if (!strcmp(url, blobs[i].path) || (!strcmp(url, "/flaky") &&
							     !strcmp(blobs[i].path, "/hello.txt")))
				break;
		if (i == nblobs) {
			hits_404++;
			status = MHD_HTTP_NOT_FOUND;
			r = MHD_create_response_from_buffer(9, (void *)"not found",
							   MHD_RESPMEM_PERSISTENT);
		} else {
			r = MHD_create_response_from_buffer(blobs[i].len, blobs[i].data,
							   MHD_RESPMEM_PERSISTENT);
		}
	}
	enum MHD_Result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* Builds an archive in memory: entries as (type, name, content or link
 * target); format "tar", "tar.gz" or "zip". */
struct ent { char type; const char *name; const char *data; };
static void *build_archive(const char *format, const struct ent *e, size_t n, size_t *len)
{
	size_t cap = 1 << 20;
	void *buf = malloc(cap);
	struct archive *a = archive_write_new();
	if (!strcmp(format, "zip")) {
		archive_write_set_format_zip(a);
	} else {
		archive_write_set_format_pax_restricted(a);
		if (!strcmp(format, "tar.gz"))
			archive_write_add_filter_gzip(a);
	}
	assert_int_equal(archive_write_open_memory(a, buf, cap, len), ARCHIVE_OK);
	for (size_t i = 0; i < n; i++) {
		struct archive_entry *en = archive_entry_new();
		archive_entry_set_pathname(en, e[i].name);
		switch (e[i].type) {
		case 'f':
			archive_entry_set_filetype(en, AE_IFREG);
			archive_entry_set_perm(en, 06755);
			archive_entry_set_size(en, (la_int64_t)strlen(e[i].data));
			break;
		case 'd':
			archive_entry_set_filetype(en, AE_IFDIR);
			archive_entry_set_perm(en, 0755);
			break;
		case 'l':
			archive_entry_set_filetype(en, AE_IFLNK);
			archive_entry_set_perm(en, 0777);
			archive_entry_set_symlink(en, e[i].data);
			break;
		case 'h':
			archive_entry_set_filetype(en, AE_IFREG);
			archive_entry_set_perm(en, 0644);
			archive_entry_set_hardlink(en, e[i].data);
			break;
		case 'c':
			archive_entry_set_filetype(en, AE_IFCHR);
			archive_entry_set_perm(en, 0666);
			archive_entry_set_rdevmajor(en, 1);
			archive_entry_set_rdevminor(en, 3);
			break;
		}
		assert_int_equal(archive_write_header(a, en), ARCHIVE_OK);
		if (e[i].type == 'f')
			archive_write_data(a, e[i].data, strlen(e[i].data));
		archive_entry_free(en);
	}
	archive_write_close(a);
	archive_write_free(a);
	return buf;
}

static void serve_archive(const char *path, const char *format, const struct ent *e, size_t n)
{
	size_t len = 0;
	void *buf = build_archive(format, e, n, &len);
	serve(path, buf, len);
	free(buf);
}

static char *url(const char *path)
{
	static char buf[256];
	snprintf(buf, sizeof(buf), "http://127.0.0.1:%d%s", port, path);
	return buf;
}

static char *slurp(const char *rel)
{
	static char buf[4096];
	char path[400];
	snprintf(path, sizeof(path), "%s/%s", task_dir, rel);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n < 0 ? 0 : n] = '\0';
	return buf;
}

static const struct artifact_opts fast = { .attempts = 3, .backoff_ns = 1000000 };

static int fetch(const struct artifact_spec *a, struct herd_err *err)
{
	memset(err, 0, sizeof(*err));
	return artifact_fetch(task_dir, a, &fast, err);
}

static void test_plain_file_and_checksum(void **state)
{
	struct herd_err err;
	struct artifact_spec a = { .source = url("/hello.txt?x=1") };
	assert_int_equal(fetch(&a, &err), 0);
	assert_string_equal(slurp("local/hello.txt"), "hello, herd\n");
	struct stat st;
	char p[400];
	snprintf(p, sizeof(p), "%s/local/hello.txt", task_dir);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);

	/* sha256 of "hello, herd\n" */
	a.checksum = "sha256:a9a4e0a1acbab4fe9c5dab7cba0bf45ec3ba1ee0fb5ba9a04d4c2a2f2d1c6a61";
	a.destination = "local/sum";
	int rc = fetch(&a, &err);
	assert_int_equal(rc, -EBADMSG);
	assert_non_null(strstr(err.msg, "checksum mismatch"));
	/* the real digest is in the message: use it */
	const char *got = strstr(err.msg, "got sha256:");
	assert_non_null(got);
	char sum[100];
	snprintf(sum, sizeof(sum), "%s", got + 4);
	a.checksum = sum;
	assert_int_equal(fetch(&a, &err), 0);
	assert_string_equal(slurp("local/sum/hello.txt"), "hello, herd\n");
	/* digests computed by sha256sum and md5sum */
	assert_string_equal(sum, "sha256:7e317a8c94bb03464430a88d47338acdb6c78abefaea45f7cf3a25c8af8a9d47");
	a.checksum = "MD5:3b0fa3b0da5de0d59b48c7cc73b731dd";
	assert_int_equal(fetch(&a, &err), 0);
	a.checksum = "md5:zz";
	assert_int_equal(fetch(&a, &err), -EINVAL);
	a.checksum = "crc32:00000000";
	assert_int_equal(fetch(&a, &err), -EINVAL);
	/* a bad download leaves no temporary behind */
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A %s/local/sum | grep herd-artifact)\"", task_dir);
	assert_int_equal(system(cmd), 0);

	struct artifact_spec f = { .source = url("/hello.txt"), .mode = "file",
				   .destination = "local/renamed.cfg" };
	assert_int_equal(fetch(&f, &err), 0);
	assert_string_equal(slurp("local/renamed.cfg"), "hello, herd\n");
}

static void test_http_errors_and_retries(void **state)
{
	struct herd_err err;
	struct artifact_spec a = { .source = url("/missing.tar.gz") };
	hits_404 = 0;
	assert_int_equal(fetch(&a, &err), -EIO);
	assert_non_null(strstr(err.msg, "HTTP 404"));
	assert_non_null(strstr(err.msg, "/missing.tar.gz"));
	assert_int_equal(hits_404, 1);   /* a 404 is not retried */
	assert_null(strstr(err.msg, "attempts")); /* ...and the message does not say it was */
	assert_int_equal(fetch(&a, &err), -EIO);
	assert_int_equal(hits_404, 2);   /* one request per fetch, again */

	flaky_left = 2;
	struct artifact_spec fl = { .source = url("/flaky"), .mode = "file",
				    .destination = "local/flaky.txt" };
	assert_int_equal(fetch(&fl, &err), 0);
	assert_int_equal(flaky_left, 0);
	assert_string_equal(slurp("local/flaky.txt"), "hello, herd\n");

	flaky_left = 5;
	assert_int_equal(fetch(&fl, &err), -EIO);
	assert_non_null(strstr(err.msg, "HTTP 503"));
	assert_non_null(strstr(err.msg, "after 3 attempts"));
	assert_int_equal(flaky_left, 2);

	struct artifact_spec dead = { .source = "http://127.0.0.1:1/x.txt" };
	assert_int_equal(fetch(&dead, &err), -EIO);
	assert_non_null(strstr(err.msg, "127.0.0.1:1"));

	/* headers are sent */
	const char *hdrs[] = { "X-Token: s3cret", NULL };
	struct artifact_spec au = { .source = url("/auth"), .mode = "file",
				    .destination = "local/auth" };
	assert_int_equal(fetch(&au, &err), -EIO);
	assert_non_null(strstr(err.msg, "HTTP 403"));
	assert_null(strstr(err.msg, "attempts")); /* other 4xx fail at once too */
	au.headers = hdrs;
	assert_int_equal(fetch(&au, &err), 0);

	/* a redirect to file:// is not followed */
	struct artifact_spec rd = { .source = url("/redirect-file"), .mode = "file",
				    .destination = "local/passwd" };
	assert_true(fetch(&rd, &err) < 0);
	assert_null(slurp("local/passwd"));

	/* size limit */
	struct artifact_opts small = fast;
	small.max_bytes = 4;
	struct artifact_spec big = { .source = url("/hello.txt"), .destination = "local/big" };
	assert_int_equal(artifact_fetch(task_dir, &big, &small, &err), -EFBIG);
}

static void test_archives(void **state)
{
	struct herd_err err;
	struct artifact_spec a = { .source = url("/app.tar.gz"), .destination = "local/app" };
	assert_int_equal(fetch(&a, &err), 0);
	assert_string_equal(slurp("local/app/bin/run.sh"), "#!/bin/sh\necho hi\n");
	assert_string_equal(slurp("local/app/link"), "#!/bin/sh\necho hi\n");
	struct stat st;
	char p[400];
	snprintf(p, sizeof(p), "%s/local/app/bin/run.sh", task_dir);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);   /* set-id bits dropped */

	struct artifact_spec z = { .source = url("/data.zip"), .mode = "dir",
				   .destination = "local/z" };
	assert_int_equal(fetch(&z, &err), 0);
	assert_string_equal(slurp("local/z/d/x.txt"), "zipped");

	struct artifact_spec raw = { .source = url("/app.tar.gz"), .archive = "false" };
	assert_int_equal(fetch(&raw, &err), 0);
	snprintf(p, sizeof(p), "%s/local/app.tar.gz", task_dir);
	assert_int_equal(access(p, F_OK), 0);

	struct artifact_spec notar = { .source = url("/hello.txt"), .mode = "dir" };
	assert_int_equal(fetch(&notar, &err), -EINVAL);
	struct artifact_spec junk = { .source = url("/junk.tar") };
	assert_int_equal(fetch(&junk, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "archive"));
}

static void expect_rejected(const char *path, const char *why)
{
	struct herd_err err;
	struct artifact_spec a = { .source = url(path), .destination = "local/evil" };
	int rc = fetch(&a, &err);
	if (rc >= 0)
		fail_msg("%s was unpacked", path);
	if (!strstr(err.msg, why))
		fail_msg("%s: '%s' does not say '%s'", path, err.msg, why);
	/* nothing landed outside the task dir */
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A %s)\"", outside);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "test ! -e %s/evil.txt -a ! -e %s/evil.txt", root, alloc_dir);
	assert_int_equal(system(cmd), 0);
}

static void test_malicious_archives(void **state)
{
	expect_rejected("/dotdot.tar", "'..'");
	expect_rejected("/abs.tar", "absolute");
	expect_rejected("/symlink-out.tar", "symlink");
	expect_rejected("/symlink-abs.tar.gz", "symlink");
	expect_rejected("/dev.tar", "device");
	expect_rejected("/hardlink.tar", "hard link");
	expect_rejected("/dotdot.zip", "'..'");
	/* a symlink planted in the destination beforehand is not followed */
	char link[400];
	snprintf(link, sizeof(link), "%s/local/evil/planted", task_dir);
	mkdir(link, 0755);
	rmdir(link);
	char d[400];
	snprintf(d, sizeof(d), "%s/local/evil", task_dir);
	mkdir(d, 0755);
	assert_int_equal(symlink(outside, link), 0);
	expect_rejected("/through-planted.tar", "leaves the destination");
}

static void test_file_sources(void **state)
{
	struct herd_err err;
	char src[400], furl[500];
	snprintf(src, sizeof(src), "%s/alloc/data/model.bin", alloc_dir);
	FILE *f = fopen(src, "we");
	fputs("weights", f);
	fclose(f);
	chmod(src, 0600);
	struct artifact_spec a = { .source = src };
	assert_int_equal(fetch(&a, &err), 0);
	assert_string_equal(slurp("local/model.bin"), "weights");
	snprintf(furl, sizeof(furl), "file://%s", src);
	struct artifact_spec b = { .source = furl, .destination = "local/b" };
	assert_int_equal(fetch(&b, &err), 0);
	assert_string_equal(slurp("local/b/model.bin"), "weights");

	/* outside the allocation: refused, also through a symlink */
	struct artifact_spec c = { .source = "/etc/hostname", .destination = "local/c" };
	assert_int_equal(fetch(&c, &err), -EACCES);
	char l[400];
	snprintf(l, sizeof(l), "%s/alloc/data/sneaky", alloc_dir);
	assert_int_equal(symlink("/etc/hostname", l), 0);
	struct artifact_spec s = { .source = l, .destination = "local/c" };
	assert_int_equal(fetch(&s, &err), -EACCES);
	/* unless the operator allowed the directory */
	const char *roots[] = { "/etc", NULL };
	struct artifact_opts o = fast;
	o.file_roots = roots;
	assert_int_equal(artifact_fetch(task_dir, &c, &o, &err), 0);

	struct artifact_spec rel = { .source = "relative/path" };
	assert_int_equal(fetch(&rel, &err), -EINVAL);
	struct artifact_spec ftp = { .source = "ftp://127.0.0.1/x" };
	assert_int_equal(fetch(&ftp, &err), -EINVAL);
	struct artifact_spec esc = { .source = src, .destination = "../../x" };
	assert_int_equal(fetch(&esc, &err), -EINVAL);
	struct artifact_spec mode = { .source = src, .mode = "weird" };
	assert_int_equal(fetch(&mode, &err), -EINVAL);
}

static int setup(void **state)
{
	if (!mkdtemp(root))
		return -1;
	snprintf(alloc_dir, sizeof(alloc_dir), "%s/allocs/a1", root);
	snprintf(task_dir, sizeof(task_dir), "%s/web", alloc_dir);
	snprintf(outside, sizeof(outside), "%s/outside", root);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/local %s/alloc/data %s", task_dir, alloc_dir, outside);
	if (system(cmd) != 0)
		return -1;

	serve("/hello.txt", "hello, herd\n", 12);
	serve("/junk.tar", "this is not a tar file at all", 29);
	const struct ent app[] = {
		{ 'd', "bin/", NULL }, { 'f', "bin/run.sh", "#!/bin/sh\necho hi\n" },
		{ 'l', "link", "bin/run.sh" }, { 'd', "./", NULL },
	};
	serve_archive("/app.tar.gz", "tar.gz", app, 4);
	const struct ent zip[] = { { 'f', "d/x.txt", "zipped" } };
	serve_archive("/data.zip", "zip", zip, 1);
	const struct ent dotdot[] = { { 'f', "ok.txt", "ok" }, { 'f', "../../../evil.txt", "x" } };
	serve_archive("/dotdot.tar", "tar", dotdot, 2);
	serve_archive("/dotdot.zip", "zip", dotdot, 2);
	char abs[300];
	snprintf(abs, sizeof(abs), "%s/evil.txt", outside);
	const struct ent absent[] = { { 'f', abs, "x" } };
	serve_archive("/abs.tar", "tar", absent, 1);
	const struct ent symout[] = { { 'l', "up", "../../../../outside" },
				      { 'f', "up/evil.txt", "x" } };
	serve_archive("/symlink-out.tar", "tar", symout, 2);
	const struct ent symabs[] = { { 'l', "abs", outside }, { 'f', "abs/evil.txt", "x" } };
	serve_archive("/symlink-abs.tar.gz", "tar.gz", symabs, 2);
	const struct ent dev[] = { { 'c', "null", NULL } };
	serve_archive("/dev.tar", "tar", dev, 1);
	const struct ent hard[] = { { 'h', "h", "/etc/passwd" } };
	serve_archive("/hardlink.tar", "tar", hard, 1);
	const struct ent planted[] = { { 'f', "planted/evil.txt", "x" } };
	serve_archive("/through-planted.tar", "tar", planted, 1);

	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = 0,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	httpd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL,
				 NULL, answer, NULL, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_END);
	if (!httpd)
		return -1;
	port = MHD_get_daemon_info(httpd, MHD_DAEMON_INFO_BIND_PORT)->port;
	return 0;
}

static int teardown(void **state)
{
	MHD_stop_daemon(httpd);
	for (size_t i = 0; i < nblobs; i++)
		free(blobs[i].data);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_file_and_checksum),
		cmocka_unit_test(test_http_errors_and_retries),
		cmocka_unit_test(test_archives),
		cmocka_unit_test(test_malicious_archives),
		cmocka_unit_test(test_file_sources),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
