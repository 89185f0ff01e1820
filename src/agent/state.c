/* state: the client's local state store (state.h).
 *
 * Why one database and no fsync per change.  Each allocation's state
 * changes a few times in its life (received, running, each task's end,
 * done).  A file per allocation written by temp file + fsync + rename
 * created and deleted an inode per change and waited for the disk each
 * time: 14% of all CPU at a few hundred allocations a second.  Here a
 * change is one row written into a WAL that already exists.
 *
 * What the state is for: a client that comes back after its own process
 * ended (kill -9, a crash, an upgrade) finds the tasks it had started --
 * their driver handles (shim pid, shim state dir) -- and reattaches to
 * them instead of starting them again.  Against that, write() is enough:
 * once it returned, the data is in the kernel's page cache, which outlives
 * the process, and the next open of the database reads it (SQLite replays
 * the WAL).  An fsync would only add survival of a machine crash (kernel
 * panic, power loss); but a machine crash takes the tasks down with it,
 * shims and all, so the handles saved before it point at processes that
 * no longer exist.  The server is the authority then: it marks the node's
 * allocations lost when heartbeats stop and places them again, and a
 * restarted client reconciles with what the server says.  So a change
 * lost in a machine crash costs nothing that the server does not redo.
 *
 * synchronous=NORMAL rather than OFF keeps the database consistent after a
 * machine crash (WAL frames are synced before each checkpoint copies them
 * into the database; a crash loses at most the last commits, never
 * corrupts), so a client always starts.  Checkpoints happen every 1,000
 * pages of WAL: two fsyncs per few hundred changes instead of one per
 * change.
 *
 * locking_mode=EXCLUSIVE: the agent's connection takes the database's lock
 * once and keeps it, and the WAL's index lives in its memory instead of a
 * shared -shm file, so a transaction makes no lock calls (six fcntl each
 * before) and never re-reads what it has cached.  Only one agent may use a
 * state dir anyway.  Readers of the same process (the log API) read
 * through that connection (state_read_alloc); after the process ends, kill
 * -9 included, the kernel drops the lock and the next open rebuilds the
 * index from the WAL.
 *
 * A change of an allocation's task states updates its alloc_tasks row in
 * place (UPDATE, then INSERT when there is none): INSERT OR REPLACE
 * deleted the row and inserted it under a new rowid, rewriting the
 * table's and its key index's pages (9 WAL writes per change instead of
 * 2). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "agent/client-int.h"
#include "agent/state.h"
#include "common/xalloc.h"

struct state_store {
	sqlite3 *db;
	pthread_mutex_t lock;        /* the connection and its statements */
	sqlite3_stmt *put_spec;      /* an allocation's spec: once */
	sqlite3_stmt *upd_tasks;     /* its task states: at each change */
	sqlite3_stmt *put_tasks;     /* the first time */
	sqlite3_stmt *del_spec, *del_tasks;
	sqlite3_stmt *get_tasks;     /* state_read_alloc */
	sqlite3_stmt *get_spec;      /* state_read_alloc_spec */
	sqlite3_stmt *begin, *commit, *rollback;   /* state_write's, parsed once */
	dev_t dir_dev;               /* the state dir, for state_read_alloc */
	ino_t dir_ino;
	struct state_store *next;    /* in open_stores */
};

/* The stores this process has open, for state_read_alloc: a connection
 * of its own cannot read a database whose lock the store holds. */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static struct state_store *open_stores;

/* Two tables: what never changes (the allocation and its job, a few KiB:
 * overflow pages) apart from what does (done, the task states, a few
 * hundred bytes).  SQLite rewrites a whole record on any update, so in one
 * table each task change wrote the job's pages into the WAL again. */
static const char schema[] =
	"PRAGMA locking_mode=EXCLUSIVE;"   /* before the WAL is first used */
	"PRAGMA journal_mode=WAL;"
	"PRAGMA synchronous=NORMAL;"
	"CREATE TABLE IF NOT EXISTS alloc_specs ("
	" id TEXT PRIMARY KEY,"
	" alloc TEXT NOT NULL,"
	" job TEXT);"
	"CREATE TABLE IF NOT EXISTS alloc_tasks ("
	" id TEXT PRIMARY KEY,"
	" done INTEGER NOT NULL DEFAULT 0,"
	" tasks TEXT NOT NULL);";

