/*
 * mlusim_ext.h: what only a simulator has. Configs, reset, traces, statistics, per-kernel cycle
 * records, virtual clocks, error messages, and the kernel registration that lets C programs
 * launch C++ kernels through cnrtInvokeKernel.
 *
 * Same conventions as cnrt.h: thread-safe, cnrtRet_t codes, the calling thread's last error and
 * message are set on failure. These calls cost no simulated host time. Times are simulated
 * nanoseconds (or picoseconds, *Ps) since the epoch: the moment the current config was loaded.
 */
#ifndef MLUSIM_EXT_H_
#define MLUSIM_EXT_H_

#include <stddef.h>
#include <stdint.h>

#include "cnrt.h"

#if defined(__cplusplus)
extern "C" {
#endif

/* ---- configs and reset ---------------------------------------------------------------------
 * Without these calls the runtime loads $MLUSIM_CONFIG (a preset name such as "tiny" or a YAML
 * path) or, unset, the default preset "mlu370-x4", on the first API call. */

/* Replaces the simulated system by one built from `name_or_path` (preset name or YAML file).
 * Waits until all queued work has finished, then frees all device memory, destroys all queues
 * and notifiers (every handle becomes invalid), starts a new epoch (all host clocks restart at 0
 * and every thread's current device is 0) with new devices, whose statistics and kernel records
 * start empty. A trace being recorded goes on recording.
 * Pinned host memory stays valid. Not to be called while other threads use the runtime.
 * cnrtErrorArgsInvalid: name_or_path is NULL, or the config is invalid (missing file, unknown
 *   key, bad value): mlusimGetLastErrorMessage() has the loader's "<file>: <key>: <reason>".
 * cnrtErrorIllegalState: a host function is still running (called from one, or concurrently). */
cnrtRet_t mlusimLoadConfig(const char *name_or_path);

/* mlusimLoadConfig with `count` overrides "key=value" (e.g. "devices=2",
 * "mlu_link.bandwidth_gbps=50"), applied after the preset's `extends:` chain.
 * cnrtErrorArgsInvalid: as mlusimLoadConfig, or count > 0 with overrides NULL, or an override
 *   that is NULL, has no '=', or names an unknown key / invalid value. */
cnrtRet_t mlusimLoadConfigWithOverrides(const char *name_or_path, const char *const *overrides,
                                        size_t count);

/* mlusimLoadConfig of the current config (with its overrides): a fresh system. */
cnrtRet_t mlusimReset(void);

/* Name of the loaded config (its `name` key) into buf (truncated, always NUL-terminated).
 * cnrtErrorArgsInvalid: buf is NULL or size is 0. */
cnrtRet_t mlusimGetConfigName(char *buf, size_t size);

/* Timing-only mode on all devices: kernels skip floating-point arithmetic (results are garbage)
 * with cycle counts identical to functional mode. Copies still move data. */
cnrtRet_t mlusimSetTimingOnly(int enable);

/* ---- clocks --------------------------------------------------------------------------------- */

/* The calling thread's virtual clock. cnrtErrorArgsInvalid: pointer is NULL. */
cnrtRet_t mlusimGetHostTime(double *ns);
cnrtRet_t mlusimGetHostTimePs(uint64_t *ps);
/* How far the simulation has run. cnrtErrorArgsInvalid: pointer is NULL. */
cnrtRet_t mlusimGetDeviceTime(double *ns);
cnrtRet_t mlusimGetDeviceTimePs(uint64_t *ps);

/* ---- errors --------------------------------------------------------------------------------- */

/* The sentence describing the calling thread's last failure (including a kernel's fault message
 * when a sync returned cnrtErrorKernelTrap); "" if none. Valid until the thread's next call. */
const char *mlusimGetLastErrorMessage(void);

/* Whether kernel faults are also printed to stderr when they happen (default 1). */
cnrtRet_t mlusimSetFaultPrinting(int enable);

/* ---- traces (Chrome trace-event JSON, see traces/README.md) --------------------------------- */

typedef enum {
  MLUSIM_TRACE_OFF = 0,
  MLUSIM_TRACE_OPS = 1,        /* kernels, copies, queue operations, allocator counters */
  MLUSIM_TRACE_INTRINSICS = 2  /* + per-engine intrinsics and per-core tasks (large) */
} mlusimTraceLevel_t;

/* Drops recorded events and starts recording at `level`.
 * cnrtErrorArgsInvalid: level is not a mlusimTraceLevel_t value. */
cnrtRet_t mlusimTraceBegin(mlusimTraceLevel_t level);
/* Stops recording; the events are kept for mlusimTraceWrite. */
cnrtRet_t mlusimTraceEnd(void);
/* Writes the recorded events to `path` (parent folders created). Recording, if on, goes on.
 * cnrtErrorArgsInvalid: path is NULL or empty. cnrtErrorSys: the file cannot be written. */
cnrtRet_t mlusimTraceWrite(const char *path);

/* Advances the calling thread's simulated host clock by `ns`: host work the simulator does not
 * see (a transport waiting for another process, CPU compute). Inside a host function
 * (cnrtInvokeHostFunc) the function's operation then completes that much later, so the work
 * queued after it starts then. Thread safety: any thread (its own clock).
 * cnrtErrorArgsInvalid: ns negative or not finite. cnrtErrorNotSupport: the clock would pass 2^64 ps. */
cnrtRet_t mlusimHostAdvance(double ns);

/* Copies `bytes` between host memory and one live device allocation of this process at once:
 * no simulated time, no traffic in the statistics, ordered with no queue (the caller orders it,
 * e.g. from a host function queued after the work that produced the data). For transports that
 * model their own time: torch_mlu's "cncl" process group moves tensors between rank processes
 * with it and charges the interconnect model's time instead. dir: cnrtMemcpyHostToDev or
 * cnrtMemcpyDevToHost. Thread safety: any thread (runs on the simulation thread).
 * cnrtErrorArgsInvalid: dst or src NULL, or the device range is not inside a live allocation.
 * cnrtErrorMemcpyDirectionInvalid: another dir. bytes == 0: success. */
cnrtRet_t mlusimMemcpyNoTime(void *dst, const void *src, size_t bytes, cnrtMemTransDir_t dir);

/* When the notifier's latest placement completes (or the caller's clock, if later), in ns on the
 * host clock's scale, without the caller waiting: the simulation runs until then, the caller's
 * clock stays where it was, and no host sync is counted. For models that need a time in the
 * simulated future, such as torch_mlu's "cncl" process group finding when a rank's stream reaches
 * a collective while its host keeps queuing work. Side effect: the simulation is then ahead of the
 * caller, so work the caller queues on an idle queue afterwards starts no earlier than that time
 * (work on busy queues is unaffected: it runs after what is queued there anyway).
 * Thread safety: any thread. cnrtErrorArgsInvalid: ns NULL. cnrtErrorInvalidResourceHandle: bad
 * notifier. cnrtErrorIllegalState: never placed. */
cnrtRet_t mlusimNotifierPeek(cnrtNotifier_t notifier, double *ns);

/* The device a queue belongs to (NULL: the calling thread's current device, whose default queue
 * NULL names). No host time. For libraries that must check a queue against a device (CNCL).
 * cnrtErrorArgsInvalid: device is NULL. cnrtErrorInvalidResourceHandle: queue is not a live queue.
 * Thread safety: any thread. */
cnrtRet_t mlusimQueueGetDevice(cnrtQueue_t queue, int *device);

/* Queues a modelled wait: an operation that completes at `ns` on the host clock's scale
 * (mlusimGetHostTime), or when the queue reaches it if that is later; later work in the queue
 * starts after it. For libraries that compute a time with their own model, such as torch_mlu's
 * cncl collectives (the end of an all-reduce across processes). Traces show it as a span named
 * `name` (copied; at most 127 bytes kept) on the queue's track. No host function runs, and the
 * simulation does not advance to `ns` on its own: it gets there when a host thread blocks or
 * queries, or on the way to later work, so work queued meanwhile on other queues starts at its own
 * submission time. Costs the caller one API call of host time. Thread safety: any thread.
 * cnrtErrorArgsInvalid: ns negative or not finite; name NULL or empty.
 * cnrtErrorInvalidResourceHandle: queue is not a live queue. */
cnrtRet_t mlusimQueueWaitUntil(cnrtQueue_t queue, double ns, const char *name);

/* ---- statistics ----------------------------------------------------------------------------- */

#define MLUSIM_MEM_LEVEL_COUNT 5 /* indices: 0 host, 1 GDRAM, 2 SRAM, 3 NRAM, 4 WRAM */
#define MLUSIM_ENGINE_COUNT 6    /* 0 scalar, 1 VFU, 2 TFU, 3 IO-DMA, 4 Move-DMA, 5 MemCore-DMA */

typedef struct mlusimDeviceStats {
  double elapsed_ns;               /* simulated time since the stats epoch */
  uint64_t kernels;                /* kernel launches completed */
  uint64_t faulted_kernels;
  uint64_t read_bytes[MLUSIM_MEM_LEVEL_COUNT];  /* bytes read from each memory level */
  uint64_t write_bytes[MLUSIM_MEM_LEVEL_COUNT]; /* bytes written to each memory level */
  double engine_busy_ns[MLUSIM_ENGINE_COUNT];   /* summed over all cores */
  uint64_t engine_intrinsics[MLUSIM_ENGINE_COUNT];
  uint64_t engine_cycles[MLUSIM_ENGINE_COUNT];  /* compute engines: cycle formula totals */
  uint64_t allocated_bytes;        /* live device memory, rounded as cnrtMemGetInfo counts it */
  uint64_t peak_allocated_bytes;   /* since the config was loaded */
  uint64_t live_allocations;
  double epoch_ns;                 /* when the stats epoch began, on the host clocks' scale (ns since
                                    * the config was loaded); trace timestamps of the device count
                                    * from it, so host time T shows at T - epoch_ns in a trace */
  uint64_t host_syncs;             /* blocking calls that waited for this device's work (syncs,
                                    * blocking copies, notifier waits, frees of busy memory) */
  double host_sync_wait_ns;        /* simulated host time those calls spent waiting */
  uint64_t l2_hit_bytes;           /* of read_bytes[1] (GDRAM), the bytes the L2 served (config key
                                    * l2.cache) */
  uint64_t l2_overfetch_bytes;     /* bytes the L2 fetched from DRAM beyond those read (missing lines
                                    * come whole) */
  uint64_t dram_bytes;             /* bytes across the DRAM channels: read_bytes[1] + write_bytes[1]
                                    * - l2_hit_bytes + l2_overfetch_bytes */
} mlusimDeviceStats_t;

/* Statistics of `device`. cnrtErrorArgsInvalid: stats NULL. cnrtErrorDeviceInvalid: bad device. */
cnrtRet_t mlusimGetDeviceStats(int device, mlusimDeviceStats_t *stats);
/* Starts a new stats epoch on `device`: counters and kernel records cleared (allocator figures
 * are kept). cnrtErrorDeviceInvalid: bad device. */
cnrtRet_t mlusimResetStats(int device);

/* Test-only fault injection: the `nth` kernel DMA on `device` from now (1 = the next) lands with
 * one bit flipped; 0 disarms. Proves that an op's results come out of the simulated memories.
 * Thread safety: any thread. cnrtErrorDeviceInvalid: bad device. */
cnrtRet_t mlusimInjectDmaBitFlip(int device, unsigned long long nth);
/* Drops every line of `device`'s L2 cache (config key l2.cache; nothing to drop without it), so the
 * GDRAM reads that follow miss, as on a cold start; what benchmarks do before timing one op
 * from a cold cache (as CUDA benchmarks overwrite the L2). Takes effect at the device's current
 * simulated time: sync the queues first, or work still queued runs with the cold cache. Costs no
 * simulated time. Thread safety: any thread. cnrtErrorDeviceInvalid: bad device. */
cnrtRet_t mlusimFlushL2(int device);
/* Test-only fault injection: the `nth` kernel launched on `device` from now (1 = the next) traps
 * on every core as soon as it runs ("injected kernel fault"), as a faulting kernel would: the
 * fault is reported by the queue's next sync or query as cnrtErrorKernelTrap, with the kernel's
 * name and its launch tag; later work runs normally. 0 disarms. Counted at launch time, on any
 * queue of the device. Thread safety: any thread. cnrtErrorDeviceInvalid: bad device. */
cnrtRet_t mlusimInjectKernelFault(int device, unsigned long long nth);
/* The device's statistics as JSON (sim DeviceStats::to_json) into buf; *needed (if not NULL)
 * gets the length + 1. cnrtErrorArgsInvalid: buf NULL with size > 0. cnrtErrorDeviceInvalid. */
cnrtRet_t mlusimGetStatsJson(int device, char *buf, size_t size, size_t *needed);

/* One completed kernel launch. Times are simulated ns since the epoch (the clock of
 * mlusimGetHostTime and of notifiers). */
typedef struct mlusimKernelRecord {
  char name[128];
  char tag[128];          /* the launching thread's launch tag (mlusimSetLaunchTag), "" if none */
  uint64_t id;            /* launch sequence number on its device */
  cnrtDim3_t dim;
  cnrtFunctionType_t type;
  double submit_ns;
  double start_ns;        /* first task started */
  double end_ns;          /* last task finished */
  uint64_t cycles;        /* (end - start) in core clock cycles */
  int faulted;
  char fault[512];        /* fault message (truncated), "" when it ran clean */
  uint64_t macs;          /* TFU multiply-accumulates */
  uint64_t vector_elements;
  /* TFU and VFU (vec_matmul) MACs by input dtype, indexed like the simulator's DType:
   * 0 fp32, 1 fp16, 2 int8, 3 int32, 4 int64, 5 bool, 6 fp64, 7 bf16. */
  uint64_t macs_by_dtype[8];
  uint64_t read_bytes[MLUSIM_MEM_LEVEL_COUNT];  /* bytes this kernel read from each memory level */
  uint64_t write_bytes[MLUSIM_MEM_LEVEL_COUNT]; /* and wrote */
  uint64_t l2_hit_bytes;        /* of read_bytes[1] (GDRAM), the bytes the L2 served (l2.cache) */
  uint64_t l2_overfetch_bytes;  /* fetched from DRAM beyond those read (as in mlusimDeviceStats_t) */
  uint64_t dram_bytes;          /* this kernel's bytes across the DRAM channels (as in mlusimDeviceStats_t) */
} mlusimKernelRecord_t;

/* Tags the kernels the calling host thread launches from now on: the tag is copied into their
 * kernel records and shown as "op" in their trace events, so reports can group kernels by the
 * framework op that launched them (as NVTX ranges do for CUDA). NULL or "" clears it; at most
 * 127 bytes are kept. Costs no simulated time. Thread safety: per host thread. Never fails. */
cnrtRet_t mlusimSetLaunchTag(const char *tag);

/* ---- Activity records (the twin of CUPTI's activity API, for profilers) ----
 * While recording is on, every kernel, copy and memset that completes, and every blocking host
 * call that waited for device work, leaves one record. Times are simulated ns on the host clocks'
 * scale (as mlusimGetHostTime): device work from start to end on its device; a sync from the
 * calling host thread's clock at the call to its clock when the wait was over. */
typedef enum {
  mlusimActivityKernel = 0,
  mlusimActivityMemcpy = 1,   /* host<->device, device<->device, peer copies */
  mlusimActivityMemset = 2,
  mlusimActivitySync = 3,     /* a blocking host call (name = the API function) */
} mlusimActivityKind_t;

typedef struct mlusimActivity {
  mlusimActivityKind_t kind;
  int device;
  uint64_t queue;             /* queue handle value of the work (0: the device's default queue) */
  uint64_t correlation_id;    /* the submitting thread's innermost mlusimPushCorrelationId, 0 if none */
  uint64_t host_thread;       /* OS thread id that submitted the work or made the blocking call */
  char name[128];             /* kernel name, copy label, or API function */
  char tag[128];              /* the launch tag (mlusimSetLaunchTag) of the submitting thread */
  double start_ns;
  double end_ns;
  uint64_t bytes;             /* copies and memsets */
} mlusimActivity_t;

/* Starts (enable != 0: earlier records are discarded) or stops recording. At most 4 Mi records are
 * kept; later ones are counted as dropped. Thread safety: any thread. Never fails. */
cnrtRet_t mlusimActivityEnable(int enable);
/* Moves up to `capacity` of the oldest records into `records` (removing them) and sets *count;
 * *dropped (if not NULL) gets the records lost to the limit since recording started.
 * cnrtErrorArgsInvalid: count NULL, or records NULL with capacity > 0. */
cnrtRet_t mlusimActivityRead(mlusimActivity_t *records, size_t capacity, size_t *count, uint64_t *dropped);
/* Per host thread stack of external correlation ids (CUPTI's cuptiActivityPushExternalCorrelationId):
 * work the thread submits carries the innermost id, so a profiler can tie each kernel and copy to
 * the framework op that launched it. Pop on an empty stack is cnrtErrorIllegalState. */
cnrtRet_t mlusimPushCorrelationId(uint64_t id);
cnrtRet_t mlusimPopCorrelationId(void);

/* Number of kernel records of `device` since its stats epoch.
 * cnrtErrorArgsInvalid: count NULL. cnrtErrorDeviceInvalid: bad device. */
cnrtRet_t mlusimGetKernelRecordCount(int device, size_t *count);
/* Record `index` (0 = oldest). cnrtErrorArgsInvalid: record NULL or index >= count.
 * cnrtErrorDeviceInvalid: bad device. */
cnrtRet_t mlusimGetKernelRecord(int device, size_t index, mlusimKernelRecord_t *record);

/* ---- version -------------------------------------------------------------------------------- */

/* mlusim's own version (the project version). cnrtErrorArgsInvalid: any pointer NULL. */
cnrtRet_t mlusimGetVersion(int *major, int *minor, int *patch);

/* ---- kernels ---------------------------------------------------------------------------------
 * A kernel handle is the address of a registered mlusimKernel_t object. Kernels are written in
 * C++ (MLUSIM_KERNEL below); C code declares them with MLUSIM_DECLARE_KERNEL(name) and passes
 * `name` (or `&name`) to cnrtInvokeKernel. */
typedef struct mlusimKernel {
  const char *name;
  uint32_t magic;
} mlusimKernel_t;
#define MLUSIM_KERNEL_MAGIC 0x4d4c4b4eu /* "MLKN" */

#if defined(__cplusplus)
#define MLUSIM_DECLARE_KERNEL(name) extern "C" const mlusimKernel_t name[1]
#else
#define MLUSIM_DECLARE_KERNEL(name) extern const mlusimKernel_t name[1]
#endif

#if defined(__cplusplus)
} /* extern "C" */

