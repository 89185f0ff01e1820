/* usage_ledger: the GPU-time of allocations that garbage collection is
 * about to delete, folded into per-hour ledger records (teams.h).
 *
 * Crash safety: usage_fold only queues writes into the caller's batch, and
 * gc.c commits those writes together with the deletion of the allocations
 * they account for, in one store transaction (SQLite, synchronous=FULL).  If
 * the process dies before that commit, neither happened: the allocations are
 * still stored and are counted from themselves, and the next collection
 * folds them.  If it dies after, both happened: the allocations are gone and
 * the ledger holds their time.  There is no state in between, so nothing is
 * lost and nothing is counted twice.  A second collector (the timer and
 * POST /v1/system/gc) that read the same ledger record fails its commit on
 * the record's modify_index and leaves the job for a later run. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/server-int.h"
#include "server/teams.h"

#define NS_PER_SEC 1000000000LL

int64_t usage_alloc_start(const json_t *al)
{
	return jint(al, "start_time", jint(al, "create_time", 0));
}

/* The end of the allocation's run: its end while the client has ended,
 * else `now` (it still runs). */
static int64_t alloc_end(const json_t *al, int64_t now)
{
	if (!alloc_client_terminal(al))
		return now;
	return jint(al, "end_time", jint(al, "modify_time", usage_alloc_start(al)));
}

double usage_alloc_gpu_seconds(const json_t *al, int64_t since, int64_t until, int64_t now)
{
	int64_t start = usage_alloc_start(al), end = alloc_end(al, now);
	int64_t milli = alloc_gpu_milli(al);
	if (start < since)
		start = since;
	if (end > until)
		end = until;
	if (end <= start || milli <= 0)
		return 0;
	return (double)milli / 1000.0 * (double)(end - start) / (double)NS_PER_SEC;
}

void usage_sum(const json_t *allocs, const json_t *ledger, int64_t since, int64_t until,
	       int64_t now, usage_sum_fn *fn, void *arg)
{
	json_t *al;
	size_t i;

	json_array_foreach(allocs, i, al) {
		int64_t start = usage_alloc_start(al);
		start -= start % USAGE_BUCKET_NS;
		fn(jstr(al, "namespace", "default"), jstr(al, "job_id", ""),
		   usage_alloc_gpu_seconds(al, since, until, now), start >= since && start < until,
		   arg);
	}
	json_array_foreach(ledger, i, al) {
		int64_t hour = jint(al, "version", 0) * NS_PER_SEC;
		if (hour < since || hour >= until)
			continue;
		fn(jstr(al, "namespace", "default"), jstr(al, "job_id", ""),
		   json_real_value(json_object_get(al, "gpu_seconds")), jint(al, "allocations", 0), arg);
	}
}

static int64_t bucket_of(int64_t t)
{
	int64_t b = t - t % USAGE_BUCKET_NS;
	return t < 0 && t % USAGE_BUCKET_NS ? b - USAGE_BUCKET_NS : b;
}

/* Adds seconds and allocations to the entry of hour `bucket` in sums
 * ({"<hour start, unix s>": [seconds, allocations]}). */
static void sum_add(json_t *sums, int64_t bucket, double seconds, int64_t allocs)
{
	char key[32];
	json_t *e;
	snprintf(key, sizeof(key), "%lld", (long long)(bucket / NS_PER_SEC));
	e = json_object_get(sums, key);
	if (!e) {
		e = json_pack("[f, I]", 0.0, (json_int_t)0);
		json_object_set_new(sums, key, e);
	}
	json_array_set_new(e, 0, json_real(json_real_value(json_array_get(e, 0)) + seconds));
	json_array_set_new(e, 1, json_integer(json_integer_value(json_array_get(e, 1)) + allocs));
}

int usage_fold(struct store *s, struct store_batch *b, const char *ns, const char *job_id,
	       const json_t *allocs, struct herd_err *err)
{
	json_t *sums = json_object(), *al, *e;
	const char *key;
	size_t i;
	int rc = 0;

	json_array_foreach(allocs, i, al) {
		/* an allocation whose client ended never changes its interval */
		int64_t start = usage_alloc_start(al), end = alloc_end(al, start);
		sum_add(sums, bucket_of(start), 0, 1);
		for (int64_t h = bucket_of(start); h < end; h += USAGE_BUCKET_NS) {
			double sec = usage_alloc_gpu_seconds(al, h, h + USAGE_BUCKET_NS, start);
			if (sec > 0)
				sum_add(sums, h, sec, 0);
		}
	}
	json_object_foreach(sums, key, e) {
		struct store_key k = { ns, job_id, strtoll(key, NULL, 10) };
		json_t *rec = NULL;
		double sec = json_real_value(json_array_get(e, 0));
		json_int_t n = json_integer_value(json_array_get(e, 1));
		uint64_t at = 0;
		rc = store_get(s, STORE_USAGE, &k, &rec, err);
		if (rc == 0) {
			at = (uint64_t)jint(rec, "modify_index", 0);
			sec += json_real_value(json_object_get(rec, "gpu_seconds"));
			n += jint(rec, "allocations", 0);
			json_decref(rec);
		} else if (rc != -ENOENT) {
			break;
		}
		rc = 0;
		store_batch_require_index(b, STORE_USAGE, &k, at);
		rec = json_pack("{s:s, s:s, s:I, s:f, s:I}", "namespace", ns, "job_id", job_id,
				"version", (json_int_t)k.version, "gpu_seconds", sec, "allocations", n);
		store_batch_put(b, STORE_USAGE, rec);
		json_decref(rec);
	}
	json_decref(sums);
	return rc;
}
