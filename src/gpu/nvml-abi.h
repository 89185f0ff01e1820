/* nvml-abi: the part of NVIDIA's NVML C ABI that herd uses, declared by hand.
 *
 * herd builds without NVIDIA headers or packages and loads libnvidia-ml.so.1
 * at run time (nvml-lib.h), so the types below must match the real library's
 * layouts exactly.  Source of every declaration: NVIDIA's public NVML API
 * reference, https://docs.nvidia.com/deploy/nvml-api/ (nvml.h of CUDA 12.x;
 * sections "Device Queries", "System Queries", "Event Handling Methods",
 * "Multi Instance GPU Management", "NvLink Methods", "Error reporting").
 * Only facts (names, numbers, layouts) are taken from there.
 *
 * The simulated library (src/gpu/sim) includes this header too, so the
 * compiler checks that it defines each function with the signature herd
 * calls.  Private to src/gpu. */
#ifndef HERD_GPU_NVML_ABI_H
#define HERD_GPU_NVML_ABI_H

/* nvmlReturn_t values ("Error reporting"; enum nvmlReturn_enum). */
typedef int nvmlReturn_t;
#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NO_PERMISSION 4
#define NVML_ERROR_ALREADY_INITIALIZED 5
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_INSUFFICIENT_POWER 8
#define NVML_ERROR_DRIVER_NOT_LOADED 9
#define NVML_ERROR_TIMEOUT 10
#define NVML_ERROR_IRQ_ISSUE 11
#define NVML_ERROR_LIBRARY_NOT_FOUND 12
#define NVML_ERROR_FUNCTION_NOT_FOUND 13
#define NVML_ERROR_CORRUPTED_INFOROM 14
#define NVML_ERROR_GPU_IS_LOST 15
#define NVML_ERROR_RESET_REQUIRED 16
#define NVML_ERROR_OPERATING_SYSTEM 17
#define NVML_ERROR_LIB_RM_VERSION_MISMATCH 18
#define NVML_ERROR_IN_USE 19
#define NVML_ERROR_MEMORY 20
#define NVML_ERROR_NO_DATA 21
#define NVML_ERROR_UNKNOWN 999

/* Opaque handles. */
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;

/* Buffer sizes ("Constants"). */
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16
#define NVML_NVLINK_MAX_LINKS 18

/* nvmlEnableState_t */
#define NVML_FEATURE_DISABLED 0
#define NVML_FEATURE_ENABLED 1

/* nvmlClockType_t */
#define NVML_CLOCK_GRAPHICS 0
#define NVML_CLOCK_SM 1
#define NVML_CLOCK_MEM 2

/* nvmlTemperatureSensors_t */
#define NVML_TEMPERATURE_GPU 0

/* nvmlMemoryErrorType_t and nvmlEccCounterType_t */
#define NVML_MEMORY_ERROR_TYPE_CORRECTED 0
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1
#define NVML_VOLATILE_ECC 0
#define NVML_AGGREGATE_ECC 1

/* nvmlDeviceArchitecture_t (unsigned int) */
#define NVML_DEVICE_ARCH_KEPLER 2
#define NVML_DEVICE_ARCH_MAXWELL 3
#define NVML_DEVICE_ARCH_PASCAL 4
#define NVML_DEVICE_ARCH_VOLTA 5
#define NVML_DEVICE_ARCH_TURING 6
#define NVML_DEVICE_ARCH_AMPERE 7
#define NVML_DEVICE_ARCH_ADA 8
#define NVML_DEVICE_ARCH_HOPPER 9
#define NVML_DEVICE_ARCH_BLACKWELL 10
#define NVML_DEVICE_ARCH_UNKNOWN 0xffffffffu

/* nvmlGpuTopologyLevel_t */
#define NVML_TOPOLOGY_INTERNAL 0
#define NVML_TOPOLOGY_SINGLE 10
#define NVML_TOPOLOGY_MULTIPLE 20
#define NVML_TOPOLOGY_HOSTBRIDGE 30
#define NVML_TOPOLOGY_NODE 40
#define NVML_TOPOLOGY_SYSTEM 50

