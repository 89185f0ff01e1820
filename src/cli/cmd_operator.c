/* herd operator snapshot save|inspect|restore: backups of the server's
 * state (docs/operations.md, "Backups and restore"); `herd operator
 * keyring` is cmd_keyring.c.
 *
 *   save FILE      GET /v1/operator/snapshot into FILE.part, checked
 *                  (store_snapshot_inspect), then renamed to FILE: a FILE
 *                  that exists is replaced only by a good copy.
 *   inspect FILE   what a snapshot holds: index, schema, records per kind.
 *   restore -data-dir DIR FILE
 *                  offline: puts FILE in place as DIR's state.db while no
 *                  server runs there (the data dir's lock, store_dir_lock).
 *                  The state.db it replaces is kept beside it, renamed
 *                  with its WAL, as a store of its own.
 *   restore -postgres CONNINFO FILE
 *                  into a PostgreSQL store, while no server holds its
 *                  leadership lock (store_restore_postgres); the state it
 *                  replaces is saved first as FILE.replaced-<time>. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli-api.h"
#include "cli/cli.h"
#include "common/strbuf.h"
#include "common/xalloc.h"
#include "store/store.h"

static size_t to_file(const char *p, size_t len, void *arg)
{
	return fwrite(p, 1, len, arg);
}

/* The snapshot's URL: on base, or on the leader when base is a standby
 * (GET /v1/status/leader names another server), as far as httpc's
 * redirect rules allow (the stream itself does not follow redirects). */
static char *snapshot_url(struct httpc *c)
{
	struct httpc_response r = { 0 };
	struct herd_err err = { 0, "" };
	char *url = xasprintf("%s/v1/operator/snapshot", c->base), *there, *next = NULL;
	const char *leader;
	bool with_token;

	if (httpc_request(c, "GET", "/v1/status/leader", NULL, &r, &err) == 0 &&
	    (leader = json_string_value(json_object_get(r.body, "leader"))) && *leader) {
		there = xasprintf("%s://%s/v1/operator/snapshot",
				  strncmp(c->base, "https://", 8) ? "http" : "https", leader);
		if (strcmp(there, url) && httpc_redirect_check(c, url, there, &next, &with_token,
							      &err) == 0) {
			free(url);
			url = next;
		}
		free(there);
	}
	httpc_response_release(&r);
	return url;
}

/* GET /v1/operator/snapshot into out; 0, or 1 with the reason printed. */
static int fetch_snapshot(const char *cmd, FILE *out)
{
	struct httpc c;
	char *url;
	int rc;

	httpc_init(&c, NULL);
	if (c.tls_err.code) {
		fprintf(stderr, "%s: %s\n", cmd, c.tls_err.msg);
		httpc_release(&c);
		return 1;
	}
	/* With several servers (HERD_ADDR="a,b"): the stream goes to the
	 * one that answers (httpc's failover picks it), or the leader that a
	 * standby names. */
	url = snapshot_url(&c);
	rc = cli_get_stream(cmd, c.base, url, &c.tls, to_file, out);
	if (rc == 2)
		fprintf(stderr, "%s: writing the snapshot: %s\n", cmd, strerror(errno));
	free(url);
	httpc_release(&c);
	return rc ? 1 : 0;
}

static void print_info(const char *file, const struct store_snapshot_info *info)
{
	printf("%-14s %s\n", "File", file);
	printf("%-14s %llu\n", "Index", (unsigned long long)info->index);
	printf("%-14s %d\n", "Schema", info->schema_version);
	for (int k = 0; k < STORE_KIND_COUNT; k++)
		printf("%-14s %llu\n", store_kind_name((enum store_kind)k),
		       (unsigned long long)info->records[k]);
}

static json_t *info_json(const char *file, const struct store_snapshot_info *info)
{
	json_t *records = json_object();

	for (int k = 0; k < STORE_KIND_COUNT; k++) {
		/* "job version" -> "job_version": keys a program can name */
		char key[64];
		snprintf(key, sizeof(key), "%s", store_kind_name((enum store_kind)k));
		for (char *c = key; *c; c++)
			if (*c == ' ')
				*c = '_';
		json_object_set_new(records, key, json_integer((json_int_t)info->records[k]));
	}
	return json_pack("{s:s,s:I,s:i,s:o}", "file", file, "index", (json_int_t)info->index,
			 "schema_version", info->schema_version, "records", records);
}

