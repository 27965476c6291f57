// torch.profiler with the simulated device: a Kineto activity profiler plug-in registered with
// PyTorch's PrivateUse1 profiler registry (REGISTER_PRIVATEUSE1_PROFILER, torch >= 2.11), so
// `torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1])` (alias
// ProfilerActivity.MLU) records the device's work beside the host's ATen ops. The CUDA twin is
// Kineto's CUPTI activity profiler.
//
// Source of the events: the driver's activity records (mlusim_ext.h, mlusimActivityEnable/Read):
// every kernel, copy and memset that completed while the session recorded, with its simulated
// start and end on its device, and every blocking host call with how long the host waited.
//
// Correlation: Kineto calls pushCorrelationId/popCorrelationId around every ATen op on the thread
// that runs it; the session forwards them to the driver (mlusimPushCorrelationId), which stamps
// the innermost id on the work the thread submits. Each device activity is then linked to the CPU
// op with that id (getLinkedActivity), which is how torch attributes device time to ops in
// key_averages() and how the trace's "External id" ties kernels to ops.
//
// Time axis: device and sync activities are in simulated time, placed on the trace's wall-clock
// axis by one anchor taken when the session starts (wall ns at start + simulated ns since start).
// Durations are exact simulated durations; host ops keep their wall-clock times, so the two
// clocks are not comparable across tracks (a simulated millisecond may take seconds of host time).
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <libkineto.h>
#include <time_since_epoch.h>
#include <IActivityProfiler.h>
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>

#include <mlusim_ext.h>

namespace mlusim::bridge {
namespace {

using libkineto::ActivityType;

const std::set<ActivityType>& device_activity_types() {
  static const std::set<ActivityType> types = {ActivityType::CONCURRENT_KERNEL, ActivityType::GPU_MEMCPY,
                                               ActivityType::GPU_MEMSET, ActivityType::PRIVATEUSE1_RUNTIME};
  return types;
}

// Trace rows: device d's queues are resources of "process" d; the default queue is resource 0.
constexpr std::int64_t kDefaultQueueResource = 0;

class SimulatedDeviceSession : public libkineto::IActivityProfilerSession {
 public:
  explicit SimulatedDeviceSession(std::set<ActivityType> types) : types_(std::move(types)) {}

  void start() override {
    records_.clear();
    double host_ns = 0;
    mlusimGetHostTime(&host_ns);
    anchor_sim_ns_ = host_ns;
    anchor_wall_ns_ = libkineto::timeSinceEpoch(std::chrono::system_clock::now());
    mlusimActivityEnable(1);
    status_ = libkineto::TraceStatus::RECORDING;
  }

  void stop() override {
    drain();
    mlusimActivityEnable(0);
    status_ = libkineto::TraceStatus::PROCESSING;
  }

  void toggleCollectionDynamic(bool enable) override {
    if (!enable) drain();
    mlusimActivityEnable(enable ? 1 : 0);
  }

  void pushCorrelationId(std::uint64_t id) override { mlusimPushCorrelationId(id); }
  void popCorrelationId() override { mlusimPopCorrelationId(); }

  std::vector<std::string> errors() override { return errors_; }

  void processTrace(libkineto::ActivityLogger& logger) override {
    processTrace(logger, [](int32_t) -> const libkineto::ITraceActivity* { return nullptr; }, 0, 0);
  }

