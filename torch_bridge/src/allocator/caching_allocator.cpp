// The caching allocator: PyTorch 1.13's DeviceCachingAllocator (CUDACachingAllocator.cpp)
// re-implemented over CNRT. Function names follow CUDA's so the two read side by side:
// get_free_block, alloc_block, should_split, free_block, try_merge_blocks, release_block,
// release_available_cached_blocks, release_cached_blocks, garbage_collect_cached_blocks,
// insert_events, process_events, synchronize_and_free_events.
#include <algorithm>
#include <cstdio>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <unordered_set>

#include <boost/intrusive/set.hpp>
#include <mlusim_ext.h>

#include "mlusim/torch/caching_allocator.h"

namespace mlusim::bridge {
namespace {

namespace bi = boost::intrusive;

std::uintptr_t addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

std::string cnrt_error(cnrtRet_t ret, const char* what) {
  return std::string(what) + " failed: " + cnrtGetErrorName(ret) + ": " + mlusimGetLastErrorMessage();
}

void check(cnrtRet_t ret, const char* what) {
  if (ret != cnrtSuccess) throw std::runtime_error(cnrt_error(ret, what));
}

// Makes `device` the calling thread's current device for the driver calls of one scope.
class DeviceSwitch {
 public:
  explicit DeviceSwitch(int device) {
    check(cnrtGetDevice(&previous_), "cnrtGetDevice");
    if (previous_ != device) {
      check(cnrtSetDevice(device), "cnrtSetDevice");
      switched_ = true;
    }
  }
  ~DeviceSwitch() {
    if (switched_) cnrtSetDevice(previous_);
  }
  DeviceSwitch(const DeviceSwitch&) = delete;
  DeviceSwitch& operator=(const DeviceSwitch&) = delete;

 private:
  int previous_ = 0;
  bool switched_ = false;
};

// "1.50 MiB (1572864 bytes)": CUDA's format_size plus the exact count.
std::string format_size(std::uint64_t bytes) {
  char buf[96];
  if (bytes <= 1024) {
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(bytes));
    return buf;
  }
  const double b = static_cast<double>(bytes);
  if (bytes <= 1048576)
    std::snprintf(buf, sizeof buf, "%.2f KiB", b / 1024.0);
  else if (bytes <= 1073741824ull)
    std::snprintf(buf, sizeof buf, "%.2f MiB", b / 1048576.0);
  else
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / 1073741824.0);
  return std::string(buf) + " (" + std::to_string(bytes) + " bytes)";
}

struct BlockPool;

struct Block : bi::set_base_hook<> {
  Block(int device, cnrtQueue_t queue, std::size_t size, BlockPool* pool, char* ptr, std::uint64_t generation)
      : device(device), queue(queue), size(size), pool(pool), ptr(ptr), generation(generation) {}
  int device;
  cnrtQueue_t queue;                  // the queue it was allocated on
  std::set<cnrtQueue_t> stream_uses;  // other queues it is used on (record_stream)
  std::size_t size;
  std::size_t requested_size = 0;     // the caller's size while allocated (requested_bytes)
  BlockPool* pool;
  char* ptr;
  std::uint64_t generation;
  bool allocated = false;  // handed out
  bool oversize = false;   // counted in oversize_allocations while allocated
  Block* prev = nullptr;   // neighbours within the segment
  Block* next = nullptr;
  int event_count = 0;     // notifiers still pending before the block can be reused
  int gc_count = 0;        // allocations since last reuse (garbage collection age)
  bool is_split() const { return prev != nullptr || next != nullptr; }
};

// Free blocks ordered as CUDA's BlockComparator: queue, then size, then address.
struct BlockOrder {
  bool operator()(const Block& a, const Block& b) const {
    if (a.queue != b.queue) return addr(a.queue) < addr(b.queue);
    if (a.size != b.size) return a.size < b.size;
    return addr(a.ptr) < addr(b.ptr);
  }
};
using BlockSet = bi::set<Block, bi::compare<BlockOrder>>;

struct BlockPool {
  explicit BlockPool(bool small) : is_small(small) {}
  BlockSet blocks;
  const bool is_small;
};

