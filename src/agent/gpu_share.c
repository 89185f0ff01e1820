/* gpu_share: see gpu_share.h. */
#include <stdio.h>

#include "agent/gpu_share.h"

enum gpu_share_verdict gpu_share_step(struct gpu_share_track *t, int64_t used_mib,
				      int64_t share_mib, int grace)
{
	if (share_mib <= 0 || used_mib <= share_mib) {
		t->over = 0;
		t->acted = false;   /* the next exceedance is a new one */
		return GPU_SHARE_WITHIN;
	}
	if (t->over < grace)
		t->over++;
	if (t->over < grace || t->acted)
		return GPU_SHARE_OVER;
	t->acted = true;
	return GPU_SHARE_ACT;
}

const char *gpu_share_mib_text(int64_t mib, char *buf, size_t size)
{
	if (mib >= 1024 && mib % 1024 == 0)
		snprintf(buf, size, "%lld GiB", (long long)(mib / 1024));
	else if (mib >= 1024)
		snprintf(buf, size, "%.1f GiB", (double)mib / 1024.0);
	else
		snprintf(buf, size, "%lld MiB", (long long)mib);
	return buf;
}