  void processTrace(libkineto::ActivityLogger& logger, libkineto::getLinkedActivityCallback linked_activity,
                    int64_t /*start_time*/, int64_t /*end_time*/) override {
    buffer_ = std::make_unique<libkineto::CpuTraceBuffer>();
    buffer_->span = libkineto::TraceSpan(anchor_wall_ns_, anchor_wall_ns_, "mlusim simulated device");
    buffer_->gpuOpCount = 0;
    for (const mlusimActivity_t& r : records_) {
      const ActivityType type = activity_type(r);
      if (types_.count(type) == 0) continue;
      buffer_->emplace_activity(buffer_->span, type, std::string(r.name));
      libkineto::GenericTraceActivity& a = *buffer_->activities.back();
      a.startTime = to_wall_ns(r.start_ns);
      a.endTime = to_wall_ns(r.end_ns);
      a.id = static_cast<int32_t>(++next_id_);
      if (r.kind == mlusimActivitySync) {
        // A host-side span on the thread that blocked.
        a.device = libkineto::processId();
        a.resource = static_cast<int64_t>(r.host_thread);
        a.threadId = static_cast<int32_t>(r.host_thread);
        a.addMetadata("host wait us", (r.end_ns - r.start_ns) / 1000.0);
        a.addMetadataQuoted("device", "mlu" + std::to_string(r.device));
      } else {
        a.device = r.device;
        a.resource = r.queue == 0 ? kDefaultQueueResource : static_cast<int64_t>(r.queue);
        seen_queues_.insert({r.device, a.resource});
        ++buffer_->gpuOpCount;
        if (r.bytes > 0) a.addMetadata("bytes", r.bytes);
      }
      if (r.tag[0] != '\0') a.addMetadataQuoted("op", std::string(r.tag));
      if (r.correlation_id != 0) {
        // Kineto writes the linked op's id as "External id"; an op outside the window has none.
        a.linked = linked_activity(static_cast<int32_t>(r.correlation_id));
        if (a.linked == nullptr) a.addMetadata("correlation", r.correlation_id);
      }
      a.addMetadata("simulated start us", r.start_ns / 1000.0);
      a.addMetadata("simulated duration us", (r.end_ns - r.start_ns) / 1000.0);
    }
    if (!buffer_->activities.empty()) {
      buffer_->span.startTime = buffer_->activities.front()->startTime;
      buffer_->span.endTime = buffer_->activities.back()->endTime;
    }
    for (const auto& a : buffer_->activities) a->log(logger);
  }

  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    if (seen_queues_.empty()) return nullptr;
    const int device = seen_queues_.begin()->first;
    return std::make_unique<libkineto::DeviceInfo>(libkineto::DeviceInfo{
        device, device + 1000, "mlu" + std::to_string(device) + " (mlusim, simulated time)", "MLU " + std::to_string(device)});
  }

  std::vector<libkineto::ResourceInfo> getResourceInfos() override {
    std::vector<libkineto::ResourceInfo> infos;
    for (const auto& [device, queue] : seen_queues_)
      infos.push_back(libkineto::ResourceInfo{queue, queue, device,
                                              queue == kDefaultQueueResource ? std::string("default queue")
                                                                             : "queue " + std::to_string(queue)});
    return infos;
  }

  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override { return std::move(buffer_); }

 private:
  static ActivityType activity_type(const mlusimActivity_t& r) {
    switch (r.kind) {
      case mlusimActivityKernel: return ActivityType::CONCURRENT_KERNEL;
      case mlusimActivityMemcpy: return ActivityType::GPU_MEMCPY;
      case mlusimActivityMemset: return ActivityType::GPU_MEMSET;
      case mlusimActivitySync: return ActivityType::PRIVATEUSE1_RUNTIME;
    }
    return ActivityType::PRIVATEUSE1_RUNTIME;
  }

  int64_t to_wall_ns(double sim_ns) const {
    return anchor_wall_ns_ + static_cast<int64_t>(sim_ns - anchor_sim_ns_);
  }

  void drain() {
    std::vector<mlusimActivity_t> chunk(4096);
    for (;;) {
      std::size_t n = 0;
      std::uint64_t dropped = 0;
      if (mlusimActivityRead(chunk.data(), chunk.size(), &n, &dropped) != cnrtSuccess) {
        errors_.push_back(std::string("mlusimActivityRead failed: ") + mlusimGetLastErrorMessage());
        return;
      }
      records_.insert(records_.end(), chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(n));
      if (dropped > 0 && n < chunk.size())
        errors_.push_back(std::to_string(dropped) + " device activities were dropped (buffer limit)");
      if (n < chunk.size()) return;
    }
  }

  std::set<ActivityType> types_;
  std::vector<mlusimActivity_t> records_;
  std::vector<std::string> errors_;
  std::unique_ptr<libkineto::CpuTraceBuffer> buffer_;
  std::set<std::pair<int, int64_t>> seen_queues_;
  double anchor_sim_ns_ = 0;
  int64_t anchor_wall_ns_ = 0;
  std::uint64_t next_id_ = 0;
};

class SimulatedDeviceProfiler : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }
  const std::set<ActivityType>& availableActivities() const override { return device_activity_types(); }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(const std::set<ActivityType>& activity_types,
                                                                 const libkineto::Config& /*config*/) override {
    std::set<ActivityType> wanted;
    for (ActivityType t : activity_types)
      if (device_activity_types().count(t) > 0) wanted.insert(t);
    if (wanted.empty()) return nullptr;  // a CPU-only profile
    return std::make_unique<SimulatedDeviceSession>(std::move(wanted));
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(int64_t /*ts_ms*/, int64_t /*duration_ms*/,
                                                                 const std::set<ActivityType>& activity_types,
                                                                 const libkineto::Config& config) override {
    return configure(activity_types, config);
  }

 private:
  std::string name_ = "mlusim";
};

}  // namespace
}  // namespace mlusim::bridge

namespace {
using MlusimActivityProfiler = mlusim::bridge::SimulatedDeviceProfiler;
REGISTER_PRIVATEUSE1_PROFILER(MlusimActivityProfiler);
}  // namespace
