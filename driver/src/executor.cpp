// The simulation thread: runs queued work on the simulated devices and advances simulated time
// exactly as far as host threads need it (see runtime.h for the time model).
#include <systemc>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>
#include <optional>
#include <nlohmann/json.hpp>

#include "mlusim/sim/simulator.h"
#include "mlusim/sim/trace.h"
#include "runtime.h"

namespace mlusim::driver {

// ---- host side: enqueue and wait -------------------------------------------------------------

void Runtime::submit(const OpPtr& op, const QueuePtr& q, const HostThread& t) {
  op->seq = next_seq_++;
  op->stamp = t.clock;
  op->correlation = t.correlation_ids.empty() ? 0 : t.correlation_ids.back();
  op->host_thread = t.os_thread_id;
  op->tag = t.launch_tag;
  op->queue = q;
  q->pending.push_back(op);
  q->last = op;
  if (!q->busy) {
    q->busy = true;
    busy_queues_.emplace(q.get(), q);
  }
  if (q->pending.size() == 1 && !q->running) {
    kicked_.push_back(q);
    wake_sim();
  }
}

void Runtime::wait(std::unique_lock<std::mutex>& lk, const std::vector<OpPtr>& ops, HostThread& t, const char* api,
                   bool count_as_sync) {
  const Picos called_at = t.clock;
  bool waited = false;
  for (const OpPtr& op : ops) waited = waited || !op->done || op->end_ps > called_at;
  // A host function's thread stops holding the simulation back while it waits: the op it
  // waits for may lie in its future.
  const bool held = t.hold_id != 0 && holds_.erase(t.hold_id) > 0;
  for (const OpPtr& op : ops) {
    if (!op->done) {
      ++op->watchers;
      waited_ops_.push_back(op.get());
      wake_sim();
      done_cv.wait(lk, [&] { return op->done || stop_; });
      --op->watchers;
      waited_ops_.erase(std::find(waited_ops_.begin(), waited_ops_.end(), op.get()));
    }
    if (op->done) t.clock = std::max(t.clock, op->end_ps);
  }
  if (held) {
    holds_[t.hold_id] = t.clock;
    wake_sim();
  }
  if (waited && count_as_sync && t.device < device_count()) {
    DeviceState& d = device(t.device);
    ++d.host_syncs;
    d.host_sync_wait_ps += t.clock - called_at;
    mlusimActivity_t a{};
    a.kind = mlusimActivitySync;
    a.device = t.device;
    a.host_thread = t.os_thread_id;
    a.correlation_id = t.correlation_ids.empty() ? 0 : t.correlation_ids.back();
    ActivityLog::set_text(a.name, api);
    ActivityLog::set_text(a.tag, t.launch_tag);
    a.start_ns = static_cast<double>(called_at - std::min(called_at, epoch_ps_)) / 1000.0;
    a.end_ns = static_cast<double>(t.clock - std::min(t.clock, epoch_ps_)) / 1000.0;
    activity.record(a);
  }
}

void Runtime::reach(std::unique_lock<std::mutex>& lk, Picos at) {
  if (sim_now_ps_ >= at || stop_) return;
  TimeWaiter w;
  w.at = at;
  time_waiters_.push_back(&w);
  wake_sim();
  done_cv.wait(lk, [&] { return w.satisfied || stop_; });
  time_waiters_.erase(std::find(time_waiters_.begin(), time_waiters_.end(), &w));
}

void Runtime::run_on_sim(std::unique_lock<std::mutex>& lk, std::function<void()> fn) {
  Command c;
  c.fn = std::move(fn);
  commands_.push_back(&c);
  wake_sim();
  done_cv.wait(lk, [&] { return c.done || stop_; });
  if (!c.done) commands_.erase(std::find(commands_.begin(), commands_.end(), &c));
}

// ---- simulation thread -----------------------------------------------------------------------

Picos Runtime::now_abs() const {
  const sim::Simulator& sim = sim::Simulator::instance();
  return sim.epoch() + sim.now();
}

Picos Runtime::hold_limit() const {
  Picos limit = kNever;
  for (const auto& [id, clock] : holds_) limit = std::min(limit, clock);
  return limit;
}

// sc_start(t) stops before the events scheduled at exactly t; a blocking call or query at t must
// see them, so run the delta cycles of the current time too (bounded: a model that keeps
// notifying at one time would otherwise spin here forever).
void Runtime::settle() {
  for (int i = 0; i < 10000 && sc_core::sc_pending_activity_at_current_time(); ++i) {
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
    if (paused_) break;
  }
}

void Runtime::sim_loop() {
  sim::Simulator& sim = sim::Simulator::instance();
  std::unique_lock<std::mutex> lk(mu);
  for (;;) {
    if (fork_pending_ && !stop_) {
      parked_ = true;
      done_cv.notify_all();
      sim_cv.wait(lk, [this] { return !fork_pending_ || stop_; });
      parked_ = false;
      continue;
    }
    if (stop_) break;
    wake_pending_ = false;  // everything changed so far is seen by this iteration
    if (!commands_.empty()) {
      Command* c = commands_.front();
      commands_.pop_front();
      lk.unlock();
      c->fn();
      lk.lock();
      c->done = true;
      drained_ = false;
      done_cv.notify_all();
      continue;
    }

    Picos now = now_abs();
    sim_now_ps_ = now;
    // Host functions that returned complete at their thread's clock, modelled waits
    // (mlusimQueueWaitUntil) at their time: now, or lazily by a timer.
    if (!host_func_ends_.empty()) {
      std::vector<HostFuncEnd> ends;
      ends.swap(host_func_ends_);
      for (HostFuncEnd& e : ends) {
        if (e.at <= now) {
          if (complete_locked(e.op, cnrtSuccess, "")) done_cv.notify_all();
        } else {
          timers_.push(Timer{e.at, next_timer_seq_++, nullptr, e.op});
        }
      }
    }
    while (!timers_.empty() && timers_.top().at <= now) {
      Timer timer = timers_.top();
      timers_.pop();
      if (timer.queue) {
        --eager_timers_;
        timer.queue->timer_armed = false;
        kicked_.push_back(timer.queue);
      } else if (complete_locked(timer.finish, cnrtSuccess, "")) {
        done_cv.notify_all();
      }
    }
    pump(lk);
    if (!counter_samples_.empty()) flush_trace_counters();
    now = now_abs();
    sim_now_ps_ = now;

    bool woke = false;
    for (TimeWaiter* w : time_waiters_) {
      if (!w->satisfied && w->at <= now) {
        w->satisfied = true;
        woke = true;
      }
    }
    if (woke) done_cv.notify_all();

    // What to run next.
    const Picos limit = hold_limit();
    const Picos next_timer = timers_.empty() ? kNever : timers_.top().at;
    const bool op_awaited =
        std::any_of(waited_ops_.begin(), waited_ops_.end(), [](const Op* op) { return !op->done; });
    Picos time_goal = 0;
    for (TimeWaiter* w : time_waiters_)
      if (!w->satisfied) time_goal = std::max(time_goal, w->at);

    // Lazy timers (returned host functions) are pursued only for a host thread that blocks or
    // queries, or on the way to an eager one (see the class comment).
    const bool someone_waits = op_awaited || time_goal >= next_timer;
    bool until_idle = false;
    Picos target = 0;
    if (next_timer != kNever && next_timer <= limit && (eager_timers_ > 0 || someone_waits)) {
      target = next_timer;  // a queue head (or a returned host function) waits for its time
    } else if (op_awaited && !drained_ && limit > now) {
      if (limit == kNever) {
        until_idle = true;
      } else {
        target = limit;
      }
    } else if (time_goal > now) {
      target = std::min(time_goal, limit);
      if (target <= now) {
        // A running host function holds the simulation before the queried time: answer the
        // queries with the state reached so far.
        for (TimeWaiter* w : time_waiters_) w->satisfied = true;
        done_cv.notify_all();
        continue;
      }
    } else {
      sim_cv.wait(lk, [this] { return wake_pending_; });
      continue;
    }

    lk.unlock();
    in_run_ = true;
    paused_ = false;
    if (until_idle) {
      if (!sim.run_until_idle()) drained_ = true;
    } else {
      sim.run_until(target - sim.epoch());
      if (!paused_) settle();
    }
    in_run_ = false;
    lk.lock();
    sim_now_ps_ = now_abs();
  }
}

void Runtime::pump(std::unique_lock<std::mutex>& lk) {
  if (pumping_) return;  // an outer pump() on this thread picks up what was kicked
  pumping_ = true;
  while (!kicked_.empty()) {
    QueuePtr q = std::move(kicked_.front());
    kicked_.pop_front();
    if (q->running || q->pending.empty()) continue;
    OpPtr op = q->pending.front();
    const Picos now = now_abs();
    if (op->stamp > now) {
      if (!q->timer_armed) {
        q->timer_armed = true;
        timers_.push(Timer{op->stamp, next_timer_seq_++, q, nullptr});
        ++eager_timers_;
      }
      continue;
    }
    q->pending.pop_front();
    q->running = op;
    op->started = true;
    op->start_ps = now;
    lk.unlock();
    start_op(op);
    lk.lock();
  }
  pumping_ = false;
}

void Runtime::start_op(const OpPtr& op) {
  drained_ = false;
  // Nothing here is expected to throw (inputs were validated at submission); should something
  // (host memory exhaustion) do so, the op fails instead of taking the simulation thread down.
  try {
    start_op_unchecked(op);
  } catch (const std::bad_alloc&) {
    finish(op, cnrtErrorSysNoMem, "out of host memory while starting '" + op->label + "'");
  } catch (const sim::SimTimeOverflow& e) {
    finish(op, cnrtErrorNotSupport, "'" + op->label + "': " + e.what());
  } catch (const std::exception& e) {
    finish(op, cnrtErrorUnknown, "mlusim internal error while starting '" + op->label + "': " + e.what());
  }
}

void Runtime::start_op_unchecked(const OpPtr& op) {
  sim::Simulator& sim = sim::Simulator::instance();
  auto done = [this, op](Picos) { finish(op, cnrtSuccess, ""); };
  switch (op->kind) {
    case OpKind::kKernel: {
      // Validated against the device at submission; checking again without exceptions keeps a
      // missed case an error code (an exception on the sc_start stack confuses ASan).
      sim::Device& device = sim.device(op->device);
      if (std::optional<std::string> error = device.validate_launch(op->launch)) {
        finish(op, cnrtErrorArgsInvalid, *error);
        return;
      }
      device.submit(std::move(op->launch), [this, op, &device](const sim::KernelRecord& r) {
        // Kernel record times count from the device's stats epoch.
        op->kernel_start_ps = device.stats().epoch_ps + r.start_ps;
        op->kernel_end_ps = device.stats().epoch_ps + r.end_ps;
        // The launch tag (the PyTorch op, mlusimSetLaunchTag) names who launched the kernel.
        const std::string who = r.tag.empty() ? "" : " (launched by " + r.tag + ")";
        finish(op, r.faulted ? cnrtErrorKernelTrap : cnrtSuccess,
               r.faulted ? "kernel '" + r.name + "'" + who + " faulted: " + r.fault : std::string());
      });
      return;
    }
    case OpKind::kCopy: {
      sim::Device& device = sim.device(op->device);
      if (std::optional<std::string> error = device.validate_copy(op->copy)) {
        finish(op, cnrtErrorArgsInvalid, *error);
        return;
      }
      device.submit_copy(op->copy, done);
      return;
    }
    case OpKind::kPeerCopy: {
      if (sim.peer_reachable(op->device, op->peer_device)) {  // MLU-Link or the network
        sim::HostCopy c = op->copy;
        c.kind = sim::HostCopy::Kind::kToPeer;
        c.peer_device = op->peer_device;
        c.host_dst = sim.device(op->peer_device).gdram_backing(op->peer_dst, c.bytes);
        sim.device(op->device).submit_copy(c, done);
        return;
      }
      // Staged through pinned host memory: device -> host on the source, then host -> device.
      auto staging = std::make_shared<std::vector<std::uint8_t>>(op->copy.bytes);
      sim::HostCopy down{sim::HostCopy::Kind::kDeviceToHost, 0, op->copy.device_src, staging->data(), nullptr,
                         op->copy.bytes, true, 0, op->label + " (to host)"};
      sim.device(op->device).submit_copy(down, [this, op, staging](Picos) {
        sim::HostCopy up{sim::HostCopy::Kind::kHostToDevice, op->peer_dst, 0, nullptr, staging->data(),
                         staging->size(), true, 0, op->label + " (from host)"};
        sim::Simulator::instance().device(op->peer_device).submit_copy(up, [this, op, staging](Picos) {
          finish(op, cnrtSuccess, "");
        });
      });
      return;
    }
    case OpKind::kHostToHost:
      std::memmove(op->host_dst, op->host_src, op->bytes);
      finish(op, cnrtSuccess, "");
      return;
    case OpKind::kMarker:
      finish(op, cnrtSuccess, "");
      return;
    case OpKind::kWaitMarker: {
      std::unique_lock<std::mutex> lk(mu);
      if (op->target && !op->target->done) {
        op->target->dependents.push_back(op);  // completed with its target
        return;
      }
      lk.unlock();
      finish(op, cnrtSuccess, "");
      return;
    }
    case OpKind::kHostFunc: {
      {
        std::lock_guard<std::mutex> lk(mu);
        holds_[op->seq] = op->start_ps;
      }
      const Picos start = op->start_ps;
      pool_.run([this, op, start] { run_host_func(op, start); });
      return;
    }
    case OpKind::kWaitUntil: {
      // Completes like a host function that returned at `until`: lazily (runtime.h).
      std::lock_guard<std::mutex> lk(mu);
      host_func_ends_.push_back(HostFuncEnd{op, std::max(op->until, op->start_ps)});
      wake_sim();
      return;
    }
  }
}

void Runtime::run_host_func(const OpPtr& op, Picos start) {
  HostThread& t = this_thread();
  t.generation = generation_.load();
  t.device = op->queue->device;
  t.clock = start;
  t.hold_id = op->seq;
  t.host_func_op = op.get();
  op->fn(op->user_data);
  t.hold_id = 0;
  t.host_func_op = nullptr;
  std::lock_guard<std::mutex> lk(mu);
  holds_.erase(op->seq);
  host_func_ends_.push_back(HostFuncEnd{op, std::max(t.clock, start)});
  wake_sim();
}

void Runtime::finish(const OpPtr& op, cnrtRet_t error, const std::string& message) {
  std::unique_lock<std::mutex> lk(mu);
  if (orphaned_) return;
  const bool awaited = complete_locked(op, error, message);
  pump(lk);
  lk.unlock();
  if (awaited) {
    done_cv.notify_all();
    // Stop the simulation at this completion, so the woken thread continues from here.
    if (in_run_) {
      paused_ = true;
      sim::Simulator::instance().pause();
    }
  }
}

// An activity record of a completed kernel, copy or memset (mu held; no-op unless recording).
void Runtime::record_activity(const Op& op) {
  if (!activity.enabled() || !op.started) return;
  mlusimActivity_t a{};
  Picos start = op.start_ps, end = op.end_ps;
  switch (op.kind) {
    case OpKind::kKernel:
      a.kind = mlusimActivityKernel;
      if (op.kernel_end_ps != 0) start = op.kernel_start_ps, end = op.kernel_end_ps;
      break;
    case OpKind::kCopy:
      a.kind = op.copy.kind == sim::HostCopy::Kind::kMemset ? mlusimActivityMemset : mlusimActivityMemcpy;
      a.bytes = op.copy.bytes;
      break;
    case OpKind::kPeerCopy:
      a.kind = mlusimActivityMemcpy;
      a.bytes = op.copy.bytes;
      break;
    default:
      return;  // markers, waits, host functions and host-to-host copies are not device work
  }
  a.device = op.device;
  a.queue = op.queue ? op.queue->id : 0;
  a.correlation_id = op.correlation;
  a.host_thread = op.host_thread;
  ActivityLog::set_text(a.name, op.label);
  ActivityLog::set_text(a.tag, op.tag);
  a.start_ns = static_cast<double>(start - std::min(start, epoch_ps_)) / 1000.0;
  a.end_ns = static_cast<double>(end - std::min(end, epoch_ps_)) / 1000.0;
  activity.record(a);
}

bool Runtime::complete_locked(const OpPtr& first, cnrtRet_t error, const std::string& message) {
  bool awaited = false;
  const Picos now = now_abs();
  std::vector<OpPtr> work{first};
  while (!work.empty()) {
    OpPtr op = std::move(work.back());
    work.pop_back();
    if (op->done) continue;
    op->done = true;
    op->end_ps = now;
    if (op == first && error != cnrtSuccess) {
      op->error = error;
      op->error_message = message;
    }
    QueuePtr q = op->queue;
    if (q->running == op) q->running = nullptr;
    if (op->error != cnrtSuccess) {
      if (q->fault == cnrtSuccess) {
        q->fault = op->error;
        q->fault_message = op->error_message;
      }
      if (print_faults_.load()) std::fprintf(stderr, "mlusim: %s\n", op->error_message.c_str());
    }
    if (op->watchers > 0) awaited = true;
    record_activity(*op);
    for (OpPtr& d : op->dependents) work.push_back(std::move(d));
    op->dependents.clear();
    if (op->target) op->target.reset();  // a wait op no longer needs its marker
    trace_op(*op);
    op->queue.reset();  // the queue keeps its last op: break the cycle once the op is done
    if (!q->pending.empty()) {
      kicked_.push_back(q);
    } else if (!q->running && q->busy) {
      q->busy = false;
      busy_queues_.erase(q.get());
    }
  }
  return awaited;
}

// ---- trace -------------------------------------------------------------------------------------

void Runtime::trace_op(const Op& op) {
  sim::TraceWriter& trace = sim::Simulator::instance().trace();
  if (!trace.records(sim::TraceLevel::kOps) || orphaned_) return;
  sim::Simulator& sim = sim::Simulator::instance();
  const int dev = op.queue->device;
  if (dev >= sim.device_count()) return;
  const Picos dev_epoch = sim.device(dev).stats().epoch_ps;
  if (op.start_ps < dev_epoch) return;
  const int pid = trace.process(dev + 1, "mlu" + std::to_string(dev) + " (" + config_.name + ")");  // as sim names it
  const int tid = trace.track(pid, op.queue->track);
  nlohmann::json args = {{"seq", op.seq}, {"submitted_ps", op.stamp >= dev_epoch ? op.stamp - dev_epoch : 0}};
  if (op.error != cnrtSuccess) args["error"] = op.error_message;
  trace.complete(pid, tid, op.label, "queue", op.start_ps - dev_epoch, op.end_ps - op.start_ps, &args);
}

void Runtime::flush_trace_counters() {
  sim::Simulator& sim = sim::Simulator::instance();
  sim::TraceWriter& trace = sim.trace();
  for (const CounterSample& s : counter_samples_) {
    if (!trace.records(sim::TraceLevel::kOps) || s.device >= sim.device_count()) continue;
    const Picos dev_epoch = sim.device(s.device).stats().epoch_ps;
    if (s.at < dev_epoch) continue;
    const int pid = trace.process(s.device + 1, "mlu" + std::to_string(s.device) + " (" + config_.name + ")");
    trace.counter(pid, "device memory", s.at - dev_epoch, nlohmann::json{{"allocated bytes", s.bytes}});
  }
  counter_samples_.clear();
}

}  // namespace mlusim::driver
