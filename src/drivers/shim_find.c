/* shim_find: where the herd-task-shim program lies (see shim.h). */
#include "drivers/shim.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/xalloc.h"

char *task_shim_program(const char *self_exe)
{
	/* beside herd (a flat install or bundle), the build tree
	 * (src/cli/herd -> src/drivers/herd-task-shim), libexec (install) */
	static const char *const rel[] = { "herd-task-shim", "../drivers/herd-task-shim",
					   "../libexec/herd-task-shim", NULL };
	const char *env = getenv("HERD_TASK_SHIM");
	const char *slash;
	char *dir;

	if (env && *env)
		return access(env, X_OK) == 0 ? xstrdup(env) : NULL;
	if (!self_exe || !(slash = strrchr(self_exe, '/')))
		return NULL;
	dir = xstrndup(self_exe, (size_t)(slash - self_exe));
	for (size_t i = 0; rel[i]; i++) {
		char *p = xasprintf("%s/%s", dir, rel[i]);
		if (access(p, X_OK) == 0) {
			free(dir);
			return p;
		}
		free(p);
	}
	free(dir);
	return NULL;
}
