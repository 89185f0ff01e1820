/* teams: the documents teams write (quota specifications, ACL policies)
 * and the arithmetic of GPU shares, shared by the server and the CLI.
 *
 * Pure: no I/O, no store.  The CLI reads HCL files with the *_from_hcl
 * functions (errors with line:col into a diag_list) and sends the JSON they
 * return; the server checks every JSON document it is sent with the
 * *_check functions, so a hand-written JSON body is held to the same rules.
 * docs/teams.md describes the documents. */
#ifndef HERD_SERVER_TEAMS_H
#define HERD_SERVER_TEAMS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "common/err.h"
#include "store/store.h"

#define TEAMS_MAX_NAME 128         /* namespace, quota, policy and token names */
#define TEAMS_MAX_DESCRIPTION 1024
#define TEAMS_MAX_DEVICE_LIMITS 32
#define TEAMS_MAX_RULES 256        /* namespace rules of one policy */
#define TEAMS_MAX_POLICIES 32      /* policies of one token */

/* ---- quota specifications ------------------------------------------------
 * {"name", "description", "borrow": bool, "borrow_limit": GPUs (0: no limit),
 *  "limits": [{"region": "global", "region_limit": {"cpu": MHz, "memory": MiB,
 *              "devices": [{"name": "nvidia/gpu[/<model>]", "count": GPUs}]}}]}
 * cpu and memory 0 (or absent) mean no limit; device counts may be
 * fractional (0.5 GPU). */

/* Reads a quota specification written in HCL (the format of docs/teams.md).
 * Returns the JSON document (new reference), or NULL with every error in dl
 * (positions 1-based). */
json_t *quota_spec_from_hcl(const char *text, size_t len, struct diag_list *dl);

/* Checks a JSON quota specification; on success returns a normalised copy
 * (defaults filled, unknown fields refused) as a new reference, else NULL
 * with err saying which field is wrong. */
json_t *quota_spec_check(const json_t *spec, struct herd_err *err);

/* The limit of the global region of spec: cpu (MHz) and memory (MiB),
 * 0 = none.  Device limits are read with quota_device_limit. */
void quota_cpu_mem_limit(const json_t *spec, int64_t *cpu, int64_t *memory);
/* The number of device limits of the global region, and the i-th as a name
 * (pointing into spec) and a count in thousandths of a GPU. */
size_t quota_device_limits(const json_t *spec);
const char *quota_device_limit(const json_t *spec, size_t i, int64_t *milli);
/* The limit on all GPUs ("nvidia/gpu", "gpu" or "nvidia"), in thousandths;
 * -1 when the spec has none. */
int64_t quota_gpu_limit(const json_t *spec);

/* Whether a device of group `group` ("nvidia/gpu/<model>") counts against
 * a limit named `name` ("gpu", "nvidia/gpu", "nvidia/gpu/<model>"). */
bool quota_name_matches(const char *name, const char *group);

/* ---- GPU shares ---------------------------------------------------------- */

/* How much of a GPU one device entry of an allocation takes, in thousandths:
 * a whole GPU 1000; a fraction its compute share (a 25% share is 250); a MIG
 * instance its compute slices out of seven ("3g.40gb" is 3/7 of a GPU,
 * 428).  Reads "gpu_milli" when the server wrote it, else derives it from
 * "whole", "compute_milli" and "mig_profile". */
int64_t alloc_device_gpu_milli(const json_t *dev);
/* The same for a device of a node (whole) with its mig_profile ("" none). */
int64_t mig_gpu_milli(const char *mig_profile);
/* Sum over an allocation's resources.devices. */
int64_t alloc_gpu_milli(const json_t *alloc);
/* Writes milli as a decimal ("4", "0.25", "1.5") into buf. */
const char *gpu_milli_format(int64_t milli, char *buf, size_t size);

/* ---- Usage ledger (usage_ledger.c) ----------------------------------------
 * GPU-time is the integral of an allocation's GPU share (alloc_gpu_milli /
 * 1000) over its run: from "start_time" (the placement's "create_time" when
 * no client said "running") to "end_time" ("modify_time" when absent) once
 * the client ended, else to now.  Garbage collection deletes allocations, so
 * before it does it folds their GPU-time into STORE_USAGE records, one per
 * (namespace, job, UTC hour):
 *   {"namespace", "job_id", "version": hour start in unix seconds,
 *    "gpu_seconds": GPU-seconds within the hour, "allocations": how many
 *    folded allocations started in the hour}
 * GET /v1/usage adds the ledger to the allocations still stored; both are
 * read in one store view and the fold deletes the allocations in the commit
 * that writes the ledger, so every allocation is counted exactly once. */

