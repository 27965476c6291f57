/*
 * cnrt.h: the CNRT (Cambricon Neuware Runtime) subset that mlusim implements on its simulated
 * MLU devices. Names, signatures and enum values are those of Cambricon's public cnrt.h 6.x, so
 * CNRT host code compiles against this header unchanged. Simulator-only calls (configs, traces,
 * statistics) live in mlusim_ext.h.
 *
 * Conventions that hold for every function below (driver/README.md has the long version):
 *
 *  - Thread safety: every function may be called from any number of host threads at once. The
 *    current device (cnrtSetDevice) and the last error (cnrtGetLastError) are per host thread.
 *  - Time: each host thread has a virtual clock in simulated time. Every call advances it by the
 *    config's `host.api_call_ns` (cnrtInvokeKernel: `host.launch_overhead_ns`); blocking calls move
 *    it to the simulated time of the event they waited for. Asynchronous work starts no earlier
 *    than the caller's clock when the enqueuing call returns. Notifier times are simulated times.
 *    Determinism (same program, same config -> same times) is promised for one host thread.
 *  - Errors: a function returns cnrtSuccess or one of the codes listed in its comment, each with
 *    its exact condition. On any code other than cnrtSuccess and cnrtErrorNotReady it also records
 *    the code as the calling thread's last error, and a sentence naming the problem that
 *    mlusimGetLastErrorMessage() returns. Besides the codes listed per function, every function
 *    that takes part in simulation may return cnrtErrorInit (the runtime could not start: the
 *    config named by $MLUSIM_CONFIG failed to load) and cnrtErrorSysNoMem (host memory exhausted).
 *    No input, however bad, crashes the runtime or corrupts its state: handles are looked up in
 *    registries (never dereferenced) and device ranges are checked against live allocations.
 *  - Handles: queue and notifier handles are never reused. A destroyed or unknown handle gives
 *    cnrtErrorInvalidResourceHandle. For queues, NULL (and cnrtQueueLegacy / cnrtQueuePerThread)
 *    is the current device's default queue.
 *  - Device pointers are addresses in a reserved range the host cannot dereference; a device
 *    range is valid when it lies inside one live cnrtMalloc allocation (its requested size).
 */
#ifndef MLUSIM_CNRT_H_
#define MLUSIM_CNRT_H_

#include <stddef.h>
#include <stdint.h>