struct DeviceState {
  explicit DeviceState(int d) : device(d) {}
  int device;
  BlockPool small_blocks{true};
  BlockPool large_blocks{false};
  std::unordered_set<Block*> active_blocks;  // allocated, or freed with notifiers pending
  DeviceStats stats;
  std::size_t total_reserved = 0;
  bool set_fraction = false;
  std::size_t allowed_memory_maximum = 0;
  std::set<std::uintptr_t> oversize_segments;  // base addresses counted in oversize_segments
  // Notifiers placed for freed blocks used on other queues, per queue in placement order.
  std::map<cnrtQueue_t, std::deque<std::pair<cnrtNotifier_t, Block*>>> events;
  std::vector<cnrtNotifier_t> spare_notifiers;
};

struct AllocParams {
  int device;
  cnrtQueue_t queue;
  BlockPool* pool;
  std::size_t size;        // rounded request
  std::size_t alloc_size;  // segment size if a new one is needed
  Block* block = nullptr;
};

std::array<StatType, 2> stat_types(const BlockPool& pool) {
  return {kAggregateStat, pool.is_small ? kSmallPoolStat : kLargePoolStat};
}

void update(StatArray& array, const BlockPool& pool, std::int64_t amount) {
  for (StatType t : stat_types(pool)) array[t].update(amount);
}

}  // namespace

struct CachingAllocator::Impl {
  mutable std::mutex mu;
  AllocatorConfig cfg;
  std::vector<std::unique_ptr<DeviceState>> devices;
  std::map<std::uintptr_t, Block*> allocated;  // base address -> block handed out
  std::uint64_t generation = 1;
  bool shutting_down = false;
  AllocatorEventSink sink;

  // ---- helpers ----------------------------------------------------------------------------

  DeviceState* find_state(int device) const {
    if (device < 0 || static_cast<std::size_t>(device) >= devices.size()) return nullptr;
    return devices[static_cast<std::size_t>(device)].get();
  }

  DeviceState& state(int device) {
    if (DeviceState* s = find_state(device)) return *s;
    unsigned count = 0;
    check(cnrtGetDeviceCount(&count), "cnrtGetDeviceCount");
    if (device < 0 || static_cast<unsigned>(device) >= count)
      throw std::invalid_argument("MLU device " + std::to_string(device) + " does not exist (the config has " +
                                  std::to_string(count) + " device(s))");
    if (devices.size() <= static_cast<std::size_t>(device)) devices.resize(static_cast<std::size_t>(device) + 1);
    devices[static_cast<std::size_t>(device)] = std::make_unique<DeviceState>(device);
    return *devices[static_cast<std::size_t>(device)];
  }

  void emit(AllocatorEventKind kind, const DeviceState& ds, std::uintptr_t address, std::size_t size, cnrtQueue_t queue) {
    if (!sink) return;
    sink(AllocatorEvent{kind, ds.device, address, size, queue, ds.stats.allocated_bytes[kAggregateStat].current,
                        ds.stats.reserved_bytes[kAggregateStat].current});
  }

  bool gc_enabled(const DeviceState& ds) const { return ds.set_fraction && cfg.garbage_collection_threshold > 0.0; }

  // ---- allocation -----------------------------------------------------------------------------

  bool get_free_block(DeviceState& ds, AllocParams& p) {
    BlockPool& pool = *p.pool;
    if (gc_enabled(ds))
      for (Block& b : pool.blocks) ++b.gc_count;
    Block key(p.device, p.queue, p.size, p.pool, nullptr, 0);
    auto it = pool.blocks.lower_bound(key);
    if (it == pool.blocks.end() || it->queue != p.queue) return false;
    // Do not return an oversized block for a small request, nor one far too large.
    if (p.size < cfg.max_split_size && it->size >= cfg.max_split_size) return false;
    if (p.size >= cfg.max_split_size && it->size >= p.size + kLargeBuffer) return false;
    p.block = &*it;
    p.block->gc_count = 0;
    pool.blocks.erase(it);
    return true;
  }

