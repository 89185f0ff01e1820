/* server_fx: the fixture of the server tests: a real server (store, HTTP,
 * workers, heartbeat timer) on 127.0.0.1, an ephemeral port and a
 * temporary data dir, driven over HTTP with libcurl the way agents and the
 * CLI drive it.  Every helper asserts what it needs (cmocka), so a test
 * reads as the sequence of calls it makes. */
#ifndef HERD_TEST_SERVER_FX_H
#define HERD_TEST_SERVER_FX_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "server/server.h"

#define SEC 1000000000LL
#define MS 1000000LL

struct fx {
	char dir[64];
	struct server *srv;
	struct server_config cfg;
	char base[64];
	const char *token; /* sent as X-Herd-Token when set */
};

/* (Re)starts f->srv with f->cfg. */
void fx_start(struct fx *f);
/* A server with cfg's settings (data_dir is filled in, workers default to
 * 2); cfg may be NULL.  fx_free stops it and removes its data dir. */
struct fx *fx_new_cfg(const struct server_config *cfg);
struct fx *fx_new(void);
/* The teams tests' server: preemption of preempt_types, ACL on or off. */
struct fx *fx_new_teams(unsigned preempt_types, int acl);
void fx_free(struct fx *f);

/* One request; returns the parsed body (or NULL), the status and the
 * X-Herd-Index header (status and index may be NULL). */
json_t *fx_call_index(struct fx *f, const char *method, const char *path, const char *body,
		      long *status, long long *index);
json_t *fx_call(struct fx *f, const char *method, const char *path, const char *body, long *status);
/* A request that must answer 200; returns its body. */
json_t *fx_ok(struct fx *f, const char *method, const char *path, const char *body);
/* The status a request answers (the body is dropped). */
long fx_status(struct fx *f, const char *method, const char *path, const char *body);
/* Waits until the server has no evaluation left to do. */
void fx_idle(struct fx *f);

/* Registers node id with n GPUs of model (sharing "exclusive", "mps"),
 * GPU memory and kernel.name attributes, meta.rack = rack (NULL: "r0"). */
void fx_node(struct fx *f, const char *id, int n, const char *model, const char *sharing,
	     const char *rack);
/* A node with several devices of different models: models[i] for GPU i. */
void fx_node_models(struct fx *f, const char *id, const char *const *models, int n,
		    const char *sharing);
/* n GPUs of one model, without attributes or meta (the teams tests). */
void node_add_sharing(struct fx *f, const char *id, int n, const char *model, const char *sharing);
void node_add(struct fx *f, const char *id, int n, const char *model);

/* A job of one group "g" with one task "t"; device is the body of one
 * device block (NULL: none); group_extra is spliced into the group
 * (", \"reschedule\": {...}"), task_cmd is the task's command (NULL:
 * /bin/true).  Caller frees. */
char *fx_job(const char *id, const char *type, int count, const char *device,
	     const char *group_extra, const char *task_cmd);
/* Submits a job body; returns the eval id it answered (caller frees; "" for
 * an unchanged job). */
char *fx_submit_text(struct fx *f, const char *text);
/* Submits fx_job(...) and asserts it made an evaluation. */
void fx_submit(struct fx *f, const char *id, const char *type, int count, const char *device,
	       const char *group_extra);
/* GET fmt with arg in it, which must answer 200. */
json_t *fx_get(struct fx *f, const char *fmt, const char *arg);
json_t *fx_job_allocs(struct fx *f, const char *id);
/* The job's allocations whose desired status is "run" (a new array). */
json_t *fx_running(struct fx *f, const char *id);
/* The only desired-run allocation of a job (asserts there is one). */
json_t *fx_the_alloc(struct fx *f, const char *id);
const char *fx_s(const json_t *o, const char *key);
/* With ACL on: a policy named policy with rules (HCL-as-JSON object text)
 * and a token of it; returns the token's secret (caller frees). */
char *fx_token(struct fx *f, const char *policy, const char *rules);
long long fx_i(const json_t *o, const char *key);
/* Reports an allocation's client status as its agent would. */
void fx_alloc_status(struct fx *f, const json_t *alloc, const char *status);
/* The job's evaluations of status st (all when NULL; a new array). */
json_t *fx_evals(struct fx *f, const char *job, const char *st);
/* Waits (at most 10 s) until the job has n desired-run allocations. */
json_t *fx_wait_running(struct fx *f, const char *id, size_t n);
void fx_heartbeat(struct fx *f, const char *node);

/* The teams tests: a batch job of one group asking gpus whole GPUs in
 * namespace ns; a job's allocations that hold capacity (client pending or
 * running) and their count; every live allocation set to status; the
 * latest evaluation of a job. */
void submit_gpu(struct fx *f, const char *ns, const char *id, int gpus, int priority);
json_t *live_allocs(struct fx *f, const char *ns, const char *id);
size_t nlive(struct fx *f, const char *ns, const char *id);
void finish(struct fx *f, const char *ns, const char *id, const char *status);
json_t *last_eval(struct fx *f, const char *ns, const char *id);

/* main() running the tests between curl_global_init and _cleanup. */
#define fx_main(...)                                                           \
	int main(void)                                                         \
	{                                                                      \
		const struct CMUnitTest tests[] = { __VA_ARGS__ };             \
		int rc;                                                        \
		curl_global_init(CURL_GLOBAL_DEFAULT);                         \
		rc = cmocka_run_group_tests(tests, NULL, NULL);                \
		curl_global_cleanup();                                         \
		return rc;                                                     \
	}

#endif
