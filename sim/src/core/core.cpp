#include "core/core.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cluster/cluster.h"
#include "common/sc_delay.h"
#include "compute/tensor_math.h"
#include "compute/tfu_timing.h"
#include "compute/vector_math.h"
#include "compute/vfu_timing.h"
#include "core/dma_path.h"
#include "device/device_impl.h"

namespace mlusim::sim {
namespace {

// The core whose kernel body runs now. SystemC threads are coroutines on one OS thread and only
// switch inside wait(); every wait of the device API goes through Core::wait_*, which sets this
// again on resumption, so it always names the running core.
Core* g_current = nullptr;

constexpr std::size_t kThreadStackBytes = 4u << 20;  // kernels may keep small arrays on the stack

std::string hex(std::uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

MemLevel level_of(Space s) {
  switch (s) {
    case Space::kGdram: return MemLevel::kGdram;
    case Space::kSram: return MemLevel::kSram;
    case Space::kNram: return MemLevel::kNram;
    case Space::kWram: return MemLevel::kWram;
  }
  return MemLevel::kGdram;
}

}  // namespace

Core::Core(DeviceImpl& device, Cluster& cluster, std::uint32_t cluster_index, std::uint32_t core_in_cluster,
           bool memory_core, std::uint32_t stats_index)
    : device_(device),
      cluster_(cluster),
      cluster_index_(cluster_index),
      core_in_cluster_(core_in_cluster),
      memory_core_(memory_core),
      stats_index_(stats_index),
      start_(std::make_unique<sc_core::sc_event>()) {
  const HardwareConfig& cfg = device.config;
  name_ = "cluster" + std::to_string(cluster_index) + (memory_core ? ".memcore" : ".core" + std::to_string(core_in_cluster));
  if (!memory_core) {
    nram_ = std::make_unique<OnChipMemory>(Space::kNram, cfg.nram_bytes);
    wram_ = std::make_unique<OnChipMemory>(Space::kWram, cfg.wram_bytes);
    io_dma_ = device.fabric.add_resource(name_ + " IO-DMA", cfg.io_dma_bandwidth_gbps);
    move_dma_ = device.fabric.add_resource(name_ + " Move-DMA", cfg.move_dma_bandwidth_gbps);
  } else {
    io_dma_ = device.fabric.add_resource(name_ + " DMA", cfg.memcore_dma_bandwidth_gbps);
  }
  sc_core::sc_spawn_options opts;
  opts.set_stack_size(kThreadStackBytes);
  sc_core::sc_spawn([this] { thread_main(); },
                    sc_core::sc_gen_unique_name(("mlu" + std::to_string(device.index) + "_cluster" + std::to_string(cluster_index) + (memory_core ? "_memcore" : "_core" + std::to_string(core_in_cluster))).c_str()), &opts);
}

Core::~Core() = default;

void Core::shutdown() {
  shutdown_ = true;
  start_->notify(sc_core::SC_ZERO_TIME);
}

void Core::assign(const TaskAssignment& task, Picos delay) {
  assignment_ = task;
  start_->notify(delay == 0 ? sc_core::SC_ZERO_TIME : sc_delay(delay, "launch latency"));
}

Core& Core::current() {
  if (g_current == nullptr) throw std::logic_error("mlusim: device API called outside a running kernel");
  return *g_current;
}

std::uint32_t Core::core_id() const { return memory_core_ ? dev::kMemoryCoreId : core_in_cluster_; }
std::uint32_t Core::cores_per_cluster() const { return device_.config.cores_per_cluster; }

void Core::thread_main() {
  for (;;) {
    sc_core::wait(*start_);
    if (shutdown_) return;
    if (assignment_.launch == nullptr) continue;
    run_task();
  }
}

void Core::run_task() {
  LaunchState& launch = *assignment_.launch;
  break_tfu_chain();  // tasks do not pipeline into each other
  nram_alloc_.reset();
  wram_alloc_.reset();
  sram_alloc_.reset();
  const Picos started = device_.now_abs();
  g_current = this;
  try {
    if (!launch.faulted) launch.launch.body();
    sync_io();  // a task is finished only when its copies have landed
  } catch (const KernelFault& f) {
    launch.fault(f.message);
  } catch (const KernelAbort&) {
    // another task of this launch faulted first; its message is the launch's fault
  } catch (const sc_core::sc_unwind_exception&) {
    throw;  // SystemC is killing this thread: never swallow
  } catch (const std::exception& e) {
    try {
      fault(std::string("kernel threw: ") + e.what());
    } catch (const KernelFault& f) {
      launch.fault(f.message);
    }
  }
  g_current = nullptr;
  // Drop copies that were abandoned by a fault: they still complete in the fabric (the data
  // lands), but nobody waits for them any more.
  outstanding_.clear();
  inflight_reads_.clear();
  inflight_writes_.clear();

  // Barrier bookkeeping: a participant that leaves while others wait is a mismatch.
  if (UnionGroup* g = assignment_.group) {
    for (Barrier* b : {g->cluster_barriers[assignment_.cluster_in_group].get(), &g->all}) {
      ++b->exited;
      if (b->arrived > 0) {
        try {
          fault("barrier mismatch: finished while " + std::to_string(b->arrived) +
                " participant(s) wait at a sync_cluster/sync_all it never reached");
        } catch (const KernelFault& f) {
          launch.fault(f.message);
        }
      }
    }
  }
  if (device_.trace.records(TraceLevel::kOps)) {
    nlohmann::json args = {{"task", assignment_.task_id},
                           {"cycles", ps_to_cycles(device_.now_abs() - started, device_.config.core_clock_mhz)}};
    device_.trace.complete(device_.trace_pid(), device_.trace_track(name_ + " Task"), launch.launch.name, "task",
                           started - device_.epoch_ps, device_.now_abs() - started, &args);
  }
  assignment_ = TaskAssignment{};
  device_.scheduler.task_finished(launch);
}

void Core::wait_ps(Picos ps) {
  break_tfu_chain();
  sc_core::wait(sc_delay(ps, "core wait"));
  g_current = this;
  check_alive();
}

void Core::wait_event(const sc_core::sc_event& e) {
  sc_core::wait(e);
  g_current = this;
  check_alive();
}

void Core::check_alive() {
  if (assignment_.launch != nullptr && assignment_.launch->faulted) throw KernelAbort{};
}

void Core::fault(const std::string& what) const {
  std::ostringstream s;
  s << "kernel '" << (assignment_.launch ? assignment_.launch->launch.name : std::string("?")) << "' task "
    << assignment_.task_id << " (" << name_ << "): " << what;
  throw KernelFault{s.str()};
}

void Core::log(const std::string& line) {
  std::ostringstream s;
  s << "[mlu" << device_.index << ' ' << assignment_.launch->launch.name << " task " << assignment_.task_id
    << (memory_core_ ? " memcore" : "") << "] " << line;
  device_.log_sink(s.str());
}

// ---------------------------------------------------------------------------------------------
// Memory access checks

OnChipMemory& Core::onchip(Space s) const {
  switch (s) {
    case Space::kNram: return *nram_;
    case Space::kWram: return *wram_;
    default: return cluster_.sram();
  }
}

std::uint64_t Core::capacity(Space space) const {
  if (space == Space::kGdram) return device_.gdram.size();
  if (memory_core_ && space != Space::kSram) return 0;
  return onchip(space).size();
}

std::uint64_t Core::available(Space space) const {
  const std::uint64_t cap = capacity(space);
  switch (space) {
    case Space::kNram: return cap - std::min(cap, nram_alloc_.used());
    case Space::kWram: return cap - std::min(cap, wram_alloc_.used());
    case Space::kSram: return cap - std::min(cap, sram_alloc_.used());
    case Space::kGdram: return 0;
  }
  return 0;
}

Addr Core::alloc(Space space, std::uint64_t bytes) {
  if (space == Space::kGdram) fault("cannot allocate GDRAM from a kernel (use cnrtMalloc on the host)");
  if (space == Space::kSram && assignment_.group == nullptr) fault("SRAM is not available to BLOCK tasks");
  if (memory_core_ && space != Space::kSram) fault(std::string("a memory core has no ") + std::string(space_name(space)));
  BumpAllocator& a = space == Space::kNram ? nram_alloc_ : space == Space::kWram ? wram_alloc_ : sram_alloc_;
  const std::uint64_t cap = capacity(space);
  const std::uint64_t off = a.allocate(bytes, cap);
  if (off == BumpAllocator::kNoSpace)
    fault(std::string(space_name(space)) + " buffer of " + std::to_string(bytes) + " bytes does not fit: " +
          std::to_string(a.used()) + " of " + std::to_string(cap) + " bytes already allocated");
  return {space, off};
}

Core::Range Core::range(Addr a, std::uint64_t bytes, const char* role) {
  resolve(a, bytes, role);
  return {a.space, a.value, a.value + bytes};
}

std::uint8_t* Core::resolve(Addr a, std::uint64_t bytes, const char* role) {
  if (a.space == Space::kGdram) {
    if (!device_.gdram.contains(a.value, bytes))
      fault(std::string(role) + " GDRAM range [" + hex(a.value) + ", +" + std::to_string(bytes) +
            ") is outside device memory");
    if (device_.gdram_validator) {
      if (auto err = device_.gdram_validator(a.value, bytes)) fault(std::string(role) + ": " + *err);
    }
    return device_.gdram.backing(a.value);
  }
  if (memory_core_ && a.space != Space::kSram)
    fault(std::string(role) + " " + a.str() + ": a memory core has no " + std::string(space_name(a.space)));
  if (a.space == Space::kSram && assignment_.group == nullptr)
    fault(std::string(role) + " " + a.str() + ": SRAM is not available to BLOCK tasks");
  OnChipMemory& m = onchip(a.space);
  if (!m.contains(a.value, bytes))
    fault(std::string(role) + " range [" + a.str() + ", +" + std::to_string(bytes) + ") is out of bounds of " +
          std::string(space_name(a.space)) + " (" + std::to_string(m.size()) + " bytes)");
  return m.data(a.value);
}

std::uint64_t Core::hazard_key(Space s, std::uint64_t addr) {
  // GDRAM addresses are below 2^56 on x86-64 Linux; on-chip offsets are below 2^32.
  return (static_cast<std::uint64_t>(s) << 58) | addr;
}

void Core::check_hazards(const std::vector<Range>& reads, const std::vector<Range>& writes, const char* what) {
  if (outstanding_.empty()) return;
  auto overlaps = [](RangeSet& m, const Range& r) {
    return m.overlaps(hazard_key(r.space, r.lo), hazard_key(r.space, r.hi));
  };
  auto report = [&](const Range& r, const char* kind) {
    fault(std::string("hazard: ") + what + " " + kind + " [" + Addr{r.space, r.lo}.str() + ", +" +
          std::to_string(r.hi - r.lo) + ") while an async copy still uses it (missing sync_io?)");
  };
  for (const Range& r : reads)
    if (overlaps(inflight_writes_, r)) report(r, "reads");
  for (const Range& r : writes)
    if (overlaps(inflight_writes_, r) || overlaps(inflight_reads_, r)) report(r, "writes");
}

// ---------------------------------------------------------------------------------------------
// Engines: busy time, statistics, trace

EngineCounters& Core::counters(Engine e) { return device_.stats.core_engines[stats_index_][static_cast<std::size_t>(e)]; }

void Core::engine_begin(Engine e) {
  const auto i = static_cast<std::size_t>(e);
  if (engine_active_[i]++ == 0) engine_busy_since_[i] = device_.now_abs();
  ++counters(e).intrinsics;
  if (assignment_.launch) ++assignment_.launch->record.engines[i].intrinsics;
}

void Core::engine_end(Engine e) {
  const auto i = static_cast<std::size_t>(e);
  if (--engine_active_[i] == 0) {
    const Picos busy = device_.now_abs() - engine_busy_since_[i];
    counters(e).busy_ps += busy;
    if (assignment_.launch) assignment_.launch->record.engines[i].busy_ps += busy;
  }
}

void Core::add_traffic(MemLevel from, MemLevel to, std::uint64_t bytes, std::uint64_t l2_hit_bytes,
                       std::uint64_t l2_overfetch_bytes) {
  for (TrafficCounters* t : {&device_.stats.traffic, assignment_.launch ? &assignment_.launch->record.traffic : nullptr}) {
    if (t == nullptr) continue;
    t->add(from, to, bytes);
    t->l2_hit_bytes += l2_hit_bytes;
    t->l2_overfetch_bytes += l2_overfetch_bytes;
  }
}

void Core::trace_event(Engine e, const std::string& name, Picos start_abs, Picos end_abs) {
  if (!device_.trace.records(TraceLevel::kIntrinsics)) return;
  const HardwareConfig& cfg = device_.config;
  nlohmann::json args = {{"cycles", ps_to_cycles(end_abs - start_abs, cfg.core_clock_mhz)}};
  const int tid = device_.trace_track(name_ + " " + std::string(engine_name(e)));
  const bool dma = e == Engine::kIoDma || e == Engine::kMoveDma || e == Engine::kMemcoreDma;
  if (dma)  // async copies on one engine overlap: spread them over sub-tracks
    device_.trace.complete_concurrent(device_.trace_pid(), tid, name, std::string(engine_name(e)),
                                      start_abs - device_.epoch_ps, end_abs - start_abs, &args);
  else
    device_.trace.complete(device_.trace_pid(), tid, name, std::string(engine_name(e)), start_abs - device_.epoch_ps,
                           end_abs - start_abs, &args);
}

void Core::require_compute_core(const char* what) const {
  if (memory_core_) fault(std::string(what) + ": a memory core has no compute units");
}

void Core::require_nram(Addr a, const char* role) const {
  if (a.space != Space::kNram)
    fault(std::string(role) + " " + a.str() + " must be in NRAM");
}

// ---------------------------------------------------------------------------------------------
// DMA

void Core::copy(Addr dst, Addr src, const dev::CopyShape& shape, dev::Dir dir, bool async) {
  const DirSpaces spaces = dir_spaces(dir);
  if (spaces.dst != dst.space || spaces.src != src.space)
    fault(std::string("memcpy direction ") + std::string(dev::dir_name(dir)) + " does not match dst " + dst.str() +
          " and src " + src.str());
  if (shape.seg_bytes == 0 || shape.n1 == 0 || shape.n2 == 0) return;  // nothing to move

  // Footprint of every segment, bounds-checked; the source is read now ("operands are read when
  // an operation starts") into a staging buffer that lands at the destination on completion.
  const std::uint64_t total = shape.total_bytes();
  std::vector<Range> reads, writes;
  auto staging = std::make_shared<std::vector<std::uint8_t>>(total);
  std::vector<std::uint8_t*> dst_ptrs;
  dst_ptrs.reserve(shape.n1 * shape.n2);
  GdramSegments gdram_reads, gdram_writes;
  std::uint64_t off = 0;
  for (std::size_t i2 = 0; i2 < shape.n2; ++i2) {
    for (std::size_t i1 = 0; i1 < shape.n1; ++i1) {
      const Addr s = src.offset(static_cast<std::int64_t>(i2) * shape.src_stride2 +
                                static_cast<std::int64_t>(i1) * shape.src_stride1);
      const Addr d = dst.offset(static_cast<std::int64_t>(i2) * shape.dst_stride2 +
                                static_cast<std::int64_t>(i1) * shape.dst_stride1);
      const std::uint8_t* sp = resolve(s, shape.seg_bytes, "memcpy source");
      dst_ptrs.push_back(resolve(d, shape.seg_bytes, "memcpy destination"));
      reads.push_back({s.space, s.value, s.value + shape.seg_bytes});
      writes.push_back({d.space, d.value, d.value + shape.seg_bytes});
      if (s.space == Space::kGdram) gdram_reads.emplace_back(s.value, shape.seg_bytes);
      if (d.space == Space::kGdram) gdram_writes.emplace_back(d.value, shape.seg_bytes);
      std::memcpy(staging->data() + off, sp, shape.seg_bytes);
      off += shape.seg_bytes;
    }
  }
  check_hazards(reads, writes, "memcpy");
  if (device_.dma_flip_countdown > 0 && --device_.dma_flip_countdown == 0) (*staging)[total / 2] ^= 1;

  const DmaPlan plan = plan_dma(device_, cluster_, memory_core_, io_dma_, move_dma_, spaces, shape, gdram_reads, gdram_writes);
  const Engine engine = plan.engine;
  const std::string label(dev::dir_name(dir));
  const Picos start = device_.now_abs();
  engine_begin(engine);
  add_traffic(level_of(src.space), level_of(dst.space), total, plan.l2_hit_bytes, plan.l2_overfetch_bytes);
  const std::size_t seg = shape.seg_bytes;
  // Completion runs in the fabric at the copy's finish time: the data lands, the engine's busy
  // interval closes. The core outlives every copy it issued (the device drains before teardown).
  auto on_complete = [this, staging, dst_ptrs = std::move(dst_ptrs), seg, engine, label, start] {
    std::uint64_t o = 0;
    for (std::uint8_t* p : dst_ptrs) {
      std::memcpy(p, staging->data() + o, seg);
      o += seg;
    }
    engine_end(engine);
    trace_event(engine, label, start, device_.now_abs());
  };
  OutstandingCopy c{next_copy_id_++,
                    device_.fabric.start(TransferRequest{plan.effective_bytes, plan.latency_ps, plan.uses,
                                                         std::move(on_complete), label}),
                    std::move(reads), std::move(writes)};
  if (!async) {  // synchronous: the copy is covered by its own completion
    if (!c.transfer->done()) wait_event(c.transfer->done_event());
    break_tfu_chain();
    return;
  }
  guard(c);
  outstanding_.push_back(std::move(c));
}

void Core::guard(const OutstandingCopy& c) {
  for (const Range& r : c.reads) inflight_reads_.add(hazard_key(r.space, r.lo), hazard_key(r.space, r.hi));
  for (const Range& r : c.writes) inflight_writes_.add(hazard_key(r.space, r.lo), hazard_key(r.space, r.hi));
}

void Core::sync_io() {
  retire_copies([](const OutstandingCopy&) { return true; });
}

void Core::sync_loads() {
  retire_copies([](const OutstandingCopy& c) {
    return std::any_of(c.writes.begin(), c.writes.end(), [](const Range& r) { return r.space != Space::kGdram; });
  });
}

void Core::retire_copies(bool (*wait_for)(const OutstandingCopy&)) {
  for (OutstandingCopy& c : outstanding_)
    if (wait_for(c) && !c.transfer->done()) wait_event(c.transfer->done_event());
  // No stall: the next intrinsic may still follow the last one; keep what the retired copies touched.
  const bool chain = tfu_chain_ && device_.now_abs() == tfu_end_ps_;
  if (!chain) break_tfu_chain();
  const auto box = [](const std::vector<Range>& rs) {
    Range b = rs.front();
    for (const Range& r : rs) b.lo = std::min(b.lo, r.lo), b.hi = std::max(b.hi, r.hi);
    return b;
  };
  const auto landed = std::stable_partition(outstanding_.begin(), outstanding_.end(),
                                            [](const OutstandingCopy& c) { return !c.transfer->done(); });
  for (auto c = landed; chain && c != outstanding_.end(); ++c)
    if (!c->reads.empty()) retired_.push_back({box(c->reads), box(c->writes), c->transfer->end_ps()});
  outstanding_.erase(landed, outstanding_.end());
  inflight_reads_.clear();
  inflight_writes_.clear();
  for (const OutstandingCopy& c : outstanding_) guard(c);
}

// ---------------------------------------------------------------------------------------------
// Barriers

void Core::barrier(bool whole_group) {
  UnionGroup* g = assignment_.group;
  const char* what = whole_group ? "sync_all" : "sync_cluster";
  if (g == nullptr) fault(std::string(what) + " in a BLOCK task (barriers need a UNION launch)");
  Barrier& b = whole_group ? g->all : *g->cluster_barriers[assignment_.cluster_in_group];
  if (b.exited > 0)
    fault(std::string("barrier mismatch: reached ") + what + " after " + std::to_string(b.exited) +
          " participant(s) already finished without it");
  const Picos start = device_.now_abs();
  if (++b.arrived == b.participants) {
    b.arrived = 0;
    ++b.generation;
    b.released.notify(sc_core::SC_ZERO_TIME);
    // The last arriver passes after the same delta as the others, so all leave together.
    wait_event(b.released);
  } else {
    const std::uint64_t gen = b.generation;
    while (b.generation == gen) wait_event(b.released);
  }
  if (device_.now_abs() > start) break_tfu_chain();  // a stall: the next intrinsic follows none
  if (device_.trace.records(TraceLevel::kIntrinsics) && device_.now_abs() > start) {
    nlohmann::json args = {{"task", assignment_.task_id}};
    device_.trace.complete(device_.trace_pid(), device_.trace_track(name_ + " Task"), what, "sync",
                           start - device_.epoch_ps, device_.now_abs() - start, &args);
  }
}

// ---------------------------------------------------------------------------------------------
// Compute intrinsics. Each validates its operands, checks hazards, computes (skipping
// floating-point work in timing-only mode), and occupies its engine for the formula's cycles.

void Core::compute(Engine engine, std::uint64_t cycles, const std::string& label, const std::vector<Range>& reads,
                   const std::vector<Range>& writes) {
  for (const Range& r : reads) {
    device_.stats.traffic.read_bytes[static_cast<std::size_t>(level_of(r.space))] += r.hi - r.lo;
    if (assignment_.launch) assignment_.launch->record.traffic.read_bytes[static_cast<std::size_t>(level_of(r.space))] += r.hi - r.lo;
  }
  for (const Range& r : writes) {
    device_.stats.traffic.write_bytes[static_cast<std::size_t>(level_of(r.space))] += r.hi - r.lo;
    if (assignment_.launch) assignment_.launch->record.traffic.write_bytes[static_cast<std::size_t>(level_of(r.space))] += r.hi - r.lo;
  }
  if (engine != Engine::kTfu) break_tfu_chain();
  const Picos start = device_.now_abs();
  engine_begin(engine);
  counters(engine).cycles += cycles;
  if (assignment_.launch) assignment_.launch->record.engines[static_cast<std::size_t>(engine)].cycles += cycles;
  try {
    sc_core::wait(sc_delay(cycles_to_ps(cycles, device_.config.core_clock_mhz, "duration"), "end"));
  } catch (const SimTimeOverflow& e) {
    fault(e.within(std::string(engine_name(engine)) + " " + label + " of " + std::to_string(cycles) + " cycles").what());
  }
  g_current = this;
  engine_end(engine);
  trace_event(engine, label, start, device_.now_abs());
  check_alive();
}

void Core::break_tfu_chain() {
  tfu_chain_ = false;
  tfu_writes_.clear();
  retired_.clear();
}

void Core::tfu_op(const compute::TfuCost& cost, DType in_t, const std::string& label,
                  const std::vector<Range>& operands, const std::vector<Range>& reads, const std::vector<Range>& writes) {
  const auto overlap = [](const Range& a, const Range& b) { return a.space == b.space && a.lo < b.hi && b.lo < a.hi; };
  const auto touches = [&](const std::vector<Range>& rs, const Range& b) {
    return std::any_of(rs.begin(), rs.end(), [&](const Range& r) { return overlap(r, b); });
  };
  std::uint64_t cycles = cost.cycles;
  const Picos now = device_.now_abs();
  const bool reads_last = std::any_of(tfu_writes_.begin(), tfu_writes_.end(),
                                      [&](const Range& w) { return touches(operands, w); });
  if (tfu_chain_ && now == tfu_end_ps_ && tfu_drain_ > 0 && !reads_last && in_t == tfu_dtype_) {
    // Issued back to back: it enters the array as soon as the last intrinsic's drain began and
    // the copies it depends on (writing what it reads, or reading/writing what it writes) ended.
    Picos ready = 0;
    for (const RetiredCopy& c : retired_)
      if (touches(reads, c.write_box) || touches(writes, c.write_box) || touches(writes, c.read_box))
        ready = std::max(ready, c.end_ps);
    const std::uint64_t early = ps_to_cycles(now - std::min(ready, now), device_.config.core_clock_mhz);
    cycles -= std::min({tfu_drain_, early, cycles});
  }
  compute(Engine::kTfu, cycles, label, reads, writes);
  tfu_chain_ = device_.config.tfu_intrinsic_overlap;
  tfu_dtype_ = in_t;
  tfu_end_ps_ = device_.now_abs();
  tfu_drain_ = cost.drain;
  tfu_writes_ = writes;
  retired_.clear();
}

namespace {
// Timing-only mode skips arithmetic whose result is floating point; integer and bool results
// (indices, masks) are always computed, since later addresses may depend on them.
bool must_compute(bool functional, DType result) { return functional || !dtype_is_float(result); }
}  // namespace

template <class CyclesFn, class WorkFn>
void Core::vfu_op(const std::string& label, DType result, std::uint64_t elements, const std::vector<Range>& reads,
                  const std::vector<Range>& writes, CyclesFn&& cycles_fn, WorkFn&& work) {
  std::uint64_t cycles = 0;
  try {
    cycles = cycles_fn();
    check_hazards(reads, writes, label.c_str());
    if (must_compute(device_.functional, result)) work();
  } catch (const std::invalid_argument& e) {
    fault(e.what());
  } catch (const std::out_of_range& e) {
    fault(e.what());
  }
  if (assignment_.launch) assignment_.launch->record.vector_elements += elements;
  compute(Engine::kVfu, cycles, label, reads, writes);
}

void Core::require_vfu_operands(const char* what, std::initializer_list<Addr> operands) const {
  require_compute_core(what);
  for (const Addr& a : operands) require_nram(a, what);
}

void Core::vec_binary(VecBinaryOp op, DType t, Addr dst, Addr a, Addr b, std::uint64_t n) {
  const std::string label(op_name(op));
  require_vfu_operands(label.c_str(), {dst, a, b});
  const std::uint64_t bytes = n * dtype_size(t);
  vfu_op(label, t, n, {range(a, bytes, "vector operand a"), range(b, bytes, "vector operand b")},
         {range(dst, bytes, "vector dst")}, [&] { return compute::vfu_binary_cycles(device_.config, op, t, n); },
         [&] { compute::vec_binary(op, t, resolve(dst, bytes, "dst"), resolve(a, bytes, "a"), resolve(b, bytes, "b"), n); });
}

void Core::vec_binary_scalar(VecBinaryOp op, DType t, Addr dst, Addr a, double s, std::uint64_t n) {
  const std::string label = std::string(op_name(op)) + "_scalar";
  require_vfu_operands(label.c_str(), {dst, a});
  const std::uint64_t bytes = n * dtype_size(t);
  vfu_op(label, t, n, {range(a, bytes, "vector operand a")}, {range(dst, bytes, "vector dst")},
         [&] { return compute::vfu_binary_cycles(device_.config, op, t, n); },
         [&] { compute::vec_binary_scalar(op, t, resolve(dst, bytes, "dst"), resolve(a, bytes, "a"), s, n); });
}

void Core::vec_unary(VecUnaryOp op, DType t, Addr dst, Addr src, std::uint64_t n) {
  const std::string label(op_name(op));
  require_vfu_operands(label.c_str(), {dst, src});
  const std::uint64_t bytes = n * dtype_size(t);
  vfu_op(label, t, n, {range(src, bytes, "vector src")}, {range(dst, bytes, "vector dst")},
         [&] { return compute::vfu_unary_cycles(device_.config, op, t, n); },
         [&] { compute::vec_unary(op, t, resolve(dst, bytes, "dst"), resolve(src, bytes, "src"), n); });
}

void Core::vec_reduce(VecReduceOp op, DType t, Addr dst, Addr src, std::uint64_t rows, std::uint64_t n) {
  const std::string label = "reduce_" + std::string(op_name(op));
  require_vfu_operands(label.c_str(), {dst, src});
  const std::uint64_t es = dtype_size(t);
  vfu_op(label, t, rows * n, {range(src, rows * n * es, "reduce src")}, {range(dst, rows * es, "reduce dst")},
         [&] { return compute::vfu_reduce_cycles(device_.config, op, t, rows, n); },
         [&] { compute::vec_reduce(op, t, resolve(dst, rows * es, "dst"), resolve(src, rows * n * es, "src"), rows, n); });
}

void Core::vec_cast(DType dst_t, Addr dst, DType src_t, Addr src, std::uint64_t n) {
  const std::string label = "cast_" + std::string(dtype_name(src_t)) + "_to_" + std::string(dtype_name(dst_t));
  require_vfu_operands(label.c_str(), {dst, src});
  const std::uint64_t db = n * dtype_size(dst_t), sb = n * dtype_size(src_t);
  vfu_op(label, dst_t, n, {range(src, sb, "cast src")}, {range(dst, db, "cast dst")},
         [&] { return compute::vfu_cast_cycles(device_.config, dst_t, src_t, n); },
         [&] { compute::vec_cast(dst_t, resolve(dst, db, "dst"), src_t, resolve(src, sb, "src"), n); });
}

void Core::vec_fill(DType t, Addr dst, double value, std::uint64_t n) {
  require_vfu_operands("fill", {dst});
  const std::uint64_t bytes = n * dtype_size(t);
  vfu_op("fill", t, n, {}, {range(dst, bytes, "fill dst")},
         [&] { return compute::vfu_fill_cycles(device_.config, t, n); },
         [&] { compute::vec_fill(t, resolve(dst, bytes, "dst"), value, n); });
}

void Core::vec_select(DType t, Addr dst, Addr cond, Addr a, Addr b, std::uint64_t n) {
  require_vfu_operands("select", {dst, cond, a, b});
  const std::uint64_t bytes = n * dtype_size(t);
  vfu_op("select", t, n, {range(cond, n, "select cond"), range(a, bytes, "select a"), range(b, bytes, "select b")},
         {range(dst, bytes, "select dst")}, [&] { return compute::vfu_select_cycles(device_.config, t, n); },
         [&] {
           compute::vec_select(t, resolve(dst, bytes, "dst"), resolve(cond, n, "cond"), resolve(a, bytes, "a"),
                               resolve(b, bytes, "b"), n);
         });
}

void Core::matmul(DType in_t, DType out_t, Addr c, Addr a, Addr b, std::uint64_t m, std::uint64_t k,
                  std::uint64_t n, bool a_k_major, bool b_transposed, bool accumulate) {
  const std::string label = "matmul_" + std::string(dtype_name(in_t));
  require_compute_core(label.c_str());
  require_nram(c, "matmul C");
  require_nram(a, "matmul A");
  if (b.space != Space::kWram) fault("matmul B " + b.str() + " must be in WRAM");
  const TfuArray& arr = device_.config.tfu_array(in_t);
  if (!arr.supported())
    fault(label + ": the TFU of config '" + device_.config.name + "' has no " + std::string(dtype_name(in_t)) +
          " array (tfu." + std::string(dtype_name(in_t)) + " is 0x0); use the VFU");
  if (!compute::tensor_dtypes_supported(in_t, out_t))
    fault(label + ": unsupported output dtype " + std::string(dtype_name(out_t)));
  const std::uint64_t ie = dtype_size(in_t), oe = dtype_size(out_t);
  std::vector<Range> reads{range(a, m * k * ie, "matmul A"), range(b, k * n * ie, "matmul B")};
  const std::vector<Range> writes{range(c, m * n * oe, "matmul C")};
  if (accumulate) reads.push_back(writes[0]);
  const compute::TfuCost timing =
      compute::tfu_gemm_cycles(arr, device_.config.tfu_dataflow, device_.config.tfu_fold_overlap, m, k, n);
  check_hazards(reads, writes, label.c_str());
  if (must_compute(device_.functional, out_t))
    (a_k_major ? compute::matmul_a_k_major : compute::matmul)(in_t, out_t, resolve(c, m * n * oe, "C"),
                                                              resolve(a, m * k * ie, "A"), resolve(b, k * n * ie, "B"),
                                                              m, k, n, b_transposed, accumulate);
  if (assignment_.launch) {
    assignment_.launch->record.macs += m * k * n;
    assignment_.launch->record.macs_by_dtype[static_cast<std::size_t>(in_t)] += m * k * n;
  }
  tfu_op(timing, in_t, label, {reads[0], reads[1]}, reads, writes);
}

bool Core::tfu_supports(DType in_t) const { return device_.config.tfu_array(in_t).supported(); }

void Core::vec_matmul(DType in_t, DType out_t, Addr c, Addr a, Addr b, std::uint64_t m, std::uint64_t k,
                      std::uint64_t n, bool b_transposed, bool accumulate) {
  const std::string label = "vec_matmul_" + std::string(dtype_name(in_t));
  require_vfu_operands(label.c_str(), {c, a, b});
  if (!compute::tensor_dtypes_supported(in_t, out_t))
    fault(label + ": unsupported output dtype " + std::string(dtype_name(out_t)));
  try {
    compute::check_config_computes(device_.config, "matmul", label, in_t);
  } catch (const std::invalid_argument& e) {
    fault(e.what());
  }
  const std::uint64_t ie = dtype_size(in_t), oe = dtype_size(out_t);
  std::vector<Range> reads{range(a, m * k * ie, "vec_matmul A"), range(b, k * n * ie, "vec_matmul B")};
  const std::vector<Range> writes{range(c, m * n * oe, "vec_matmul C")};
  if (accumulate) reads.push_back(writes[0]);
  if (assignment_.launch) assignment_.launch->record.macs_by_dtype[static_cast<std::size_t>(in_t)] += m * k * n;
  vfu_op(label, out_t, m * k * n, reads, writes,
         [&] { return compute::vfu_matmul_cycles(device_.config, out_t, m, k, n); },
         [&] {
           compute::matmul(in_t, out_t, resolve(c, m * n * oe, "C"), resolve(a, m * k * ie, "A"),
                           resolve(b, k * n * ie, "B"), m, k, n, b_transposed, accumulate);
         });
}

void Core::conv2d(DType in_t, DType out_t, Addr out, Addr in, Addr w, const dev::ConvParams& p, bool accumulate) {
  const std::string label = "conv2d_" + std::string(dtype_name(in_t));
  require_compute_core(label.c_str());
  require_nram(out, "conv output");
  require_nram(in, "conv input");
  if (w.space != Space::kWram) fault("conv2d weights " + w.str() + " must be in WRAM");
  const TfuArray& arr = device_.config.tfu_array(in_t);
  if (!arr.supported())
    fault(label + ": the TFU of config '" + device_.config.name + "' has no " + std::string(dtype_name(in_t)) +
          " array (tfu." + std::string(dtype_name(in_t)) + " is 0x0); use the VFU");
  if (p.k_h == 0 || p.k_w == 0 || p.stride_h == 0 || p.stride_w == 0 || p.dilation_h == 0 || p.dilation_w == 0 ||
      p.in_c == 0 || p.out_c == 0 || p.in_h < p.dilation_h * (p.k_h - 1) + 1 || p.in_w < p.dilation_w * (p.k_w - 1) + 1)
    fault(label + ": invalid shape (kernel larger than the input tile, or a zero size/stride/dilation)");
  const std::uint64_t ie = dtype_size(in_t), oe = dtype_size(out_t);
  const std::uint64_t oh = p.out_h(), ow = p.out_w();
  std::vector<Range> reads{range(in, p.in_h * p.in_w * p.in_c * ie, "conv input"),
                           range(w, p.out_c * p.k_h * p.k_w * p.in_c * ie, "conv weights")};
  const std::vector<Range> writes{range(out, oh * ow * p.out_c * oe, "conv output")};
  if (accumulate) reads.push_back(writes[0]);
  const compute::TfuCost timing =
      compute::tfu_conv_cycles(arr, device_.config.tfu_dataflow, device_.config.tfu_fold_overlap,
                               device_.config.tfu_conv_depth_per_tap, oh, ow, p.k_h, p.k_w, p.in_c, p.out_c);
  check_hazards(reads, writes, label.c_str());
  if (must_compute(device_.functional, out_t))
    compute::conv2d(in_t, out_t, resolve(out, oh * ow * p.out_c * oe, "out"), resolve(in, p.in_h * p.in_w * p.in_c * ie, "in"),
                resolve(w, p.out_c * p.k_h * p.k_w * p.in_c * ie, "w"), p.in_h, p.in_w, p.in_c, p.out_c, p.k_h, p.k_w,
                p.stride_h, p.stride_w, p.dilation_h, p.dilation_w, p.weights_k_major, accumulate);
  if (assignment_.launch) {
    const std::uint64_t macs = oh * ow * p.out_c * p.k_h * p.k_w * p.in_c;
    assignment_.launch->record.macs += macs;
    assignment_.launch->record.macs_by_dtype[static_cast<std::size_t>(in_t)] += macs;
  }
  tfu_op(timing, in_t, label, {reads[0], reads[1]}, reads, writes);
}

// Scalar unit: one element at a time. On-chip: scalar.onchip_access_cycles; GDRAM: one DRAM
// round trip (dram.latency_ns) on top.
void Core::scalar_access(Addr addr, void* value, std::uint64_t bytes, bool store) {
  const Range r = range(addr, bytes, store ? "scalar store" : "scalar load");
  std::uint8_t* p = resolve(addr, bytes, store ? "scalar store" : "scalar load");
  if (store) {
    check_hazards({}, {r}, "scalar store");
    std::memcpy(p, value, bytes);
  } else {
    check_hazards({r}, {}, "scalar load");
    std::memcpy(value, p, bytes);
  }
  const HardwareConfig& cfg = device_.config;
  std::uint64_t cycles = cfg.scalar_onchip_cycles;
  if (addr.space == Space::kGdram)
    cycles += static_cast<std::uint64_t>(std::ceil(cfg.dram_latency_ns * 1000.0 / period_ps(cfg.core_clock_mhz) - 1e-9));
  compute(Engine::kScalar, cycles, store ? "store" : "load", store ? std::vector<Range>{} : std::vector<Range>{r},
          store ? std::vector<Range>{r} : std::vector<Range>{});
}

}  // namespace mlusim::sim
