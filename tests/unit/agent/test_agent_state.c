/* state: the client's state.db.  Rows written, updated in place and
 * removed in one transaction with other rows; what a process killed with
 * SIGKILL wrote is there for the next open; the store holds the
 * database's lock while open (another connection cannot read it), and
 * readers of the same process read through it (state_read_alloc,
 * state_read_alloc_spec). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "agent/state.h"
#include "common/xalloc.h"

static char dir[256];

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/herd-test-state-XXXXXX");
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int teardown(void **state)
{
	char *cmd = xasprintf("rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	return 0;
}

/* A row of allocation id: with its spec when first, tasks {"t": {"state"}}. */
static struct state_row *row(const char *id, bool first, bool done, const char *task_state)
{
	struct state_row *r = xcalloc(1, sizeof(*r));
	r->id = xstrdup(id);
	r->done = done;
	r->tasks = xasprintf("{\"t\":{\"state\":\"%s\"}}", task_state);
	if (first) {
		r->alloc = xasprintf("{\"id\":\"%s\",\"task_group\":\"g\"}", id);
		r->job = xstrdup("{\"id\":\"j\"}");
	}
	return r;
}

static void write_rows(struct state_store *s, struct state_row **rows, size_t n)
{
	struct herd_err err = { 0, "" };
	assert_int_equal(state_write(s, (struct state_row *const *)rows, n, &err), 0);
	for (size_t i = 0; i < n; i++)
		state_row_free(rows[i]);
}

/* The saved allocation id among state_load_allocs' answer, or NULL. */
static json_t *saved(json_t *all, const char *id)
{
	size_t i;
	json_t *o;
	json_array_foreach(all, i, o)
		if (!strcmp(json_string_value(json_object_get(json_object_get(o, "alloc"), "id")) ?: "",
			    id))
			return o;
	return NULL;
}

static const char *task_state(json_t *o)
{
	return json_string_value(json_object_get(json_object_get(json_object_get(o, "tasks"), "t"),
						 "state"));
}

static void test_rows_updated_and_removed_with_others(void **unused)
{
	struct herd_err err = { 0, "" };
	struct state_store *s;
	json_t *all, *r;

	assert_int_equal(state_open(dir, &s, &err), 0);
	write_rows(s, (struct state_row *[]){ row("a", true, false, "running"),
					      row("b", true, false, "pending") }, 2);
	/* an update in place, then a removal in the same transaction as
	 * another allocation's change */
	write_rows(s, (struct state_row *[]){ row("a", false, true, "dead") }, 1);
	all = state_load_allocs(s);
	assert_int_equal(json_array_size(all), 2);
	assert_string_equal(task_state(saved(all, "a")), "dead");
	assert_true(json_is_true(json_object_get(saved(all, "a"), "done")));
	assert_string_equal(json_string_value(json_object_get(json_object_get(saved(all, "a"), "job"),
							      "id")), "j");
	json_decref(all);
	write_rows(s, (struct state_row *[]){ row("b", false, false, "running"),
					      state_row_removal("a") }, 2);
	all = state_load_allocs(s);
	assert_int_equal(json_array_size(all), 1);
	assert_null(saved(all, "a"));
	assert_string_equal(task_state(saved(all, "b")), "running");
	json_decref(all);

	/* the log API's read, through the open store */
	r = state_read_alloc(dir, "b");
	assert_non_null(r);
	assert_string_equal(task_state(r), "running");
	json_decref(r);
	assert_null(state_read_alloc(dir, "a"));
	/* the spec (an action's command comes from its job) */
	r = state_read_alloc_spec(dir, "b");
	assert_non_null(r);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "alloc"),
							      "task_group")), "g");
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "job"), "id")),
			    "j");
	json_decref(r);
	assert_null(state_read_alloc_spec(dir, "a"));
	state_close(s);

	/* closed: read through a connection of its own */
	r = state_read_alloc(dir, "b");
	assert_non_null(r);
	assert_false(json_is_true(json_object_get(r, "done")));
	json_decref(r);
	r = state_read_alloc_spec(dir, "b");
	assert_non_null(r);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "job"), "id")),
			    "j");
	json_decref(r);
	assert_null(state_read_alloc_spec(dir, "a"));
}

/* A removal handed over after a row of the same allocation replaces it;
 * a row after a removal writes its spec again. */
static void test_merge_with_removal(void **unused)
{
	struct state_row *older = row("a", true, false, "running");
	struct state_row *newer = state_row_removal("a");

	state_row_merge(newer, older);
	assert_true(newer->remove);
	assert_null(newer->alloc);
	state_row_free(newer);

	older = state_row_removal("a");
	newer = row("a", true, false, "pending");
	state_row_merge(newer, older);
	assert_false(newer->remove);
	assert_non_null(newer->alloc);
	state_row_free(newer);
}

static void test_lock_held_while_open(void **unused)
{
	struct herd_err err = { 0, "" };
	struct state_store *s;
	sqlite3 *db = NULL;
	char *path = xasprintf("%s/state.db", dir);

	assert_int_equal(state_open(dir, &s, &err), 0);
	write_rows(s, (struct state_row *[]){ row("a", true, false, "running") }, 1);
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_not_equal(sqlite3_exec(db, "SELECT count(*) FROM alloc_tasks", NULL, NULL, NULL),
			     SQLITE_OK);
	sqlite3_close(db);
	state_close(s);
	/* released at close */
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "SELECT count(*) FROM alloc_tasks", NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(db);
	free(path);
}

/* What a process wrote before SIGKILL (no close, the WAL's index only in
 * its memory) is what the next open reads. */
static void test_kept_after_sigkill(void **unused)
{
	struct herd_err err = { 0, "" };
	struct state_store *s;
	int status;
	json_t *all;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		if (state_open(dir, &s, &err) < 0)
			_exit(1);
		struct state_row *rows[] = { row("a", true, false, "running"),
					     row("b", true, false, "running") };
		if (state_write(s, rows, 2, &err) < 0)
			_exit(1);
		struct state_row *more[] = { row("a", false, true, "dead"), state_row_removal("b") };
		if (state_write(s, more, 2, &err) < 0)
			_exit(1);
		kill(getpid(), SIGKILL);
		_exit(1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	assert_int_equal(state_open(dir, &s, &err), 0);
	all = state_load_allocs(s);
	assert_int_equal(json_array_size(all), 1);
	assert_string_equal(task_state(saved(all, "a")), "dead");
	assert_true(json_is_true(json_object_get(saved(all, "a"), "done")));
	json_decref(all);
	state_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rows_updated_and_removed_with_others, setup,
						teardown),
		cmocka_unit_test(test_merge_with_removal),
		cmocka_unit_test_setup_teardown(test_lock_held_while_open, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kept_after_sigkill, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