  bool alloc_block(DeviceState& ds, AllocParams& p, bool is_retry) {
    const std::size_t size = p.alloc_size;
    if (is_retry) ++ds.stats.num_alloc_retries;
    if (ds.set_fraction && ds.total_reserved + size > ds.allowed_memory_maximum) return false;
    void* ptr = nullptr;
    {
      DeviceSwitch guard(ds.device);
      const cnrtRet_t ret = cnrtMalloc(&ptr, size);
      if (ret == cnrtErrorNoMem) {
        cnrtGetLastError();  // handled: do not leave it as the thread's last error
        return false;
      }
      check(ret, "cnrtMalloc");
    }
    ++ds.stats.num_device_alloc;
    ds.total_reserved += size;
    p.block = new Block(ds.device, p.queue, size, p.pool, static_cast<char*>(ptr), generation);
    update(ds.stats.segment, *p.pool, 1);
    update(ds.stats.reserved_bytes, *p.pool, static_cast<std::int64_t>(size));
    if (size >= cfg.max_split_size) {
      ds.stats.oversize_segments.update(1);
      ds.oversize_segments.insert(addr(ptr));
    }
    emit(AllocatorEventKind::kSegmentAlloc, ds, addr(ptr), size, p.queue);
    return true;
  }

  bool should_split(const Block* block, std::size_t size) const {
    if (!cfg.caching) return false;
    const std::size_t remaining = block->size - size;
    if (block->pool->is_small) return remaining >= kMinBlockSize;
    return size < cfg.max_split_size && remaining > kSmallSize;
  }

  // ---- freeing --------------------------------------------------------------------------------

  void release_block(DeviceState& ds, Block* block) {
    if (!shutting_down) {
      try {
        DeviceSwitch guard(ds.device);
        const cnrtRet_t ret = cnrtFree(block->ptr);
        if (ret != cnrtSuccess) std::fprintf(stderr, "mlusim caching allocator: %s\n", cnrt_error(ret, "cnrtFree").c_str());
      } catch (const std::exception& e) {
        std::fprintf(stderr, "mlusim caching allocator: %s\n", e.what());
      }
    }
    ++ds.stats.num_device_free;
    ds.total_reserved -= block->size;
    BlockPool& pool = *block->pool;
    update(ds.stats.segment, pool, -1);
    update(ds.stats.reserved_bytes, pool, -static_cast<std::int64_t>(block->size));
    if (ds.oversize_segments.erase(addr(block->ptr))) ds.stats.oversize_segments.update(-1);
    if (block->is_linked()) pool.blocks.erase(pool.blocks.iterator_to(*block));
    emit(AllocatorEventKind::kSegmentFree, ds, addr(block->ptr), block->size, block->queue);
    delete block;
  }

  // Merges free neighbour `src` into `dst` (not in the pool); returns the bytes subsumed.
  std::size_t try_merge_blocks(Block* dst, Block* src, BlockPool& pool) {
    if (!src || src->allocated || src->event_count > 0 || !src->stream_uses.empty()) return 0;
    if (dst->prev == src) {
      dst->ptr = src->ptr;
      dst->prev = src->prev;
      if (dst->prev) dst->prev->next = dst;
    } else {
      dst->next = src->next;
      if (dst->next) dst->next->prev = dst;
    }
    const std::size_t subsumed = src->size;
    dst->size += subsumed;
    pool.blocks.erase(pool.blocks.iterator_to(*src));
    delete src;
    return subsumed;
  }

  void free_block(DeviceState& ds, Block* block) {
    const std::size_t original_size = block->size;
    BlockPool& pool = *block->pool;
    std::int64_t net_inactive_split_blocks = 0, net_inactive_split_size = 0;
    for (Block* candidate : {block->prev, block->next}) {
      const std::size_t subsumed = try_merge_blocks(block, candidate, pool);
      if (subsumed > 0) {
        net_inactive_split_blocks -= 1;
        net_inactive_split_size -= static_cast<std::int64_t>(subsumed);
      }
    }
    ds.active_blocks.erase(block);
    pool.blocks.insert(*block);
    if (block->is_split()) {
      net_inactive_split_blocks += 1;
      net_inactive_split_size += static_cast<std::int64_t>(block->size);
    }
    update(ds.stats.inactive_split, pool, net_inactive_split_blocks);
    update(ds.stats.inactive_split_bytes, pool, net_inactive_split_size);
    update(ds.stats.active, pool, -1);
    update(ds.stats.active_bytes, pool, -static_cast<std::int64_t>(original_size));
    if (!cfg.caching && !block->is_split()) release_block(ds, block);
  }

