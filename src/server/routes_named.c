/* routes_named: the handler steps of the team routes (namespaces, quotas,
 * ACL policies and tokens), whose records are stored under a name: list,
 * read, write and delete, each answered the same way. */
#include <errno.h>
#include <string.h>

#include "server/server-int.h"
#include "server/teams.h"

int named_reply_list(struct server *srv, enum store_kind kind, struct http_request *req,
		     struct http_response *resp, json_t *(*pick)(struct http_request *req, json_t *rec))
{
	json_t *list = NULL, *out, *x;
	size_t i;
	int rc = store_list(srv->store, kind, NULL, &list, NULL);

	if (rc < 0)
		return rc;
	if (!pick) {
		http_reply(resp, 200, list);
		return 0;
	}
	out = json_array();
	json_array_foreach(list, i, x) {
		json_t *v = pick(req, x);
		if (v)
			json_array_append_new(out, v);
	}
	json_decref(list);
	http_reply(resp, 200, out);
	return 0;
}

/* The 404 of a named record: "<what>_not_found", "no <what> NAME". */
static int reply_not_found(struct http_response *resp, const char *what, const char *name)
{
	char code[64];

	snprintf(code, sizeof(code), "%s_not_found", what);
	return http_error(resp, 404, code, "no %s %.128s", what, name);
}

int named_get(struct server *srv, enum store_kind kind, const char *what, const char *name,
	      struct http_response *resp, json_t **out)
{
	struct store_key k = { NULL, name, 0 };
	int rc;

	if (!teams_valid_name(name))
		return reply_not_found(resp, what, name), 1;
	rc = store_get(srv->store, kind, &k, out, NULL);
	if (rc == -ENOENT)
		return reply_not_found(resp, what, name), 1;
	return rc;
}

int named_reply_get(struct server *srv, enum store_kind kind, const char *what, const char *name,
		    struct http_response *resp)
{
	json_t *rec = NULL;
	int rc = named_get(srv, kind, what, name, resp, &rec);

	if (rc)
		return rc > 0 ? 0 : rc;
	http_reply(resp, 200, rec);
	return 0;
}

int named_put(struct server *srv, enum store_kind kind, const char *what, json_t *rec,
	      struct http_response *resp)
{
	uint64_t idx = 0;
	int rc = store_put(srv->store, kind, rec, &idx, NULL);

	if (rc == 0)
		reply_written(resp, idx, json_pack("{s:O, s:I}", what, rec, "index", (json_int_t)idx));
	return rc;
}

int named_delete(struct server *srv, enum store_kind kind, const char *what, const char *name,
		 struct http_response *resp)
{
	struct store_key k = { NULL, name, 0 };
	uint64_t idx = 0;
	int rc;

	if (!teams_valid_name(name))
		return reply_not_found(resp, what, name);
	rc = store_delete(srv->store, kind, &k, &idx, NULL);
	if (rc == -ENOENT)
		return reply_not_found(resp, what, name);
	if (rc < 0)
		return rc;
	return reply_written(resp, idx, NULL);
}
