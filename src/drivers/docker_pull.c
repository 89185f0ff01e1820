/* docker_pull: images present before a container is created.  One pull per
 * image reference at a time in this process: tasks that need an image
 * being pulled wait for that pull's result instead of starting another. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/xalloc.h"
#include "common/units.h"
#include "drivers/docker-int.h"

#define PROGRESS_EVERY_NS (2LL * 1000000000LL)
#define DEFAULT_PULL_TIMEOUT_NS (5LL * 60 * 1000000000LL)
#define DEFAULT_ACTIVITY_NS (2LL * 60 * 1000000000LL)
#define LAYERS_MAX 128

struct pull {
	char *ref;
	bool done;
	int rc;
	struct herd_err err;
	int waiters;            /* tasks waiting on it besides the puller */
	struct pull *next;
};

static pthread_mutex_t pulls_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pulls_cond = PTHREAD_COND_INITIALIZER;
static struct pull *pulls;

/* Progress of one pull, from the engine's stream of JSON messages. */
struct progress {
	const char *ref;
	struct strbuf line;
	char error[400];
	struct { char id[72]; int64_t current, total; } layers[LAYERS_MAX];
	size_t nlayers;
	int64_t last_event_ns;
	docker_event_fn event;
	void *event_arg;
};

static void progress_message(struct progress *p, const json_t *m)
{
	const char *error = json_string_value(json_object_get(m, "error"));
	if (error) {
		snprintf(p->error, sizeof(p->error), "%s", error);
		return;
	}
	const char *id = json_string_value(json_object_get(m, "id"));
	const json_t *d = json_object_get(m, "progressDetail");
	const char *status = json_string_value(json_object_get(m, "status"));
	if (id && json_is_object(d) && json_object_get(d, "total")) {
		size_t i = 0;
		while (i < p->nlayers && strcmp(p->layers[i].id, id))
			i++;
		if (i == p->nlayers && p->nlayers < LAYERS_MAX)
			snprintf(p->layers[p->nlayers++].id, sizeof(p->layers[0].id), "%s", id);
		if (i < p->nlayers && status && !strcmp(status, "Downloading")) {
			p->layers[i].current = json_integer_value(json_object_get(d, "current"));
			p->layers[i].total = json_integer_value(json_object_get(d, "total"));
		}
	}
	int64_t now = mono_ns();
	if (!p->event || now - p->last_event_ns < PROGRESS_EVERY_NS)
		return;
	p->last_event_ns = now;
	int64_t cur = 0, total = 0;
	for (size_t i = 0; i < p->nlayers; i++) {
		cur += p->layers[i].current;
		total += p->layers[i].total;
	}
	char msg[300];
	snprintf(msg, sizeof(msg), "image %s: %lld of %lld MiB in %zu layers", p->ref,
		 (long long)(cur >> 20), (long long)(total >> 20), p->nlayers);
	p->event(p->event_arg, "Downloading Image", msg);
}

static int on_pull_data(void *arg, const char *data, size_t len)
{
	struct progress *p = arg;
	for (size_t i = 0; i < len; i++) {
		if (data[i] != '\n') {
			if (p->line.len < 1 << 20)
				strbuf_addch(&p->line, data[i]);
			continue;
		}
		json_t *m = json_loads(p->line.buf, 0, NULL);
		if (m)
			progress_message(p, m);
		json_decref(m);
		strbuf_reset(&p->line);
	}
	return 0;
}

/* Whether the reference names a tag or digest ("a/b:1", "a@sha256:..."),
 * not just a repository (whose pull would fetch every tag). */
static bool has_tag(const char *ref)
{
	const char *slash = strrchr(ref, '/');
	return strchr(ref, '@') || strchr(slash ? slash : ref, ':');
}