#if defined(__cplusplus)
extern "C" {
#endif

/* The CNRT release this header mirrors: 6.7.0 (cnrtGetLibVersion reports it). */
#define CNRT_MAJOR_VERSION 6
#define CNRT_MINOR_VERSION 7
#define CNRT_PATCH_VERSION 0
#ifndef CNRT_VERSION
#define CNRT_VERSION (CNRT_MAJOR_VERSION * 10000 + CNRT_MINOR_VERSION * 100 + CNRT_PATCH_VERSION)
#endif

/* ------------------------------------------------------------------------------------------ */
/* Types                                                                                       */
/* ------------------------------------------------------------------------------------------ */

/* Return codes (values as in CNRT). mlusim returns the ones documented per function. */
typedef enum {
  cnrtSuccess = 0,
  cnrtErrorNotReady = 1,                 /* queried work not finished yet (not an error) */
  cnrtErrorInit = 100002,                /* the runtime could not start */
  cnrtErrorNoDevice = 100004,            /* no device in the system */
  cnrtErrorDeviceInvalid = 100005,       /* device ordinal outside [0, count - 1] */
  cnrtErrorArgsInvalid = 100006,         /* a parameter is invalid or out of range */
  cnrtErrorSys = 100007,                 /* a system call failed (e.g. writing a file) */
  cnrtErrorSysNoMem = 100010,            /* host memory exhausted */
  cnrtErrorInvalidResourceHandle = 100014, /* unknown, destroyed or NULL queue/notifier */
  cnrtErrorIllegalState = 100015,        /* the resource is not in a state allowing the call */
  cnrtErrorNotSupport = 100050,          /* feature not supported */
  cnrtErrorOpsNotPermitted = 100051,     /* operation not permitted */
  cnrtErrorQueue = 100060,               /* default queue unavailable */
  cnrtErrorNoMem = 100100,               /* device memory exhausted */
  cnrtErrorAssert = 100128,              /* device-side assert */
  cnrtErrorKernelTrap = 100132,          /* a kernel faulted (trap, bad access, hazard...) */
  cnrtErrorKernelUserTrap = 100133,      /* a kernel reached a user trap */
  cnrtErrorNotFound = 100301,            /* resource not found */
  cnrtErrorInvalidKernel = 100302,       /* kernel handle not registered */
  cnrtErrorUnsupportedKernelVersion = 100303,
  cnrtErrorNoKernel = 101312,
  cnrtErrorNoModule = 101315,
  cnrtErrorQueueCaptureUnsupported = 100360,
  cnrtErrorQueueCaptureInvalidated = 100361,
  cnrtErrorQueueCaptureWrongThread = 100362,
  cnrtErrorQueueCaptureMerged = 100363,
  cnrtErrorQueueCaptureUnjoined = 100364,
  cnrtErrorQueueCaptureIsolation = 100365,
  cnrtErrorQueueCaptureUnmatched = 100366,
  cnrtErrorTaskTopoEntityUpdateFailure = 100400,
  cnrtErrorSetOnActiveProcess = 632002,
  cnrtErrorDevice = 632006,              /* resource does not belong to the current device */
  cnrtErrorNoAttribute = 632009,
  cnrtErrorMemcpyDirectionInvalid = 632013, /* direction not in cnrtMemTransDir_t or not matching the pointers */
  cnrtErrorBusy = 632014,                /* deprecated in CNRT; mlusim reports cnrtErrorNotReady */
  cnrtErrorCndrvFuncCall = 632015,       /* CNRT's code for e.g. timing a notifier never placed */
  cnrtErrorCndevFuncCall = 632017,
  cnrtErrorNoCnrtContext = 632019,
  cnrtErrorCndrvFuncNotFound = 632020,
  cnrtErrorInvalidSymbol = 632100,
  cnrtErrorUnknown = 999991,             /* internal error: a bug in mlusim (message says where) */
  cnrtErrorMax
} cnrtRet_t;

/* Task types of a kernel launch. The value is the number of cores one task group uses:
 * BLOCK runs each task on one core; UNIONn runs groups of n whole clusters (4n tasks). */
typedef enum {
  cnrtFuncTypeBlock = 1,
  cnrtFuncTypeBlock0 = cnrtFuncTypeBlock,
  cnrtFuncTypeBlock1 = cnrtFuncTypeBlock0 + 1, /* heterogeneous core 1: not simulated (ArgsInvalid) */
  cnrtFuncTypeUnion1 = 4,
  cnrtFuncTypeUnion2 = 8,
  cnrtFuncTypeUnion4 = 16,
  cnrtFuncTypeUnion8 = 32,
  cnrtFuncTypeUnion16 = 64,
  cnrtFuncTypeMutable = -1, /* not used (ArgsInvalid) */
  cnrtJobTypeBlock = cnrtFuncTypeBlock,
  cnrtJobTypeUnion1 = cnrtFuncTypeUnion1,
  cnrtJobTypeUnion2 = cnrtFuncTypeUnion2,
  cnrtJobTypeUnion4 = cnrtFuncTypeUnion4
} cnrtFunctionType_t;
typedef cnrtFunctionType_t cnrtJobType_t;

/* Device attributes for cnrtDeviceGetAttribute (CNRT values). Every value is derived from the
 * loaded config; the comment says how. Attributes not listed give cnrtErrorArgsInvalid. */
typedef enum {
  cnrtAttrComputeCapabilityMajor = 0x01,   /* 3 (an MLU300-class chip) for every config */
  cnrtAttrComputeCapabilityMinor = 0x02,   /* 0 */
  cnrtAttrSparseComputingSupported = 0x03, /* 0 */
  cnrtAttrFP16ComputingSupported = 0x04,   /* 1: the VFU computes fp16 (TFU too where configured) */
  cnrtAttrINT4ComputingSupported = 0x05,   /* 0 */
  cnrtAttrINT8ComputingSupported = 0x06,   /* 1 */
  cnrtAttrBF16ComputingSupported = 0x07,   /* 0 */
  cnrtAttrTF32ComputingSupported = 0x08,   /* 0 */
  cnrtAttrComputeMode = 0x09,              /* 0 (cnrtComputeModeDefault) */
  cnrtAttrQueueSize = 0x101,               /* maximum queues per device: 4096 */
  cnrtAttrNotifierSize = 0x102,            /* maximum notifiers per device: 65536 */
  cnrtAttrSupportQueuePriorities = 0x103,  /* 0 */
  cnrtAttrMaxDimX = 0x201,                 /* 2147483647 */
  cnrtAttrMaxDimY = 0x202,                 /* 65535 */
  cnrtAttrMaxDimZ = 0x203,                 /* 65535 */
  cnrtAttrMaxClusterCountPerUnionTask = 0x204, /* largest n in {1,2,4,8,16} with n <= clusters */
  cnrtAttrClusterCount = 0x205,            /* topology.clusters */
  cnrtAttrMcorePerCluster = 0x206,         /* topology.cores_per_cluster */
  cnrtAttrMaxL2CacheSize = 0x301,          /* l2.size_bytes */
  cnrtAttrNramSizePerMcore = 0x302,        /* core.nram_bytes */
  cnrtAttrWramSizePerMcore = 0x303,        /* core.wram_bytes */
  cnrtAttrSramSizePerMcore = 0x306,        /* cluster.sram_bytes (shared by a cluster) */
  cnrtAttrAvailableGlobalMemorySize = 0x312, /* dram.capacity_bytes in MB (2^20 bytes) */
  cnrtAttrEccEnable = 0x401,               /* 0 */
  cnrtAttrIpuClockRate = 0x402,            /* clock.core_mhz in kHz */
  cnrtAttrMemClockRate = 0x403,            /* clock.mem_mhz in kHz */
  cnrtAttrGmemBusWidth = 0x404,            /* dram.bus_width_bits */
  cnrtAttrTotalMemSize = 0x405,            /* dram.capacity_bytes in MB (2^20 bytes) */
  cnrtAttrPciBusID = 0x406,                /* device ordinal + 1 (a made-up but unique bus) */
  cnrtAttrPciDeviceID = 0x407,             /* 0 */
  cnrtAttrPciDomainID = 0x408              /* 0 */
} cnrtDeviceAttr_t;

/* Compute modes (cnrtAttrComputeMode). */
typedef enum {
  cnrtComputeModeDefault = 0,
  cnrtComputeModeExclusiveProcess = 1
} cnrtComputeMode_t;

/* How a host thread waits for the device (cnrtSetDeviceFlag). Recorded; the simulator always
 * blocks on a condition variable. */
typedef enum {
  cnrtDeviceScheduleSpin = 0,
  cnrtDeviceScheduleBlock = 1,
  cnrtDeviceScheduleYield = 2,
  cnrtDeviceScheduleAuto = 3,
  cnrtDeviceFlagsMaxNum
} cnrtDeviceFlags_t;

/* Copy directions. Values outside [cnrtMemcpyHostToDev, cnrtMemcpyNoDirection] give
 * cnrtErrorMemcpyDirectionInvalid. */
typedef enum {
  cnrtMemcpyHostToDev = 0,
  cnrtMemcpyDevToDev,     /* within one device (a cross-device pair is copied as peer-to-peer) */
  cnrtMemcpyDevToHost,
  cnrtMemcpyHostToHost,
  cnrtMemcpyPeerToPeer,   /* between two devices (or within one) */
  cnrtMemcpyNoDirection   /* inferred from the pointers: device range or host memory */
} cnrtMemTransDir_t;

/* Kinds of memory (cnrtPointerGetAttributes). */
typedef enum {
  cnrtMemTypeUnregistered = 0, /* plain host memory the runtime does not know */
  cnrtMemTypeHost,             /* pinned host memory from cnrtHostMalloc */
  cnrtMemTypeDevice            /* device memory from cnrtMalloc */
} cnrtMemType_t;

typedef enum {
  cnrtUvaNotSupport = -1,
  cnrtUvaUnknown = 0,
  cnrtUvaUnCached,
  cnrtUvaCached
} cnrtUvaCacheMode_t;

typedef struct {
  cnrtMemType_t type;
  int device;              /* device of a device pointer, else -1 */
  size_t size;             /* requested size of the allocation containing the pointer */
  void *devicePointer;     /* the pointer itself for device memory, else NULL */
  void *hostPointer;       /* the pointer itself for host memory, else NULL */
  cnrtUvaCacheMode_t cacheMode;
  void *deviceBasePointer; /* start of the allocation containing a device pointer */
} cnrtPointerAttributes_t;

struct cnrtUUID_st {
  char uuid[16];
};
typedef struct cnrtUUID_st cnrtUUID_t;

/* Device properties (CNRT's cnrtDeviceProp_t, same members and order). mlusim fills them from
 * the config as cnrtDeviceAttr_t documents; members without a simulated counterpart are 0. */
typedef struct cnrtDeviceProp_V3 {
  char name[256];               /* "MLU (mlusim <config name>)" */
  int totalMem;                 /* MB */
  int maxDim[3];
  int ipuClockRate;             /* kHz */
  int memClockRate;             /* kHz */
  int totalConstMem;            /* MB: 0, no constant memory */
  int major;
  int minor;
  int ECCEnabled;
  int pciBusID;
  int pciDeviceID;
  int pciDomainID;
  int maxL2CacheSize;           /* bytes */
  int persistingL2CacheMaxSize; /* bytes: 0 */
  int queuePrioritiesSupported;
  int sparseComputingSupported;
  int FP16ComputingSupported;
  int INT4ComputingSupported;
  int INT8ComputingSupported;
  int BF16ComputingSupported;
  int TF32ComputingSupported;
  int maxQueueSize;
  int maxNotifierSize;
  int tinyCoreSupported;
  int codecJPEGSupported;
  int codecH264Supported;
  int codecH265Supported;
  int maxClusterCountPerUnionTask;
  int clusterCount;
  int McorePerCluster;
  int maxQuadrantCount;         /* 1 */
  int maxUnionTypePerQuadrant;  /* = maxClusterCountPerUnionTask */
  int maxClusterPerUnionLimitTask; /* = maxClusterCountPerUnionTask */
  int ISAVersion;               /* 300 */
  int isMultipleTensorProcessor;
  int NramSizePerMcore;         /* bytes */
  int WramSizePerMcore;         /* bytes */
  int LmemSizePerMcore;         /* MB: 0, no LDRAM modelled */
  int SramSizePerMcore;         /* bytes, per cluster */
  int globalMemoryNodeCount;    /* 1 */
  int cacheSize;
  int GmemBusWidth;             /* bits */
  int computeMode;
  int MDRMemorySize;
  int availableGlobalMemorySize; /* MB */
  cnrtUUID_t uuid;              /* "mlusim-dev" + ordinal */
  uint64_t totalGlobalMemSize;  /* bytes */
  int reserved[30];
} cnrtDeviceProp_t;

/* Launch dimensions: taskDim = x * y * z. */
typedef struct {
  unsigned int x;
  unsigned int y;
  unsigned int z;
} cnrtDim3_t;

/* Queues and notifiers are opaque handles (CNRT spells the structs this way). */
#define cnrtQueue CNqueue_st
struct cnrtQueue;
typedef struct cnrtQueue *cnrtQueue_t;
#define cnrtQueuePerThread ((cnrtQueue_t)1) /* the current device's default queue */
#define cnrtQueueLegacy ((cnrtQueue_t)2)    /* the current device's default queue */

#define cnrtNotifier CNnotifier_st
struct cnrtNotifier;
typedef struct cnrtNotifier *cnrtNotifier_t;

/* Notifier creation flags (bit set). */
typedef enum cnrtNotifierFlags {
  CNRT_NOTIFIER_DEFAULT = 0x0,
  CNRT_NOTIFIER_DISABLE_TIMING_SW = 0x2,  /* no ElapsedTime (Duration still works) */
  CNRT_NOTIFIER_DISABLE_TIMING = CNRT_NOTIFIER_DISABLE_TIMING_SW,
  CNRT_NOTIFIER_DISABLE_TIMING_ALL = 0x4, /* neither ElapsedTime nor Duration */
  CNRT_NOTIFIER_INTERPROCESS = 0x8        /* accepted with DISABLE_TIMING_ALL; no IPC in mlusim */
} cnrtNotifierFlags_t;

typedef enum cnrtNotifierPlaceFlags {
  CNRT_NOTIFIER_PLACE_DEFAULT = 0x0,
  CNRT_NOTIFIER_PLACE_EXTERNAL /* queue capture only: ArgsInvalid */
} cnrtNotifierPlaceFlags_t;

typedef enum cnrtNotifierWaitFlags {
  CNRT_NOTIFIER_WAIT_DEFAULT = 0x0,
  CNRT_NOTIFIER_WAIT_EXTERNAL /* queue capture only: ArgsInvalid */
} cnrtNotifierWaitFlags_t;

/* A host function run in queue order (cnrtInvokeHostFunc). */
typedef void (*cnrtHostFn_t)(void *userData);

/* ------------------------------------------------------------------------------------------ */
/* Device management                                                                           */
/* ------------------------------------------------------------------------------------------ */

/* Number of simulated devices (config key `devices`). CUDA: cudaGetDeviceCount.
 * Starts the runtime on first use (as does every other call).
 * cnrtErrorArgsInvalid: pCount is NULL. */
cnrtRet_t cnrtGetDeviceCount(unsigned int *pCount);

/* Makes `ordinal` the calling host thread's current device: later allocations, queues,
 * notifiers and NULL-queue work go there. CUDA: cudaSetDevice.
 * cnrtErrorDeviceInvalid: ordinal < 0 or >= the device count. */
cnrtRet_t cnrtSetDevice(int ordinal);

/* The calling thread's current device (0 until cnrtSetDevice). CUDA: cudaGetDevice.
 * cnrtErrorArgsInvalid: pOrdinal is NULL. */
cnrtRet_t cnrtGetDevice(int *pOrdinal);

/* Properties of `device`, from the config. CUDA: cudaGetDeviceProperties.
 * cnrtErrorArgsInvalid: prop is NULL. cnrtErrorDeviceInvalid: device out of range. */
cnrtRet_t cnrtGetDeviceProperties(cnrtDeviceProp_t *prop, int device);
/* CNRT's versioned spellings of the same call. */
cnrtRet_t cnrtGetDeviceProperties_V2(cnrtDeviceProp_t *prop, int device);
cnrtRet_t cnrtGetDeviceProperties_V3(cnrtDeviceProp_t *prop, int device);

/* One attribute of `device` (see cnrtDeviceAttr_t for each value's source).
 * CUDA: cudaDeviceGetAttribute.
 * cnrtErrorArgsInvalid: pValue is NULL, or attr is not a cnrtDeviceAttr_t value listed above.
 * cnrtErrorDeviceInvalid: device out of range. */
cnrtRet_t cnrtDeviceGetAttribute(int *pValue, cnrtDeviceAttr_t attr, int device);

/* Blocks until all work queued on every queue of the current device (default queue, user queues,
 * destroyed queues still draining) has finished; the caller's clock moves to the last finish.
 * CUDA: cudaDeviceSynchronize.
 * cnrtErrorKernelTrap: a kernel on one of the device's queues faulted since the fault was last
 * reported (reported once; mlusimGetLastErrorMessage() names kernel, task and address). */
cnrtRet_t cnrtSyncDevice(void);

/* Waits for the current device's work, then frees all its device memory, destroys its queues and
 * notifiers (their handles become invalid) and clears its pending fault reports. The device
 * stays usable: later calls start from a clean state. Pinned host memory is not affected.
 * Do not call it while other threads use the device. CUDA: cudaDeviceReset. Always succeeds. */
cnrtRet_t cnrtDeviceReset(void);

/* Whether device `ordinal` can copy to/from `peerOrdinal` with cnrtMemcpyPeer: 1 for any two
 * distinct devices (over MLU-Link where the config has it, otherwise staged through host
 * memory), 0 when ordinal == peerOrdinal. CUDA: cudaDeviceCanAccessPeer.
 * cnrtErrorArgsInvalid: canAccess is NULL. cnrtErrorDeviceInvalid: either ordinal out of range. */
cnrtRet_t cnrtGetPeerAccessibility(unsigned int *canAccess, int ordinal, int peerOrdinal);

/* Queue priority range: priorities are not simulated, so both are 0.
 * CUDA: cudaDeviceGetStreamPriorityRange. cnrtErrorArgsInvalid: either pointer is NULL. */
cnrtRet_t cnrtDeviceGetQueuePriorityRange(int *pMinPriority, int *pMaxPriority);

/* Records / returns how host threads wait (cnrtDeviceFlags_t); no effect on simulated time.
 * CUDA: cudaSetDeviceFlags / cudaGetDeviceFlags.
 * cnrtErrorArgsInvalid: flags >= cnrtDeviceFlagsMaxNum, or pFlags is NULL. */
cnrtRet_t cnrtSetDeviceFlag(uint32_t flags);
cnrtRet_t cnrtGetDeviceFlag(uint32_t *pFlags);

/* ------------------------------------------------------------------------------------------ */
/* Memory management                                                                           */
/* ------------------------------------------------------------------------------------------ */

/* Allocates `bytes` of device memory on the current device; *pPtr is a device address (host
 * dereference faults). Best fit over the config's DRAM capacity; each allocation is aligned to
 * and occupies a multiple of 512 bytes. bytes == 0 succeeds with *pPtr = NULL. CUDA: cudaMalloc.
 * cnrtErrorArgsInvalid: pPtr is NULL.
 * cnrtErrorNoMem: no free range of the rounded size (the device state is unchanged). */
cnrtRet_t cnrtMalloc(void **pPtr, size_t bytes);

/* Frees an allocation from cnrtMalloc. Blocks until the work already queued (on any queue: a
 * queued copy or kernel may still use the memory) has finished, as cudaFree does, then releases
 * the range. NULL: no-op success.
 * CUDA: cudaFree.
 * cnrtErrorArgsInvalid: ptr is not the start of a live allocation: already freed (double free),
 * an interior pointer, a host pointer, or never allocated. */
cnrtRet_t cnrtFree(void *ptr);

/* Allocates `bytes` of pinned (page-locked) host memory, 4096-byte aligned. Copies whose host
 * range lies inside one pinned allocation use the host link's pinned bandwidth
 * (host_link.bandwidth_gbps); other host memory is pageable (host_link.pageable_bandwidth_gbps).
 * bytes == 0 succeeds with *pPtr = NULL. CUDA: cudaMallocHost.
 * cnrtErrorArgsInvalid: pPtr is NULL. cnrtErrorSysNoMem: the host allocation failed. */
cnrtRet_t cnrtHostMalloc(void **pPtr, size_t bytes);

/* Frees memory from cnrtHostMalloc after the work queued on all devices has finished (a queued
 * copy may still read it). NULL: no-op success. CUDA: cudaFreeHost.
 * cnrtErrorArgsInvalid: ptr is not the start of a live cnrtHostMalloc allocation. */
cnrtRet_t cnrtFreeHost(void *ptr);

/* Synchronous copy of `bytes` bytes. Host<->device and device<->device copies run on the default
 * queue of the device that owns the device range (after the work already queued there) and the
 * call returns when the data has landed, with the caller's clock at the copy's simulated end.
 * Host-to-host copies run on the calling thread at once. bytes == 0: success once dir is valid.
 * Time: host link latency + bytes / min(host link, DRAM) for host copies (pageable memory adds
 * the staging stage), DRAM read + write for device copies; see driver/README.md. CUDA: cudaMemcpy.
 * cnrtErrorMemcpyDirectionInvalid: dir is not a cnrtMemTransDir_t value, or the pointers do not
 *   match it (e.g. cnrtMemcpyHostToDev with a host destination or a device source).
 * cnrtErrorArgsInvalid: dst or src is NULL; a pointer lies in device address space but
 *   [ptr, ptr + bytes) is not inside one live allocation (freed, never allocated, or crossing the
 *   end of its allocation); a host range is not mapped memory (or lies in the NULL page);
 *   source and destination ranges overlap.
 * cnrtErrorKernelTrap: a kernel on that default queue faulted earlier (reported once). */
cnrtRet_t cnrtMemcpy(void *dst, void *src, size_t bytes, cnrtMemTransDir_t dir);

/* Asynchronous copy in `queue` (NULL: default queue), ordered after the queue's earlier work.
 * Host source memory is read when the copy starts, host destination memory written when it
 * ends: keep both alive and unchanged until then. The three spellings are one function.
 * CUDA: cudaMemcpyAsync.
 * cnrtErrorMemcpyDirectionInvalid, cnrtErrorArgsInvalid: as cnrtMemcpy.
 * cnrtErrorInvalidResourceHandle: queue is destroyed or not a queue handle. */
cnrtRet_t cnrtMemcpyAsync(void *dst, void *src, size_t bytes, cnrtQueue_t queue,
                          cnrtMemTransDir_t dir);
cnrtRet_t cnrtMemcpyAsync_V2(void *dst, void *src, size_t bytes, cnrtQueue_t queue,
                             cnrtMemTransDir_t dir);
cnrtRet_t cnrtMemcpyAsync_V3(void *dst, void *src, size_t bytes, cnrtQueue_t queue,
                             cnrtMemTransDir_t dir);

/* Synchronous copy from device srcDev to device dstDev, over MLU-Link when the config has one
 * (mlu_link.bandwidth_gbps > 0), otherwise staged through pinned host memory (device-to-host on
 * srcDev, then host-to-device on dstDev). Runs on srcDev's default queue. CUDA: cudaMemcpyPeer.
 * cnrtErrorDeviceInvalid: dstDev or srcDev out of range.
 * cnrtErrorArgsInvalid: dst or src NULL, or its range is not inside a live allocation of the
 *   named device. cnrtErrorKernelTrap: as cnrtMemcpy. */
cnrtRet_t cnrtMemcpyPeer(void *dst, int dstDev, void *src, int srcDev, size_t bytes);

/* Asynchronous cnrtMemcpyPeer in `queue`. CUDA: cudaMemcpyPeerAsync.
 * Codes as cnrtMemcpyPeer, plus cnrtErrorInvalidResourceHandle for a bad queue. */
cnrtRet_t cnrtMemcpyPeerAsync(void *dst, int dstDev, void *src, int srcDev, size_t bytes,
                              cnrtQueue_t queue);

/* Sets `bytes` bytes at device pointer `ptr` to (unsigned char)value, synchronously on the
 * pointer's device's default queue (time: DRAM write of the range). bytes == 0: success.
 * CUDA: cudaMemset.
 * cnrtErrorArgsInvalid: ptr is NULL or [ptr, ptr + bytes) is not inside one live allocation.
 * cnrtErrorKernelTrap: as cnrtMemcpy. */
cnrtRet_t cnrtMemset(void *ptr, int value, size_t bytes);

/* Asynchronous cnrtMemset in `queue`. CUDA: cudaMemsetAsync.
 * Codes as cnrtMemset, plus cnrtErrorInvalidResourceHandle for a bad queue. */
cnrtRet_t cnrtMemsetAsync(void *ptr, int value, size_t bytes, cnrtQueue_t queue);

/* Device memory of the current device: *total = DRAM capacity, *free = total minus the rounded
 * (512-byte multiple) size of every live allocation. Exact at the time of the call.
 * CUDA: cudaMemGetInfo. cnrtErrorArgsInvalid: free or total is NULL. */
cnrtRet_t cnrtMemGetInfo(size_t *free, size_t *total);

/* What the runtime knows about `ptr` (any address, interior pointers included).
 * CUDA: cudaPointerGetAttributes. cnrtErrorArgsInvalid: attr is NULL. */
cnrtRet_t cnrtPointerGetAttributes(cnrtPointerAttributes_t *attr, const void *ptr);

/* ------------------------------------------------------------------------------------------ */
/* Queue management                                                                            */
/* ------------------------------------------------------------------------------------------ */

/* Creates an in-order queue on the current device. Work in one queue runs in order; work in
 * different queues may overlap on the simulated hardware. CUDA: cudaStreamCreate.
 * cnrtErrorArgsInvalid: pQueue is NULL.
 * cnrtErrorNoMem: the device already has cnrtAttrQueueSize (4096) live queues. */
cnrtRet_t cnrtQueueCreate(cnrtQueue_t *pQueue);

/* cnrtQueueCreate with a priority (recorded, not simulated) and flags (must be 0).
 * CUDA: cudaStreamCreateWithPriority.
 * cnrtErrorArgsInvalid: pQueue is NULL or flags != 0. cnrtErrorNoMem: as cnrtQueueCreate. */
cnrtRet_t cnrtQueueCreateWithPriority(cnrtQueue_t *pQueue, unsigned int flags, int priority);

/* The priority a queue was created with (0 for the default queue). CUDA: cudaStreamGetPriority.
 * cnrtErrorArgsInvalid: priority is NULL. cnrtErrorInvalidResourceHandle: bad queue. */
cnrtRet_t cnrtQueueGetPriority(cnrtQueue_t queue, int *priority);

/* Destroys a queue and returns at once; work already queued still runs and the queue's
 * resources go when it has finished. The handle is invalid from now on. CUDA: cudaStreamDestroy.
 * cnrtErrorInvalidResourceHandle: queue is NULL/default (cannot be destroyed), already
 * destroyed, or not a queue handle. */
cnrtRet_t cnrtQueueDestroy(cnrtQueue_t queue);

/* cnrtSuccess if all work queued in `queue` has finished by the caller's clock, else
 * cnrtErrorNotReady. Runs the simulation up to the caller's clock first, so polling always
 * terminates (each call advances the clock). CUDA: cudaStreamQuery.
 * cnrtErrorInvalidResourceHandle: bad queue.
 * cnrtErrorKernelTrap: everything finished, but a kernel in the queue faulted (reported once). */
cnrtRet_t cnrtQueueQuery(cnrtQueue_t queue);

/* Blocks until all work queued in `queue` has finished; the caller's clock moves to its end.
 * CUDA: cudaStreamSynchronize.
 * cnrtErrorInvalidResourceHandle: bad queue.
 * cnrtErrorKernelTrap: a kernel in the queue faulted since the last report (reported once). */
cnrtRet_t cnrtQueueSync(cnrtQueue_t queue);

/* Work queued in `queue` after this call waits until the notifier's most recent placement (at
 * the time of this call) has completed. A notifier never placed: no wait. The notifier and the
 * queue may belong to different devices. CUDA: cudaStreamWaitEvent.
 * cnrtErrorInvalidResourceHandle: bad notifier (NULL included) or bad queue.
 * cnrtErrorArgsInvalid: flag is not CNRT_NOTIFIER_WAIT_DEFAULT (0). */
cnrtRet_t cnrtQueueWaitNotifier(cnrtNotifier_t notifier, cnrtQueue_t queue, unsigned int flag);

/* ------------------------------------------------------------------------------------------ */
/* Notifier management                                                                         */
/* ------------------------------------------------------------------------------------------ */

/* Creates a notifier (with timing) on the current device. CUDA: cudaEventCreate.
 * cnrtErrorArgsInvalid: pNotifier is NULL.
 * cnrtErrorNoMem: the device already has cnrtAttrNotifierSize (65536) live notifiers. */
cnrtRet_t cnrtNotifierCreate(cnrtNotifier_t *pNotifier);

/* Creates a notifier with cnrtNotifierFlags_t flags. CUDA: cudaEventCreateWithFlags.
 * cnrtErrorArgsInvalid: pNotifier is NULL; flags has a bit outside 0x2|0x4|0x8; or
 *   CNRT_NOTIFIER_INTERPROCESS without CNRT_NOTIFIER_DISABLE_TIMING_ALL.
 * cnrtErrorNoMem: as cnrtNotifierCreate. */
cnrtRet_t cnrtNotifierCreateWithFlags(cnrtNotifier_t *pNotifier, unsigned int flags);

/* Destroys a notifier at once; a pending placement still completes (queues waiting on it are
 * released normally). CUDA: cudaEventDestroy.
 * cnrtErrorInvalidResourceHandle: NULL, destroyed or not a notifier handle. */
cnrtRet_t cnrtNotifierDestroy(cnrtNotifier_t notifier);

/* Places the notifier in `queue` (NULL: default queue): it completes when all work queued there
 * before it has finished, and records that simulated time. Placing again replaces the previous
 * placement for queries, waits and timing. CUDA: cudaEventRecord.
 * cnrtErrorInvalidResourceHandle: bad notifier or bad queue. */
cnrtRet_t cnrtPlaceNotifier(cnrtNotifier_t notifier, cnrtQueue_t queue);

/* cnrtPlaceNotifier with cnrtNotifierPlaceFlags_t flags. CUDA: cudaEventRecordWithFlags.
 * cnrtErrorArgsInvalid: flags != CNRT_NOTIFIER_PLACE_DEFAULT (queue capture is not simulated).
 * cnrtErrorInvalidResourceHandle: bad notifier or bad queue. */
cnrtRet_t cnrtPlaceNotifierWithFlags(cnrtNotifier_t notifier, cnrtQueue_t queue, unsigned int flags);

/* cnrtSuccess if the latest placement has completed by the caller's clock (or the notifier was
 * never placed), else cnrtErrorNotReady. CUDA: cudaEventQuery.
 * cnrtErrorInvalidResourceHandle: bad notifier. */
cnrtRet_t cnrtQueryNotifier(cnrtNotifier_t notifier);

/* Blocks until the latest placement has completed (returns at once if never placed); the
 * caller's clock moves to its completion time. CUDA: cudaEventSynchronize.
 * cnrtErrorInvalidResourceHandle: bad notifier. */
cnrtRet_t cnrtWaitNotifier(cnrtNotifier_t notifier);

/* Simulated time from `start`'s to `end`'s completion, in milliseconds (negative when end
 * completed first). CUDA: cudaEventElapsedTime.
 * cnrtErrorArgsInvalid: ms is NULL, or either notifier has CNRT_NOTIFIER_DISABLE_TIMING_SW or
 *   CNRT_NOTIFIER_DISABLE_TIMING_ALL.
 * cnrtErrorInvalidResourceHandle: bad start or end notifier.
 * cnrtErrorCndrvFuncCall: either notifier was never placed (CNRT's documented code).
 * cnrtErrorNotReady: a placement has not completed by the caller's clock. */
cnrtRet_t cnrtNotifierElapsedTime(cnrtNotifier_t start, cnrtNotifier_t end, float *ms);

/* The same interval in microseconds ("hardware time"; in the simulator the same clock).
 * Only CNRT_NOTIFIER_DISABLE_TIMING_ALL disables it. No CUDA twin.
 * Codes as cnrtNotifierElapsedTime (ArgsInvalid: us NULL or DISABLE_TIMING_ALL). */
cnrtRet_t cnrtNotifierDuration(cnrtNotifier_t start, cnrtNotifier_t end, float *us);

/* ------------------------------------------------------------------------------------------ */
/* Execution control                                                                           */
/* ------------------------------------------------------------------------------------------ */

/* Enqueues kernel `kernel` in `queue` (NULL: default queue) on the queue's device, with
 * dim.x * dim.y * dim.z tasks of type `ktype`. In mlusim a kernel is a C++ function defined with
 * MLUSIM_KERNEL (mlusim_ext.h); `kernel` is its handle (`name` or `&name`). args[i] points to
 * the i-th argument; the values are copied before the call returns. `reserved` is ignored.
 * Costs the caller host.launch_overhead_ns. A kernel that faults while running does not fail
 * this call: the fault is reported by the queue's next sync/query as cnrtErrorKernelTrap.
 * CUDA: cudaLaunchKernel.
 * cnrtErrorArgsInvalid: kernel NULL; args NULL or unmapped (or an args[i] NULL or unmapped)
 *   for a kernel with parameters; a dim component is 0 or above maxDim; ktype is not Block/Union1/2/4/8/16;
 *   a UNIONn launch needs more clusters than the device has, or dim.x is not a multiple of the
 *   union group size (n * cores per cluster).
 * cnrtErrorInvalidKernel: kernel is not a registered kernel handle.
 * cnrtErrorInvalidResourceHandle: bad queue. */
cnrtRet_t cnrtInvokeKernel(const void *kernel, cnrtDim3_t dim, cnrtFunctionType_t ktype,
                           void **args, size_t reserved, cnrtQueue_t queue);

/* Enqueues a call of fn(userData) in `queue`: it runs, on a runtime-owned host thread, once the
 * earlier work in the queue has finished; later work waits until fn returns. fn may call this
 * API (its thread's clock starts at the simulated time it was started), but must not wait for
 * work queued after it. CUDA: cudaLaunchHostFunc.
 * cnrtErrorArgsInvalid: fn is NULL. cnrtErrorInvalidResourceHandle: bad queue. */
cnrtRet_t cnrtInvokeHostFunc(cnrtQueue_t queue, cnrtHostFn_t fn, void *userData);

/* ------------------------------------------------------------------------------------------ */
/* Versions                                                                                    */
/* ------------------------------------------------------------------------------------------ */

/* The driver version mlusim reports: 5.10.0 (a CNDrv release matching CNRT 6.x).
 * CUDA: cudaDriverGetVersion. cnrtErrorArgsInvalid: any pointer is NULL. */
cnrtRet_t cnrtDriverGetVersion(int *major, int *minor, int *patch);

/* The CNRT version this library implements: CNRT_MAJOR/MINOR/PATCH_VERSION (6.7.0).
 * CUDA: cudaRuntimeGetVersion. cnrtErrorArgsInvalid: any pointer is NULL. */
cnrtRet_t cnrtGetLibVersion(int *major, int *minor, int *patch);

/* ------------------------------------------------------------------------------------------ */
/* Errors                                                                                      */
/* ------------------------------------------------------------------------------------------ */

/* Name of a code ("cnrtErrorArgsInvalid"); "cnrtErrorUnknown" for values that are not codes.
 * Never NULL; static storage. No runtime start, no clock cost. CUDA: cudaGetErrorName. */
const char *cnrtGetErrorName(cnrtRet_t error);

/* One-line description of a code; never NULL; static storage. CUDA: cudaGetErrorString. */
const char *cnrtGetErrorStr(cnrtRet_t error);

/* The calling thread's last error (cnrtSuccess if none), and resets it to cnrtSuccess.
 * No clock cost. CUDA: cudaGetLastError. */
cnrtRet_t cnrtGetLastError(void);

/* The calling thread's last error, without resetting it. CUDA: cudaPeekAtLastError. */
cnrtRet_t cnrtPeekAtLastError(void);

/* ------------------------------------------------------------------------------------------ */
/* Legacy spellings kept by CNRT 6.x                                                           */
/* ------------------------------------------------------------------------------------------ */
#define CNRT_RET_SUCCESS cnrtSuccess
#define CNRT_FUNC_TYPE_BLOCK ((cnrtFunctionType_t)1)
#define CNRT_FUNC_TYPE_UNION1 ((cnrtFunctionType_t)4)
#define CNRT_FUNC_TYPE_UNION2 ((cnrtFunctionType_t)8)
#define CNRT_FUNC_TYPE_UNION4 ((cnrtFunctionType_t)16)
#define CNRT_FUNC_TYPE_UNION8 ((cnrtFunctionType_t)32)
#define CNRT_FUNC_TYPE_UNION16 ((cnrtFunctionType_t)64)
#define CNRT_MEM_TRANS_DIR_HOST2DEV ((cnrtMemTransDir_t)0)
#define CNRT_MEM_TRANS_DIR_DEV2DEV ((cnrtMemTransDir_t)1)
#define CNRT_MEM_TRANS_DIR_DEV2HOST ((cnrtMemTransDir_t)2)
#define CNRT_MEM_TRANS_DIR_HOST2HOST ((cnrtMemTransDir_t)3)
#define CNRT_MEM_TRANS_DIR_PEER2PEER ((cnrtMemTransDir_t)4)
#define CNRT_MEM_TRANS_DIR_NODIR ((cnrtMemTransDir_t)5)

#if defined(__cplusplus)
}
#endif

/* CNRT_CHECK(call): prints the failing call's error name and location, then exits(-1). Define
 * CNRT_CHECK before including this header to replace it. */
#ifndef CNRT_CHECK
#include <stdio.h>
#include <stdlib.h>
#define CNRT_CHECK(val)                                                                     \
  do {                                                                                      \
    cnrtRet_t cnrt_check_ret_ = (val);                                                      \
    if (cnrt_check_ret_ != cnrtSuccess) {                                                   \
      fprintf(stdout, "[%s:%d] CNRT error, code=%d(%s) \"%s\"\n", __FILE__, __LINE__,       \
              (int)cnrt_check_ret_, cnrtGetErrorName(cnrt_check_ret_), #val);               \
      exit(-1);                                                                             \
    }                                                                                       \
  } while (0)
#endif

#endif /* MLUSIM_CNRT_H_ */
