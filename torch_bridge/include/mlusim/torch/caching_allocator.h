// The device caching allocator of the PyTorch bridge, modelled on PyTorch 1.13's CUDA caching
// allocator (c10/cuda/CUDACachingAllocator.cpp) and written against the CNRT driver alone: no
// torch dependency here, so it is unit-tested with GoogleTest against the simulated driver
// (tests/torch_bridge/allocator). The c10::Allocator registered for PrivateUse1 is a thin adapter
// over it (torch_bridge/src/backend/allocator_adapter.cpp).
//
// Behaviour (CUDA's, see torch_bridge/README.md for the long version):
//  - Requests are rounded up to 512 bytes (kMinBlockSize), or to a power-of-two division with
//    roundup_power2_divisions. Rounded sizes <= 1 MiB come from the small pool, the rest from the
//    large pool; every block belongs to the queue (stream) it was allocated on.
//  - Segments come from cnrtMalloc on demand: 2 MiB for small requests, 20 MiB for large requests
//    below 10 MiB, otherwise the request rounded up to 2 MiB. A segment is split into blocks;
//    freed blocks merge with free neighbours. Large blocks of max_split_size or more are never
//    split. Reserved bytes always equal the live bytes this allocator holds from the driver.
//  - Allocation: best fit among the free blocks of the same pool and queue; else a new segment;
//    else free cached blocks and retry (num_alloc_retries); else OutOfMemoryError (num_ooms).
//  - record_stream(ptr, queue): a block used on another queue is reused only after the work
//    queued there before its free has finished (a notifier per extra queue).
//  - Statistics with torch.cuda.memory_stats' keys, counting 512-rounded block sizes.
//  - With caching off every block is its own segment, released to the driver when freed.
//
// Thread safety: all member functions may be called from any thread (one mutex). Device
// ordinals are the driver's; device memory is taken from the device named in each call,
// whatever the calling thread's current device (it is restored before returning).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <cnrt.h>

namespace mlusim::bridge {

// CUDA's constants (CUDACachingAllocator.cpp, 1.13), same names.
constexpr std::size_t kMinBlockSize = 512;            // every block size is a multiple of this
constexpr std::size_t kSmallSize = 1048576;           // largest "small" request (1 MiB)
constexpr std::size_t kSmallBuffer = 2097152;         // small-pool segment size (2 MiB)
constexpr std::size_t kLargeBuffer = 20971520;        // segment size for large requests < 10 MiB
constexpr std::size_t kMinLargeAlloc = 10485760;      // requests from here on get their own size
constexpr std::size_t kRoundLarge = 2097152;          // ... rounded up to 2 MiB

// Tuning, from MLU_ALLOC_CONF (same syntax as PYTORCH_CUDA_ALLOC_CONF: "key:value,key:value").
struct AllocatorConfig {
  // Blocks of this size or more are never split (and only reused by requests within 20 MiB of
  // their size). Default: unlimited. Key max_split_size_mb (MiB, > 20).
  std::size_t max_split_size = SIZE_MAX;
  // Fraction of the allowed memory above which cached, unsplit large blocks are released,
  // oldest first, before a new segment is taken. Active only with a memory fraction set
  // (set_memory_fraction), as in PyTorch. 0 = off. Key garbage_collection_threshold (0 < v < 1).
  double garbage_collection_threshold = 0.0;
  // Round requests above 512 * divisions bytes up to one of `divisions` equal steps between
  // two powers of two. 0 = off. Key roundup_power2_divisions (a power of two).
  std::size_t roundup_power2_divisions = 0;
  // false: no caching; every block is a segment of its own, returned to the driver when freed.
  // Key caching (True/False); environment variable MLU_NO_MEMORY_CACHING=1 also turns it off.
  bool caching = true;

  // Parses the MLU_ALLOC_CONF syntax. Empty text = defaults. Throws std::invalid_argument with a
  // message naming the option and the reason for unknown keys, missing or malformed values and
  // out-of-range values.
  static AllocatorConfig parse(const std::string& text);
  // parse($MLU_ALLOC_CONF), then MLU_NO_MEMORY_CACHING=1 (0 or unset: no effect; anything else is
  // an error). Errors name the variable.
  static AllocatorConfig from_environment();
  // The settings in MLU_ALLOC_CONF syntax (only keys that differ from the defaults).
  std::string str() const;
};

// Size a request of `size` bytes is rounded up to (>= 512, multiple of 512).
std::size_t round_size(std::size_t size, const AllocatorConfig& config);
// Size of the segment taken from the driver for a rounded request (CUDA's get_allocation_size).
std::size_t segment_size_for(std::size_t rounded_size);
// Whether a rounded size is served by the small pool.
inline bool is_small_request(std::size_t rounded_size) { return rounded_size <= kSmallSize; }

// One statistic, as PyTorch's: current value, its peak, and the sums of increases and decreases.
struct Stat {
  std::int64_t current = 0, peak = 0, allocated = 0, freed = 0;
  void update(std::int64_t amount);
};
enum StatType : std::size_t { kAggregateStat = 0, kSmallPoolStat = 1, kLargePoolStat = 2, kStatTypeCount = 3 };
using StatArray = std::array<Stat, kStatTypeCount>;

struct DeviceStats {
  StatArray allocation;            // blocks handed out and not yet freed
  StatArray segment;               // segments held from the driver
  StatArray active;                // allocated blocks + freed blocks still in use by a queue
  StatArray inactive_split;        // free blocks inside split segments (not releasable)
  StatArray allocated_bytes, reserved_bytes, active_bytes, inactive_split_bytes;
  StatArray requested_bytes;       // the callers' unrounded sizes of the allocated blocks
  Stat oversize_allocations, oversize_segments;  // blocks / segments >= max_split_size
  std::int64_t num_alloc_retries = 0;  // driver mallocs that failed and were retried after freeing the cache
  std::int64_t num_ooms = 0;           // OutOfMemoryError thrown
  std::int64_t num_device_alloc = 0;   // cnrtMalloc calls that succeeded (torch 2.x key)
  std::int64_t num_device_free = 0;    // cnrtFree calls (torch 2.x key)
  std::int64_t max_split_size = -1;    // the setting; -1 = unlimited (as torch reports SIZE_MAX)