static int do_pull(struct docker_client *c, const char *image, const char *auth_header,
		   int64_t timeout_ns, int64_t activity_ns, docker_event_fn event, void *event_arg,
		   struct herd_err *err)
{
	struct strbuf path = STRBUF_INIT;
	struct progress p = { .ref = image, .line = STRBUF_INIT, .event = event,
			      .event_arg = event_arg, .last_event_ns = mono_ns() };
	strbuf_adds(&path, "/images/create?fromImage=");
	docker_query_escape(&path, image);
	if (!has_tag(image))
		strbuf_adds(&path, "&tag=latest");
	if (event) {
		char msg[300];
		snprintf(msg, sizeof(msg), "pulling image %s", image);
		event(event_arg, "Downloading Image", msg);
	}
	struct docker_req req = {
		.method = "POST", .path = path.buf, .header = auth_header,
		.timeout_ms = (timeout_ns > 0 ? timeout_ns : DEFAULT_PULL_TIMEOUT_NS) / 1000000,
		.idle_ms = (activity_ns > 0 ? activity_ns : DEFAULT_ACTIVITY_NS) / 1000000,
		.on_data = on_pull_data, .arg = &p,
	};
	struct strbuf resp = STRBUF_INIT;
	int rc = docker_call(c, &req, &resp, err);
	if (rc >= 0 && rc != 200) {
		/* An error before streaming began comes as an ordinary body,
		 * which on_data received line by line. */
		on_pull_data(&p, "\n", 1);
		rc = herd_errf(err, rc == 404 ? -ENOENT : rc == 401 || rc == 403 ? -EACCES : -EIO,
			       "pull %s: HTTP %d%s%s", image, rc, p.error[0] ? ": " : "", p.error);
	} else if (rc >= 0 && p.error[0]) {
		rc = herd_errf(err, -EIO, "pull %s: %s", image, p.error);
	} else if (rc >= 0) {
		rc = 0;
	} else {
		herd_err_prefix(err, "pull %s", image);
	}
	strbuf_release(&resp);
	strbuf_release(&path);
	strbuf_release(&p.line);
	return rc;
}

static int image_present(struct docker_client *c, const char *image, struct herd_err *err)
{
	char *path = xasprintf("/images/%s/json", image);
	struct docker_req req = { .method = "GET", .path = path };
	int rc = docker_call(c, &req, NULL, err);
	free(path);
	if (rc < 0)
		return rc;
	return rc == 200;
}

int docker_image_ensure(struct docker_client *c, const char *image, bool force,
			const char *auth_header, int64_t timeout_ns, int64_t activity_ns,
			docker_event_fn event, void *event_arg, struct herd_err *err)
{
	int rc;
	if (!force) {
		rc = image_present(c, image, err);
		if (rc != 0)
			return rc < 0 ? rc : 0;
	}
	pthread_mutex_lock(&pulls_lock);
	struct pull *p = pulls;
	while (p && strcmp(p->ref, image))
		p = p->next;
	if (p) {
		/* Someone else pulls it: wait for that one's result. */
		p->waiters++;
		pthread_mutex_unlock(&pulls_lock);
		if (event) {
			char msg[300];
			snprintf(msg, sizeof(msg), "waiting for the pull of %s started by another task",
				 image);
			event(event_arg, "Downloading Image", msg);
		}
		pthread_mutex_lock(&pulls_lock);
		while (!p->done)
			pthread_cond_wait(&pulls_cond, &pulls_lock);
		rc = p->rc;
		if (rc < 0 && err)
			*err = p->err;
		if (--p->waiters == 0) {
			free(p->ref);
			free(p);
		}
		pthread_mutex_unlock(&pulls_lock);
		return rc;
	}
	p = xcalloc(1, sizeof(*p));
	p->ref = xstrdup(image);
	p->next = pulls;
	pulls = p;
	pthread_mutex_unlock(&pulls_lock);

	struct herd_err perr = { 0, "" };
	rc = do_pull(c, image, auth_header, timeout_ns, activity_ns, event, event_arg, &perr);

	pthread_mutex_lock(&pulls_lock);
	for (struct pull **pp = &pulls; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	p->done = true;
	p->rc = rc;
	p->err = perr;
	pthread_cond_broadcast(&pulls_cond);
	if (p->waiters == 0) {
		free(p->ref);
		free(p);
	}
	pthread_mutex_unlock(&pulls_lock);
	if (rc < 0 && err)
		*err = perr;
	if (rc == 0 && event) {
		char msg[300];
		snprintf(msg, sizeof(msg), "image %s pulled", image);
		event(event_arg, "Downloaded Image", msg);
	}
	return rc;
}
