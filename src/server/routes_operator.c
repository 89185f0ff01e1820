/* routes_operator: GET /v1/operator/snapshot, a backup of the whole state
 * (docs/operations.md, "Backups and restore"; docs/api.md).
 *
 * The store copies itself at one index into a new file in a private
 * directory under the data dir (the same file system, so no space is
 * asked of /tmp, and never readable by others: it holds token hashes);
 * the copy is checked (store_snapshot_inspect: SQLite's quick_check, the
 * schema) before it goes out, then unlinked while open, so that nothing is
 * left behind however the download ends.  The answer is the file itself
 * (application/vnd.sqlite3) with X-Herd-Index the copy's index.  Needs the
 * management right: the copy holds every namespace, token hashes too. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/xalloc.h"
#include "server/acl.h"
#include "server/server-int.h"

static int get_snapshot(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	struct store_snapshot_info info;
	struct herd_err err = { 0 };
	char *dir = xasprintf("%s/snapshot-XXXXXX", srv->data_dir);
	char *file = NULL;
	int fd = -1, rc = 0;

	(void)req;
	if (!mkdtemp(dir)) {
		rc = http_error(resp, 500, "snapshot_failed", "cannot make a directory under %s: %s",
				srv->data_dir, strerror(errno));
		goto out;
	}
	file = xasprintf("%s/state.db", dir);
	if (store_snapshot(srv->store, file, &err) < 0 ||
	    store_snapshot_inspect(file, &info, &err) < 0) {
		rc = http_error(resp, 500, "snapshot_failed", "%s", err.msg);
		goto out;
	}
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = http_error(resp, 500, "snapshot_failed", "%s: %s", file, strerror(errno));
		goto out;
	}
	http_reply_file(resp, 200, "application/vnd.sqlite3", fd);
	resp->has_index = 1;
	resp->index = info.index;
out:
	if (file)
		unlink(file);
	rmdir(dir);
	free(file);
	free(dir);
	return rc;
}

int routes_operator(struct server *srv, struct herd_err *err)
{
	static const struct server_route routes[] = {
		{ "GET", "/v1/operator/snapshot", get_snapshot, 0, ACL_NEED_MANAGEMENT },
	};
	return server_routes_add(srv, routes, sizeof(routes) / sizeof(routes[0]), err);
}
