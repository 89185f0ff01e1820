/* migrate_serve: see migrate_serve.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "agent/alloc_gc.h"
#include "agent/client_reply.h"
#include "agent/log.h"
#include "agent/migrate_serve.h"
#include "agent/migrate_tar.h"
#include "common/xalloc.h"

#define MIGRATE_MAX_TASKS 256

struct writer {
	int out, dirfd;
	char **tasks;
	size_t ntasks;
	char alloc[64];
	char *alloc_dir;
	bool queued; /* claimed from the collector while read (alloc_gc.h) */
};

static void writer_free(struct writer *w)
{
	if (w->out >= 0)
		close(w->out);
	if (w->dirfd >= 0)
		close(w->dirfd);
	for (size_t i = 0; i < w->ntasks; i++)
		free(w->tasks[i]);
	free(w->tasks);
	alloc_gc_unclaim(w->alloc_dir, w->alloc, w->queued);
	free(w->alloc_dir);
	free(w);
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct herd_err err = { 0, "" };

	/* a reader that went away (EPIPE) ends it as well */
	if (migrate_tar_write(w->out, w->dirfd, (const char *const *)w->tasks, w->ntasks, &err) < 0)
		log_warn("client: migrate of alloc %.8s: %s", w->alloc, err.msg);
	writer_free(w);
	return NULL;
}

/* The task dirs of the allocation directory: every directory but alloc/. */
static void list_tasks(struct writer *w)
{
	int fd = fcntl(w->dirfd, F_DUPFD_CLOEXEC, 0);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	w->tasks = xcalloc(MIGRATE_MAX_TASKS, sizeof(*w->tasks));
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d)) && w->ntasks < MIGRATE_MAX_TASKS) {
		struct stat st;
		if (e->d_name[0] == '.' || !strcmp(e->d_name, "alloc") ||
		    fstatat(w->dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue;
		w->tasks[w->ntasks++] = xstrdup(e->d_name);
	}
	closedir(d);
}

enum MHD_Result migrate_serve(struct MHD_Connection *conn, const char *alloc_dir,
			      const char *alloc)
{
	struct writer *w = xcalloc(1, sizeof(*w));
	struct MHD_Response *r;
	enum MHD_Result rc;
	pthread_attr_t attr;
	pthread_t t;
	int root, fds[2];

	w->out = w->dirfd = -1;
	snprintf(w->alloc, sizeof(w->alloc), "%s", alloc);
	w->alloc_dir = xstrdup(alloc_dir);
	/* not collected while it is read */
	w->queued = alloc_gc_claim_queued(alloc_dir, alloc);
	root = open(alloc_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root >= 0) {
		w->dirfd = openat(root, alloc, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(root);
	}
	if (w->dirfd < 0) {
		writer_free(w);
		return client_reply_error(conn, MHD_HTTP_NOT_FOUND, "not_found",
			     "no directory of this allocation on this node");
	}
	list_tasks(w);
	if (pipe2(fds, O_CLOEXEC) < 0) {
		writer_free(w);
		return client_reply_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", strerror(errno));
	}
	w->out = fds[1];
	r = MHD_create_response_from_pipe(fds[0]); /* owns fds[0] from now on */
	if (!r) {
		close(fds[0]);
		writer_free(w);
		return client_reply_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "no response");
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, writer_main, w) != 0) {
		pthread_attr_destroy(&attr);
		MHD_destroy_response(r);
		writer_free(w);
		return client_reply_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "no thread");
	}
	pthread_attr_destroy(&attr);
	MHD_add_response_header(r, "Content-Type", "application/x-tar");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	rc = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return rc;
}