  // Flat keys and values exactly as torch.cuda.memory_stats() names them
  // ("allocated_bytes.all.current", "num_ooms", ...), sorted by key.
  std::vector<std::pair<std::string, std::int64_t>> flatten() const;
};

// Thrown when a request cannot be served even after freeing every cached block.
class OutOfMemoryError : public std::runtime_error {
 public:
  OutOfMemoryError(const std::string& message, int device, std::size_t requested, std::size_t total,
                   std::size_t free, std::size_t allocated, std::size_t reserved)
      : std::runtime_error(message), device(device), requested(requested), total(total), free(free),
        allocated(allocated), reserved(reserved) {}
  int device;
  std::size_t requested, total, free, allocated, reserved;
};

// What memory_snapshot() reports per segment (torch.cuda.memory_snapshot's fields).
struct BlockInfo {
  std::uintptr_t address = 0;
  std::size_t size = 0;
  std::size_t requested_size = 0;  // the caller's size while allocated, else 0
  bool allocated = false;  // handed out and not freed
  bool active = false;     // allocated, or freed but still used by a queue
};
struct SegmentInfo {
  int device = 0;
  std::uintptr_t address = 0;
  std::size_t total_size = 0, allocated_size = 0, active_size = 0;
  cnrtQueue_t queue = nullptr;
  bool large = false;
  std::vector<BlockInfo> blocks;  // in address order
};

// Allocator events, for traces. Reported with the allocator's lock held: a sink must be quick
// and must not call the allocator.
enum class AllocatorEventKind { kMalloc, kFree, kSegmentAlloc, kSegmentFree, kOutOfMemory };
struct AllocatorEvent {
  AllocatorEventKind kind;
  int device;
  std::uintptr_t address;   // 0 for kOutOfMemory
  std::size_t size;         // block / segment size (rounded), or the request for kOutOfMemory
  cnrtQueue_t queue;
  std::int64_t allocated_bytes;  // device totals after the event
  std::int64_t reserved_bytes;
};
using AllocatorEventSink = std::function<void(const AllocatorEvent&)>;

class CachingAllocator {
 public:
  explicit CachingAllocator(AllocatorConfig config = AllocatorConfig());
  // Does not return memory to the driver (which may already be gone at exit).
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block handed out: its device pointer and the handle that gives it back.
  struct Allocation {
    void* ptr = nullptr;
    void* handle = nullptr;
  };

  // `size` bytes on `device` for use on `queue` (NULL: the device's default queue). size 0 gives
  // {nullptr, nullptr}. Throws OutOfMemoryError, or std::runtime_error for a driver failure other
  // than cnrtErrorNoMem (bad device, runtime not started).
  Allocation allocate(int device, std::size_t size, cnrtQueue_t queue);
  // Gives a block back (handle from allocate; nullptr is a no-op). A handle allocated before
  // abandon() is accepted and ignored. Returning memory to the driver can fail only at process
  // exit; such failures are ignored.
  void release(void* handle) noexcept;

  // allocate(...).ptr / release by device pointer (current blocks only: std::invalid_argument
  // for a pointer this allocator did not hand out or already took back).
  void* malloc(int device, std::size_t size, cnrtQueue_t queue) { return allocate(device, size, queue).ptr; }
  void free(void* ptr);

  // Marks the block starting at `ptr` as used on `queue` too (torch's record_stream). A pointer
  // that is not a live block (e.g. from before abandon()) is ignored.
  void record_stream(void* ptr, cnrtQueue_t queue);
  // The block containing `ptr` (interior pointers too): {base, size}, or {nullptr, 0}.
  std::pair<void*, std::size_t> find(const void* ptr) const;

  // Waits for pending queue uses, then returns every unsplit cached segment to the driver.
  void empty_cache();

  DeviceStats stats(int device) const;
  void reset_peak_stats(int device);
  void reset_accumulated_stats(int device);

  // Limits `device` to fraction * its capacity (0 <= fraction <= 1), as
  // torch.cuda.set_per_process_memory_fraction. Requests above the limit fail with OOM.
  void set_memory_fraction(double fraction, int device);

  AllocatorConfig config() const;
  // New settings for future requests. Turning caching off empties the cache first.
  void set_config(const AllocatorConfig& config);

  std::vector<SegmentInfo> snapshot() const;
  // Blocks handed out and not yet given back, over all devices.
  std::size_t live_allocations() const;

  void set_event_sink(AllocatorEventSink sink);

  // Forgets every segment and block without calling the driver: for a fork child (whose runtime
  // starts afresh) and after a config reload (which frees all device memory). Statistics restart
  // at zero. Blocks handed out before become stale: releasing them is a no-op.
  void abandon();

  // Process exit has begun: later releases do bookkeeping only (no driver calls).
  void set_shutting_down();

  // fork() support: lock() in the prepare handler, unlock() in the parent and the child handler.
  void lock();
  void unlock();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mlusim::bridge
