/* The durability promise of the store: a change acknowledged by
 * store_commit survives kill -9 of the process at any instant.
 *
 * A child process opens the store and commits in a loop; after each commit
 * returns it writes the committed index and the record's number on a pipe.
 * The parent kills it with SIGKILL at a random moment (so most kills land
 * inside SQLite: mid-write, mid-fsync, mid-checkpoint), reads every
 * acknowledgement the child managed to send, reopens the store, and checks
 * that each acknowledged record is there with its index.  Repeated a few
 * rounds on the same file, so later rounds also recover from earlier kills. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_store_util.h"

struct ack {
	uint64_t index;
	uint64_t seq;
};

/* The child: never returns.  Writes records seq = first, first+1, ...; a
 * batch of two every third commit, so that batches are tested as well. */
static void writer(const char *path, int fd, uint64_t first)
{
	struct herd_err err = { 0 };
	struct store *s;
	char id[32];

	if (store_open_sqlite(path, &s, &err)) {
		fprintf(stderr, "crash writer: %s\n", err.msg);
		_exit(3);
	}
	for (uint64_t seq = first;; seq++) {
		struct store_batch b = STORE_BATCH_INIT;
		struct ack a = { 0, seq };
		snprintf(id, sizeof(id), "n%llu", (unsigned long long)seq);
		json_t *n = json_pack("{s:s, s:I, s:s}", "id", id, "seq", (json_int_t)seq,
				      "pad", "................................................");
		store_batch_put(&b, STORE_NODE, n);
		json_decref(n);
		if (seq % 3 == 0) {
			snprintf(id, sizeof(id), "a%llu", (unsigned long long)seq);
			json_t *al = json_pack("{s:s, s:s, s:s, s:s}", "id", id, "namespace", "d",
					       "job_id", "j", "node_id", "n1");
			store_batch_put(&b, STORE_ALLOC, al);
			json_decref(al);
		}
		if (store_commit(s, &b, &a.index, &err)) {
			fprintf(stderr, "crash writer: %s\n", err.msg);
			_exit(4);
		}
		store_batch_release(&b);
		if (write(fd, &a, sizeof(a)) != (ssize_t)sizeof(a))
			_exit(5);
	}
}

static void one_round(struct tmpstore *t, uint64_t *next_seq, unsigned *rng, int round)
{
	struct herd_err err = { 0 };
	struct ack *acks = NULL;
	size_t nacks = 0, cap = 0;
	int fds[2], status;
	pid_t pid;

	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		writer(t->path, fds[1], *next_seq);
	}
	close(fds[1]);
	/* wait for its first acknowledgement (a loaded machine may take a
	 * while to get there: no time limit), then let it commit on for
	 * 0..200 ms and kill it wherever it is */
	struct ack first;
	if (read(fds[0], &first, sizeof(first)) != (ssize_t)sizeof(first))
		fail_msg("round %d: the writer ended before acknowledging anything", round);
	cap = 1024;
	acks = malloc(cap * sizeof(*acks));
	acks[nacks++] = first;
	long delay_us = (long)(rand_r(rng) % 200000);
	struct timespec ts = { 0, delay_us * 1000 };
	nanosleep(&ts, NULL);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL))
		fail_msg("round %d: the writer ended on its own (status %d)", round, status);
	for (;;) {
		struct ack a;
		ssize_t n = read(fds[0], &a, sizeof(a));
		if (n == 0)
			break;
		assert_int_equal(n, sizeof(a));
		if (nacks == cap) {
			cap = cap ? cap * 2 : 1024;
			acks = realloc(acks, cap * sizeof(*acks));
		}
		acks[nacks++] = a;
	}
	close(fds[0]);

	print_message("round %d: killed %ld ms after the first ack, %zu commits acknowledged\n", round,
		      delay_us / 1000, nacks);
	/* reopen and check every acknowledged write */
	assert_int_equal(store_open_sqlite(t->path, &t->s, &err), 0);
	assert_true(store_index(t->s) >= acks[nacks - 1].index);
	for (size_t i = 0; i < nacks; i++) {
		char id[32];
		json_t *got;
		snprintf(id, sizeof(id), "n%llu", (unsigned long long)acks[i].seq);
		struct store_key k = { NULL, id, 0 };
		if (store_get(t->s, STORE_NODE, &k, &got, &err))
			fail_msg("round %d: acknowledged record %s (index %llu) is lost: %s",
				 round, id, (unsigned long long)acks[i].index, err.msg);
		assert_int_equal(json_integer_value(json_object_get(got, "seq")), acks[i].seq);
		assert_int_equal(json_integer_value(json_object_get(got, "modify_index")),
				 acks[i].index);
		json_decref(got);
		if (acks[i].seq % 3 == 0) {
			snprintf(id, sizeof(id), "a%llu", (unsigned long long)acks[i].seq);
			k.id = id;
			assert_int_equal(store_get(t->s, STORE_ALLOC, &k, &got, &err), 0);
			json_decref(got);
		}
	}
	/* a record past the last acknowledged one may exist (committed, killed
	 * before the ack); the next round starts after it */
	*next_seq = acks[nacks - 1].seq + 2;
	/* the store is usable after the crash */
	put_ok(t->s, STORE_NAMESPACE, json_pack("{s:s}", "name", "after-crash"));
	store_close(t->s);
	t->s = NULL;
	free(acks);
}

static void test_kill9_loses_no_acknowledged_write(void **state)
{
	struct tmpstore *t = *state;
	unsigned rng = (unsigned)time(NULL) ^ (unsigned)getpid();
	uint64_t next_seq = 1;

	store_close(t->s); /* no open connection across fork */
	t->s = NULL;
	print_message("crash test seed %u\n", rng);
	for (int round = 0; round < 5; round++)
		one_round(t, &next_seq, &rng, round);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_kill9_loses_no_acknowledged_write,
						tmpstore_setup, tmpstore_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
