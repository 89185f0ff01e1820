/* migrate_fetch: see migrate_fetch.h. */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/alloc_gc.h"
#include "agent/client-int.h"
#include "agent/config.h"
#include "agent/migrate_fetch.h"
#include "agent/migrate_tar.h"
#include "agent/sticky_disk.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#define POLL_NS (500 * 1000000LL)
#define MAX_ERROR_BODY 4096

/* GET path from the client's server; the answer's JSON, or NULL with err. */
static json_t *server_get(struct client *c, const char *path, struct herd_err *err)
{
	struct httpc h;
	struct httpc_response resp = { 0 };
	json_t *body = NULL;

	client_httpc_take(c, &h);
	h.timeout_ms = 10000;
	if (httpc_request(&h, "GET", path, NULL, &resp, err) == 0)
		body = json_incref(resp.body);
	httpc_response_release(&resp);
	client_httpc_give(c, &h);
	return body;
}

static bool terminal(const char *status)
{
	return !strcmp(status, "complete") || !strcmp(status, "failed") || !strcmp(status, "lost");
}

static bool stopped(struct alloc_runner *ar)
{
	bool s;
	pthread_mutex_lock(&ar->lock);
	s = ar->stop_requested;
	pthread_mutex_unlock(&ar->lock);
	return s;
}

/* The previous allocation once it ended (its tasks stopped: nothing
 * writes its data any more), as the server has it; NULL with msg when the
 * server cannot tell, *gone when this runner or client stops meanwhile. */
static json_t *wait_ended(struct alloc_runner *ar, const char *prev, char *msg, size_t len,
			  bool *gone)
{
	char *e = httpc_escape(prev), *path = xasprintf("/v1/allocation/%s", e);
	json_t *a = NULL;

	free(e);
	*gone = false;
	for (;;) {
		struct herd_err err = { 0, "" };
		a = server_get(ar->c, path, &err);
		if (!a) {
			snprintf(msg, len, "cannot read allocation %.8s: %s", prev, err.msg);
			break;
		}
		if (terminal(json_string_value(json_object_get(a, "client_status")) ?: ""))
			break;
		json_decref(a);
		a = NULL;
		if (stopped(ar) || client_sleep(ar->c, POLL_NS)) {
			*gone = true;
			break;
		}
	}
	free(path);
	return a;
}

struct transfer {
	CURL *curl;
	struct migrate_untar *untar;
	struct herd_err err;
	long status;
	struct strbuf error_body;
	bool failed;
};

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	struct transfer *t = arg;
	size_t len = size * n;

	if (!t->status)
		curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &t->status);
	if (t->status != 200) {
		if (t->error_body.len < MAX_ERROR_BODY)
			strbuf_add(&t->error_body, p, len);
		return len;
	}
	if (migrate_untar_feed(t->untar, p, len, &t->err) < 0) {
		t->failed = true;
		return 0; /* stops the transfer */
	}
	return len;
}

/* The archive from the node at addr into the directory open at dirfd.  0,
 * or -1 with msg. */