  cnrtNotifier_t take_notifier(DeviceState& ds) {
    if (!ds.spare_notifiers.empty()) {
      cnrtNotifier_t n = ds.spare_notifiers.back();
      ds.spare_notifiers.pop_back();
      return n;
    }
    DeviceSwitch guard(ds.device);
    cnrtNotifier_t n = nullptr;
    check(cnrtNotifierCreateWithFlags(&n, CNRT_NOTIFIER_DISABLE_TIMING_ALL), "cnrtNotifierCreateWithFlags");
    return n;
  }

  // The block is freed but used on other queues: reuse waits for a notifier placed on each.
  void insert_events(DeviceState& ds, Block* block) {
    std::set<cnrtQueue_t> queues;
    queues.swap(block->stream_uses);
    for (cnrtQueue_t q : queues) {
      cnrtNotifier_t n = take_notifier(ds);
      if (cnrtPlaceNotifier(n, q) != cnrtSuccess) {  // the queue is gone: nothing to wait for
        cnrtGetLastError();
        ds.spare_notifiers.push_back(n);
        continue;
      }
      ++block->event_count;
      ds.events[q].emplace_back(n, block);
    }
    if (block->event_count == 0) free_block(ds, block);
  }

  void event_done(DeviceState& ds, cnrtNotifier_t n, Block* block) {
    ds.spare_notifiers.push_back(n);
    if (--block->event_count == 0) free_block(ds, block);
  }

  void process_events(DeviceState& ds) {
    for (auto it = ds.events.begin(); it != ds.events.end();) {
      auto& list = it->second;
      while (!list.empty()) {
        const cnrtRet_t ret = cnrtQueryNotifier(list.front().first);
        if (ret == cnrtErrorNotReady) break;
        if (ret != cnrtSuccess) cnrtGetLastError();  // a notifier that is gone counts as done
        const auto [n, block] = list.front();
        list.pop_front();
        event_done(ds, n, block);
      }
      it = list.empty() ? ds.events.erase(it) : std::next(it);
    }
  }

  void synchronize_and_free_events(DeviceState& ds) {
    for (auto& [queue, list] : ds.events) {
      for (const auto& [n, block] : list) {
        if (cnrtWaitNotifier(n) != cnrtSuccess) cnrtGetLastError();
        event_done(ds, n, block);
      }
    }
    ds.events.clear();
  }

  void release_blocks(DeviceState& ds, BlockPool& pool) {
    std::vector<Block*> whole;
    for (Block& b : pool.blocks)
      if (!b.is_split()) whole.push_back(&b);
    for (Block* b : whole) release_block(ds, b);
  }

  bool release_cached_blocks(DeviceState& ds) {
    synchronize_and_free_events(ds);
    release_blocks(ds, ds.large_blocks);
    release_blocks(ds, ds.small_blocks);
    return true;
  }

  // Frees oversize cached blocks (>= max_split_size) of the request's pool and queue: one large
  // enough, or the largest ones until enough is released.
  bool release_available_cached_blocks(DeviceState& ds, const AllocParams& p) {
    if (cfg.max_split_size == SIZE_MAX) return false;
    BlockPool& pool = *p.pool;
    Block key(p.device, p.queue, std::max(p.size, cfg.max_split_size), p.pool, nullptr, 0);
    auto it = pool.blocks.lower_bound(key);
    if (it == pool.blocks.end() || it->queue != p.queue) {
      if (it == pool.blocks.begin()) return false;
      std::size_t released = 0;
      --it;
      while (released < key.size && it->size >= cfg.max_split_size && it->queue == p.queue) {
        Block* cur = &*it;
        released += cur->size;
        if (it != pool.blocks.begin()) {
          --it;
          release_block(ds, cur);
        } else {
          release_block(ds, cur);
          break;
        }
      }
      return released >= key.size;
    }
    release_block(ds, &*it);
    return true;
  }

