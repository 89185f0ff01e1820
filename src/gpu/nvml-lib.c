/* nvml-lib: dlopen of libnvidia-ml.so.1 or the simulator; see nvml-lib.h. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gpu/nvml-lib.h"

/* WSL2 ships the driver's user-space libraries here, outside the loader's
 * default paths (Microsoft's "GPU in WSL" documentation). */
#define NVML_WSL_PATH "/usr/lib/wsl/lib/libnvidia-ml.so.1"
#define NVML_SONAME "libnvidia-ml.so.1"

/* Functions herd cannot work without; the rest may be absent from old
 * drivers (nvmlDeviceGetNumaNodeId arrived in R535, the MIG calls in R450). */
static const char *const required[] = {
	"nvmlInit_v2", "nvmlShutdown", "nvmlDeviceGetCount_v2",
	"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetUUID", "nvmlDeviceGetName",
};

static bool is_required(const char *name)
{
	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++)
		if (!strcmp(required[i], name))
			return true;
	return false;
}

static int resolve(struct nvml_lib *lib, struct herd_err *err)
{
#define NVML_LIB_RESOLVE(ret, name, params)                                        \
	*(void **)&lib->name = dlsym(lib->dl, #name);                              \
	if (!lib->name && is_required(#name))                                      \
		return herd_errf(err, -ENOSYS, "%s lacks %s: driver too old?",     \
				 lib->path, #name);
	NVML_FUNCTIONS(NVML_LIB_RESOLVE)
#undef NVML_LIB_RESOLVE
	return 0;
}

static void *try_open(const char *path, char *why, size_t why_size)
{
	void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		const char *e = dlerror();
		snprintf(why, why_size, "%s", e ? e : "unknown dlopen error");
	}
	return dl;
}

int nvml_lib_open(struct nvml_lib *lib, const char *path, struct herd_err *err)
{
	char why[512] = "";
	int rc;

	memset(lib, 0, sizeof(*lib));
	if (path && *path) {
		lib->dl = try_open(path, why, sizeof(why));
		if (!lib->dl)
			return herd_errf(err, -ENOENT, "cannot load NVML library %s: %s", path, why);
		snprintf(lib->path, sizeof(lib->path), "%s", path);
	} else {
		lib->dl = try_open(NVML_SONAME, why, sizeof(why));
		snprintf(lib->path, sizeof(lib->path), "%s", NVML_SONAME);
		if (!lib->dl) {
			lib->dl = try_open(NVML_WSL_PATH, why, sizeof(why));
			snprintf(lib->path, sizeof(lib->path), "%s", NVML_WSL_PATH);
		}
		if (!lib->dl) {
			memset(lib, 0, sizeof(*lib));
			return herd_errf(err, -ENOENT,
					 "no NVIDIA driver: %s not found in the loader's paths "
					 "nor in /usr/lib/wsl/lib", NVML_SONAME);
		}
	}
	rc = resolve(lib, err);
	if (rc < 0)
		goto fail;
	lib->simulated = dlsym(lib->dl, HERD_NVML_SIM_PROBE) != NULL;
	nvmlReturn_t nrc = lib->nvmlInit_v2();
	if (nrc != NVML_SUCCESS) {
		rc = herd_errf(err, -EIO, "NVML in %s failed to initialise: %s", lib->path,
			       nvml_lib_strerror(lib, nrc));
		goto fail;
	}
	lib->initialized = true;
	if (lib->simulated) {
		/* Asked after init: the simulator reads its description there. */
		int (*wsl)(void);
		*(void **)&wsl = dlsym(lib->dl, HERD_NVML_SIM_WSL_PROBE);
		lib->sim_wsl = wsl && wsl();
	}
	return 0;
fail:
	dlclose(lib->dl);
	memset(lib, 0, sizeof(*lib));
	return rc;
}

void nvml_lib_close(struct nvml_lib *lib)
{
	if (!lib || !lib->dl)
		return;
	if (lib->initialized)
		lib->nvmlShutdown();
	dlclose(lib->dl);
	memset(lib, 0, sizeof(*lib));
}

const char *nvml_lib_strerror(const struct nvml_lib *lib, nvmlReturn_t rc)
{
	const char *s = lib && lib->nvmlErrorString ? lib->nvmlErrorString(rc) : NULL;
	if (s)
		return s;
	switch (rc) {
	case NVML_SUCCESS: return "Success";
	case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
	case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
	case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
	case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
	default: return "Unknown Error";
	}
}

int nvml_errno(nvmlReturn_t rc)
{
	switch (rc) {
	case NVML_SUCCESS: return 0;
	case NVML_ERROR_NOT_SUPPORTED:
	case NVML_ERROR_FUNCTION_NOT_FOUND: return -ENOTSUP;
	case NVML_ERROR_GPU_IS_LOST: return -ENODEV;
	case NVML_ERROR_NO_PERMISSION: return -EACCES;
	case NVML_ERROR_NOT_FOUND: return -ENOENT;
	case NVML_ERROR_TIMEOUT: return -ETIMEDOUT;
	default: return -EIO;
	}
}

bool nvml_absent(nvmlReturn_t rc)
{
	return rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_FUNCTION_NOT_FOUND ||
	       rc == NVML_ERROR_NOT_FOUND || rc == NVML_ERROR_NO_PERMISSION ||
	       rc == NVML_ERROR_NO_DATA;
}