static int transfer(struct alloc_runner *ar, const char *addr, const char *prev, int dirfd,
		    const char *const *tasks, size_t ntasks, char *msg, size_t len)
{
	const struct agent_config *cfg = ar->c->cfg;
	struct transfer t = { .curl = curl_easy_init(), .error_body = STRBUF_INIT };
	struct curl_slist *hdrs = NULL;
	char errbuf[CURL_ERROR_SIZE] = "";
	char *ep = httpc_escape(prev), *ef = httpc_escape(ar->id);
	char *url = xasprintf("%s://%s/v1/client/allocation/%s/migrate?for=%s",
			      cfg->tls.client.https ? "https" : "http", addr, ep, ef);
	CURLcode cc;
	int rc = -1;

	t.untar = migrate_untar_new(dirfd, tasks, ntasks);
	tls_client_apply(&cfg->tls.client, t.curl);
	httpc_curl_cloexec(t.curl);
	if (cfg->client.token && *cfg->client.token) {
		char *h = xasprintf("X-Herd-Token: %s", cfg->client.token);
		hdrs = curl_slist_append(hdrs, h);
		free(h);
	}
	curl_easy_setopt(t.curl, CURLOPT_URL, url);
	curl_easy_setopt(t.curl, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(t.curl, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(t.curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(t.curl, CURLOPT_WRITEDATA, &t);
	curl_easy_setopt(t.curl, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(t.curl, CURLOPT_NOSIGNAL, 1L);
	cc = curl_easy_perform(t.curl);
	if (!t.status)
		curl_easy_getinfo(t.curl, CURLINFO_RESPONSE_CODE, &t.status);
	if (t.failed) {
		snprintf(msg, len, "the archive from %s: %s", addr, t.err.msg);
	} else if (cc != CURLE_OK) {
		snprintf(msg, len, "%s: %s", addr, errbuf[0] ? errbuf : curl_easy_strerror(cc));
	} else if (t.status != 200) {
		json_t *j = json_loadb(t.error_body.buf ? t.error_body.buf : "", t.error_body.len, 0,
				       NULL);
		const char *m = json_string_value(json_object_get(json_object_get(j, "error"),
								  "message"));
		snprintf(msg, len, "%s: HTTP %ld: %s", addr, t.status, m ? m : "(no message)");
		json_decref(j);
	} else if (migrate_untar_finish(t.untar, &t.err) < 0) {
		snprintf(msg, len, "the archive from %s: %s", addr, t.err.msg);
	} else {
		rc = 0;
	}
	migrate_untar_free(t.untar);
	strbuf_release(&t.error_body);
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(t.curl);
	free(url);
	free(ep);
	free(ef);
	return rc;
}

/* The http_addr of node_id when it is up; NULL with msg otherwise. */
static char *node_addr(struct client *c, const char *node_id, const char *prev, char *msg,
		       size_t len)
{
	struct herd_err err = { 0, "" };
	char *e = httpc_escape(node_id), *path = xasprintf("/v1/node/%s", e);
	json_t *n = server_get(c, path, &err);
	const char *addr = json_string_value(json_object_get(n, "http_addr"));
	char *out = NULL;

	if (!n)
		snprintf(msg, len, "cannot read the node of allocation %.8s: %s", prev, err.msg);
	else if (!strcmp(json_string_value(json_object_get(n, "status")) ?: "", "down"))
		snprintf(msg, len, "the node of allocation %.8s is down", prev);
	else if (!addr || !*addr)
		snprintf(msg, len, "the node of allocation %.8s has no http_addr", prev);
	else
		out = xstrdup(addr);
	json_decref(n);
	free(path);
	free(e);
	return out;
}

int migrate_fetch(struct alloc_runner *ar, const char *prev, const char *root,
		  const char *const *tasks, size_t ntasks, char *msg, size_t msglen)
{
	struct herd_err err = { 0, "" };
	char *addr = NULL, *tmp = NULL, why[512] = "";
	json_t *a;
	const char *node;
	bool gone;
	int rfd = -1, dfd = -1, rc = 0;

	a = wait_ended(ar, prev, why, sizeof(why), &gone);
	if (gone)
		return -1;
	if (!a)
		goto out;
	node = json_string_value(json_object_get(a, "node_id")) ?: "";
	if (!strcmp(node, ar->c->node_id)) {
		snprintf(why, sizeof(why), "no data of allocation %.8s on this node", prev);
		goto out;
	}
	if (!strcmp(json_string_value(json_object_get(a, "client_status")) ?: "", "lost")) {
		snprintf(why, sizeof(why), "allocation %.8s was lost with its node", prev);
		goto out;
	}
	if (!(addr = node_addr(ar->c, node, prev, why, sizeof(why))))
		goto out;
	tmp = xasprintf(".migrate-%s", ar->id);
	rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0) {
		snprintf(why, sizeof(why), "%s: %s", root, strerror(errno));
		goto out;
	}
	alloc_dir_remove(rfd, tmp); /* an earlier try's, if any */
	if (mkdirat(rfd, tmp, 0700) < 0 ||
	    (dfd = openat(rfd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		snprintf(why, sizeof(why), "%s/%s: %s", root, tmp, strerror(errno));
		goto out;
	}
	if (transfer(ar, addr, prev, dfd, tasks, ntasks, why, sizeof(why)) < 0)
		goto out;
	rc = sticky_disk_move(root, tmp, ar->dir, tasks, ntasks, &err);
	if (rc < 0) {
		snprintf(why, sizeof(why), "%s", err.msg);
		rc = 0;
	}
out:
	if (rc > 0)
		snprintf(msg, msglen, "migrated alloc/data and local/ of allocation %.8s from %s",
			 prev, addr);
	else
		snprintf(msg, msglen, "%s; the tasks start with empty directories", why);
	if (dfd >= 0)
		close(dfd);
	if (rfd >= 0) {
		if (tmp)
			alloc_dir_remove(rfd, tmp);
		close(rfd);
	}
	free(tmp);
	free(addr);
	json_decref(a);
	return rc;
}