  // Releases unsplit cached large blocks older than average until reserved memory is below
  // garbage_collection_threshold * the allowed maximum (CUDA's garbage_collect_cached_blocks).
  void garbage_collect_cached_blocks(DeviceState& ds) {
    const auto gc_threshold =
        static_cast<std::size_t>(cfg.garbage_collection_threshold * static_cast<double>(ds.allowed_memory_maximum));
    if (ds.total_reserved <= gc_threshold) return;
    const std::size_t target = ds.total_reserved - gc_threshold;
    std::size_t reclaimed = 0;
    double total_age = 0.0;
    int freeable = 0;
    for (const Block& b : ds.large_blocks.blocks) {
      if (!b.is_split()) {
        total_age += b.gc_count;
        ++freeable;
      }
    }
    bool freed = true;
    while (reclaimed < target && freed && freeable > 0) {
      const double age_threshold = total_age / freeable;
      freed = false;
      for (auto it = ds.large_blocks.blocks.begin(); it != ds.large_blocks.blocks.end();) {
        Block* b = &*it;
        ++it;
        if (!b->is_split() && b->gc_count >= age_threshold) {
          freed = true;
          reclaimed += b->size;
          total_age -= b->gc_count;
          --freeable;
          release_block(ds, b);
        }
      }
    }
  }

  [[noreturn]] void out_of_memory(DeviceState& ds, std::size_t requested, std::size_t rounded) {
    ++ds.stats.num_ooms;
    std::size_t free_bytes = 0, total = 0;
    try {
      DeviceSwitch guard(ds.device);
      if (cnrtMemGetInfo(&free_bytes, &total) != cnrtSuccess) cnrtGetLastError();
    } catch (const std::exception&) {
    }
    const auto allocated_bytes = static_cast<std::size_t>(ds.stats.allocated_bytes[kAggregateStat].current);
    const auto reserved_bytes = static_cast<std::size_t>(ds.stats.reserved_bytes[kAggregateStat].current);
    std::string allowed;
    if (ds.set_fraction) allowed = format_size(ds.allowed_memory_maximum) + " allowed; ";
    std::string message = "MLU out of memory. Tried to allocate " + format_size(requested);
    if (rounded != requested) message += " (rounded to " + std::to_string(rounded) + " bytes)";
    message += " (MLU " + std::to_string(ds.device) + "; " + format_size(total) + " total capacity; " +
               format_size(allocated_bytes) + " already allocated; " + format_size(free_bytes) + " free; " + allowed +
               format_size(reserved_bytes) +
               " reserved in total by PyTorch) If reserved memory is >> allocated memory try setting "
               "max_split_size_mb to avoid fragmentation. See MLU_ALLOC_CONF in torch_bridge/README.md";
    emit(AllocatorEventKind::kOutOfMemory, ds, 0, requested, nullptr);
    throw OutOfMemoryError(message, ds.device, requested, total, free_bytes, allocated_bytes, reserved_bytes);
  }

  Allocation allocate(int device, std::size_t orig_size, cnrtQueue_t queue) {
    DeviceState& ds = state(device);
    if (orig_size > std::numeric_limits<std::size_t>::max() / 4) out_of_memory(ds, orig_size, orig_size);
    process_events(ds);
    const std::size_t size = round_size(orig_size, cfg);
    BlockPool& pool = is_small_request(size) ? ds.small_blocks : ds.large_blocks;
    AllocParams p{device, queue, &pool, size, cfg.caching ? segment_size_for(size) : size};
    bool found = cfg.caching && get_free_block(ds, p);
    if (!found) {
      if (gc_enabled(ds)) garbage_collect_cached_blocks(ds);
      found = alloc_block(ds, p, false) || (release_available_cached_blocks(ds, p) && alloc_block(ds, p, false)) ||
              (release_cached_blocks(ds) && alloc_block(ds, p, true));
    }
    if (!found) out_of_memory(ds, orig_size, size);

    Block* block = p.block;
    const bool already_split = block->is_split();
    if (should_split(block, size)) {
      Block* remaining = block;
      block = new Block(device, queue, size, &pool, remaining->ptr, generation);
      block->prev = remaining->prev;
      if (block->prev) block->prev->next = block;
      block->next = remaining;
      remaining->prev = block;
      remaining->ptr += size;
      remaining->size -= size;
      pool.blocks.insert(*remaining);
      if (already_split) {
        // An inactive split block shrinks by `size` bytes.
        update(ds.stats.inactive_split_bytes, pool, -static_cast<std::int64_t>(block->size));
      } else {
        // A new inactive split block appears.
        update(ds.stats.inactive_split_bytes, pool, static_cast<std::int64_t>(remaining->size));
        update(ds.stats.inactive_split, pool, 1);
      }
    } else if (already_split) {
      // An inactive split block becomes active.
      update(ds.stats.inactive_split_bytes, pool, -static_cast<std::int64_t>(block->size));
      update(ds.stats.inactive_split, pool, -1);
    }
    block->allocated = true;
    block->requested_size = orig_size;
    block->queue = queue;
    ds.active_blocks.insert(block);
    allocated[addr(block->ptr)] = block;
    update(ds.stats.allocation, pool, 1);
    update(ds.stats.allocated_bytes, pool, static_cast<std::int64_t>(block->size));
    update(ds.stats.requested_bytes, pool, static_cast<std::int64_t>(orig_size));
    update(ds.stats.active, pool, 1);
    update(ds.stats.active_bytes, pool, static_cast<std::int64_t>(block->size));
    if (block->size >= cfg.max_split_size) {
      block->oversize = true;
      ds.stats.oversize_allocations.update(1);
    }
    emit(AllocatorEventKind::kMalloc, ds, addr(block->ptr), block->size, queue);
    return {block->ptr, block};
  }

