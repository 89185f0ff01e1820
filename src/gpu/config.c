/* config: the GPU part of the agent's configuration; see gpu.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"
#include "gpu/gpu.h"

/* XIDs caused by applications, not by the GPU: 13 graphics engine
 * exception, 31 GPU memory page fault, 43 GPU stopped processing, 45
 * preemptive cleanup, 68 video processor exception, 109 context switch
 * timeout.  NVIDIA's k8s-device-plugin skips the same list (its
 * DP_DISABLE_HEALTHCHECKS documentation; NVIDIA's "XID Errors" guide). */
static const unsigned default_ignored[] = { 13, 31, 43, 45, 68, 109 };

void gpu_config_init(struct gpu_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	for (size_t i = 0; i < sizeof(default_ignored) / sizeof(default_ignored[0]); i++)
		cfg->ignored_xids[cfg->nr_ignored_xids++] = default_ignored[i];
	cfg->wsl = -1;
	cfg->stats_period_ns = 10 * NS_PER_SEC;
}

int gpu_config_set_ignored_xids(struct gpu_config *cfg, const char *list,
				struct herd_err *err)
{
	unsigned xids[GPU_MAX_IGNORED_XIDS];
	size_t nr = 0;
	const char *p = list;

	while (*p == ' ')
		p++;
	if (!strcmp(p, "none") || !*p) {
		cfg->nr_ignored_xids = 0;
		return 0;
	}
	while (*p) {
		char num[24];
		size_t len = strcspn(p, ", ");
		int64_t v;
		if (len == 0 || len >= sizeof(num))
			return herd_errf(err, -EINVAL, "bad XID list '%s': expected numbers "
					 "separated by commas, or 'none'", list);
		memcpy(num, p, len);
		num[len] = '\0';
		int rc = parse_int64(num, 0, 0xffffffffLL, &v, err);
		if (rc < 0) {
			herd_err_prefix(err, "bad XID list '%s'", list);
			return rc;
		}
		if (nr == GPU_MAX_IGNORED_XIDS)
			return herd_errf(err, -ERANGE, "bad XID list '%s': at most %d XIDs",
					 list, GPU_MAX_IGNORED_XIDS);
		xids[nr++] = (unsigned)v;
		p += len;
		while (*p == ',' || *p == ' ')
			p++;
	}
	memcpy(cfg->ignored_xids, xids, nr * sizeof(xids[0]));
	cfg->nr_ignored_xids = nr;
	return 0;
}

int gpu_config_from_env(struct gpu_config *cfg, struct herd_err *err)
{
	struct gpu_config next = *cfg;
	const char *v;
	int rc;

	v = getenv("HERD_NVML_LIBRARY");
	if (v && *v)
		next.library_path = v;
	v = getenv("HERD_GPU_IGNORE_XIDS");
	if (v && (rc = gpu_config_set_ignored_xids(&next, v, err)) < 0) {
		herd_err_prefix(err, "HERD_GPU_IGNORE_XIDS");
		return rc;
	}
	v = getenv("HERD_GPU_WSL");
	if (v && *v) {
		if (strcmp(v, "0") && strcmp(v, "1"))
			return herd_errf(err, -EINVAL, "HERD_GPU_WSL: expected 0 or 1, not '%s'", v);
		next.wsl = *v == '1';
	}
	v = getenv("HERD_GPU_STATS_PERIOD");
	if (v && *v) {
		int64_t ns;
		if ((rc = parse_duration(v, &ns, err)) < 0) {
			herd_err_prefix(err, "HERD_GPU_STATS_PERIOD");
			return rc;
		}
		if (ns < NS_PER_SEC / 10)
			return herd_errf(err, -EINVAL, "HERD_GPU_STATS_PERIOD: expected at least 100ms, not '%s'", v);
		next.stats_period_ns = ns;
	}
	*cfg = next;
	return 0;
}

bool gpu_config_xid_is_critical(const struct gpu_config *cfg, uint64_t xid)
{
	for (size_t i = 0; i < cfg->nr_ignored_xids; i++)
		if (cfg->ignored_xids[i] == xid)
			return false;
	return true;
}