/* MIG mode (nvmlDeviceGetMigMode) */
#define NVML_DEVICE_MIG_DISABLE 0
#define NVML_DEVICE_MIG_ENABLE 1

/* Event types ("Event Types", nvmlEventType*). */
#define NVML_EVENT_SINGLE_BIT_ECC 0x0000000000000001ULL
#define NVML_EVENT_DOUBLE_BIT_ECC 0x0000000000000002ULL
#define NVML_EVENT_XID_CRITICAL 0x0000000000000008ULL

/* Value reported where a MIG id does not apply (nvmlEventData_t). */
#define NVML_NO_INSTANCE_ID 0xffffffffu

typedef struct nvmlMemory_st {
	unsigned long long total; /* bytes */
	unsigned long long free;
	unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlPciInfo_st {
	char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
	unsigned int domain;
	unsigned int bus;
	unsigned int device;
	unsigned int pciDeviceId;    /* device id << 16 | vendor id */
	unsigned int pciSubSystemId;
	char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE]; /* "00000000:17:00.0" */
} nvmlPciInfo_t;

typedef struct nvmlUtilization_st {
	unsigned int gpu;    /* percent */
	unsigned int memory; /* percent */
} nvmlUtilization_t;

/* nvmlProcessInfo_t as filled by nvmlDeviceGetComputeRunningProcesses_v3. */
typedef struct nvmlProcessInfo_st {
	unsigned int pid;
	unsigned long long usedGpuMemory; /* bytes */
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} nvmlProcessInfo_t;

typedef struct nvmlDeviceAttributes_st {
	unsigned int multiprocessorCount;
	unsigned int sharedCopyEngineCount;
	unsigned int sharedDecoderCount;
	unsigned int sharedEncoderCount;
	unsigned int sharedJpegCount;
	unsigned int sharedOfaCount;
	unsigned int gpuInstanceSliceCount;
	unsigned int computeInstanceSliceCount;
	unsigned long long memorySizeMB;
} nvmlDeviceAttributes_t;

typedef struct nvmlEventData_st {
	nvmlDevice_t device;
	unsigned long long eventType;
	unsigned long long eventData; /* the XID for NVML_EVENT_XID_CRITICAL */
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} nvmlEventData_t;

/* X(return, name, parameters): every function herd resolves.  Those marked
 * optional in nvml-lib.c may be missing from older drivers. */
