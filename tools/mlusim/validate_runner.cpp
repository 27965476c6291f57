#include "validate_runner.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>

#include <cnrt.h>
#include <mlusim_ext.h>

#include "mlusim/mlu/conv.h"
#include "mlusim/mlu/elementwise.h"
#include "mlusim/mlu/gemm.h"
#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/norm.h"
#include "mlusim/mlu/softmax.h"
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

// Tensor descriptors of one row: its dtype, errors naming its workload.
struct Descriptors {
  std::string workload;
  sim::DType dtype;

  mlu::TensorDesc operator()(const std::vector<std::int64_t>& dims, const std::vector<std::int64_t>& strides = {},
                             mlu::Layout layout = mlu::Layout::kND) const {
    mlu::TensorDesc d;
    const mlu::Status s = strides.empty() ? d.set(dtype, dims, layout) : d.set(dtype, dims, strides, layout);
    check(s, workload + ": tensor descriptor");
    return d;
  }
  // [N, C, H, W] dims in `layout`: dense NCHW, or NHWC strides (torch's channels_last).
  mlu::TensorDesc activation(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, ConvLayout layout) const {
    if (layout == ConvLayout::kNchw) return (*this)({n, c, h, w}, {}, mlu::Layout::kNCHW);
    return (*this)({n, c, h, w}, {h * w * c, 1, w * c, c}, mlu::Layout::kNCHW);
  }
};

constexpr double kLayerNormEps = 1e-5;  // torch.nn.LayerNorm's default

// A row's ops, built in two passes so that nothing between its kernels waits for the host: the
// buffers and the largest GEMM workspace are allocated first, then every op is enqueued.
class OpList {
 public:
  explicit OpList(Session& s) : s_(s) {}

  void* buffer(const mlu::TensorDesc& d) { return s_.alloc(d.span_bytes()); }

  // C = act(alpha op(A) op(B) + bias [+ R]) (mlu::matmul); `residual` adds R (beta 1) in the epilogue.
  void matmul(mlu::MatmulParams p, mlu::TensorDesc a, const void* pa, mlu::TensorDesc b, const void* pb,
              const mlu::TensorDesc* bias, const void* pbias, mlu::TensorDesc c, void* pc,
              const mlu::TensorDesc* residual = nullptr, const void* presidual = nullptr) {
    auto keep = [this](const mlu::TensorDesc* d) -> const mlu::TensorDesc* {
      if (d == nullptr) return nullptr;
      kept_.push_back(std::make_shared<mlu::TensorDesc>(*d));
      return kept_.back().get();
    };
    const mlu::TensorDesc* kept_bias = keep(bias);
    if (residual != nullptr) p.residual = keep(residual), p.residual_ptr = presidual, p.beta = 1.0f;
    std::size_t ws = 0;
    s_.check_op(mlu::get_matmul_workspace_size(s_.handle(), p, a, b, kept_bias, c, &ws), "matmul workspace");
    workspace_ = std::max(workspace_, ws);
    ops_.push_back([=, this] {
      s_.check_op(mlu::matmul(s_.handle(), p, a, pa, b, pb, kept_bias, pbias, c, pc, ws_ptr_, workspace_), "matmul");
    });
  }
  // torch.nn.LayerNorm(last dim) with weight and bias.
  void layer_norm(const mlu::TensorDesc& x, const void* px, const mlu::TensorDesc& y, void* py,
                  const mlu::TensorDesc& affine, const void* weight, const void* bias) {
    ops_.push_back([=, this] {
      s_.check_op(mlu::layer_norm_forward(s_.handle(), 1, kLayerNormEps, x, px, &affine, weight, &affine, bias, y, py,
                                          nullptr, nullptr, nullptr, nullptr),
                  "layer_norm_forward");
    });
  }
  void softmax(int dim, const mlu::TensorDesc& x, const void* px, const mlu::TensorDesc& y, void* py) {
    ops_.push_back([=, this] {
      s_.check_op(mlu::softmax_forward(s_.handle(), mlu::SoftmaxMode::kSoftmax, dim, x, px, y, py), "softmax_forward");
    });
  }
  void other(std::function<void()> op) { ops_.push_back(std::move(op)); }

  void enqueue_all() {
    ws_ptr_ = workspace_ > 0 ? s_.alloc(workspace_) : nullptr;
    for (const auto& op : ops_) op();
  }

 private:
  Session& s_;
  std::vector<std::function<void()>> ops_;
  std::vector<std::shared_ptr<mlu::TensorDesc>> kept_;
  std::size_t workspace_ = 0;
  void* ws_ptr_ = nullptr;
};

