/* postgres_conn.c: the PostgreSQL backend's connections (the committing
 * one and the pool of readers), errors, and prepared statements
 * (postgres-int.h; postgres.c says how the backend works). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/strbuf.h"
#include "common/xalloc.h"
#include "store/postgres-int.h"

_Thread_local struct pg_conn *pg_thread_conn;
_Thread_local struct pg_store *pg_thread_store;

/* libpq's message, one line (its messages end in newlines). */
void pg_one_line(char *buf, size_t size, const char *msg)
{
	size_t n = 0;
	for (const char *p = msg ? msg : ""; *p && n + 1 < size; p++)
		buf[n++] = (*p == '\n' || *p == '\r') ? ' ' : *p;
	while (n > 0 && buf[n - 1] == ' ')
		n--;
	buf[n] = '\0';
}

/* The error of a failed command on c: -ENOTCONN when the connection is
 * gone (and, for w, the store fenced), else by SQLSTATE. */
int pg_err(struct pg_store *ps, struct pg_conn *c, const PGresult *res, const char *what,
		  struct herd_err *err)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	char msg[400];
	int e = -EIO;

	pg_one_line(msg, sizeof(msg),
		 res && *PQresultErrorMessage(res) ? PQresultErrorMessage(res)
						   : PQerrorMessage(c->db));
	if (PQstatus(c->db) != CONNECTION_OK || (state && !strncmp(state, "08", 2)) ||
	    (state && !strncmp(state, "57P", 3))) {
		e = -ENOTCONN;
		if (c == &ps->w)
			pg_fence(ps, msg);
	} else if (state && (!strcmp(state, "40001") || !strcmp(state, "40P01") ||
			     !strcmp(state, "55P03"))) {
		e = -EBUSY;
	} else if (state && !strcmp(state, "53100")) {
		e = -ENOSPC;
	} else if (state && !strcmp(state, "42501")) {
		e = -EACCES;
	}
	return herd_errf(err, e, "store: %s: %s", what, msg);
}

/* Prepares statement n ("s<n>") on c once, from sql. */
int pg_prepare(struct pg_store *ps, struct pg_conn *c, int n, const char *what,
			const char *sql, int nparams, const Oid *types, struct herd_err *err)
{
	char name[16];
	PGresult *res;
	int rc = 0;

	if (c->prepared[n])
		return 0;
	snprintf(name, sizeof(name), "s%d", n);
	res = PQprepare(c->db, name, sql, nparams, types);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		rc = pg_err(ps, c, res, what, err);
	else
		c->prepared[n] = true;
	PQclear(res);
	return rc;
}

/* Runs statement n on c with params (text), preparing it on first use from
 * sql.  On success *out is the result (PQclear it). */
int pg_run(struct pg_store *ps, struct pg_conn *c, int n, const char *what,
		    const char *sql, int nparams, const Oid *types, const char *const *values,
		    PGresult **out, struct herd_err *err)
{
	char name[16];
	PGresult *res;
	ExecStatusType st;
	int rc;

	if ((rc = pg_prepare(ps, c, n, what, sql, nparams, types, err)))
		return rc;
	snprintf(name, sizeof(name), "s%d", n);
	res = PQexecPrepared(c->db, name, nparams, values, NULL, NULL, 0);
	st = PQresultStatus(res);
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		rc = pg_err(ps, c, res, what, err);
		PQclear(res);
		return rc;
	}
	*out = res;
	return 0;
}

void pg_kparams_key(struct kparams *p, const struct store_key *key)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->version, sizeof(p->version), "%lld", (long long)key->version);
	p->v[KP_ID] = key->id;
	p->v[KP_NS] = key->ns;
	p->v[KP_VERSION] = p->version;
}

void pg_kparams_int(struct kparams *p, int which, char *buf, size_t size, uint64_t v)
{
	snprintf(buf, size, "%llu", (unsigned long long)v);
	p->v[which] = buf;
}