#define NVML_FUNCTIONS(X)                                                              \
	X(nvmlReturn_t, nvmlInit_v2, (void))                                           \
	X(nvmlReturn_t, nvmlShutdown, (void))                                          \
	X(const char *, nvmlErrorString, (nvmlReturn_t result))                        \
	X(nvmlReturn_t, nvmlSystemGetDriverVersion, (char *version, unsigned int length)) \
	X(nvmlReturn_t, nvmlSystemGetCudaDriverVersion_v2, (int *version))             \
	X(nvmlReturn_t, nvmlDeviceGetCount_v2, (unsigned int *count))                  \
	X(nvmlReturn_t, nvmlDeviceGetHandleByIndex_v2, (unsigned int index, nvmlDevice_t *device)) \
	X(nvmlReturn_t, nvmlDeviceGetName, (nvmlDevice_t device, char *name, unsigned int length)) \
	X(nvmlReturn_t, nvmlDeviceGetUUID, (nvmlDevice_t device, char *uuid, unsigned int length)) \
	X(nvmlReturn_t, nvmlDeviceGetMemoryInfo, (nvmlDevice_t device, nvmlMemory_t *memory)) \
	X(nvmlReturn_t, nvmlDeviceGetPciInfo_v3, (nvmlDevice_t device, nvmlPciInfo_t *pci)) \
	X(nvmlReturn_t, nvmlDeviceGetCudaComputeCapability, (nvmlDevice_t device, int *major, int *minor)) \
	X(nvmlReturn_t, nvmlDeviceGetArchitecture, (nvmlDevice_t device, unsigned int *arch)) \
	X(nvmlReturn_t, nvmlDeviceGetNumaNodeId, (nvmlDevice_t device, unsigned int *node)) \
	X(nvmlReturn_t, nvmlDeviceGetCpuAffinity, (nvmlDevice_t device, unsigned int cpuSetSize, unsigned long *cpuSet)) \
	X(nvmlReturn_t, nvmlDeviceGetPowerManagementLimit, (nvmlDevice_t device, unsigned int *limit)) \
	X(nvmlReturn_t, nvmlDeviceGetMaxClockInfo, (nvmlDevice_t device, int type, unsigned int *clock)) \
	X(nvmlReturn_t, nvmlDeviceGetPersistenceMode, (nvmlDevice_t device, int *mode)) \
	X(nvmlReturn_t, nvmlDeviceGetDisplayMode, (nvmlDevice_t device, int *display)) \
	X(nvmlReturn_t, nvmlDeviceGetMigMode, (nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode)) \
	X(nvmlReturn_t, nvmlDeviceGetMaxMigDeviceCount, (nvmlDevice_t device, unsigned int *count)) \
	X(nvmlReturn_t, nvmlDeviceGetMigDeviceHandleByIndex, (nvmlDevice_t device, unsigned int index, nvmlDevice_t *migDevice)) \
	X(nvmlReturn_t, nvmlDeviceGetGpuInstanceId, (nvmlDevice_t device, unsigned int *id)) \
	X(nvmlReturn_t, nvmlDeviceGetComputeInstanceId, (nvmlDevice_t device, unsigned int *id)) \
	X(nvmlReturn_t, nvmlDeviceGetDeviceHandleFromMigDeviceHandle, (nvmlDevice_t migDevice, nvmlDevice_t *device)) \
	X(nvmlReturn_t, nvmlDeviceGetAttributes_v2, (nvmlDevice_t device, nvmlDeviceAttributes_t *attributes)) \
	X(nvmlReturn_t, nvmlDeviceGetTopologyCommonAncestor, (nvmlDevice_t device1, nvmlDevice_t device2, int *pathInfo)) \
	X(nvmlReturn_t, nvmlDeviceGetNvLinkState, (nvmlDevice_t device, unsigned int link, int *isActive)) \
	X(nvmlReturn_t, nvmlDeviceGetNvLinkRemotePciInfo_v2, (nvmlDevice_t device, unsigned int link, nvmlPciInfo_t *pci)) \
	X(nvmlReturn_t, nvmlDeviceGetUtilizationRates, (nvmlDevice_t device, nvmlUtilization_t *utilization)) \
	X(nvmlReturn_t, nvmlDeviceGetTemperature, (nvmlDevice_t device, int sensorType, unsigned int *temp)) \
	X(nvmlReturn_t, nvmlDeviceGetPowerUsage, (nvmlDevice_t device, unsigned int *power)) \
	X(nvmlReturn_t, nvmlDeviceGetTotalEccErrors, (nvmlDevice_t device, int errorType, int counterType, unsigned long long *eccCounts)) \
	X(nvmlReturn_t, nvmlDeviceGetComputeRunningProcesses_v3, (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos)) \
	X(nvmlReturn_t, nvmlDeviceGetSupportedEventTypes, (nvmlDevice_t device, unsigned long long *eventTypes)) \
	X(nvmlReturn_t, nvmlEventSetCreate, (nvmlEventSet_t *set))                     \
	X(nvmlReturn_t, nvmlDeviceRegisterEvents, (nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set)) \
	X(nvmlReturn_t, nvmlEventSetWait_v2, (nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)) \
	X(nvmlReturn_t, nvmlEventSetFree, (nvmlEventSet_t set))

/* The symbol the simulated library exports in addition; herd probes it with
 * dlsym to learn that the library is the simulator.  Returns a version
 * string ("herd-nvml-sim 1"). */
#define HERD_NVML_SIM_PROBE "herd_nvml_sim_version"
/* Second simulator-only symbol: returns 1 when the description says the
 * simulated machine is a WSL2 guest ("wsl": true). */
#define HERD_NVML_SIM_WSL_PROBE "herd_nvml_sim_wsl"

#endif
