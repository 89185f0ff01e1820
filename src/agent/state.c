/* state: the client's local state, so that a restarted client finds its
 * allocations and tasks again.  One file per allocation,
 * <state_dir>/allocs/<id>.json:
 *
 *     {"alloc": <allocation as last seen>, "job": <its job version>, "done": bool,
 *      "tasks": {"<name>": {"state","failed","restarts","started_at",
 *                "finished_at","exit_code","events":[...],
 *                "window_start","window_restarts" (restart policy window),
 *                "handle": <driver state JSON text or null>}}}
 *
 * written by write-temp, fsync, rename: a crash leaves the old or the new
 * file, never half of one. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/client-int.h"
#include "common/xalloc.h"

int state_write_file(const char *path, const char *data, size_t len, struct herd_err *err)
{
	char *tmp = xasprintf("%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600), rc = 0;

	if (fd < 0) {
		rc = herd_errf(err, -errno, "cannot write %s: %s", tmp, strerror(errno));
		goto out;
	}
	while (len) {
		ssize_t n = write(fd, data, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = herd_errf(err, -errno, "cannot write %s: %s", tmp, strerror(errno));
			close(fd);
			unlink(tmp);
			goto out;
		}
		data += n;
		len -= (size_t)n;
	}
	if (fsync(fd) < 0) {
		rc = herd_errf(err, -errno, "cannot sync %s: %s", tmp, strerror(errno));
		close(fd);
		unlink(tmp);
		goto out;
	}
	close(fd);
	if (rename(tmp, path) < 0) {
		rc = herd_errf(err, -errno, "cannot rename %s: %s", tmp, strerror(errno));
		unlink(tmp);
	}
out:
	free(tmp);
	return rc;
}

static json_t *task_json(struct task_runner *tr)
{
	json_t *t = json_object();
	const struct driver_state *ds = tr->handle ? driver_handle_state(tr->handle) : NULL;

	json_object_set_new(t, "state", json_string(tr->state));
	json_object_set_new(t, "failed", json_boolean(tr->failed));
	json_object_set_new(t, "restarts", json_integer(tr->restarts));
	json_object_set_new(t, "started_at", json_integer(tr->started_at));
	json_object_set_new(t, "finished_at", json_integer(tr->finished_at));
	json_object_set_new(t, "exit_code", json_integer(tr->exit_code));
	json_object_set_new(t, "events", json_deep_copy(tr->events));
	json_object_set_new(t, "window_start", json_integer(tr->window_start));
	json_object_set_new(t, "window_restarts", json_integer(tr->window_restarts));
	if (ds) {
		char *s = driver_state_to_json(ds);
		json_object_set_new(t, "handle", json_string(s));
		free(s);
	} else {
		json_object_set_new(t, "handle", json_null());
	}
	return t;
}

/* Called with ar->lock held. */
int state_save_alloc(struct alloc_runner *ar, struct herd_err *err)
{
	const char *sd = ar->c->cfg->client.state_dir;
	char *dir = xasprintf("%s/allocs", sd);
	char *path = xasprintf("%s/%s.json", dir, ar->id);
	json_t *o = json_object(), *tasks = json_object();
	char *text;
	int rc;

	mkdir_p(dir, 0700);
	json_object_set(o, "alloc", ar->alloc);
	if (ar->job_json)
		json_object_set(o, "job", ar->job_json);
	json_object_set_new(o, "done", json_boolean(ar->done));
	for (size_t i = 0; i < ar->ntasks; i++)
		json_object_set_new(tasks, ar->tasks[i].task->name, task_json(&ar->tasks[i]));
	json_object_set_new(o, "tasks", tasks);
	text = json_dumps(o, JSON_COMPACT);
	rc = state_write_file(path, text, strlen(text), err);
	free(text);
	json_decref(o);
	free(path);
	free(dir);
	return rc;
}

json_t *state_load_allocs(const char *state_dir)
{
	char *dir = xasprintf("%s/allocs", state_dir);
	DIR *d = opendir(dir);
	json_t *out = json_array();
	struct dirent *e;

	if (!d) {
		free(dir);
		return out;
	}
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		char *path;
		json_t *o;
		if (len < 6 || strcmp(e->d_name + len - 5, ".json"))
			continue;
		path = xasprintf("%s/%s", dir, e->d_name);
		o = json_load_file(path, 0, NULL);
		if (o && json_is_object(json_object_get(o, "alloc")))
			json_array_append_new(out, o);
		else
			json_decref(o);
		free(path);
	}
	closedir(d);
	free(dir);
	return out;
}

void state_remove_alloc(const char *state_dir, const char *id)
{
	char *path = xasprintf("%s/allocs/%s.json", state_dir, id);
	unlink(path);
	free(path);
}