static int snapshot_save(int argc, char **argv)
{
	const struct flag flags[] = { { 0 } };
	const struct command_help help = {
		"herd operator snapshot save FILE",
		"Saves a consistent copy of the server's whole state (as of one index) to FILE, "
		"checked before FILE is written.  Needs a management token when ACL is on.", flags,
	};
	struct store_snapshot_info info;
	struct herd_err err = { 0 };
	char *pos[1];
	int rc = flags_parse_anywhere(&help, argc, argv, pos, 1);

	if (rc < 0)
		return rc == -1 ? 0 : EXIT_USAGE;
	if (rc != 1)
		return usage_error(argv[0], "expected FILE");
	char *part = xasprintf("%s.part", pos[0]);
	int fd = open(part, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!out) {
		fprintf(stderr, "%s: %s: %s\n", argv[0], part, strerror(errno));
		if (fd >= 0)
			close(fd);
		free(part);
		return 1;
	}
	rc = fetch_snapshot(argv[0], out);
	if (fflush(out) != 0 || fsync(fileno(out)) != 0) {
		if (!rc)
			fprintf(stderr, "%s: %s: %s\n", argv[0], part, strerror(errno));
		rc = 1;
	}
	fclose(out);
	if (!rc && store_snapshot_inspect(part, &info, &err) < 0) {
		fprintf(stderr, "%s: the copy received is not usable: %s\n", argv[0], err.msg);
		rc = 1;
	}
	if (!rc && rename(part, pos[0]) < 0) {
		fprintf(stderr, "%s: %s: %s\n", argv[0], pos[0], strerror(errno));
		rc = 1;
	}
	if (rc)
		unlink(part);
	else
		printf("Saved the state as of index %llu to %s\n", (unsigned long long)info.index,
		       pos[0]);
	free(part);
	return rc;
}

static int snapshot_inspect(int argc, char **argv)
{
	bool as_json = false;
	const struct flag flags[] = {
		{ "json", FLAG_BOOL, &as_json, "print JSON" },
		{ 0 },
	};
	const struct command_help help = {
		"herd operator snapshot inspect [-json] FILE",
		"Checks a snapshot (or a stopped server's state.db) and shows its index, schema "
		"version and how many records of each kind it holds.", flags,
	};
	struct store_snapshot_info info;
	struct herd_err err = { 0 };
	char *pos[1];
	int rc = flags_parse_anywhere(&help, argc, argv, pos, 1);

	if (rc < 0)
		return rc == -1 ? 0 : EXIT_USAGE;
	if (rc != 1)
		return usage_error(argv[0], "expected FILE");
	if (store_snapshot_inspect(pos[0], &info, &err) < 0) {
		fprintf(stderr, "%s: %s\n", argv[0], err.msg);
		return 1;
	}
	if (as_json) {
		json_t *j = info_json(pos[0], &info);
		api_print_json(j);
		json_decref(j);
	} else {
		print_info(pos[0], &info);
	}
	return 0;
}

/* Copies src into a new file dst (0600), synced; 0 or -errno. */
static int copy_file(const char *src, const char *dst)
{
	char buf[1 << 16];
	int in = open(src, O_RDONLY | O_CLOEXEC), out = -1, rc = 0;
	ssize_t n;

	if (in < 0)
		return -errno;
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0) {
		rc = -errno;
		goto out;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(out, buf + off, (size_t)(n - off));
			if (w < 0) {
				rc = -errno;
				goto out;
			}
			off += w;
		}
	if (n < 0 || fsync(out) < 0)
		rc = -errno;
out:
	close(in);
	if (out >= 0)
		close(out);
	if (rc)
		unlink(dst);
	return rc;
}

/* Moves DIR/state.db and its -wal and -shm aside as
 * state.db.replaced-<unix time> (with -wal, -shm: still one store). */
static int move_aside(const char *cmd, const char *db, char **kept)
{
	static const char *const suffixes[] = { "", "-wal", "-shm" };
	char *aside = xasprintf("%s.replaced-%lld", db, (long long)time(NULL));
	struct stat st;

	*kept = NULL;
	if (stat(db, &st) < 0) {
		free(aside);
		return errno == ENOENT ? 0 : -errno;
	}
	for (size_t i = 0; i < 3; i++) {
		char *from = xasprintf("%s%s", db, suffixes[i]);
		char *to = xasprintf("%s%s", aside, suffixes[i]);
		int r = rename(from, to);
		int e = errno;
		free(from);
		free(to);
		if (r < 0 && e != ENOENT) {
			fprintf(stderr, "%s: moving %s%s aside: %s\n", cmd, db, suffixes[i],
				strerror(e));
			free(aside);
			return -e;
		}
	}
	*kept = aside;
	return 0;
}

static int fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = fd >= 0 && fsync(fd) == 0 ? 0 : -errno;

	if (fd >= 0)
		close(fd);
	return rc;
}