/* ---- C++ only: defining kernels ---------------------------------------------------------------
 *
 *   #include <mlusim_ext.h>
 *   #include <mlusim/sim/kernel_api.h>
 *   MLUSIM_KERNEL(vector_add, (const float* a, const float* b, float* c, int n)) {
 *     using namespace mlusim::dev;   // taskId(), memcpy, vec_binary, ...
 *     ...
 *   }
 *
 * defines a kernel function with those parameters, registers it with the runtime at static
 * initialisation, and defines the C symbol `vector_add` (the handle). cnrtInvokeKernel copies
 * each argument from args[i] as the parameter's type (decayed): pass pointers to values of
 * exactly those types. Device pointers arrive as the raw addresses cnrtMalloc returned; wrap
 * them as mlusim::dev::Gdram<T>(ptr) inside the kernel. */

#include <cstddef>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace mlusim::driver {

// Builds the task body of one launch from cnrtInvokeKernel's argument array (already checked:
// `arity` non-NULL entries).
using KernelBinder = std::function<std::function<void()>(void** args)>;

// Registers `handle` (the address of a mlusimKernel_t) as kernel `name` taking `arity`
// arguments. Returns true. Registering a handle twice replaces the first registration.
bool register_kernel(const void* handle, const char* name, std::size_t arity, KernelBinder binder);

