/* nvml-lib: finding and loading libnvidia-ml (or the simulator) at run time.
 *
 * Private to src/gpu.  struct nvml_lib holds the dlopen handle and one
 * function pointer per entry of NVML_FUNCTIONS (nvml-abi.h).  Functions that
 * an older driver lacks stay NULL; callers go through NVML_CALL, which turns
 * a missing function into NVML_ERROR_FUNCTION_NOT_FOUND. */
#ifndef HERD_GPU_NVML_LIB_H
#define HERD_GPU_NVML_LIB_H

#include <stdbool.h>

#include "common/err.h"
#include "gpu/nvml-abi.h"

#define NVML_LIB_PATH_MAX 4096

struct nvml_lib {
	void *dl;
	bool simulated;     /* the library exports HERD_NVML_SIM_PROBE */
	bool sim_wsl;       /* the simulator describes a WSL2 machine */
	bool initialized;   /* nvmlInit_v2 succeeded; nvml_lib_close shuts down */
	char path[NVML_LIB_PATH_MAX]; /* what was loaded, as given to dlopen */
#define NVML_LIB_FIELD(ret, name, params) ret (*name) params;
	NVML_FUNCTIONS(NVML_LIB_FIELD)
#undef NVML_LIB_FIELD
};

/* Calls NVML function `name` of lib, or yields FUNCTION_NOT_FOUND when the
 * loaded library lacks it. */
#define NVML_CALL(lib, name, ...) \
	((lib)->name ? (lib)->name(__VA_ARGS__) : NVML_ERROR_FUNCTION_NOT_FOUND)

/* Loads NVML and initialises it.  Order: `path` when not NULL (the agent's
 * configured path; HERD_NVML_LIBRARY is resolved by the caller), else
 * "libnvidia-ml.so.1" from the dynamic loader's paths, else
 * /usr/lib/wsl/lib/libnvidia-ml.so.1.  An explicit path gets no fallback.
 * Returns 0 with lib filled, or -ENOENT (no library), -ENOSYS (a required
 * symbol missing) or -EIO (nvmlInit_v2 failed) with err saying why; lib is
 * then zeroed and owns nothing. */
int nvml_lib_open(struct nvml_lib *lib, const char *path, struct herd_err *err);

/* Shuts NVML down (when initialised) and unloads it; accepts a zeroed lib. */
void nvml_lib_close(struct nvml_lib *lib);

/* NVML's name of an error code ("Not Supported"), also when the library
 * lacks nvmlErrorString; never NULL. */
const char *nvml_lib_strerror(const struct nvml_lib *lib, nvmlReturn_t rc);

/* Maps an NVML error to -errno: NOT_SUPPORTED/FUNCTION_NOT_FOUND -ENOTSUP,
 * GPU_IS_LOST -ENODEV, NO_PERMISSION -EACCES, NOT_FOUND -ENOENT,
 * TIMEOUT -ETIMEDOUT, anything else -EIO. */
int nvml_errno(nvmlReturn_t rc);

/* True where an answer means "this attribute does not exist here" and must
 * become an absent attribute rather than an error (WSL2, consumer GPUs,
 * MIG handles, old drivers). */
bool nvml_absent(nvmlReturn_t rc);

#endif