/* restore -postgres: the whole of it is store_restore_postgres. */
static int restore_postgres(const char *cmd, const char *conninfo, const char *file)
{
	struct herd_err err = { 0 };
	char *keep = xasprintf("%s.replaced-%lld", file, (long long)time(NULL));
	uint64_t index = 0;
	int rc = store_restore_postgres(conninfo, file, keep, &index, &err);

	if (rc < 0)
		fprintf(stderr, "%s: %s%s\n", cmd, err.msg,
			rc == -EBUSY ? ": stop every server of that database first" : "");
	else
		printf("Restored the state as of index %llu into the PostgreSQL store\n"
		       "The state it replaced is kept as %s\n", (unsigned long long)index, keep);
	free(keep);
	return rc < 0 ? 1 : 0;
}

static int snapshot_restore(int argc, char **argv)
{
	const char *data_dir = NULL, *postgres = NULL;
	const struct flag flags[] = {
		{ "data-dir", FLAG_STRING, &data_dir,
		  "the server's data dir: the agent's data_dir/server, or server { data_dir }" },
		{ "postgres", FLAG_STRING, &postgres,
		  "instead of -data-dir: the PostgreSQL store's connection string (server { "
		  "postgres_url })" },
		{ 0 },
	};
	const struct command_help help = {
		"herd operator snapshot restore -data-dir DIR|-postgres CONNINFO FILE",
		"Puts a snapshot in place as the state of the server whose data dir is DIR, or of "
		"the servers of a PostgreSQL store.  The server(s) must be stopped; the state it had "
		"is kept (state.db.replaced-<time> in DIR; FILE.replaced-<time> for PostgreSQL).  "
		"Start them again afterwards: clients reconcile their allocations with the restored "
		"state.", flags,
	};
	struct store_snapshot_info info;
	struct herd_err err = { 0 };
	char *pos[1], *db = NULL, *tmp = NULL, *kept = NULL;
	int lock = -1;
	int rc = flags_parse_anywhere(&help, argc, argv, pos, 1);

	if (rc < 0)
		return rc == -1 ? 0 : EXIT_USAGE;
	if (rc != 1)
		return usage_error(argv[0], "expected FILE");
	if (postgres && data_dir)
		return usage_error(argv[0], "-data-dir and -postgres exclude each other");
	if (postgres && *postgres)
		return restore_postgres(argv[0], postgres, pos[0]);
	if (!data_dir || !*data_dir)
		return usage_error(argv[0], "-data-dir or -postgres is required");
	struct stat st;
	if (stat(data_dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "%s: %s is not a directory (the server's data dir)\n", argv[0],
			data_dir);
		return 1;
	}
	if (store_snapshot_inspect(pos[0], &info, &err) < 0 ||
	    store_dir_lock(data_dir, &lock, &err) < 0) {
		fprintf(stderr, "%s: %s%s\n", argv[0], err.msg,
			err.code == -EBUSY ? ": stop it first" : "");
		return 1;
	}
	db = xasprintf("%s/state.db", data_dir);
	tmp = xasprintf("%s/state.db.restoring", data_dir);
	unlink(tmp); /* a restore interrupted before */
	rc = copy_file(pos[0], tmp);
	if (rc < 0) {
		fprintf(stderr, "%s: copying %s to %s: %s\n", argv[0], pos[0], tmp, strerror(-rc));
		goto out;
	}
	if ((rc = move_aside(argv[0], db, &kept)) < 0)
		goto out;
	if (rename(tmp, db) < 0 || fsync_dir(data_dir) < 0) {
		rc = -errno;
		fprintf(stderr, "%s: %s: %s\n", argv[0], db, strerror(errno));
		goto out;
	}
	printf("Restored the state as of index %llu into %s\n", (unsigned long long)info.index,
	       db);
	if (kept)
		printf("The state it replaced is kept as %s\n", kept);
out:
	if (rc < 0)
		unlink(tmp);
	close(lock);
	free(db);
	free(tmp);
	free(kept);
	return rc < 0 ? 1 : 0;
}

static int cmd_snapshot(int argc, char **argv)
{
	static const struct subcommand cmds[] = {
		{ "save", snapshot_save, "save the server's state to a file" },
		{ "inspect", snapshot_inspect, "show what a snapshot holds" },
		{ "restore", snapshot_restore, "put a snapshot in place (server stopped)" },
		{ 0 },
	};
	return dispatch(argv[0], cmds, argc, argv);
}

int cmd_operator(int argc, char **argv)
{
	static const struct subcommand cmds[] = {
		{ "snapshot", cmd_snapshot, "save, inspect and restore backups of the state" },
		{ "keyring", cmd_keyring, "list and rotate the keys variables are sealed with" },
		{ 0 },
	};
	return dispatch(argv[0], cmds, argc, argv);
}