// PyTorchSim's attention: scores = k q^T / sqrt(D) [B, S, S], softmax along dim -2 (over the keys),
// out = v^T scores [B, D, S]. q, k, v are [B, S, D] views with any strides (the encoder's heads).
void attention_ops(OpList& ops, const Descriptors& desc, std::int64_t b, std::int64_t seq, std::int64_t dim,
                   const mlu::TensorDesc& q, const void* pq, const mlu::TensorDesc& k, const void* pk,
                   const mlu::TensorDesc& v, const void* pv, void* out) {
  const mlu::TensorDesc scores = desc({b, seq, seq});
  void* ps = ops.buffer(scores);
  mlu::MatmulParams qk;
  qk.trans_b = true;
  qk.alpha = static_cast<float>(1.0 / std::sqrt(double(dim)));
  ops.matmul(qk, k, pk, q, pq, nullptr, nullptr, scores, ps);
  ops.softmax(-2, scores, ps, scores, ps);
  mlu::MatmulParams pv_params;
  pv_params.trans_a = true;
  ops.matmul(pv_params, v, pv, scores, ps, nullptr, nullptr, desc({b, dim, seq}), out);
}

// PyTorchSim's BERT EncoderBlock on x [S, H] with `heads` heads: q, k, v = x W^T + b; attention on
// their [heads, S, H / heads] views; the result [heads, D, S] read as [S, H] (its view(-1, H));
// LayerNorm(that W_o^T + b_o + x); LayerNorm(relu(. W_1^T + b_1) W_2^T + b_2 + .). One LayerNorm
// module serves both norms (one weight and bias), as in the block.
void encoder_ops(OpList& ops, const Descriptors& desc, std::int64_t heads, std::int64_t seq, std::int64_t hidden) {
  const std::int64_t dim = hidden / heads, ffn = 4 * hidden;
  const mlu::TensorDesc act = desc({seq, hidden}), act4 = desc({seq, ffn});
  const mlu::TensorDesc square = desc({hidden, hidden}), vec = desc({hidden});
  const mlu::TensorDesc up = desc({ffn, hidden}), down = desc({hidden, ffn});
  const mlu::TensorDesc vec4 = desc({ffn});
  void* x = ops.buffer(act);
  mlu::MatmulParams linear;
  linear.trans_b = true;  // torch.nn.Linear: x W^T with W [out, in]
  void* qkv[3];
  for (void*& out : qkv) {
    out = ops.buffer(act);
    ops.matmul(linear, act, x, square, ops.buffer(square), &vec, ops.buffer(vec), act, out);
  }
  const mlu::TensorDesc head_view = desc({heads, seq, dim}, {dim, hidden, 1});
  void* att = ops.buffer(act);  // [heads, D, S], read as [S, H]
  attention_ops(ops, desc, heads, seq, dim, head_view, qkv[0], head_view, qkv[1], head_view, qkv[2], att);
  void* ln_weight = ops.buffer(vec);
  void* ln_bias = ops.buffer(vec);
  void* r1 = ops.buffer(act);
  void* y1 = ops.buffer(act);
  ops.matmul(linear, act, att, square, ops.buffer(square), &vec, ops.buffer(vec), act, r1, &act, x);
  ops.layer_norm(act, r1, act, y1, vec, ln_weight, ln_bias);
  mlu::MatmulParams relu = linear;
  relu.activation = mlu::Activation::kRelu;
  void* f1 = ops.buffer(act4);
  ops.matmul(relu, act, y1, up, ops.buffer(up), &vec4, ops.buffer(vec4), act4, f1);
  void* r2 = ops.buffer(act);
  ops.matmul(linear, act4, f1, down, ops.buffer(down), &vec, ops.buffer(vec), act, r2, &act, y1);
  ops.layer_norm(act, r2, act, ops.buffer(act), vec, ln_weight, ln_bias);
}