/* What state_read_alloc and state_read_alloc_spec read. */
#define TASKS_SELECT "SELECT done, tasks FROM alloc_tasks WHERE id = ?"
#define SPEC_SELECT "SELECT alloc, job FROM alloc_specs WHERE id = ?"

/* The one-table layout of the clients before, moved over once. */
static const char migrate_v1[] =
	"BEGIN;"
	"INSERT OR REPLACE INTO alloc_specs(id, alloc, job) SELECT id, alloc, job FROM allocs;"
	"INSERT OR REPLACE INTO alloc_tasks(id, done, tasks) SELECT id, done, tasks FROM allocs;"
	"DROP TABLE allocs;"
	"COMMIT;";

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

static int db_err(sqlite3 *db, struct herd_err *err, const char *what)
{
	return herd_errf(err, -EIO, "state: %s: %s", what, sqlite3_errmsg(db));
}

/* Binds text (NULL binds NULL) that the statement copies. */
static void bind_text(sqlite3_stmt *st, int i, const char *text)
{
	if (text)
		sqlite3_bind_text(st, i, text, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, i);
}

/* Runs a statement that returns no rows, then resets it. */
static int step_done(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc == SQLITE_DONE ? 0 : -EIO;
}

static int put_row(struct state_store *s, const char *id, const char *alloc, const char *job,
		   bool done, const char *tasks)
{
	int rc = 0;

	if (alloc) {
		bind_text(s->put_spec, 1, id);
		bind_text(s->put_spec, 2, alloc);
		bind_text(s->put_spec, 3, job);
		rc = step_done(s->put_spec);
	}
	if (rc == 0) {
		bind_text(s->upd_tasks, 1, id);
		sqlite3_bind_int(s->upd_tasks, 2, done);
		bind_text(s->upd_tasks, 3, tasks);
		rc = step_done(s->upd_tasks);
	}
	if (rc == 0 && sqlite3_changes(s->db) == 0) {
		bind_text(s->put_tasks, 1, id);
		sqlite3_bind_int(s->put_tasks, 2, done);
		bind_text(s->put_tasks, 3, tasks);
		rc = step_done(s->put_tasks);
	}
	return rc;
}

static int remove_row(struct state_store *s, const char *id)
{
	int rc;

	bind_text(s->del_tasks, 1, id);
	rc = step_done(s->del_tasks);
	if (rc == 0) {
		bind_text(s->del_spec, 1, id);
		rc = step_done(s->del_spec);
	}
	return rc;
}

/* Moves the files of a client from before state.db into it, once: each
 * file is removed only after the transaction that holds its row. */
static void migrate_files(struct state_store *s, const char *state_dir)
{
	char *dir = xasprintf("%s/allocs", state_dir);
	DIR *d = opendir(dir);
	json_t *paths = json_array(), *p;
	struct dirent *e;
	bool failed = false;
	size_t i;

	if (!d)
		goto out;
	sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL);
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		char *path, *alloc, *job, *tasks;
		json_t *o;
		if (len < 6 || strcmp(e->d_name + len - 5, ".json"))
			continue;
		path = xasprintf("%s/%s", dir, e->d_name);
		o = json_load_file(path, 0, NULL);
		json_array_append_new(paths, json_string(path));
		free(path);
		if (!o || !json_is_object(json_object_get(o, "alloc"))) {
			json_decref(o);
			continue;
		}
		alloc = json_dumps(json_object_get(o, "alloc"), JSON_COMPACT);
		job = json_object_get(o, "job") ? json_dumps(json_object_get(o, "job"), JSON_COMPACT)
						: NULL;
		tasks = json_is_object(json_object_get(o, "tasks"))
				? json_dumps(json_object_get(o, "tasks"), JSON_COMPACT)
				: xstrdup("{}");
		const char *id = json_string_value(json_object_get(json_object_get(o, "alloc"), "id"));
		/* a row not written keeps every file: tried again at the
		 * next start, rather than losing that allocation's tasks */
		if (id && put_row(s, id, alloc, job, json_is_true(json_object_get(o, "done")),
				  tasks) < 0)
			failed = true;
		free(alloc);
		free(job);
		free(tasks);
		json_decref(o);
	}
	closedir(d);
	if (!failed && sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK) {
		json_array_foreach(paths, i, p)
			unlink(json_string_value(p));
		rmdir(dir);
	} else {
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	}
out:
	json_decref(paths);
	free(dir);
}

