/* objects: small helpers on the control plane's JSON objects (ids, clocks,
 * tolerant field readers, allocation predicates). */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <uuid/uuid.h>

#include "server/server-int.h"
#include "spec/spec.h"

void new_id(char id[ID_LEN])
{
	uuid_t u;
	uuid_generate_random(u);
	uuid_unparse_lower(u, id);
}

int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

const char *jstr(const json_t *o, const char *key, const char *dflt)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : dflt;
}

int64_t jint(const json_t *o, const char *key, int64_t dflt)
{
	json_t *v = json_object_get(o, key);
	return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

bool jbool(const json_t *o, const char *key, bool dflt)
{
	json_t *v = json_object_get(o, key);
	return json_is_boolean(v) ? json_is_true(v) : dflt;
}

bool valid_id(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > STORE_MAX_KEY)
		return false;
	for (; *s; s++)
		if ((unsigned char)*s < 0x21 || (unsigned char)*s > 0x7e || *s == '/')
			return false;
	return true;
}

const char *req_namespace(const struct http_request *req)
{
	const char *ns = http_query(req, "namespace");
	return ns && *ns ? ns : "default";
}

bool alloc_client_terminal(const json_t *alloc)
{
	const char *c = jstr(alloc, "client_status", "pending");
	return !strcmp(c, "complete") || !strcmp(c, "failed") || !strcmp(c, "lost");
}

/* An allocation holds its node's resources until its client says it ended:
 * a stopped allocation whose task still runs keeps its GPU, so that no
 * device is ever used by two allocations at once. */
bool alloc_takes_capacity(const json_t *alloc)
{
	return !alloc_client_terminal(alloc);
}

/* The server's fields on a stored job, which the job decoder does not know. */
static const char *const server_job_fields[] = {
	"version", "stop", "status", "submit_time", "create_index", "modify_index",
	"job_modify_index", "parent_id", "payload", "deployment", "stable", NULL,
};

bool job_is_parameterized(const json_t *job)
{
	return json_is_object(json_object_get(job, "parameterized"));
}

bool job_is_parent(const json_t *job)
{
	return job_is_periodic(job) || job_is_parameterized(job);
}

struct job *job_from_stored(const json_t *stored)
{
	json_t *copy = json_copy((json_t *)stored);
	struct diag_list dl;
	struct job *job;

	for (int i = 0; server_job_fields[i]; i++)
		json_object_del(copy, server_job_fields[i]);
	job_stored_upgrade(copy);
	diag_list_init(&dl);
	job = job_from_json(copy, NULL, &dl);
	diag_list_release(&dl);
	json_decref(copy);
	return job;
}

int reply_store_error(struct http_response *resp, int rc, const char *what)
{
	if (rc == -ENOENT)
		return http_error(resp, 404, "not_found", "%s not found", what);
	return rc;
}

int reply_written(struct http_response *resp, uint64_t idx, json_t *body)
{
	resp->has_index = 1;
	resp->index = idx;
	http_reply(resp, 200, body ? body : json_pack("{s:I}", "index", (json_int_t)idx));
	return 0;
}