  void free(Block* block) {
    DeviceState& ds = *devices[static_cast<std::size_t>(block->device)];
    allocated.erase(addr(block->ptr));
    block->allocated = false;
    update(ds.stats.allocation, *block->pool, -1);
    update(ds.stats.allocated_bytes, *block->pool, -static_cast<std::int64_t>(block->size));
    update(ds.stats.requested_bytes, *block->pool, -static_cast<std::int64_t>(block->requested_size));
    block->requested_size = 0;
    if (block->oversize) {
      block->oversize = false;
      ds.stats.oversize_allocations.update(-1);
    }
    emit(AllocatorEventKind::kFree, ds, addr(block->ptr), block->size, block->queue);
    if (!block->stream_uses.empty())
      insert_events(ds, block);
    else
      free_block(ds, block);
  }

  void empty_cache() {
    for (auto& ds : devices)
      if (ds) release_cached_blocks(*ds);
  }

  void collect_segment(const Block* head, SegmentInfo& seg) const {
    for (const Block* b = head; b; b = b->next) {
      const bool active = b->allocated || b->event_count > 0;
      seg.blocks.push_back(BlockInfo{addr(b->ptr), b->size, b->allocated ? b->requested_size : 0, b->allocated, active});
      seg.total_size += b->size;
      if (b->allocated) seg.allocated_size += b->size;
      if (active) seg.active_size += b->size;
    }
  }
};

CachingAllocator::CachingAllocator(AllocatorConfig config) : impl_(std::make_unique<Impl>()) { impl_->cfg = config; }

CachingAllocator::~CachingAllocator() = default;

CachingAllocator::Allocation CachingAllocator::allocate(int device, std::size_t size, cnrtQueue_t queue) {
  if (size == 0) return {};
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->allocate(device, size, queue);
}

void CachingAllocator::release(void* handle) noexcept {
  if (!handle) return;
  auto* block = static_cast<Block*>(handle);
  try {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (block->generation != impl_->generation) {
      delete block;  // handed out before abandon(): its memory went with the old runtime
      return;
    }
    impl_->free(block);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mlusim caching allocator: freeing a block failed: %s\n", e.what());
  }
}

void CachingAllocator::free(void* ptr) {
  if (!ptr) return;
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->allocated.find(addr(ptr));
  if (it == impl_->allocated.end())
    throw std::invalid_argument("mlusim caching allocator: free of a pointer it did not allocate (or already freed)");
  impl_->free(it->second);
}

void CachingAllocator::record_stream(void* ptr, cnrtQueue_t queue) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->allocated.find(addr(ptr));
  if (it == impl_->allocated.end()) return;
  Block* block = it->second;
  if (queue == block->queue) return;
  block->stream_uses.insert(queue);
}

std::pair<void*, std::size_t> CachingAllocator::find(const void* ptr) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->allocated.upper_bound(addr(ptr));
  if (it == impl_->allocated.begin()) return {nullptr, 0};
  --it;
  const Block* b = it->second;
  if (addr(ptr) >= addr(b->ptr) + b->size) return {nullptr, 0};
  return {b->ptr, b->size};
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->empty_cache();
}