static bool table_exists(sqlite3 *db, const char *name)
{
	sqlite3_stmt *st = NULL;
	bool found = false;

	if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
			       -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
		found = sqlite3_step(st) == SQLITE_ROW;
	}
	sqlite3_finalize(st);
	return found;
}

int state_open(const char *state_dir, struct state_store **out, struct herd_err *err)
{
	struct state_store *s = xcalloc(1, sizeof(*s));
	char *path = xasprintf("%s/state.db", state_dir);
	int rc = 0;

	pthread_mutex_init(&s->lock, NULL);
	/* NOMUTEX: s->lock serializes the connection and its statements. */
	if (sqlite3_open_v2(path, &s->db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		rc = herd_errf(err, -EIO, "state: cannot open %s: %s", path,
			       s->db ? sqlite3_errmsg(s->db) : "out of memory");
		goto out;
	}
	sqlite3_busy_timeout(s->db, 5000);
	if (sqlite3_exec(s->db, schema, NULL, NULL, NULL) != SQLITE_OK) {
		if (sqlite3_errcode(s->db) == SQLITE_BUSY)
			rc = herd_errf(err, -EBUSY, "state: %s is locked by another process: "
				       "one agent per data dir", path);
		else
			rc = db_err(s->db, err, path);
		goto out;
	}
	if (table_exists(s->db, "allocs") && sqlite3_exec(s->db, migrate_v1, NULL, NULL, NULL) !=
						     SQLITE_OK) {
		rc = db_err(s->db, err, "moving allocs into alloc_specs and alloc_tasks");
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
		goto out;
	}
	if (sqlite3_prepare_v2(s->db,
			       "INSERT OR REPLACE INTO alloc_specs(id, alloc, job) VALUES (?, ?, ?)",
			       -1, &s->put_spec, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(s->db, "UPDATE alloc_tasks SET done = ?2, tasks = ?3 WHERE id = ?1",
			       -1, &s->upd_tasks, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(s->db,
			       "INSERT OR REPLACE INTO alloc_tasks(id, done, tasks) VALUES (?, ?, ?)",
			       -1, &s->put_tasks, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(s->db, TASKS_SELECT, -1, &s->get_tasks, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(s->db, SPEC_SELECT, -1, &s->get_spec, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(s->db, "BEGIN", -1, &s->begin, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(s->db, "COMMIT", -1, &s->commit, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(s->db, "ROLLBACK", -1, &s->rollback, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(s->db, "DELETE FROM alloc_specs WHERE id = ?", -1, &s->del_spec,
			       NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(s->db, "DELETE FROM alloc_tasks WHERE id = ?", -1, &s->del_tasks,
			       NULL) != SQLITE_OK) {
		rc = db_err(s->db, err, "prepare");
		goto out;
	}
	migrate_files(s, state_dir);
	struct stat st;
	if (stat(state_dir, &st) == 0) {
		s->dir_dev = st.st_dev;
		s->dir_ino = st.st_ino;
		pthread_mutex_lock(&open_lock);
		s->next = open_stores;
		open_stores = s;
		pthread_mutex_unlock(&open_lock);
	}
out:
	free(path);
	if (rc < 0)
		state_close(s);
	else
		*out = s;
	return rc;
}

void state_close(struct state_store *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&open_lock);
	for (struct state_store **p = &open_stores; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			break;
		}
	pthread_mutex_unlock(&open_lock);
	sqlite3_finalize(s->put_spec);
	sqlite3_finalize(s->upd_tasks);
	sqlite3_finalize(s->get_tasks);
	sqlite3_finalize(s->get_spec);
	sqlite3_finalize(s->begin);
	sqlite3_finalize(s->commit);
	sqlite3_finalize(s->rollback);
	sqlite3_finalize(s->put_tasks);
	sqlite3_finalize(s->del_spec);
	sqlite3_finalize(s->del_tasks);
	sqlite3_close(s->db);
	pthread_mutex_destroy(&s->lock);
	free(s);
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
	json_object_set_new(t, "events", json_incref(tr->events));
	json_object_set_new(t, "window_start", json_integer(tr->window_start));
	json_object_set_new(t, "window_restarts", json_integer(tr->window_restarts));
	if (tr->ar->group->time_limit > 0)
		time_limit_save(tr, t);
	shutdown_delay_save(tr, t);
	if (ds) {
		char *s = driver_state_to_json(ds);
		json_object_set_new(t, "handle", json_string(s));
		free(s);
	} else {
		json_object_set_new(t, "handle", json_null());
	}
	return t;
}

struct state_row *state_row_removal(const char *id)
{
	struct state_row *r = xcalloc(1, sizeof(*r));

	r->id = xstrdup(id);
	r->remove = true;
	return r;
}

struct state_row *state_row_of(struct alloc_runner *ar)
{
	struct state_row *r = xcalloc(1, sizeof(*r));
	json_t *tasks = json_object();

	for (size_t i = 0; i < ar->ntasks; i++)
		json_object_set_new(tasks, ar->tasks[i].task->name, task_json(&ar->tasks[i]));
	r->id = xstrdup(ar->id);
	r->done = ar->done;
	r->tasks = json_dumps(tasks, JSON_COMPACT);
	json_decref(tasks);
	if (!ar->state_saved) {
		/* alloc and job never change: written with the first row only */
		r->alloc = json_dumps(ar->alloc, JSON_COMPACT);
		r->job = ar->job_json ? json_dumps(ar->job_json, JSON_COMPACT) : NULL;
		ar->state_saved = true;
	}
	return r;
}

void state_row_merge(struct state_row *newer, struct state_row *older)
{
	/* a removal needs no spec; a row after a removal writes its own */
	if (!newer->alloc && !newer->remove && !older->remove) {
		newer->alloc = older->alloc;
		newer->job = older->job;
		older->alloc = older->job = NULL;
	}
	state_row_free(older);
}

void state_row_free(struct state_row *r)
{
	if (!r)
		return;
	free(r->id);
	free(r->alloc);
	free(r->job);
	free(r->tasks);
	free(r);
}

int state_write(struct state_store *s, struct state_row *const *rows, size_t n,
		struct herd_err *err)
{
	int rc = 0;

	if (!s)
		return herd_errf(err, -EBADF, "state: the store is not open");
	pthread_mutex_lock(&s->lock);
	if (step_done(s->begin) < 0) {
		rc = db_err(s->db, err, "begin");
		goto out;
	}
	for (size_t i = 0; i < n && rc == 0; i++)
		if ((rc = rows[i]->remove ? remove_row(s, rows[i]->id)
					  : put_row(s, rows[i]->id, rows[i]->alloc, rows[i]->job,
						    rows[i]->done, rows[i]->tasks)) < 0)
			db_err(s->db, err, rows[i]->id);
	if (rc == 0 && step_done(s->commit) < 0)
		rc = db_err(s->db, err, "commit");
	if (rc < 0 && !sqlite3_get_autocommit(s->db))
		step_done(s->rollback);
out:
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* A JSON column, parsed; NULL when NULL or not JSON. */
static json_t *column_json(sqlite3_stmt *st, int i)
{
	const char *text = (const char *)sqlite3_column_text(st, i);
	return text ? json_loads(text, 0, NULL) : NULL;
}

json_t *state_load_allocs(struct state_store *s)
{
	json_t *out = json_array();
	sqlite3_stmt *st = NULL;

	pthread_mutex_lock(&s->lock);
	if (sqlite3_prepare_v2(s->db, "SELECT s.alloc, s.job, t.done, t.tasks"
			       " FROM alloc_specs s LEFT JOIN alloc_tasks t USING (id)", -1, &st,
			       NULL) == SQLITE_OK) {
		while (sqlite3_step(st) == SQLITE_ROW) {
			json_t *alloc = column_json(st, 0), *o;
			if (!json_is_object(alloc)) {
				json_decref(alloc);
				continue;
			}
			o = json_pack("{s:o,s:b}", "alloc", alloc, "done", sqlite3_column_int(st, 2));
			json_object_set_new(o, "tasks", column_json(st, 3) ?: json_object());
			if (sqlite3_column_type(st, 1) != SQLITE_NULL)
				json_object_set_new(o, "job", column_json(st, 1) ?: json_null());
			json_array_append_new(out, o);
		}
	}
	sqlite3_finalize(st);
	pthread_mutex_unlock(&s->lock);
	return out;
}

/* The row of id as state_read_alloc answers it, from st (SELECT done,
 * tasks ... WHERE id = ?), which the caller resets. */
static json_t *read_tasks_row(sqlite3_stmt *st, const char *id)
{
	json_t *out = NULL;

	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW) {
		out = json_pack("{s:b}", "done", sqlite3_column_int(st, 0));
		json_object_set_new(out, "tasks", column_json(st, 1) ?: json_object());
	}
	return out;
}

/* The row of id as state_read_alloc_spec answers it, from st
 * (SPEC_SELECT), which the caller resets. */
static json_t *read_spec_row(sqlite3_stmt *st, const char *id)
{
	json_t *out = NULL, *alloc;

	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_ROW)
		return NULL;
	alloc = column_json(st, 0);
	if (!json_is_object(alloc)) {
		json_decref(alloc);   /* not an allocation: as if none */
		return NULL;
	}
	out = json_pack("{s:o}", "alloc", alloc);
	if (sqlite3_column_type(st, 1) != SQLITE_NULL)
		json_object_set_new(out, "job", column_json(st, 1) ?: json_null());
	return out;
}

/* Through the store this process has open on state_dir: true with *out
 * when there is one (spec: state_read_alloc_spec's row). */
static bool read_open_store(const char *state_dir, const char *id, bool spec, json_t **out)
{
	struct stat st;
	bool found = false;

	if (stat(state_dir, &st) < 0)
		return false;
	/* open_lock held throughout: the store is not closed under us */
	pthread_mutex_lock(&open_lock);
	for (struct state_store *s = open_stores; s && !found; s = s->next) {
		sqlite3_stmt *q = spec ? s->get_spec : s->get_tasks;
		if (s->dir_dev != st.st_dev || s->dir_ino != st.st_ino)
			continue;
		found = true;
		pthread_mutex_lock(&s->lock);
		*out = spec ? read_spec_row(q, id) : read_tasks_row(q, id);
		sqlite3_reset(q);
		sqlite3_clear_bindings(q);
		pthread_mutex_unlock(&s->lock);
	}
	pthread_mutex_unlock(&open_lock);
	return found;
}

static json_t *read_alloc(const char *state_dir, const char *id, bool spec)
{
	char *path;
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	json_t *out = NULL;

	if (read_open_store(state_dir, id, spec, &out))
		return out;
	path = xasprintf("%s/state.db", state_dir);
	/* No CREATE: a node without state has no allocation to read. */
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK)
		goto out;
	sqlite3_busy_timeout(db, 2000);
	if (sqlite3_prepare_v2(db, spec ? SPEC_SELECT : TASKS_SELECT, -1, &st, NULL) != SQLITE_OK)
		goto out;
	out = spec ? read_spec_row(st, id) : read_tasks_row(st, id);
out:
	sqlite3_finalize(st);
	sqlite3_close(db);
	free(path);
	return out;
}

json_t *state_read_alloc(const char *state_dir, const char *id)
{
	return read_alloc(state_dir, id, false);
}

json_t *state_read_alloc_spec(const char *state_dir, const char *id)
{
	return read_alloc(state_dir, id, true);
}
