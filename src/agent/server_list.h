/* server_list: the servers a client talks to (client { servers }), one of
 * them current.  Every thread of the client sends to the current one; a
 * thread whose request found no server there (no connection, a 5xx: a
 * server that stopped, or lost its leadership and is stopping) moves the
 * whole client on to the next in the list, round robin, so that the other
 * threads follow without failing on it themselves.  Once every server has
 * failed in a row (since the last answer), callers are told to back off
 * before they try again.
 *
 * Each move bumps the list's generation: a failure reported against an
 * older generation (another thread moved on meanwhile) moves nothing, so
 * threads that fail together on one dead server skip one server, not
 * several.  Thread-safe; library code (no logging: the caller says what
 * moved, from what server_list_failed returns). */
#ifndef HERD_AGENT_SERVER_LIST_H
#define HERD_AGENT_SERVER_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SERVER_ADDR_MAX 256

struct server_list;

/* A list of n >= 1 addresses ("host:port", copied; the first is current).
 * Free with server_list_free. */
struct server_list *server_list_new(const char *const *addrs, size_t n);
void server_list_free(struct server_list *l);   /* accepts NULL */

size_t server_list_size(const struct server_list *l);

/* The current server's address into buf (truncated to size); returns the
 * generation to report a failure or an answer against. */
uint64_t server_list_current(struct server_list *l, char *buf, size_t size);

/* What server_list_failed did. */
struct server_move {
	bool moved;                      /* the current server changed */
	char from[SERVER_ADDR_MAX];      /* when moved: the one that failed */
	char to[SERVER_ADDR_MAX];        /* when moved: the new current one */
	bool all_failed;                 /* every server failed since the last
					  * answer: back off before the next try */
	bool first_all_failed;           /* all_failed for the first time since
					  * the last answer (say so once) */
	bool in_outage;                  /* every server had failed already
					  * before this failure (the move is
					  * not news) */
};

/* A request to the server of generation gen got no usable answer.  When
 * gen is current, the next server becomes current (round robin; a list of
 * one stays where it is) and the failure counts toward all_failed; a
 * failure against an older generation changes nothing (*mv says so: not
 * moved, not all failed: try the current one at once).  mv may be NULL. */
void server_list_failed(struct server_list *l, uint64_t gen, struct server_move *mv);

/* The server of generation gen answered.  Returns true when that ended a
 * run of failures (every server had failed: the caller may say that the
 * servers are back).  An answer from an older generation counts too: a
 * server answered. */
bool server_list_answered(struct server_list *l, uint64_t gen);

#endif