// Enqueues the row's op on the session's handle (asynchronous).
void enqueue(Session& s, const CalibrationRow& row, ConvLayout layout) {
  mlu::Handle* h = s.handle();
  const Descriptors desc{row.workload, row.dtype};
  OpList ops(s);
  switch (row.kind) {
    case WorkloadKind::kGemm: {
      const mlu::TensorDesc a = desc({row.m, row.k}), b = desc({row.k, row.n}), c = desc({row.m, row.n});
      ops.matmul({}, a, ops.buffer(a), b, ops.buffer(b), nullptr, nullptr, c, ops.buffer(c));
      break;
    }
    case WorkloadKind::kLayerNorm: {
      const mlu::TensorDesc x = desc({row.m, row.n}), affine = desc({row.n});
      ops.layer_norm(x, ops.buffer(x), x, ops.buffer(x), affine, ops.buffer(affine), ops.buffer(affine));
      break;
    }
    case WorkloadKind::kSoftmax: {
      const mlu::TensorDesc x = desc({row.m, row.n});
      ops.softmax(1, x, ops.buffer(x), x, ops.buffer(x));
      break;
    }
    case WorkloadKind::kAdd: {
      const mlu::TensorDesc x = desc({row.m, row.n});
      const void* a = ops.buffer(x);
      const void* b = ops.buffer(x);
      void* y = ops.buffer(x);
      ops.other([=, &s] { s.check_op(mlu::binary(h, mlu::BinaryOp::kAdd, x, a, x, b, x, y), "binary add"); });
      break;
    }
    case WorkloadKind::kRelu:
    case WorkloadKind::kGelu: {
      const mlu::TensorDesc x = desc({row.m, row.n});
      const void* in = ops.buffer(x);
      void* y = ops.buffer(x);
      const mlu::UnaryOp op = row.kind == WorkloadKind::kRelu ? mlu::UnaryOp::kRelu : mlu::UnaryOp::kGelu;
      const char* what = workload_kind_name(row.kind);
      ops.other([=, &s] { s.check_op(mlu::unary(h, op, x, in, x, y), what); });
      break;
    }
    case WorkloadKind::kAttention: {
      const mlu::TensorDesc qkv = desc({row.batch, row.seq, row.width});
      void* q = ops.buffer(qkv);
      void* k = ops.buffer(qkv);
      void* v = ops.buffer(qkv);
      attention_ops(ops, desc, row.batch, row.seq, row.width, qkv, q, qkv, k, qkv, v, ops.buffer(qkv));
      break;
    }
    case WorkloadKind::kEncoder:
      encoder_ops(ops, desc, row.batch, row.seq, row.width);
      break;
    case WorkloadKind::kConv2d: {
      mlu::ConvParams p;
      p.stride_h = p.stride_w = static_cast<int>(row.stride);
      p.pad_h = p.pad_w = static_cast<int>(row.pad);
      const mlu::TensorDesc x = desc.activation(row.batch, row.cin, row.h, row.w, layout);
      const mlu::TensorDesc w = desc.activation(row.cout, row.cin, row.kernel, row.kernel, layout);
      const mlu::TensorDesc y = desc.activation(row.batch, row.cout, row.out_h(), row.out_w(), layout);
      void* px = ops.buffer(x);
      void* pw = ops.buffer(w);
      void* py = ops.buffer(y);
      std::size_t ws = 0;
      s.check_op(mlu::get_conv2d_forward_workspace_size(h, p, x, w, y, &ws), "conv2d_forward workspace");
      void* pws = ws > 0 ? s.alloc(ws) : nullptr;
      ops.other([=, &s] {
        s.check_op(mlu::conv2d_forward(h, p, x, px, w, pw, nullptr, nullptr, y, py, pws, ws), "conv2d_forward");
      });
      break;
    }
    case WorkloadKind::kModel:
      throw std::logic_error("model rows run through the model runner");
  }
  ops.enqueue_all();
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
    : config_name_(config), overrides_(overrides), layout_(layout) {
  std::vector<sim::ConfigOverride> parsed;
  for (const std::string& o : overrides) parsed.push_back(sim::parse_config_override(o));
  sim::load_config(config, parsed);  // a bad config throws ConfigError (file, key, reason) first
  const std::vector<const char*> ptrs = c_strings(overrides);
  check(mlusimLoadConfigWithOverrides(config.c_str(), ptrs.data(), ptrs.size()), "load config '" + config + "'");
  config_ = driver::loaded_config();
}

RowResult ValidateRunner::run(const CalibrationRow& row) const {
  if (row.kind != WorkloadKind::kModel) return run_ops(row);
  if (!model_runner_)
    throw std::runtime_error(row.workload + ": 'model:" + row.model +
                             "' rows run through the PyTorch layer, which this mlusim was built without");
  const std::string trace = trace_dir_.empty() ? "" : trace_dir_ + "/" + row.workload + ".json";
  return model_runner_(row, config_name_, overrides_, trace);
}

RowResult ValidateRunner::run_ops(const CalibrationRow& row) const {
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
  const std::size_t dtype = static_cast<std::size_t>(row.dtype);
  for (const mlu::OpRecord& op : s.handle()->ops()) {
    macs[dtype] += op.macs;
    min_bytes += op.bytes;
  }
  r.macs = double(macs[dtype]);
  r.bound_cycles = double(sim::roofline_bound_ps(config_, macs, min_bytes)) * 1e-3 * cycles_per_ns;
  return r;
}

}  // namespace mlusim::cli