uint64_t pg_value_u64(const PGresult *res, int row, int col)
{
	return PQgetisnull(res, row, col) ? 0
					  : (uint64_t)strtoull(PQgetvalue(res, row, col), NULL, 10);
}

/* Runs a statement without parameters nor prepared form (transaction
 * control). */
int pg_exec(struct pg_store *ps, struct pg_conn *c, const char *sql, struct herd_err *err)
{
	PGresult *res = PQexec(c->db, sql);
	int rc = 0;
	if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK)
		rc = pg_err(ps, c, res, sql, err);
	PQclear(res);
	return rc;
}

/* --- connections ------------------------------------------------------ */

/* Connects to conninfo.  The defaults here come before conninfo, which may
 * override them: libpq's keepalives and tcp_user_timeout find a silent
 * network in about ten seconds rather than the kernel's two hours.
 * client_encoding comes after: bodies are UTF-8. */
int pg_conn_open(const char *conninfo, bool reader, struct pg_conn *c, struct herd_err *err)
{
	static const char *const keys[] = { "connect_timeout", "keepalives", "keepalives_idle",
					    "keepalives_interval", "keepalives_count",
					    "tcp_user_timeout", "application_name", "dbname",
					    "client_encoding", NULL };
	const char *values[] = { "10", "1", "5", "2", "3", "10000", "herd", conninfo, "UTF8",
				 NULL };
	char msg[400];
	const char *enc;
	int fd, flags, rc;

	memset(c, 0, sizeof(*c));
	c->db = PQconnectdbParams(keys, values, 1);
	if (!c->db)
		return herd_errf(err, -ENOMEM, "store: out of memory connecting to PostgreSQL");
	/* First thing, before any other call can give a spawn time to
	 * inherit it (the file comment says why). */
	fd = PQsocket(c->db);
	if (fd >= 0 && ((flags = fcntl(fd, F_GETFD)) < 0 ||
			fcntl(fd, F_SETFD, flags | FD_CLOEXEC) < 0)) {
		rc = herd_errf(err, -errno, "store: setting close-on-exec on the PostgreSQL socket: %s",
			       strerror(errno));
		goto fail;
	}
	if (PQstatus(c->db) != CONNECTION_OK) {
		pg_one_line(msg, sizeof(msg), PQerrorMessage(c->db));
		rc = herd_errf(err, -ECONNREFUSED, "store: cannot connect to PostgreSQL: %s", msg);
		goto fail;
	}
	enc = PQparameterStatus(c->db, "server_encoding");
	if (!enc || (strcmp(enc, "UTF8") && strcmp(enc, "SQL_ASCII"))) {
		rc = herd_errf(err, -EINVAL,
			       "store: the PostgreSQL database has encoding %s; herd needs UTF8 "
			       "(CREATE DATABASE ... ENCODING 'UTF8')", enc ? enc : "(unknown)");
		goto fail;
	}
	/* w: durability is PostgreSQL's (file comment), and keepalives on the
	 * database's side too: the lock lives as long as PostgreSQL thinks
	 * w's session does, and a leader whose machine vanished (no reset
	 * ever arrives) would otherwise hold it until the server's kernel
	 * defaults give up, over two hours; with these a standby takes over
	 * within about 11 s (idle 5 s + 3 probes 2 s apart; tcp_user_timeout
	 * for unacknowledged data).  On a unix socket they are no-ops.
	 * Readers: read only.  Both: no idle_session_timeout (PostgreSQL
	 * 14+), which would end a reader resting in the pool, or w between
	 * the monitor's checks. */
	PGresult *res = PQexec(c->db, reader
		? "SET default_transaction_read_only = on;"
		  " SELECT set_config('idle_session_timeout', '0', false) FROM pg_settings"
		  " WHERE name = 'idle_session_timeout'"
		: "SET synchronous_commit = on; SET tcp_keepalives_idle = 5;"
		  " SET tcp_keepalives_interval = 2; SET tcp_keepalives_count = 3;"
		  " SET tcp_user_timeout = 10000;"
		  " SELECT set_config('idle_session_timeout', '0', false) FROM pg_settings"
		  " WHERE name = 'idle_session_timeout'");
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		pg_one_line(msg, sizeof(msg), PQerrorMessage(c->db));
		PQclear(res);
		rc = herd_errf(err, -EIO, "store: configuring the PostgreSQL session: %s", msg);
		goto fail;
	}
	PQclear(res);
	return 0;
