/* Unit tests of backups (store_snapshot, store_snapshot_inspect) and of
 * the data dir's lock (store_dir_lock). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store.h"
#include "test_store_util.h"

static void put_jobs(struct store *s, int n)
{
	for (int i = 0; i < n; i++) {
		char id[32];
		snprintf(id, sizeof(id), "job-%d", i);
		put_ok(s, STORE_JOB, json_pack("{s:s, s:s, s:i}", "namespace", "default", "id", id,
					       "version", 0));
	}
}

static void test_snapshot_is_the_store_at_one_index(void **state)
{
	struct tmpstore *t = *state;
	struct store_snapshot_info info;
	struct herd_err err = { 0 };
	char dest[4300];
	uint64_t idx;
	struct stat st;

	put_jobs(t->s, 5);
	put_ok(t->s, STORE_NODE, json_pack("{s:s, s:s}", "id", "n1", "name", "gpu-01"));
	assert_int_equal(store_read_index(t->s, &idx, &err), 0);
	snprintf(dest, sizeof(dest), "%s/copy.db", t->dir);
	assert_int_equal(store_snapshot(t->s, dest, &err), 0);
	assert_int_equal(stat(dest, &st), 0);
	assert_int_equal(st.st_mode & 077, 0); /* token hashes: owner only */

	/* changes after the copy are not in it */
	put_jobs(t->s, 7);
	assert_int_equal(store_snapshot_inspect(dest, &info, &err), 0);
	assert_int_equal(info.index, idx);
	assert_int_equal(info.schema_version, STORE_SCHEMA_VERSION);
	assert_int_equal(info.records[STORE_JOB], 5);
	assert_int_equal(info.records[STORE_NODE], 1);
	assert_int_equal(info.records[STORE_ALLOC], 0);

	/* the copy opens as a store of its own, with the same records */
	struct store *copy = NULL;
	json_t *got = NULL;
	struct store_key key = { "default", "job-4", 0 };
	assert_int_equal(store_open_sqlite(dest, &copy, &err), 0);
	assert_int_equal(store_get(copy, STORE_JOB, &key, &got, &err), 0);
	json_decref(got);
	key.id = "job-6";
	assert_int_equal(store_get(copy, STORE_JOB, &key, &got, &err), -ENOENT);
	store_close(copy);
}

static void test_snapshot_never_overwrites(void **state)
{
	struct tmpstore *t = *state;
	struct herd_err err = { 0 };
	char dest[4300];
	int fd;

	snprintf(dest, sizeof(dest), "%s/exists.db", t->dir);
	fd = open(dest, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "keep", 4), 4);
	close(fd);
	assert_int_equal(store_snapshot(t->s, dest, &err), -EEXIST);
	struct stat st;
	assert_int_equal(stat(dest, &st), 0);
	assert_int_equal(st.st_size, 4); /* untouched */
	/* a dest in a dir that does not exist: an error, nothing made */
	snprintf(dest, sizeof(dest), "%s/no/such/dir.db", t->dir);
	assert_int_equal(store_snapshot(t->s, dest, &err), -ENOENT);
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "we");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

static void test_inspect_refuses_what_is_not_a_good_store(void **state)
{
	struct tmpstore *t = *state;
	struct store_snapshot_info info;
	struct herd_err err = { 0 };
	char good[4300], bad[4300];

	put_jobs(t->s, 50);
	snprintf(good, sizeof(good), "%s/good.db", t->dir);
	assert_int_equal(store_snapshot(t->s, good, &err), 0);

	/* half of a good copy */
	FILE *f = fopen(good, "re");
	assert_non_null(f);
	char *buf = malloc(1 << 20);
	size_t n = fread(buf, 1, 1 << 20, f);
	fclose(f);
	assert_true(n > 8192);
	snprintf(bad, sizeof(bad), "%s/half.db", t->dir);
	write_file(bad, buf, n / 2);
	assert_true(store_snapshot_inspect(bad, &info, &err) < 0);
	assert_non_null(strstr(err.msg, "damaged"));

	/* one page overwritten in the middle */
	memset(buf + n / 2, 0x5a, 4096);
	write_file(bad, buf, n);
	assert_true(store_snapshot_inspect(bad, &info, &err) < 0);
	free(buf);

	/* not SQLite at all */
	write_file(bad, "job \"x\" {}\n", 11);
	assert_int_equal(store_snapshot_inspect(bad, &info, &err), -EINVAL);

	/* absent */
	snprintf(bad, sizeof(bad), "%s/absent.db", t->dir);
	assert_int_equal(store_snapshot_inspect(bad, &info, &err), -ENOENT);
	assert_int_equal(access(bad, F_OK), -1); /* inspecting made nothing */
}

static void test_dir_lock_is_exclusive_until_closed(void **state)
{
	struct tmpstore *t = *state;
	struct herd_err err = { 0 };
	char pid[32];
	int a = -1, b = -1;

	assert_int_equal(store_dir_lock(t->dir, &a, &err), 0);
	/* another open of the lock conflicts, in this process too */
	assert_int_equal(store_dir_lock(t->dir, &b, &err), -EBUSY);
	snprintf(pid, sizeof(pid), "(pid %ld)", (long)getpid());
	assert_non_null(strstr(err.msg, pid));
	assert_int_equal(b, -1);
	close(a);
	assert_int_equal(store_dir_lock(t->dir, &b, &err), 0);
	close(b);
	assert_int_equal(store_dir_lock("/nonexistent-herd-dir", &a, &err), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_snapshot_is_the_store_at_one_index,
						tmpstore_setup, tmpstore_teardown),
		cmocka_unit_test_setup_teardown(test_snapshot_never_overwrites, tmpstore_setup,
						tmpstore_teardown),
		cmocka_unit_test_setup_teardown(test_inspect_refuses_what_is_not_a_good_store,
						tmpstore_setup, tmpstore_teardown),
		cmocka_unit_test_setup_teardown(test_dir_lock_is_exclusive_until_closed,
						tmpstore_setup, tmpstore_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
