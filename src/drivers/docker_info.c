/* docker_info: what the engine offers (GET /info): an NVIDIA runtime, CDI. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "drivers/docker-int.h"

int docker_engine_info(struct docker_client *c, struct docker_engine_info *out,
		       struct herd_err *err)
{
	struct strbuf resp = STRBUF_INIT;
	struct docker_req req = { .method = "GET", .path = "/info" };
	json_t *o = NULL;
	int rc = docker_call(c, &req, &resp, err);
	if (rc < 0)
		goto out;
	if (rc != 200) {
		rc = herd_errf(err, -EPROTO, "docker GET /info: HTTP %d: %s", rc,
			       docker_error_message(&resp));
		goto out;
	}
	o = json_loads(resp.buf, 0, NULL);
	if (!json_is_object(o)) {
		rc = herd_errf(err, -EPROTO, "docker GET /info: not a JSON object");
		goto out;
	}
	struct docker_engine_info info = { 0 };
	snprintf(info.version, sizeof(info.version), "%s",
		 json_string_value(json_object_get(o, "ServerVersion")) ?: "");
	/* The nvidia runtime registered with the engine (nvidia-ctk runtime
	 * configure), or made its default. */
	const char *def = json_string_value(json_object_get(o, "DefaultRuntime"));
	info.nvidia_runtime = json_object_get(json_object_get(o, "Runtimes"), "nvidia") != NULL ||
			      (def && !strcmp(def, "nvidia"));
	/* Engines from 25.0 list CDISpecDirs; empty when CDI is disabled. */
	info.cdi = json_array_size(json_object_get(o, "CDISpecDirs")) > 0;
	const char *cg = json_string_value(json_object_get(o, "CgroupVersion"));
	info.cgroup_version = cg && !strcmp(cg, "2") ? 2 : cg && !strcmp(cg, "1") ? 1 : 0;
	*out = info;
	rc = 0;
out:
	json_decref(o);
	strbuf_release(&resp);
	return rc;
}