fail:
	PQfinish(c->db);
	c->db = NULL;
	return rc;
}

void pg_conn_close(struct pg_conn *c)
{
	if (c->db)
		PQfinish(c->db);
	memset(c, 0, sizeof(*c));
}

/* Whether an idle reader is still good: anything that arrived while it
 * rested says it is not (its session was ended: a FATAL message, then
 * EOF; a server's notice to an idle session is rare enough to cost a new
 * connection).  One poll, no round trip; a reader lost without a word
 * fails its next read once, and is replaced after it (pg_conn_put). */
static bool idle_reader_ok(struct pg_conn *c)
{
	struct pollfd p = { PQsocket(c->db), POLLIN, 0 };
	return PQstatus(c->db) == CONNECTION_OK && poll(&p, 1, 0) == 0;
}

/* See sqlite.c's pg_conn_get: this thread's transaction's connection, else
 * an idle reader, else a new one (up to PG_READERS_MAX), else wait. */
struct pg_conn *pg_conn_get(struct pg_store *ps, struct herd_err *err)
{
	struct pg_conn *c;
	int rc;
	if (pg_thread_store == ps && pg_thread_conn) {
		if (pg_thread_conn == &ps->w)
			pthread_mutex_lock(&ps->lock); /* held: recursive */
		return pg_thread_conn;
	}
	pthread_mutex_lock(&ps->r_lock);
	for (;;) {
		while (!ps->r_idle && ps->r_open >= PG_READERS_MAX)
			pthread_cond_wait(&ps->r_free, &ps->r_lock);
		c = ps->r_idle;
		if (!c)
			break;
		ps->r_idle = c->next;
		if (idle_reader_ok(c)) {
			pthread_mutex_unlock(&ps->r_lock);
			return c;
		}
		/* the database restarted, or the session was ended */
		pg_conn_close(c);
		free(c);
		ps->r_open--;
	}
	ps->r_open++;
	pthread_mutex_unlock(&ps->r_lock);
	c = xcalloc(1, sizeof(*c));
	if ((rc = pg_conn_open(ps->conninfo, true, c, err))) {
		free(c);
		pthread_mutex_lock(&ps->r_lock);
		ps->r_open--;
		pthread_cond_signal(&ps->r_free);
		pthread_mutex_unlock(&ps->r_lock);
		return NULL;
	}
	return c;
}

void pg_conn_put(struct pg_store *ps, struct pg_conn *c)
{
	if (c == &ps->w) {
		pthread_mutex_unlock(&ps->lock);
		return;
	}
	if (pg_thread_store == ps && pg_thread_conn == c)
		return; /* the view's: it gives it back when it ends */
	pthread_mutex_lock(&ps->r_lock);
	if (PQstatus(c->db) != CONNECTION_OK) {
		/* broken (the database restarted): a new one next time */
		pg_conn_close(c);
		free(c);
		ps->r_open--;
	} else {
		c->next = ps->r_idle;
		ps->r_idle = c;
	}
	pthread_cond_signal(&ps->r_free);
	pthread_mutex_unlock(&ps->r_lock);
}

void pg_close_readers(struct pg_store *ps)
{
	while (ps->r_idle) {
		struct pg_conn *c = ps->r_idle;
		ps->r_idle = c->next;
		pg_conn_close(c);
		free(c);
	}
}