DeviceStats CachingAllocator::stats(int device) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  DeviceStats s;
  if (const DeviceState* ds = impl_->find_state(device)) s = ds->stats;
  s.max_split_size =
      impl_->cfg.max_split_size == SIZE_MAX ? -1 : static_cast<std::int64_t>(impl_->cfg.max_split_size);
  return s;
}

namespace {
template <class F>
void for_each_stat(DeviceStats& s, F f) {
  for (StatArray* a : {&s.allocation, &s.segment, &s.active, &s.inactive_split, &s.allocated_bytes,
                       &s.reserved_bytes, &s.active_bytes, &s.inactive_split_bytes, &s.requested_bytes})
    for (Stat& st : *a) f(st);
  f(s.oversize_allocations);
  f(s.oversize_segments);
}
}  // namespace

void CachingAllocator::reset_peak_stats(int device) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (DeviceState* ds = impl_->find_state(device)) for_each_stat(ds->stats, [](Stat& st) { st.peak = st.current; });
}

void CachingAllocator::reset_accumulated_stats(int device) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  DeviceState* ds = impl_->find_state(device);
  if (!ds) return;
  for_each_stat(ds->stats, [](Stat& st) { st.allocated = st.freed = 0; });
  ds->stats.num_alloc_retries = ds->stats.num_ooms = 0;
  ds->stats.num_device_alloc = ds->stats.num_device_free = 0;
}

void CachingAllocator::set_memory_fraction(double fraction, int device) {
  if (!(fraction >= 0.0 && fraction <= 1.0))
    throw std::invalid_argument("memory fraction " + std::to_string(fraction) + " is outside [0, 1]");
  std::lock_guard<std::mutex> lock(impl_->mu);
  DeviceState& ds = impl_->state(device);
  std::size_t free_bytes = 0, total = 0;
  {
    DeviceSwitch guard(device);
    check(cnrtMemGetInfo(&free_bytes, &total), "cnrtMemGetInfo");
  }
  ds.allowed_memory_maximum = static_cast<std::size_t>(fraction * static_cast<double>(total));
  ds.set_fraction = true;
}

AllocatorConfig CachingAllocator::config() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->cfg;
}

void CachingAllocator::set_config(const AllocatorConfig& config) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->cfg.caching && !config.caching) impl_->empty_cache();
  impl_->cfg = config;
}

std::vector<SegmentInfo> CachingAllocator::snapshot() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<SegmentInfo> out;
  for (const auto& ds : impl_->devices) {
    if (!ds) continue;
    std::vector<const Block*> heads;
    auto consider = [&heads](const Block* b) {
      while (b->prev) b = b->prev;
      heads.push_back(b);
    };
    for (const Block* b : ds->active_blocks) consider(b);
    for (const BlockPool* pool : {&ds->small_blocks, &ds->large_blocks})
      for (const Block& b : pool->blocks) consider(&b);
    std::sort(heads.begin(), heads.end(), [](const Block* a, const Block* b) { return addr(a->ptr) < addr(b->ptr); });
    heads.erase(std::unique(heads.begin(), heads.end()), heads.end());
    for (const Block* head : heads) {
      SegmentInfo seg;
      seg.device = ds->device;
      seg.address = addr(head->ptr);
      seg.queue = head->queue;
      seg.large = !head->pool->is_small;
      impl_->collect_segment(head, seg);
      out.push_back(std::move(seg));
    }
  }
  return out;
}

std::size_t CachingAllocator::live_allocations() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->allocated.size();
}

void CachingAllocator::set_event_sink(AllocatorEventSink sink) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->sink = std::move(sink);
}

void CachingAllocator::abandon() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (auto& ds : impl_->devices) {
    if (!ds) continue;
    for (BlockPool* pool : {&ds->small_blocks, &ds->large_blocks})
      pool->blocks.clear_and_dispose([](Block* b) { delete b; });
    for (Block* b : ds->active_blocks)
      if (!b->allocated) delete b;  // freed, waiting for notifiers: nobody refers to it
    // Allocated blocks stay alive as stale handles until released.
  }
  impl_->devices.clear();
  impl_->allocated.clear();
  ++impl_->generation;
}

void CachingAllocator::set_shutting_down() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->shutting_down = true;
}

void CachingAllocator::lock() { impl_->mu.lock(); }
void CachingAllocator::unlock() { impl_->mu.unlock(); }

}  // namespace mlusim::bridge