template <class... A, std::size_t... I>
std::function<void()> bind_kernel_args(void (*fn)(A...), void** args, std::index_sequence<I...>) {
  std::tuple<std::decay_t<A>...> values{*static_cast<const std::decay_t<A>*>(args[I])...};
  return [fn, values]() { std::apply(fn, values); };
}

template <class... A>
bool register_kernel_function(const void* handle, const char* name, void (*fn)(A...)) {
  return register_kernel(handle, name, sizeof...(A), [fn](void** args) {
    return bind_kernel_args(fn, args, std::index_sequence_for<A...>{});
  });
}

}  // namespace mlusim::driver

#include "mlusim/sim/config.h"

namespace mlusim::driver {

// The hardware config the runtime has loaded (a copy), for C++ libraries whose planners need
// figures beyond cnrtDeviceProp_t (TFU arrays, DMA rates). Thread safety: any thread; starts the
// runtime if needed. Throws std::runtime_error naming the cnrt error if the runtime cannot start.
sim::HardwareConfig loaded_config();

// Launches a C++ callable as a kernel, for C++ libraries that build kernel bodies at run time
// (libmlu): the same queueing, validation and error codes as cnrtInvokeKernel (no
// cnrtErrorInvalidKernel; ArgsInvalid for an empty body or name).
cnrtRet_t invoke_kernel_body(const std::string& name, std::function<void()> body, cnrtDim3_t dim,
                             cnrtFunctionType_t type, cnrtQueue_t queue);

// Runs `issue` (which makes cnrt calls on this thread) as one batch of host work: the batch first
// advances this thread's clock by `launches` x host.launch_overhead_ns (so the work it queues
// starts after them, as a kernel starts after its launch), then the calls inside cost no host
// time of their own (host.api_call_ns, host.launch_overhead_ns are waived). For libraries
// that express one device-side program as many driver operations (CNCL's collectives: peer
// copies, reduction kernels and notifiers for what the real library launches as one kernel per
// rank), so the host pays what launching that program costs, not one API call per step.
// Batches nest (only the outermost charges). Returns what `issue` returns; an exception from
// `issue` propagates after the batch flag is restored. Thread safety: any thread (per-thread state).
cnrtRet_t run_as_batch(unsigned launches, const std::function<cnrtRet_t()>& issue);

}  // namespace mlusim::driver

#define MLUSIM_KERNEL(name, params)                                                        \
  static void mlusim_kernel_body_##name params;                                            \
  extern "C" const mlusimKernel_t name[1] = {{#name, MLUSIM_KERNEL_MAGIC}};                \
  [[maybe_unused]] static const bool mlusim_kernel_registered_##name =                     \
      ::mlusim::driver::register_kernel_function(name, #name, &mlusim_kernel_body_##name); \
  static void mlusim_kernel_body_##name params

#endif /* __cplusplus */

#endif /* MLUSIM_EXT_H_ */