#define USAGE_BUCKET_NS 3600000000000LL /* one UTC hour */

/* GPU-seconds of one allocation within [since, until) (unix ns); an
 * allocation that still runs counts up to `now`. */
double usage_alloc_gpu_seconds(const json_t *alloc, int64_t since, int64_t until, int64_t now);
/* The start of the allocation's run (unix ns), as above. */
int64_t usage_alloc_start(const json_t *alloc);

/* What one allocation or ledger record adds to a job's GPU-time: seconds
 * within the window, and allocations counted (see usage_sum). */
typedef void usage_sum_fn(const char *ns, const char *job_id, double gpu_seconds,
			  int64_t allocations, void *arg);
/* GET /v1/usage's sum: calls fn for each of allocs (stored allocations)
 * with its GPU-seconds within [since, until) (one still running counts up
 * to now) and 1 allocation when the hour it started in lies in the window,
 * and for each record of ledger (STORE_USAGE records) whose hour lies in
 * the window with what it holds.  since and until are whole hours (unix
 * ns) for the ledger's sake; since 0 and until now sum everything. */
void usage_sum(const json_t *allocs, const json_t *ledger, int64_t since, int64_t until,
	       int64_t now, usage_sum_fn *fn, void *arg);

/* Adds the GPU-time of `allocs` (a JSON array of allocations whose client
 * ended, all of job (ns, job_id)) to the job's ledger records in batch b:
 * reads each record touched from s, queues a put of the sum and requires
 * that the record is still at the index read (absent: still absent), so
 * that two collectors racing cannot both add.  The caller deletes the
 * allocations in the same batch.  Returns 0, or -errno with err when a
 * record cannot be read. */
int usage_fold(struct store *s, struct store_batch *b, const char *ns, const char *job_id,
	       const json_t *allocs, struct herd_err *err);

/* ---- ACL policies ---------------------------------------------------------
 * Rules as JSON:
 *   {"namespace": {"<name or glob>": "deny|read|submit|admin"},
 *    "node": "deny|read|write", "quota": "deny|read|write",
 *    "agent": "deny|read|write"}
 * In HCL: namespace "team-a" { policy = "submit" }  node { policy = "read" }
 * quota { policy = "read" }  agent { policy = "write" }.
 * Variables (acl_vars.c): a namespace block may hold
 *   variables { path "db/..." { capabilities = ["read", "write", "list",
 *                                             "destroy", "deny"] } }
 * (its policy then optional), kept as JSON apart from the levels:
 *   {"variables": {"<namespace or glob>": {"<path or glob>": ["read", ...]}}} */

/* Reads a policy's rules written in HCL; NULL with errors in dl. */
json_t *acl_rules_from_hcl(const char *text, size_t len, struct diag_list *dl);
/* Checks rules given as JSON; returns a normalised copy or NULL with err. */
json_t *acl_rules_check(const json_t *rules, struct herd_err *err);

/* acl_vars.c: the variables block b of namespace ns (HCL) into
 * vars[ns][path] = capabilities; errors into dl. */
struct hcl_block;
void acl_vars_from_hcl(const struct hcl_block *b, const char *ns, json_t *vars,
		       struct diag_list *dl);
/* Checks rules.variables; returns a normalised copy or NULL with err. */
json_t *acl_vars_check(const json_t *vars, struct herd_err *err);
/* Capabilities (ACL_VAR_* bits, acl.h; 16 for deny) named in caps. */
unsigned acl_vars_caps(const json_t *caps);

/* Levels, ordered: a higher level includes the lower ones. */
enum acl_level { ACL_DENY = 0, ACL_READ = 1, ACL_SUBMIT = 2, ACL_WRITE = 2, ACL_ADMIN = 3 };
/* "deny", "read", "submit"/"write", "admin" -> level; -1 for anything else. */
int acl_level_parse(const char *s, bool namespace_rule);

/* Whether a name is acceptable for a namespace, quota, policy or token:
 * 1..TEAMS_MAX_NAME of [A-Za-z0-9_.-], not starting with '.' or '-'. */
bool teams_valid_name(const char *s);

#endif
