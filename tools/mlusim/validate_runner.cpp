#include "validate_runner.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include <cnrt.h>
#include <mlusim_ext.h>

#include "mlusim/mlu/conv.h"
#include "mlusim/mlu/gemm.h"
#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/tensor.h"
#include "mlusim/sim/roofline.h"

namespace mlusim::cli {
namespace {

constexpr int kDevice = 0;
constexpr std::size_t kTfuEngine = 2;  // mlusimDeviceStats_t engine index (mlusim_ext.h)
constexpr std::size_t kGdram = 1;      // memory level index

void check(cnrtRet_t r, const std::string& what) {
  if (r != cnrtSuccess) throw std::runtime_error(what + ": " + cnrtGetErrorStr(r) + " " + mlusimGetLastErrorMessage());
}
void check(mlu::Status s, const std::string& what) {
  if (s != mlu::Status::kSuccess)
    throw std::runtime_error(what + ": " + mlu::status_name(s) + " " + mlu::last_error_detail());
}

// One row's device session: a libmlu handle and the buffers it allocated, released at the end.
class Session {
 public:
  explicit Session(const std::string& workload) : workload_(workload) {
    check(mlu::Handle::create(&h_), workload_ + ": libmlu handle");
  }
  ~Session() {
    for (void* p : buffers_) cnrtFree(p);
    if (h_ != nullptr) mlu::Handle::destroy(h_);
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  mlu::Handle* handle() const { return h_; }
  void* alloc(std::uint64_t bytes) {
    void* p = nullptr;
    check(cnrtMalloc(&p, std::max<std::uint64_t>(bytes, 1)),
          workload_ + ": cnrtMalloc of " + std::to_string(bytes) + " bytes");
    buffers_.push_back(p);
    return p;
  }
  void check_op(mlu::Status s, const char* op) const { check(s, workload_ + ": " + op); }
  void check_api(cnrtRet_t r, const char* call) const { check(r, workload_ + ": " + call); }

 private:
  std::string workload_;
  mlu::Handle* h_ = nullptr;
  std::vector<void*> buffers_;
};

mlu::TensorDesc desc(const std::string& workload, std::vector<std::int64_t> dims,
                     std::vector<std::int64_t> strides = {}, mlu::Layout layout = mlu::Layout::kND) {
  mlu::TensorDesc d;
  const mlu::Status s = strides.empty() ? d.set(mlu::DType::kFloat32, dims, layout)
                                        : d.set(mlu::DType::kFloat32, dims, strides, layout);
  check(s, workload + ": tensor descriptor");
  return d;
}

// [N, C, H, W] dims in `layout`: dense NCHW, or NHWC strides (torch's channels_last).
mlu::TensorDesc activation(const std::string& workload, std::int64_t n, std::int64_t c, std::int64_t h,
                           std::int64_t w, ConvLayout layout) {
  if (layout == ConvLayout::kNchw) return desc(workload, {n, c, h, w}, {}, mlu::Layout::kNCHW);
  return desc(workload, {n, c, h, w}, {h * w * c, 1, w * c, c}, mlu::Layout::kNCHW);
}

std::uint64_t bytes_of(const mlu::TensorDesc& d) { return d.span_bytes(); }

// Enqueues the row's op on the session's handle (asynchronous).
void enqueue(Session& s, const CalibrationRow& row, ConvLayout layout) {
  mlu::Handle* h = s.handle();
  if (row.kind == WorkloadKind::kGemm) {
    const mlu::TensorDesc a = desc(row.workload, {row.m, row.k});
    const mlu::TensorDesc b = desc(row.workload, {row.k, row.n});
    const mlu::TensorDesc c = desc(row.workload, {row.m, row.n});
    void* pa = s.alloc(bytes_of(a));
    void* pb = s.alloc(bytes_of(b));
    void* pc = s.alloc(bytes_of(c));
    std::size_t ws = 0;
    s.check_op(mlu::get_matmul_workspace_size(h, {}, a, b, nullptr, c, &ws), "matmul workspace");
    void* pws = ws > 0 ? s.alloc(ws) : nullptr;
    s.check_op(mlu::matmul(h, {}, a, pa, b, pb, nullptr, nullptr, c, pc, pws, ws), "matmul");
    return;
  }
  mlu::ConvParams p;
  p.stride_h = p.stride_w = static_cast<int>(row.stride);
  p.pad_h = p.pad_w = static_cast<int>(row.pad);
  const mlu::TensorDesc x = activation(row.workload, row.batch, row.cin, row.h, row.w, layout);
  const mlu::TensorDesc w = activation(row.workload, row.cout, row.cin, row.kernel, row.kernel, layout);
  const mlu::TensorDesc y = activation(row.workload, row.batch, row.cout, row.out_h(), row.out_w(), layout);
  void* px = s.alloc(bytes_of(x));
  void* pw = s.alloc(bytes_of(w));
  void* py = s.alloc(bytes_of(y));
  std::size_t ws = 0;
  s.check_op(mlu::get_conv2d_forward_workspace_size(h, p, x, w, y, &ws), "conv2d_forward workspace");
  void* pws = ws > 0 ? s.alloc(ws) : nullptr;
  s.check_op(mlu::conv2d_forward(h, p, x, px, w, pw, nullptr, nullptr, y, py, pws, ws), "conv2d_forward");
}

std::vector<const char*> c_strings(const std::vector<std::string>& v) {
  std::vector<const char*> out;
  for (const std::string& s : v) out.push_back(s.c_str());
  return out;
}

}  // namespace

const char* conv_layout_name(ConvLayout layout) { return layout == ConvLayout::kNchw ? "nchw" : "channels_last"; }

ValidateRunner::ValidateRunner(const std::string& config, const std::vector<std::string>& overrides,
                               ConvLayout layout)
    : layout_(layout) {
  std::vector<sim::ConfigOverride> parsed;
  for (const std::string& o : overrides) parsed.push_back(sim::parse_config_override(o));
  sim::load_config(config, parsed);  // a bad config throws ConfigError (file, key, reason) first
  const std::vector<const char*> ptrs = c_strings(overrides);
  check(mlusimLoadConfigWithOverrides(config.c_str(), ptrs.data(), ptrs.size()), "load config '" + config + "'");
  config_ = driver::loaded_config();
}

RowResult ValidateRunner::run(const CalibrationRow& row) const {
  // A fresh device per row: results never depend on the rows before.
  check(mlusimReset(), row.workload + ": mlusimReset");
  check(mlusimSetTimingOnly(1), row.workload + ": timing-only mode");
  Session s(row.workload);
  check(mlusimResetStats(kDevice), row.workload + ": mlusimResetStats");
  if (!trace_dir_.empty()) s.check_api(mlusimTraceBegin(MLUSIM_TRACE_INTRINSICS), "mlusimTraceBegin");
  enqueue(s, row, layout_);
  s.check_api(cnrtQueueSync(s.handle()->queue()), "cnrtQueueSync");
  if (!trace_dir_.empty()) {
    s.check_api(mlusimTraceEnd(), "mlusimTraceEnd");
    s.check_api(mlusimTraceWrite((trace_dir_ + "/" + row.workload + ".json").c_str()), "mlusimTraceWrite");
  }

  RowResult r;
  std::size_t count = 0;
  s.check_api(mlusimGetKernelRecordCount(kDevice, &count), "mlusimGetKernelRecordCount");
  if (count == 0) throw std::runtime_error(row.workload + ": the op launched no kernel");
  double first = std::numeric_limits<double>::infinity(), last = 0;
  for (std::size_t i = 0; i < count; ++i) {
    mlusimKernelRecord_t k{};
    s.check_api(mlusimGetKernelRecord(kDevice, i, &k), "mlusimGetKernelRecord");
    if (k.faulted) throw std::runtime_error(row.workload + ": kernel " + k.name + " faulted: " + k.fault);
    first = std::min(first, k.start_ns);
    last = std::max(last, k.end_ns);
    r.kernel_cycles += double(k.cycles);
  }
  const double cycles_per_ns = config_.core_clock_mhz / 1000.0;
  r.kernels = static_cast<std::uint32_t>(count);
  r.simulated_ns = last - first;
  r.simulated_cycles = (last - first) * cycles_per_ns;
  mlusimDeviceStats_t st{};
  s.check_api(mlusimGetDeviceStats(kDevice, &st), "mlusimGetDeviceStats");
  r.tfu_cycles = st.engine_cycles[kTfuEngine];
  r.tfu_intrinsics = st.engine_intrinsics[kTfuEngine];
  r.dram_bytes = st.dram_bytes;  // across the DRAM channels (L2 hits excluded)
  // Roofline floor from what the op must do (libmlu's op record: MACs and minimum DRAM bytes).
  sim::MacsByDtype macs{};
  std::uint64_t min_bytes = 0;
  for (const mlu::OpRecord& op : s.handle()->ops()) {
    macs[static_cast<std::size_t>(sim::DType::kFloat32)] += op.macs;
    min_bytes += op.bytes;
  }
  r.bound_cycles = double(sim::roofline_bound_ps(config_, macs, min_bytes)) * 1e-3 * cycles_per_ns;
  return r;
}

}  // namespace mlusim::cli
