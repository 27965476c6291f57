// ATen NN kernels over libmlu: softmax, nll loss, pooling, batch/layer norm, dropout.
//
// Families and their libmlu entry points:
//   _softmax / _log_softmax (+ backward)         softmax.h  softmax_forward / softmax_backward
//   nll_loss(2d)_forward / _backward              loss.h     nll_loss_forward / nll_loss_backward
//   max_pool2d_with_indices, avg_pool2d,          pool.h     max/avg/adaptive_avg_pool2d_forward/backward
//   _adaptive_avg_pool2d (+ backward)
//   native_batch_norm / native_layer_norm         norm.h     batch_norm_*, layer_norm_*
//   native_group_norm                             norm.h     layer_norm_forward (statistics) + one program
//   native_dropout (+ backward), bernoulli_(p)    random.h   dropout_forward / dropout_backward
//
// Notes on torch 1.13's lowering for this device (neither CUDA nor XLA):
// - nn.AdaptiveAvgPool2d((1, 1)) is x.mean((-1, -2), keepdim=True) (aten::mean.dim, the
//   reduction family), other output sizes reach _adaptive_avg_pool2d.
// - F.dropout / nn.Dropout take the non-fused path: noise = empty_like(x).bernoulli_(1 - p),
//   noise.div_(1 - p), x * noise. bernoulli_(p) is libmlu's dropout_forward keep-mask (Philox on
//   the device generator, torch.manual_seed reaches it) cast into self. torch.native_dropout
//   calls dropout_forward directly.
//
// Every kernel allocates its outputs before its first libmlu call and calls no other ATen op
// that runs libmlu kernels, so the op table shows the work under the ATen op named here.
#include <algorithm>
#include <cmath>
#include <tuple>

#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/zeros.h>
#include <c10/core/SymIntArrayRef.h>
#include <c10/util/StringUtil.h>
#include <torch/library.h>

#include "mlusim/mlu/elementwise.h"
#include "mlusim/mlu/loss.h"
#include "mlusim/mlu/norm.h"
#include "mlusim/mlu/pool.h"
#include "mlusim/mlu/random.h"
#include "mlusim/mlu/softmax.h"
#include "ops/op_support.h"
#include "ops/program_literal.h"

namespace mlusim::bridge::ops {
namespace {

using at::IntArrayRef;
using at::ScalarType;
using at::Tensor;
using OptTensor = c10::optional<Tensor>;

// ---- local helpers ---------------------------------------------------------------------------

// The floating dtypes libmlu's nn ops take. bfloat16 passes here; the libmlu op then decides
// (softmax and layer norm compute it where the preset has bf16; the others answer kNotSupported
// naming the op and dtype, which becomes NotImplementedError).
bool is_float_kind(ScalarType t) { return t == at::kFloat || t == at::kHalf || t == at::kBFloat16; }

void check_float(const Tensor& t, const char* op, const char* arg) {
  TORCH_CHECK_NOT_IMPLEMENTED(is_float_kind(t.scalar_type()), op, ": ", arg, " has dtype ", t.scalar_type(),
                              ", which is not supported on device mlu (float32, float16 and bfloat16 only)");
}

const Tensor* opt(const OptTensor& t) { return t.has_value() && t->defined() ? &*t : nullptr; }

// Accumulation dtype of statistics (torch's acc type on CUDA): float for half and bfloat16 inputs.
ScalarType stat_dtype(ScalarType t) { return t == at::kHalf || t == at::kBFloat16 ? at::kFloat : t; }

// out= checks: device, dtype (as structured kernels: the result dtype must match), resize.
void check_out(const Tensor& out, const c10::Device& device, IntArrayRef sizes, ScalarType dtype, const char* op,
               const char* arg) {
  check_on_device(out, device, op, arg);
  TORCH_CHECK(out.scalar_type() == dtype, op, ": expected ", arg, " to have dtype ", dtype, ", but got ",
              out.scalar_type(), " instead");
  at::native::resize_output(out, sizes);
}

// A new device tensor with `like`'s suggested memory format (channels-last stays channels-last).
Tensor empty_fmt(const c10::Device& device, IntArrayRef sizes, ScalarType dtype, at::MemoryFormat fmt) {
  if (sizes.size() != 4) fmt = at::MemoryFormat::Contiguous;
  return at::empty(sizes, at::TensorOptions().device(device).dtype(dtype).memory_format(fmt));
}

// A descriptor pointer for an optional argument (nullptr when absent).
struct OptDesc {
  mlu::TensorDesc d;
  const mlu::TensorDesc* ptr = nullptr;
  void* data = nullptr;
  OptDesc() = default;
  OptDesc(const OptDesc&) = delete;
  OptDesc& operator=(const OptDesc&) = delete;
  OptDesc(const Tensor* t, const char* op) {
    if (t == nullptr) return;
    d = desc(*t, op);
    ptr = &d;
    data = t->data_ptr();
  }
};

// ---- softmax / log_softmax ---------------------------------------------------------------------

ScalarType softmax_out_dtype(const Tensor& self, bool half_to_float, const char* op) {
  check_float(self, op, "self");
  if (half_to_float)
    TORCH_CHECK(self.scalar_type() == at::kHalf, op, ": conversion is supported for Half type only, got ",
                self.scalar_type());
  return half_to_float ? at::kFloat : self.scalar_type();
}

void softmax_run(OpScope& op, mlu::SoftmaxMode mode, const Tensor& self, int64_t dim, const Tensor& out) {
  check_on_device(self, op.device(), op.name(), "self");
  const int64_t d = wrap_dim(dim, self.dim(), op.name());
  op.check(mlu::softmax_forward(op.handle(), mode, static_cast<int>(d), desc(self, op.name()), self.data_ptr(),
                                desc(out, op.name()), out.data_ptr()),
           mode == mlu::SoftmaxMode::kSoftmax ? "softmax_forward" : "softmax_forward (log)");
}

// float64 (softmax(x, dtype=torch.float64)): narrowed to float32 with a range check, computed in
// float32 and written back as float64 (narrow_float64, op_support.h).
template <mlu::SoftmaxMode kMode>
Tensor mlu_softmax(const Tensor& self, int64_t dim, bool half_to_float) {
  constexpr const char* name = kMode == mlu::SoftmaxMode::kSoftmax ? "aten::_softmax" : "aten::_log_softmax";
  if (self.scalar_type() == at::kDouble && !half_to_float)
    return mlu_softmax<kMode>(narrow_float64(self, name), dim, false).to(at::kDouble);
  OpScope op(name, self);
  const ScalarType dt = softmax_out_dtype(self, half_to_float, name);
  wrap_dim(dim, self.dim(), name);
  Tensor out = empty_on(op.device(), self.sizes(), dt);
  softmax_run(op, kMode, self, dim, out);
  return out;
}

template <mlu::SoftmaxMode kMode>
Tensor& mlu_softmax_out(const Tensor& self, int64_t dim, bool half_to_float, Tensor& out) {
  constexpr const char* name = kMode == mlu::SoftmaxMode::kSoftmax ? "aten::_softmax.out" : "aten::_log_softmax.out";
  if (self.scalar_type() == at::kDouble && !half_to_float) return write_out(mlu_softmax<kMode>(self, dim, false), out, name);
  OpScope op(name, self);
  const ScalarType dt = softmax_out_dtype(self, half_to_float, name);
  wrap_dim(dim, self.dim(), name);
  check_out(out, op.device(), self.sizes(), dt, name, "out");
  softmax_run(op, kMode, self, dim, out);
  return out;
}

void softmax_backward_check(OpScope& op, const Tensor& grad_output, const Tensor& output,
                            ScalarType input_dtype) {
  check_on_device(grad_output, op.device(), op.name(), "grad_output");
  check_on_device(output, op.device(), op.name(), "output");
  check_float(grad_output, op.name(), "grad_output");
  check_float(output, op.name(), "output");
  TORCH_CHECK_NOT_IMPLEMENTED(is_float_kind(input_dtype), op.name(), ": input_dtype ", input_dtype,
                              " is not supported on device mlu (float32 and float16 only)");
  TORCH_CHECK(grad_output.sizes() == output.sizes(), op.name(), ": grad_output ", grad_output.sizes(),
              " and output ", output.sizes(), " differ in shape");
}

void softmax_backward_run(OpScope& op, mlu::SoftmaxMode mode, const Tensor& grad_output, const Tensor& output,
                          int64_t dim, const Tensor& grad_input) {
  const int64_t d = wrap_dim(dim, output.dim(), op.name());
  op.check(mlu::softmax_backward(op.handle(), mode, static_cast<int>(d), desc(output, op.name()), output.data_ptr(),
                                 desc(grad_output, op.name()), grad_output.data_ptr(), desc(grad_input, op.name()),
                                 grad_input.data_ptr()),
           "softmax_backward");
}

bool softmax_backward_has_float64(const Tensor& grad_output, const Tensor& output, ScalarType input_dtype) {
  return grad_output.scalar_type() == at::kDouble || output.scalar_type() == at::kDouble || input_dtype == at::kDouble;
}

// float64 operands (the backward of softmax(x, dtype=torch.float64), or of a float64 softmax): as
// the forward, narrowed to float32 (narrow_float64's range check), computed in float32, and the
// gradient written back as float64 when the input was.
template <mlu::SoftmaxMode kMode>
Tensor mlu_softmax_backward(const Tensor& grad_output, const Tensor& output, int64_t dim, ScalarType input_dtype) {
  constexpr const char* name =
      kMode == mlu::SoftmaxMode::kSoftmax ? "aten::_softmax_backward_data" : "aten::_log_softmax_backward_data";
  if (softmax_backward_has_float64(grad_output, output, input_dtype)) {
    const auto narrow = [&](const Tensor& t) { return t.scalar_type() == at::kDouble ? narrow_float64(t, name) : t; };
    const Tensor r = mlu_softmax_backward<kMode>(narrow(grad_output), narrow(output), dim,
                                                 input_dtype == at::kDouble ? at::kFloat : input_dtype);
    return input_dtype == at::kDouble ? r.to(at::kDouble) : r;
  }
  OpScope op(name, output);
  softmax_backward_check(op, grad_output, output, input_dtype);
  wrap_dim(dim, output.dim(), name);
  Tensor grad_input = empty_on(op.device(), output.sizes(), input_dtype);
  softmax_backward_run(op, kMode, grad_output, output, dim, grad_input);
  return grad_input;
}

template <mlu::SoftmaxMode kMode>
Tensor& mlu_softmax_backward_out(const Tensor& grad_output, const Tensor& output, int64_t dim, ScalarType input_dtype,
                                 Tensor& grad_input) {
  constexpr const char* name = kMode == mlu::SoftmaxMode::kSoftmax ? "aten::_softmax_backward_data.out"
                                                                   : "aten::_log_softmax_backward_data.out";
  if (softmax_backward_has_float64(grad_output, output, input_dtype))
    return write_out(mlu_softmax_backward<kMode>(grad_output, output, dim, input_dtype), grad_input, name);
  OpScope op(name, output);
  softmax_backward_check(op, grad_output, output, input_dtype);
  wrap_dim(dim, output.dim(), name);
  check_out(grad_input, op.device(), output.sizes(), input_dtype, name, "grad_input");
  softmax_backward_run(op, kMode, grad_output, output, dim, grad_input);
  return grad_input;
}

// ---- nll_loss / nll_loss2d ---------------------------------------------------------------------

mlu::LossReduction loss_reduction(int64_t reduction, const char* op) {
  switch (reduction) {
    case 0: return mlu::LossReduction::kNone;
    case 1: return mlu::LossReduction::kMean;
    case 2: return mlu::LossReduction::kSum;
    default: break;
  }
  TORCH_CHECK_VALUE(false, op, ": ", reduction, " is not a valid value for reduction (0 none, 1 mean, 2 sum)");
}

// Checks as torch's nll_loss / nll_loss2d (CPU) and returns the output's sizes.
std::vector<int64_t> nll_check(OpScope& op, bool spatial, const Tensor& self, const Tensor& target,
                               const Tensor* weight, int64_t reduction) {
  const char* name = op.name();
  check_on_device(self, op.device(), name, "self");
  check_on_device(target, op.device(), name, "target");
  if (weight) check_on_device(*weight, op.device(), name, "weight");
  loss_reduction(reduction, name);
  std::vector<int64_t> out_sizes;
  if (!spatial) {
    TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, name, ": input tensor should be 1D or 2D, got ", self.sizes());
    TORCH_CHECK(target.dim() <= 1, name, ": 0D or 1D target tensor expected, multi-target not supported, got ",
                target.sizes());
    const bool no_batch_dim = self.dim() == 1 && target.dim() == 0;
    TORCH_CHECK(no_batch_dim || self.size(0) == target.size(0), name, ": size mismatch (got input: ", self.sizes(),
                ", target: ", target.sizes(), ")");
    if (reduction == 0 && self.dim() == 2) out_sizes = {self.size(0)};
  } else {
    TORCH_CHECK(target.dim() == 3, name, ": only batches of spatial targets supported (3D tensors) but got targets "
                "of size: ", target.sizes());
    TORCH_CHECK(self.dim() == 4, name, ": only batches of spatial inputs supported (4D tensors), but got input of "
                "size: ", self.sizes());
    TORCH_CHECK(self.size(0) == target.size(0) && self.size(2) == target.size(1) && self.size(3) == target.size(2),
                name, ": input and target batch or spatial sizes don't match: target ", target.sizes(), ", input ",
                self.sizes());
    if (reduction == 0) out_sizes = {target.size(0), target.size(1), target.size(2)};
  }
  const int64_t classes = self.size(spatial ? 1 : -1);
  TORCH_CHECK(!weight || (weight->dim() == 1 && weight->numel() == classes), name,
              ": weight tensor should be defined either for all ", classes,
              " classes or no classes but got weight tensor of shape: ", weight ? weight->sizes() : IntArrayRef{});
  check_float(self, name, "self");
  TORCH_CHECK_NOT_IMPLEMENTED(target.scalar_type() == at::kLong || target.scalar_type() == at::kInt, name,
                              ": target has dtype ", target.scalar_type(), ", which is not supported on device mlu"
                              "(int64, int32)");
  if (weight)
    TORCH_CHECK(weight->scalar_type() == self.scalar_type(), name, ": expected weight to have dtype ",
                self.scalar_type(), ", but got ", weight->scalar_type());
  return out_sizes;
}

void nll_forward_run(OpScope& op, const Tensor& self, const Tensor& target, const Tensor* weight,
                     int64_t reduction, int64_t ignore_index, const Tensor& output, const Tensor& total_weight) {
  const char* name = op.name();
  const mlu::LossReduction red = loss_reduction(reduction, name);
  const mlu::TensorDesc in_d = desc(self, name);
  std::size_t ws_bytes = 0;
  op.check(mlu::get_nll_loss_workspace_size(op.handle(), in_d, red, &ws_bytes), "get_nll_loss_workspace_size");
  void* ws = op.workspace(ws_bytes);
  // libmlu leaves total_weight unwritten for kNone without samples (its contract says 0): memset.
  if (red == mlu::LossReduction::kNone && target.numel() == 0) total_weight.zero_();
  const OptDesc w(weight, name);
  op.check(mlu::nll_loss_forward(op.handle(), red, ignore_index, in_d, self.data_ptr(), desc(target, name),
                                 target.data_ptr(), w.ptr, w.data, ws, ws_bytes, desc(output, name), output.data_ptr(),
                                 desc(total_weight, name), total_weight.data_ptr()),
           "nll_loss_forward");
}

template <bool kSpatial>
std::tuple<Tensor, Tensor> mlu_nll_forward(const Tensor& self, const Tensor& target, const OptTensor& weight_opt,
                                           int64_t reduction, int64_t ignore_index) {
  constexpr const char* name = kSpatial ? "aten::nll_loss2d_forward" : "aten::nll_loss_forward";
  OpScope op(name, self);
  const Tensor* weight = opt(weight_opt);
  const auto out_sizes = nll_check(op, kSpatial, self, target, weight, reduction);
  Tensor output = empty_on(op.device(), out_sizes, self.scalar_type());
  Tensor total_weight = empty_on(op.device(), {}, self.scalar_type());
  nll_forward_run(op, self, target, weight, reduction, ignore_index, output, total_weight);
  return std::make_tuple(output, total_weight);
}

template <bool kSpatial>
std::tuple<Tensor&, Tensor&> mlu_nll_forward_out(const Tensor& self, const Tensor& target, const OptTensor& weight_opt,
                                                 int64_t reduction, int64_t ignore_index, Tensor& output,
                                                 Tensor& total_weight) {
  constexpr const char* name = kSpatial ? "aten::nll_loss2d_forward.output" : "aten::nll_loss_forward.output";
  OpScope op(name, self);
  const Tensor* weight = opt(weight_opt);
  const auto out_sizes = nll_check(op, kSpatial, self, target, weight, reduction);
  check_out(output, op.device(), out_sizes, self.scalar_type(), name, "output");
  check_out(total_weight, op.device(), {}, self.scalar_type(), name, "total_weight");
  nll_forward_run(op, self, target, weight, reduction, ignore_index, output, total_weight);
  return std::forward_as_tuple(output, total_weight);
}

void nll_backward_check(OpScope& op, bool spatial, const Tensor& grad_output, const Tensor& self,
                        const Tensor& target, const Tensor* weight, int64_t reduction, const Tensor& total_weight) {
  const char* name = op.name();
  const auto out_sizes = nll_check(op, spatial, self, target, weight, reduction);
  check_on_device(grad_output, op.device(), name, "grad_output");
  check_on_device(total_weight, op.device(), name, "total_weight");
  check_float(grad_output, name, "grad_output");
  check_float(total_weight, name, "total_weight");
  TORCH_CHECK(total_weight.numel() == 1, name, ": expected total_weight to be a single element tensor, got: ",
              total_weight.sizes(), " (", total_weight.numel(), " elements)");
  if (!out_sizes.empty()) {
    TORCH_CHECK(grad_output.sizes() == IntArrayRef(out_sizes), name, ": expected grad_output of size ",
                IntArrayRef(out_sizes), ", but got ", grad_output.sizes());
  } else {
    TORCH_CHECK(grad_output.dim() <= 1 && grad_output.numel() == 1, name,
                ": Expected a single element grad_output tensor, but got: ", grad_output.sizes());
  }
}

void nll_backward_run(OpScope& op, const Tensor& grad_output, const Tensor& target, const Tensor* weight,
                      int64_t reduction, int64_t ignore_index, const Tensor& total_weight, const Tensor& grad_input) {
  const char* name = op.name();
  // libmlu wants the single-element tensors as 0-d (same storage element).
  const Tensor tw = total_weight.as_strided({}, {});
  const bool per_sample = reduction == 0 && grad_output.sizes() == target.sizes();
  const Tensor go = per_sample ? grad_output : grad_output.as_strided({}, {});
  const OptDesc w(weight, name);
  op.check(mlu::nll_loss_backward(op.handle(), loss_reduction(reduction, name), ignore_index, desc(go, name),
                                  go.data_ptr(), desc(target, name), target.data_ptr(), w.ptr, w.data, desc(tw, name),
                                  tw.data_ptr(), desc(grad_input, name), grad_input.data_ptr()),
           "nll_loss_backward");
}

template <bool kSpatial>
Tensor mlu_nll_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target, const OptTensor& weight_opt,
                        int64_t reduction, int64_t ignore_index, const Tensor& total_weight) {
  constexpr const char* name = kSpatial ? "aten::nll_loss2d_backward" : "aten::nll_loss_backward";
  OpScope op(name, self);
  const Tensor* weight = opt(weight_opt);
  nll_backward_check(op, kSpatial, grad_output, self, target, weight, reduction, total_weight);
  Tensor grad_input = empty_fmt(op.device(), self.sizes(), self.scalar_type(), self.suggest_memory_format());
  nll_backward_run(op, grad_output, target, weight, reduction, ignore_index, total_weight, grad_input);
  return grad_input;
}

template <bool kSpatial>
Tensor& mlu_nll_backward_out(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                             const OptTensor& weight_opt, int64_t reduction, int64_t ignore_index,
                             const Tensor& total_weight, Tensor& grad_input) {
  constexpr const char* name = kSpatial ? "aten::nll_loss2d_backward.grad_input" : "aten::nll_loss_backward.grad_input";
  OpScope op(name, self);
  const Tensor* weight = opt(weight_opt);
  nll_backward_check(op, kSpatial, grad_output, self, target, weight, reduction, total_weight);
  check_out(grad_input, op.device(), self.sizes(), self.scalar_type(), name, "grad_input");
  nll_backward_run(op, grad_output, target, weight, reduction, ignore_index, total_weight, grad_input);
  return grad_input;
}

// ---- pooling ---------------------------------------------------------------------------------------

struct PoolGeom {
  mlu::Pool2dParams p;
  std::vector<int64_t> out_sizes;
};

// One int or a pair (torch's max_pool2d / avg_pool2d argument rules).
void pair_arg(IntArrayRef v, bool allow_empty, const char* op, const char* what, int64_t dflt_h, int64_t dflt_w,
              int64_t* h, int64_t* w) {
  TORCH_CHECK(v.size() == 1 || v.size() == 2 || (allow_empty && v.empty()), op, ": ", what, " must either be ",
              allow_empty ? "omitted, " : "", "a single int, or a tuple of two ints, got ", v);
  if (v.empty()) {
    *h = dflt_h, *w = dflt_w;
  } else {
    *h = v[0];
    *w = v.size() == 1 ? v[0] : v[1];
  }
}

void check_pool_input(const Tensor& self, const char* op) {
  const int64_t nd = self.dim();
  TORCH_CHECK((nd == 3 && self.size(0) != 0 && self.size(1) != 0 && self.size(2) != 0) ||
                  (nd == 4 && self.size(1) != 0 && self.size(2) != 0 && self.size(3) != 0),
              op, ": Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got: ",
              self.sizes());
  check_float(self, op, "self");
}

PoolGeom pool_geometry(OpScope& op, const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                       IntArrayRef padding, IntArrayRef dilation, bool ceil_mode, bool is_max) {
  const char* name = op.name();
  check_on_device(self, op.device(), name, "self");
  check_pool_input(self, name);
  PoolGeom g;
  mlu::Pool2dParams& p = g.p;
  pair_arg(kernel_size, false, name, "kernel_size", 0, 0, &p.kernel_h, &p.kernel_w);
  pair_arg(stride, true, name, "stride", p.kernel_h, p.kernel_w, &p.stride_h, &p.stride_w);
  pair_arg(padding, false, name, "padding", 0, 0, &p.pad_h, &p.pad_w);
  if (is_max) pair_arg(dilation, false, name, "dilation", 1, 1, &p.dilation_h, &p.dilation_w);
  p.ceil_mode = ceil_mode;
  TORCH_CHECK(p.kernel_h > 0 && p.kernel_w > 0, name, ": kernel size should be greater than zero, but got kH: ",
              p.kernel_h, " kW: ", p.kernel_w);
  TORCH_CHECK(p.stride_h > 0 && p.stride_w > 0, name, ": stride should be greater than zero, but got dH: ", p.stride_h,
              " dW: ", p.stride_w);
  TORCH_CHECK(p.dilation_h > 0 && p.dilation_w > 0, name, ": dilation should be greater than zero, but got dilationH: ",
              p.dilation_h, " dilationW: ", p.dilation_w);
  TORCH_CHECK(p.pad_h >= 0 && p.pad_w >= 0 && p.kernel_w / 2 >= p.pad_w && p.kernel_h / 2 >= p.pad_h, name,
              ": pad should be smaller than or equal to half of kernel size, but got padW = ", p.pad_w,
              ", padH = ", p.pad_h, ", kW = ", p.kernel_w, ", kH = ", p.kernel_h);
  const int64_t nd = self.dim();
  int64_t oh = 0, ow = 0;
  op.check(mlu::pool2d_output_size(p, self.size(nd - 2), self.size(nd - 1), &oh, &ow), "pool2d_output_size");
  g.out_sizes.assign(self.sizes().begin(), self.sizes().end());
  g.out_sizes[nd - 2] = oh;
  g.out_sizes[nd - 1] = ow;
  return g;
}

void check_grad_output_shape(const Tensor& grad_output, IntArrayRef want, const char* op) {
  TORCH_CHECK(grad_output.sizes() == want, op, ": expected grad_output of size ", want, " (the forward's output), "
              "but got ", grad_output.sizes());
}

// max_pool2d_with_indices
void max_pool_run(OpScope& op, const PoolGeom& g, const Tensor& self, const Tensor& out, const Tensor& indices) {
  const char* name = op.name();
  if (self.numel() == 0) return;
  const mlu::TensorDesc id = desc(indices, name);
  op.check(mlu::max_pool2d_forward(op.handle(), g.p, desc(self, name), self.data_ptr(), desc(out, name),
                                   out.data_ptr(), &id, indices.data_ptr()),
           "max_pool2d_forward");
}

std::tuple<Tensor, Tensor> mlu_max_pool2d_with_indices(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                                                       IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  OpScope op("aten::max_pool2d_with_indices", self);
  const PoolGeom g = pool_geometry(op, self, kernel_size, stride, padding, dilation, ceil_mode, true);
  const auto fmt = self.suggest_memory_format();
  Tensor out = empty_fmt(op.device(), g.out_sizes, self.scalar_type(), fmt);
  Tensor indices = empty_fmt(op.device(), g.out_sizes, at::kLong, fmt);
  max_pool_run(op, g, self, out, indices);
  return std::make_tuple(out, indices);
}

std::tuple<Tensor&, Tensor&> mlu_max_pool2d_with_indices_out(const Tensor& self, IntArrayRef kernel_size,
                                                             IntArrayRef stride, IntArrayRef padding,
                                                             IntArrayRef dilation, bool ceil_mode, Tensor& out,
                                                             Tensor& indices) {
  const char* name = "aten::max_pool2d_with_indices.out";
  OpScope op(name, self);
  const PoolGeom g = pool_geometry(op, self, kernel_size, stride, padding, dilation, ceil_mode, true);
  check_out(out, op.device(), g.out_sizes, self.scalar_type(), name, "out");
  check_out(indices, op.device(), g.out_sizes, at::kLong, name, "indices");
  max_pool_run(op, g, self, out, indices);
  return std::forward_as_tuple(out, indices);
}

void max_pool_backward_check(OpScope& op, const PoolGeom& g, const Tensor& grad_output, const Tensor& indices) {
  check_on_device(grad_output, op.device(), op.name(), "grad_output");
  check_on_device(indices, op.device(), op.name(), "indices");
  check_grad_output_shape(grad_output, g.out_sizes, op.name());
  TORCH_CHECK(indices.sizes() == IntArrayRef(g.out_sizes), op.name(), ": expected indices of size ",
              IntArrayRef(g.out_sizes), ", but got ", indices.sizes());
  TORCH_CHECK(indices.scalar_type() == at::kLong || indices.scalar_type() == at::kInt, op.name(),
              ": expected int64 indices, got ", indices.scalar_type());
  check_float(grad_output, op.name(), "grad_output");
}

void max_pool_backward_run(OpScope& op, const PoolGeom& g, const Tensor& grad_output, const Tensor& indices,
                           const Tensor& grad_input) {
  const char* name = op.name();
  if (grad_input.numel() == 0) return;
  op.check(mlu::max_pool2d_backward(op.handle(), g.p, desc(grad_output, name), grad_output.data_ptr(),
                                    desc(indices, name), indices.data_ptr(), desc(grad_input, name),
                                    grad_input.data_ptr()),
           "max_pool2d_backward");
}

Tensor mlu_max_pool2d_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                               IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool ceil_mode,
                               const Tensor& indices) {
  OpScope op("aten::max_pool2d_with_indices_backward", self);
  const PoolGeom g = pool_geometry(op, self, kernel_size, stride, padding, dilation, ceil_mode, true);
  max_pool_backward_check(op, g, grad_output, indices);
  Tensor grad_input = empty_fmt(op.device(), self.sizes(), grad_output.scalar_type(), self.suggest_memory_format());
  max_pool_backward_run(op, g, grad_output, indices, grad_input);
  return grad_input;
}

Tensor& mlu_max_pool2d_backward_out(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                                    IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool ceil_mode,
                                    const Tensor& indices, Tensor& grad_input) {
  const char* name = "aten::max_pool2d_with_indices_backward.grad_input";
  OpScope op(name, self);
  const PoolGeom g = pool_geometry(op, self, kernel_size, stride, padding, dilation, ceil_mode, true);
  max_pool_backward_check(op, g, grad_output, indices);
  check_out(grad_input, op.device(), self.sizes(), grad_output.scalar_type(), name, "grad_input");
  max_pool_backward_run(op, g, grad_output, indices, grad_input);
  return grad_input;
}

// avg_pool2d
PoolGeom avg_geometry(OpScope& op, const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                      IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                      c10::optional<int64_t> divisor_override) {
  PoolGeom g = pool_geometry(op, self, kernel_size, stride, padding, {1}, ceil_mode, false);
  if (divisor_override) {
    TORCH_CHECK(*divisor_override != 0, op.name(), ": divisor must be not zero");
    TORCH_CHECK_NOT_IMPLEMENTED(*divisor_override > 0, op.name(), ": a negative divisor_override (",
                                *divisor_override, ") is not supported on device mlu");
  }
  g.p.count_include_pad = count_include_pad;
  g.p.divisor_override = divisor_override.value_or(0);
  return g;
}

void avg_pool_run(OpScope& op, const PoolGeom& g, const Tensor& self, const Tensor& out) {
  if (self.numel() == 0) return;
  op.check(mlu::avg_pool2d_forward(op.handle(), g.p, desc(self, op.name()), self.data_ptr(), desc(out, op.name()),
                                   out.data_ptr()),
           "avg_pool2d_forward");
}

Tensor mlu_avg_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                      bool ceil_mode, bool count_include_pad, c10::optional<int64_t> divisor_override) {
  OpScope op("aten::avg_pool2d", self);
  const PoolGeom g = avg_geometry(op, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
  Tensor out = empty_fmt(op.device(), g.out_sizes, self.scalar_type(), self.suggest_memory_format());
  avg_pool_run(op, g, self, out);
  return out;
}

Tensor& mlu_avg_pool2d_out(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                           bool ceil_mode, bool count_include_pad, c10::optional<int64_t> divisor_override,
                           Tensor& out) {
  const char* name = "aten::avg_pool2d.out";
  OpScope op(name, self);
  const PoolGeom g = avg_geometry(op, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
  check_out(out, op.device(), g.out_sizes, self.scalar_type(), name, "out");
  avg_pool_run(op, g, self, out);
  return out;
}

void avg_pool_backward_run(OpScope& op, const PoolGeom& g, const Tensor& grad_output, const Tensor& grad_input) {
  check_on_device(grad_output, op.device(), op.name(), "grad_output");
  check_grad_output_shape(grad_output, g.out_sizes, op.name());
  check_float(grad_output, op.name(), "grad_output");
  if (grad_input.numel() == 0) return;
  op.check(mlu::avg_pool2d_backward(op.handle(), g.p, desc(grad_output, op.name()), grad_output.data_ptr(),
                                    desc(grad_input, op.name()), grad_input.data_ptr()),
           "avg_pool2d_backward");
}

Tensor mlu_avg_pool2d_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                               IntArrayRef stride, IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                               c10::optional<int64_t> divisor_override) {
  OpScope op("aten::avg_pool2d_backward", self);
  const PoolGeom g = avg_geometry(op, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
  Tensor grad_input = empty_fmt(op.device(), self.sizes(), grad_output.scalar_type(), self.suggest_memory_format());
  avg_pool_backward_run(op, g, grad_output, grad_input);
  return grad_input;
}

Tensor& mlu_avg_pool2d_backward_out(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                                    IntArrayRef stride, IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                                    c10::optional<int64_t> divisor_override, Tensor& grad_input) {
  const char* name = "aten::avg_pool2d_backward.grad_input";
  OpScope op(name, self);
  const PoolGeom g = avg_geometry(op, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
  check_out(grad_input, op.device(), self.sizes(), grad_output.scalar_type(), name, "grad_input");
  avg_pool_backward_run(op, g, grad_output, grad_input);
  return grad_input;
}

// _adaptive_avg_pool2d
std::vector<int64_t> adaptive_sizes(OpScope& op, const Tensor& self, c10::SymIntArrayRef output_size_sym) {
  const char* name = op.name();
  check_on_device(self, op.device(), name, "self");
  const IntArrayRef output_size = C10_AS_INTARRAYREF_SLOW(output_size_sym);
  TORCH_CHECK(output_size.size() == 2, name, ": output_size must be 2, got ", output_size);
  const int64_t nd = self.dim();
  TORCH_CHECK(nd == 3 || nd == 4, name, ": Expected 3D or 4D tensor, but got ", self.sizes());
  for (int64_t i = 1; i < nd; ++i)
    TORCH_CHECK(self.size(i) > 0, name, ": Expected input to have non-zero size for non-batch dimensions, but input "
                "has sizes ", self.sizes(), " with dimension ", i, " being empty");
  TORCH_CHECK(output_size[0] >= 0 && output_size[1] >= 0, name, ": output_size must be non-negative, got ",
              output_size);
  check_float(self, name, "self");
  std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end());
  sizes[nd - 2] = output_size[0];
  sizes[nd - 1] = output_size[1];
  return sizes;
}

// libmlu's uneven-bin path needs N and C to merge; other layouts go through a dense copy first.
// Forward: y from x; backward: dx from dy. `in` may be copied, `out` is written (through a dense
// temporary when libmlu refuses its layout).
void adaptive_run(OpScope& op, bool backward, const Tensor& in, const Tensor& out) {
  const char* name = op.name();
  if (in.numel() == 0 || out.numel() == 0) return;
  auto call = [&](const Tensor& i, const Tensor& o) {
    return backward ? mlu::adaptive_avg_pool2d_backward(op.handle(), desc(i, name), i.data_ptr(), desc(o, name),
                                                        o.data_ptr())
                    : mlu::adaptive_avg_pool2d_forward(op.handle(), desc(i, name), i.data_ptr(), desc(o, name),
                                                       o.data_ptr());
  };
  const char* call_name = backward ? "adaptive_avg_pool2d_backward" : "adaptive_avg_pool2d_forward";
  mlu::Status s = call(in, out);
  if (s != mlu::Status::kNotSupported) return op.check(s, call_name);
  // Dense temporaries (allocated only on this path; the copies are libmlu kernels of this op).
  Tensor i = in.is_contiguous() ? in : empty_on(op.device(), in.sizes(), in.scalar_type());
  Tensor o = out.is_contiguous() ? out : empty_on(op.device(), out.sizes(), out.scalar_type());
  TORCH_CHECK_NOT_IMPLEMENTED(!(i.is_same(in) && o.is_same(out)), name, ": ", mlu::last_error_detail(),
                              " (libmlu ", call_name, " on device mlu)");
  if (!i.is_same(in)) copy_into(op, in, i);
  op.check(call(i, o), call_name);
  if (!o.is_same(out)) copy_into(op, o, out);
}

Tensor mlu_adaptive_avg_pool2d(const Tensor& self, c10::SymIntArrayRef output_size) {
  OpScope op("aten::_adaptive_avg_pool2d", self);
  const auto sizes = adaptive_sizes(op, self, output_size);
  Tensor out = empty_fmt(op.device(), sizes, self.scalar_type(), self.suggest_memory_format());
  adaptive_run(op, false, self, out);
  return out;
}

template <bool kPublic>
Tensor& mlu_adaptive_avg_pool2d_out(const Tensor& self, c10::SymIntArrayRef output_size, Tensor& out) {
  constexpr const char* name = kPublic ? "aten::adaptive_avg_pool2d.out" : "aten::_adaptive_avg_pool2d.out";
  OpScope op(name, self);
  const auto sizes = adaptive_sizes(op, self, output_size);
  check_out(out, op.device(), sizes, self.scalar_type(), name, "out");
  adaptive_run(op, false, self, out);
  return out;
}

void adaptive_backward_check(OpScope& op, const Tensor& grad_output, const Tensor& self) {
  const char* name = op.name();
  check_on_device(grad_output, op.device(), name, "grad_output");
  check_on_device(self, op.device(), name, "self");
  TORCH_CHECK(self.dim() == 3 || self.dim() == 4, name, ": Expected 3D or 4D tensor, but got ", self.sizes());
  TORCH_CHECK(grad_output.dim() == self.dim(), name, ": grad_output ", grad_output.sizes(), " and self ",
              self.sizes(), " differ in their number of dims");
  for (int64_t i = 0; i < self.dim() - 2; ++i)
    TORCH_CHECK(grad_output.size(i) == self.size(i), name, ": grad_output ", grad_output.sizes(), " and self ",
                self.sizes(), " differ in their batch/channel dims");
  check_float(grad_output, name, "grad_output");
  check_float(self, name, "self");
  TORCH_CHECK(grad_output.scalar_type() == self.scalar_type(), name, ": expected grad_output to have dtype ",
              self.scalar_type(), ", but got ", grad_output.scalar_type());
}

Tensor mlu_adaptive_avg_pool2d_backward(const Tensor& grad_output, const Tensor& self) {
  OpScope op("aten::_adaptive_avg_pool2d_backward", self);
  adaptive_backward_check(op, grad_output, self);
  Tensor grad_input = empty_fmt(op.device(), self.sizes(), self.scalar_type(), self.suggest_memory_format());
  adaptive_run(op, true, grad_output, grad_input);
  return grad_input;
}

Tensor& mlu_adaptive_avg_pool2d_backward_out(const Tensor& grad_output, const Tensor& self, Tensor& out) {
  const char* name = "aten::_adaptive_avg_pool2d_backward.out";
  OpScope op(name, self);
  adaptive_backward_check(op, grad_output, self);
  check_out(out, op.device(), self.sizes(), self.scalar_type(), name, "out");
  adaptive_run(op, true, grad_output, out);
  return out;
}

// ---- batch norm ----------------------------------------------------------------------------------

void check_channel_arg(OpScope& op, const Tensor* t, int64_t channels, const char* arg) {
  if (!t) return;
  check_on_device(*t, op.device(), op.name(), arg);
  TORCH_CHECK(t->numel() == channels, op.name(), ": ", arg, " should contain ", channels, " elements not ",
              t->numel());
  TORCH_CHECK(t->dim() == 1, op.name(), ": ", arg, " must be 1-d [", channels, "], got ", t->sizes());
  check_float(*t, op.name(), arg);
}

int64_t batch_norm_check(OpScope& op, const Tensor& input, const Tensor* weight, const Tensor* bias,
                         const Tensor* running_mean, const Tensor* running_var, bool training) {
  const char* name = op.name();
  check_on_device(input, op.device(), name, "input");
  TORCH_CHECK(input.dim() >= 2, name, ": expected input with at least 2 dims ([N, C, ...]), got ", input.sizes());
  check_float(input, name, "input");
  const int64_t c = input.size(1);
  check_channel_arg(op, weight, c, "weight");
  check_channel_arg(op, bias, c, "bias");
  check_channel_arg(op, running_mean, c, "running_mean");
  check_channel_arg(op, running_var, c, "running_var");
  if (!training) {
    TORCH_CHECK(running_mean != nullptr, name, ": running_mean must be defined in evaluation mode");
    TORCH_CHECK(running_var != nullptr, name, ": running_var must be defined in evaluation mode");
  }
  return c;
}

void batch_norm_run(OpScope& op, const Tensor& input, const Tensor* weight, const Tensor* bias,
                    const Tensor* running_mean, const Tensor* running_var, bool training, double momentum, double eps,
                    const Tensor& out, const Tensor& save_mean, const Tensor& save_invstd) {
  const char* name = op.name();
  const OptDesc w(weight, name), b(bias, name), rm(running_mean, name), rv(running_var, name);
  if (training) {
    if (input.numel() == 0) {
      // Nothing to normalize: zero statistics (torch's empty-batch result is NaN-free only here).
      if (save_mean.numel()) save_mean.zero_();
      if (save_invstd.numel()) save_invstd.zero_();
      return;
    }
    const mlu::TensorDesc sm = desc(save_mean, name), si = desc(save_invstd, name), xd = desc(input, name);
    std::size_t ws_bytes = 0;
    op.check(mlu::get_batch_norm_forward_training_workspace_size(op.handle(), xd, &ws_bytes),
             "get_batch_norm_forward_training_workspace_size");
    void* ws = op.workspace(ws_bytes);
    op.check(mlu::batch_norm_forward_training(op.handle(), momentum, eps, xd, input.data_ptr(), w.ptr, w.data, b.ptr,
                                              b.data, rm.ptr, rm.data, rv.ptr, rv.data, desc(out, name),
                                              out.data_ptr(), &sm, save_mean.data_ptr(), &si, save_invstd.data_ptr(),
                                              ws, ws_bytes),
             "batch_norm_forward_training");
  } else {
    if (input.numel() == 0) return;
    op.check(mlu::batch_norm_forward_inference(op.handle(), eps, desc(input, name), input.data_ptr(), w.ptr, w.data,
                                               b.ptr, b.data, rm.d, rm.data, rv.d, rv.data, desc(out, name),
                                               out.data_ptr()),
             "batch_norm_forward_inference");
  }
}

std::tuple<Tensor, Tensor, Tensor> mlu_native_batch_norm(const Tensor& input, const OptTensor& weight_opt,
                                                         const OptTensor& bias_opt, const OptTensor& running_mean_opt,
                                                         const OptTensor& running_var_opt, bool training,
                                                         double momentum, double eps) {
  OpScope op("aten::native_batch_norm", input);
  const Tensor *weight = opt(weight_opt), *bias = opt(bias_opt), *rm = opt(running_mean_opt),
               *rv = opt(running_var_opt);
  const int64_t c = batch_norm_check(op, input, weight, bias, rm, rv, training);
  const ScalarType sdt = stat_dtype(input.scalar_type());
  Tensor out = empty_fmt(op.device(), input.sizes(), input.scalar_type(), input.suggest_memory_format());
  Tensor save_mean = empty_on(op.device(), {training ? c : 0}, sdt);
  Tensor save_invstd = empty_on(op.device(), {training ? c : 0}, sdt);
  batch_norm_run(op, input, weight, bias, rm, rv, training, momentum, eps, out, save_mean, save_invstd);
  return std::make_tuple(out, save_mean, save_invstd);
}

// The "legit" forms torch.compile's AOTAutograd and torch.export graphs use: native_batch_norm
// with the running statistics' mutation in the schema (Tensor(a!)), without them, or in eval mode.
std::tuple<Tensor, Tensor, Tensor> mlu_native_batch_norm_legit(const Tensor& input, const OptTensor& weight,
                                                               const OptTensor& bias, Tensor& running_mean,
                                                               Tensor& running_var, bool training, double momentum,
                                                               double eps) {
  return mlu_native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps);
}
std::tuple<Tensor, Tensor, Tensor> mlu_native_batch_norm_legit_no_stats(const Tensor& input, const OptTensor& weight,
                                                                        const OptTensor& bias, bool training,
                                                                        double momentum, double eps) {
  return mlu_native_batch_norm(input, weight, bias, c10::nullopt, c10::nullopt, training, momentum, eps);
}
std::tuple<Tensor, Tensor, Tensor> mlu_native_batch_norm_legit_no_training(const Tensor& input, const OptTensor& weight,
                                                                           const OptTensor& bias,
                                                                           const Tensor& running_mean,
                                                                           const Tensor& running_var, double momentum,
                                                                           double eps) {
  return mlu_native_batch_norm(input, weight, bias, running_mean, running_var, /*training=*/false, momentum, eps);
}

// _batch_norm_with_update / _batch_norm_no_update (torch 2's batch norm ops of exported and compiled
// graphs): native_batch_norm in training / eval mode plus CUDA's reserve output, an empty uint8
// tensor (there is no cuDNN workspace to keep on this device).
std::tuple<Tensor, Tensor, Tensor, Tensor> mlu_batch_norm_with_update(const Tensor& input, const OptTensor& weight,
                                                                      const OptTensor& bias, Tensor& running_mean,
                                                                      Tensor& running_var, double momentum, double eps) {
  auto [out, mean, invstd] =
      mlu_native_batch_norm(input, weight, bias, running_mean, running_var, /*training=*/true, momentum, eps);
  return std::make_tuple(out, mean, invstd, empty_on(input.device(), {0}, at::kByte));
}
std::tuple<Tensor, Tensor, Tensor, Tensor> mlu_batch_norm_no_update(const Tensor& input, const OptTensor& weight,
                                                                    const OptTensor& bias, const OptTensor& running_mean,
                                                                    const OptTensor& running_var, double momentum,
                                                                    double eps) {
  auto [out, mean, invstd] =
      mlu_native_batch_norm(input, weight, bias, running_mean, running_var, /*training=*/false, momentum, eps);
  return std::make_tuple(out, mean, invstd, empty_on(input.device(), {0}, at::kByte));
}

std::tuple<Tensor&, Tensor&, Tensor&> mlu_native_batch_norm_out(const Tensor& input, const OptTensor& weight_opt,
                                                                const OptTensor& bias_opt,
                                                                const OptTensor& running_mean_opt,
                                                                const OptTensor& running_var_opt, bool training,
                                                                double momentum, double eps, Tensor& out,
                                                                Tensor& save_mean, Tensor& save_invstd) {
  const char* name = "aten::native_batch_norm.out";
  OpScope op(name, input);
  const Tensor *weight = opt(weight_opt), *bias = opt(bias_opt), *rm = opt(running_mean_opt),
               *rv = opt(running_var_opt);
  const int64_t c = batch_norm_check(op, input, weight, bias, rm, rv, training);
  check_out(out, op.device(), input.sizes(), input.scalar_type(), name, "out");
  check_on_device(save_mean, op.device(), name, "save_mean");
  check_on_device(save_invstd, op.device(), name, "save_invstd");
  check_float(save_mean, name, "save_mean");
  check_float(save_invstd, name, "save_invstd");
  at::native::resize_output(save_mean, {training ? c : 0});
  at::native::resize_output(save_invstd, {training ? c : 0});
  batch_norm_run(op, input, weight, bias, rm, rv, training, momentum, eps, out, save_mean, save_invstd);
  return std::forward_as_tuple(out, save_mean, save_invstd);
}

struct BnBackward {
  const Tensor* mean = nullptr;
  const Tensor* invstd_or_var = nullptr;
  ScalarType wdt = at::kFloat;
  int64_t channels = 0;
};

BnBackward batch_norm_backward_check(OpScope& op, const Tensor& grad_out, const Tensor& input,
                                     const Tensor* weight, const Tensor* running_mean, const Tensor* running_var,
                                     const Tensor* save_mean, const Tensor* save_invstd, bool train) {
  const char* name = op.name();
  BnBackward r;
  r.channels = batch_norm_check(op, input, weight, nullptr, running_mean, running_var, true);
  check_on_device(grad_out, op.device(), name, "grad_out");
  check_float(grad_out, name, "grad_out");
  TORCH_CHECK(grad_out.sizes() == input.sizes(), name, ": grad_out ", grad_out.sizes(), " and input ", input.sizes(),
              " differ in shape");
  if (train) {
    TORCH_CHECK(save_mean && save_invstd, name, ": save_mean and save_invstd must be defined in training mode");
    check_channel_arg(op, save_mean, r.channels, "save_mean");
    check_channel_arg(op, save_invstd, r.channels, "save_invstd");
    r.mean = save_mean, r.invstd_or_var = save_invstd;
  } else {
    TORCH_CHECK(running_mean && running_var, name, ": running_mean and running_var must be defined in evaluation mode");
    r.mean = running_mean, r.invstd_or_var = running_var;
  }
  r.wdt = weight ? weight->scalar_type() : stat_dtype(input.scalar_type());
  return r;
}

void batch_norm_backward_run(OpScope& op, const BnBackward& r, const Tensor& grad_out, const Tensor& input,
                             const Tensor* weight, bool train, double eps, const Tensor& dx, const Tensor& dw,
                             const Tensor& db) {
  const char* name = op.name();
  if (input.numel() == 0) {
    if (dw.defined()) dw.zero_();
    if (db.defined()) db.zero_();
    return;
  }
  const OptDesc w(weight, name);
  const OptDesc odx(dx.defined() ? &dx : nullptr, name), odw(dw.defined() ? &dw : nullptr, name),
      odb(db.defined() ? &db : nullptr, name);
  if (!odx.ptr && !odw.ptr && !odb.ptr) return;
  const mlu::TensorDesc xd = desc(input, name);
  std::size_t ws_bytes = 0;
  op.check(mlu::get_batch_norm_backward_workspace_size(op.handle(), xd, &ws_bytes),
           "get_batch_norm_backward_workspace_size");
  void* ws = op.workspace(ws_bytes);
  op.check(mlu::batch_norm_backward(op.handle(), train, eps, desc(grad_out, name), grad_out.data_ptr(), xd,
                                    input.data_ptr(), w.ptr, w.data, desc(*r.mean, name), r.mean->data_ptr(),
                                    desc(*r.invstd_or_var, name), r.invstd_or_var->data_ptr(), odx.ptr, odx.data,
                                    odw.ptr, odw.data, odb.ptr, odb.data, ws, ws_bytes),
           "batch_norm_backward");
}

std::tuple<Tensor, Tensor, Tensor> mlu_native_batch_norm_backward(
    const Tensor& grad_out, const Tensor& input, const OptTensor& weight_opt, const OptTensor& running_mean_opt,
    const OptTensor& running_var_opt, const OptTensor& save_mean_opt, const OptTensor& save_invstd_opt, bool train,
    double eps, std::array<bool, 3> output_mask) {
  OpScope op("aten::native_batch_norm_backward", input);
  const Tensor* weight = opt(weight_opt);
  const BnBackward r = batch_norm_backward_check(op, grad_out, input, weight, opt(running_mean_opt),
                                                 opt(running_var_opt), opt(save_mean_opt), opt(save_invstd_opt), train);
  Tensor dx, dw, db;
  if (output_mask[0])
    dx = empty_fmt(op.device(), input.sizes(), input.scalar_type(), input.suggest_memory_format());
  if (output_mask[1]) dw = empty_on(op.device(), {r.channels}, r.wdt);
  if (output_mask[2]) db = empty_on(op.device(), {r.channels}, r.wdt);
  batch_norm_backward_run(op, r, grad_out, input, weight, train, eps, dx, dw, db);
  return std::make_tuple(dx, dw, db);
}

// batch_norm_backward (the backward of _batch_norm_with_update / _batch_norm_no_update, torch 2's
// batch norm entry points): native_batch_norm_backward with `update` as the training flag, save_var
// holding the saved inverse std as on CUDA (reserve is cuDNN's workspace: unused here).
std::tuple<Tensor, Tensor, Tensor> mlu_batch_norm_backward(
    const Tensor& grad_out, const Tensor& input, const Tensor& weight, const OptTensor& running_mean,
    const OptTensor& running_var, const OptTensor& save_mean, const OptTensor& save_var, bool update, double eps,
    std::array<bool, 3> output_mask, const Tensor& /*reserve*/) {
  return mlu_native_batch_norm_backward(grad_out, input, weight.defined() ? OptTensor(weight) : OptTensor(),
                                        running_mean, running_var, save_mean, save_var, update, eps, output_mask);
}

std::tuple<Tensor&, Tensor&, Tensor&> mlu_native_batch_norm_backward_out(
    const Tensor& grad_out, const Tensor& input, const OptTensor& weight_opt, const OptTensor& running_mean_opt,
    const OptTensor& running_var_opt, const OptTensor& save_mean_opt, const OptTensor& save_invstd_opt, bool train,
    double eps, std::array<bool, 3> output_mask, Tensor& out0, Tensor& out1, Tensor& out2) {
  const char* name = "aten::native_batch_norm_backward.out";
  OpScope op(name, input);
  const Tensor* weight = opt(weight_opt);
  const BnBackward r = batch_norm_backward_check(op, grad_out, input, weight, opt(running_mean_opt),
                                                 opt(running_var_opt), opt(save_mean_opt), opt(save_invstd_opt), train);
  if (output_mask[0]) check_out(out0, op.device(), input.sizes(), input.scalar_type(), name, "out0");
  if (output_mask[1]) check_out(out1, op.device(), {r.channels}, r.wdt, name, "out1");
  if (output_mask[2]) check_out(out2, op.device(), {r.channels}, r.wdt, name, "out2");
  batch_norm_backward_run(op, r, grad_out, input, weight, train, eps, output_mask[0] ? out0 : Tensor(),
                          output_mask[1] ? out1 : Tensor(), output_mask[2] ? out2 : Tensor());
  return std::forward_as_tuple(out0, out1, out2);
}

// ---- layer norm ----------------------------------------------------------------------------------

struct LnShape {
  int normalized_ndim = 0;
  int64_t rows = 1;
  std::vector<int64_t> stat_sizes;
};

LnShape layer_norm_check(OpScope& op, const Tensor& input, IntArrayRef normalized_shape, const Tensor* weight,
                         const Tensor* bias) {
  const char* name = op.name();
  check_on_device(input, op.device(), name, "input");
  const int64_t nn = static_cast<int64_t>(normalized_shape.size());
  TORCH_CHECK(nn >= 1, name, ": Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
              "one element, but got normalized_shape = ", normalized_shape);
  TORCH_CHECK(!weight || weight->sizes() == normalized_shape, name, ": Expected weight to be of same shape as "
              "normalized_shape, but got weight of shape ", weight ? weight->sizes() : IntArrayRef{},
              " and normalized_shape = ", normalized_shape);
  TORCH_CHECK(!bias || bias->sizes() == normalized_shape, name, ": Expected bias to be of same shape as "
              "normalized_shape, but got bias of shape ", bias ? bias->sizes() : IntArrayRef{},
              " and normalized_shape = ", normalized_shape);
  const int64_t nd = input.dim();
  TORCH_CHECK(nd >= nn && input.sizes().slice(nd - nn) == normalized_shape, name, ": Given normalized_shape=",
              normalized_shape, ", expected input with shape [*, ",
              c10::Join(", ", normalized_shape), "], but got input of size", input.sizes());
  check_float(input, name, "input");
  if (weight) check_on_device(*weight, op.device(), name, "weight"), check_float(*weight, name, "weight");
  if (bias) check_on_device(*bias, op.device(), name, "bias"), check_float(*bias, name, "bias");
  LnShape s;
  s.normalized_ndim = static_cast<int>(nn);
  for (int64_t i = 0; i < nd; ++i) {
    if (i < nd - nn) s.rows *= input.size(i);
    s.stat_sizes.push_back(i < nd - nn ? input.size(i) : 1);
  }
  return s;
}

void layer_norm_run(OpScope& op, const LnShape& s, const Tensor& input, const Tensor* weight, const Tensor* bias,
                    double eps, const Tensor& out, const Tensor& mean, const Tensor& rstd) {
  const char* name = op.name();
  if (input.numel() == 0) return;
  const OptDesc w(weight, name), b(bias, name);
  // libmlu wants one contiguous value per row; out= tensors of another layout go through temps.
  Tensor m = mean.is_contiguous() ? mean : empty_on(op.device(), mean.sizes(), mean.scalar_type());
  Tensor r = rstd.is_contiguous() ? rstd : empty_on(op.device(), rstd.sizes(), rstd.scalar_type());
  const mlu::TensorDesc md = desc(m, name), rd = desc(r, name);
  op.check(mlu::layer_norm_forward(op.handle(), s.normalized_ndim, eps, desc(input, name), input.data_ptr(), w.ptr,
                                   w.data, b.ptr, b.data, desc(out, name), out.data_ptr(), &md, m.data_ptr(), &rd,
                                   r.data_ptr()),
           "layer_norm_forward");
  if (!m.is_same(mean)) copy_into(op, m, mean);
  if (!r.is_same(rstd)) copy_into(op, r, rstd);
}

std::tuple<Tensor, Tensor, Tensor> mlu_native_layer_norm(const Tensor& input, c10::SymIntArrayRef normalized_shape,
                                                         const OptTensor& weight_opt, const OptTensor& bias_opt,
                                                         double eps) {
  OpScope op("aten::native_layer_norm", input);
  const Tensor *weight = opt(weight_opt), *bias = opt(bias_opt);
  const LnShape s = layer_norm_check(op, input, C10_AS_INTARRAYREF_SLOW(normalized_shape), weight, bias);
  const ScalarType sdt = stat_dtype(input.scalar_type());
  Tensor out = empty_on(op.device(), input.sizes(), input.scalar_type());
  Tensor mean = empty_on(op.device(), s.stat_sizes, sdt);
  Tensor rstd = empty_on(op.device(), s.stat_sizes, sdt);
  layer_norm_run(op, s, input, weight, bias, eps, out, mean, rstd);
  return std::make_tuple(out, mean, rstd);
}

std::tuple<Tensor&, Tensor&, Tensor&> mlu_native_layer_norm_out(const Tensor& input,
                                                                c10::SymIntArrayRef normalized_shape,
                                                                const OptTensor& weight_opt, const OptTensor& bias_opt,
                                                                double eps, Tensor& out0, Tensor& out1, Tensor& out2) {
  const char* name = "aten::native_layer_norm.out";
  OpScope op(name, input);
  const Tensor *weight = opt(weight_opt), *bias = opt(bias_opt);
  const LnShape s = layer_norm_check(op, input, C10_AS_INTARRAYREF_SLOW(normalized_shape), weight, bias);
  const ScalarType sdt = stat_dtype(input.scalar_type());
  check_out(out0, op.device(), input.sizes(), input.scalar_type(), name, "out0");
  check_out(out1, op.device(), s.stat_sizes, sdt, name, "out1");
  check_out(out2, op.device(), s.stat_sizes, sdt, name, "out2");
  layer_norm_run(op, s, input, weight, bias, eps, out0, out1, out2);
  return std::forward_as_tuple(out0, out1, out2);
}

// native_group_norm (group_norm, and nn.GroupNorm through it): the mean and rstd of each (n, group)
// from libmlu's layer norm kernel over the group's C / G * HxW elements (fp32 statistics), then
// y = x * a[n, c] + b[n, c] with a = rstd * weight[c] and b = bias[c] - mean * a in fp32, rounded
// once to x's dtype: what torch's CPU and CUDA kernels compute (GroupNormKernel: the scale and bias
// per (n, c) in the accumulate type). torch's composite over batch norm, which this replaces, rounded
// the normalized x to fp16 before the affine (up to 2 fp16 ulps off). mean and rstd are [N, group]
// in the parameter dtype (x's, or float32 for fp16 x with fp32 weights), as on CPU and CUDA.
std::tuple<Tensor, Tensor, Tensor> mlu_native_group_norm(const Tensor& input, const OptTensor& weight_opt,
                                                         const OptTensor& bias_opt, c10::SymInt n_sym, c10::SymInt c_sym,
                                                         c10::SymInt hxw_sym, int64_t group, double eps) {
  OpScope op("aten::native_group_norm", input);
  const char* name = op.name();
  const Tensor *weight = opt(weight_opt), *bias = opt(bias_opt);
  const int64_t n = n_sym.guard_int(__FILE__, __LINE__), c = c_sym.guard_int(__FILE__, __LINE__),
                hxw = hxw_sym.guard_int(__FILE__, __LINE__);
  check_on_device(input, op.device(), name, "input");
  check_float(input, name, "input");
  TORCH_CHECK(group > 0 && c % group == 0, "Expected number of channels in input to be divisible by num_groups, but got "
              "input of shape ", input.sizes(), " and num_groups=", group);
  TORCH_CHECK(input.numel() == n * c * hxw, name, ": input ", input.sizes(), " does not hold N * C * HxW = ", n, " * ",
              c, " * ", hxw, " elements");
  for (const Tensor* t : {weight, bias})
    if (t != nullptr)
      TORCH_CHECK(t->numel() == c, "Expected weight and bias to be a vector of size equal to the number of channels "
                  "in input, but got ", t->sizes(), " for ", c, " channels");
  const bool mixed = weight != nullptr && weight->scalar_type() != input.scalar_type();
  const ScalarType param = mixed ? weight->scalar_type() : input.scalar_type();
  if (input.numel() == 0)
    return std::make_tuple(empty_on(op.device(), input.sizes(), input.scalar_type()),
                           empty_on(op.device(), {n, group}, param), empty_on(op.device(), {n, group}, param));
  const int64_t per_group = c / group * hxw;
  const Tensor x = input.contiguous().view({n * group, per_group});
  const std::vector<int64_t> norm_shape = {per_group};
  const LnShape s = layer_norm_check(op, x, norm_shape, nullptr, nullptr);
  const ScalarType sdt = stat_dtype(input.scalar_type());
  Tensor normalized = empty_on(op.device(), x.sizes(), x.scalar_type());  // unused: the kernel writes it
  Tensor mean = empty_on(op.device(), s.stat_sizes, sdt), rstd = empty_on(op.device(), s.stat_sizes, sdt);
  layer_norm_run(op, s, x, nullptr, nullptr, eps, normalized, mean, rstd);
  // a, b per (n, c): [N, group, C / group] from the per-group statistics and the channel's affine.
  const Tensor m = mean.view({n, group, 1}), r = rstd.view({n, group, 1});
  const Tensor w = weight != nullptr ? weight->view({1, group, c / group}) : Tensor();
  const Tensor b = bias != nullptr ? bias->view({1, group, c / group}) : Tensor();
  const Tensor a = w.defined() ? run_elementwise_program({r, w}, "mul($0, cast($1, f32))")
                               : r.expand({n, group, c / group});
  const Tensor shift = b.defined() ? run_elementwise_program({b, m, a}, "sub(cast($0, f32), mul($1, $2))")
                                   : run_elementwise_program({m, a}, "neg(mul($0, $1))");
  Tensor y = run_elementwise_program({input.reshape({n, c, hxw}), a.reshape({n, c, 1}), shift.reshape({n, c, 1})},
                                     "cast_like(add(mul(cast($0, f32), $1), $2), $0)")
                 .view(input.sizes());
  return std::make_tuple(y, mean.view({n, group}).to(param), rstd.view({n, group}).to(param));
}

// native_group_norm_backward: torch's GroupNormKernel formulas over device reductions and programs,
// all in fp32 (D = C / group channels per group, s = 1 / (D HxW); per (n, c): ds = sum dy x,
// db = sum dy over the pixels; gamma = weight, or 1):
//   dx     = rstd gamma dy + c2 x + c3,  c2 = (sum_g(db gamma) mean - sum_g(ds gamma)) rstd^3 s,
//                                        c3 = -c2 mean - sum_g(db gamma) rstd s
//   dgamma = sum_n (ds - db mean) rstd,  dbeta = sum_n db
std::tuple<Tensor, Tensor, Tensor> mlu_native_group_norm_backward(const Tensor& grad_out, const Tensor& input,
                                                                  const Tensor& mean, const Tensor& rstd,
                                                                  const OptTensor& weight_opt, c10::SymInt n_sym,
                                                                  c10::SymInt c_sym, c10::SymInt hxw_sym, int64_t group,
                                                                  std::array<bool, 3> mask) {
  OpScope op("aten::native_group_norm_backward", input);
  const char* name = op.name();
  const Tensor* weight = opt(weight_opt);
  const int64_t n = n_sym.guard_int(__FILE__, __LINE__), c = c_sym.guard_int(__FILE__, __LINE__),
                hxw = hxw_sym.guard_int(__FILE__, __LINE__);
  for (const Tensor* t : {&grad_out, &mean, &rstd}) check_on_device(*t, op.device(), name, "grad_out, mean and rstd");
  check_float(input, name, "input");
  TORCH_CHECK(group > 0 && c % group == 0 && input.numel() == n * c * hxw && grad_out.sizes() == input.sizes(), name,
              ": grad_out ", grad_out.sizes(), " and input ", input.sizes(), " must both hold N * C * HxW = ", n, " * ",
              c, " * ", hxw, " elements, C divisible by group = ", group);
  TORCH_CHECK(mean.numel() == n * group && rstd.numel() == n * group, name, ": mean and rstd must hold N * group = ",
              n * group, " elements, got ", mean.sizes(), " and ", rstd.sizes());
  const ScalarType param = weight != nullptr ? weight->scalar_type() : input.scalar_type();
  const int64_t d = c / group;
  Tensor dx, dgamma, dbeta;
  if (input.numel() == 0) {
    if (mask[0]) dx = at::zeros(input.sizes(), input.options());
    if (mask[1]) dgamma = at::zeros({c}, input.options().dtype(param));
    if (mask[2]) dbeta = at::zeros({c}, input.options().dtype(param));
    return std::make_tuple(dx, dgamma, dbeta);
  }
  const Tensor dy = grad_out.reshape({n, c, hxw}), x = input.reshape({n, c, hxw});
  const Tensor ds = at::sum(run_elementwise_program({dy, x}, "mul(cast($0, f32), cast($1, f32))"), {2});  // [N, C]
  const Tensor db = at::sum(run_elementwise_program({dy}, "cast($0, f32)"), {2});
  const Tensor m = run_elementwise_program({mean.reshape({n, group, 1})}, "cast($0, f32)");
  const Tensor r = run_elementwise_program({rstd.reshape({n, group, 1})}, "cast($0, f32)");
  if (mask[0]) {
    const Tensor gamma = weight != nullptr ? run_elementwise_program({weight->reshape({1, group, d})}, "cast($0, f32)")
                                           : Tensor();
    const auto by_gamma = [&](const Tensor& t) {
      return gamma.defined() ? run_elementwise_program({t.view({n, group, d}), gamma}, "mul($0, $1)")
                             : t.view({n, group, d});
    };
    const Tensor dsg = at::sum(by_gamma(ds), {2}, true), dbg = at::sum(by_gamma(db), {2}, true);  // [N, G, 1]
    const std::string scale = program_literal(1.0 / static_cast<double>(d * hxw));
    const Tensor c2 = run_elementwise_program({dbg, m, dsg, r},
                                              "mul(mul(sub(mul($0, $1), $2), mul(mul($3, $3), $3)), " + scale + ")");
    const Tensor c3 = run_elementwise_program({c2, m, dbg, r}, "sub(neg(mul($0, $1)), mul(mul($2, $3), " + scale + "))");
    const Tensor c1 = gamma.defined() ? run_elementwise_program({r, gamma}, "mul($0, $1)") : r.expand({n, group, d});
    dx = run_elementwise_program({dy.view({n, group, d, hxw}), x.view({n, group, d, hxw}), c1.reshape({n, group, d, 1}),
                                  c2.view({n, group, 1, 1}), c3.view({n, group, 1, 1})},
                                 "cast_like(add(add(mul(cast($0, f32), $2), mul(cast($1, f32), $3)), $4), $1)")
             .view(input.sizes());
  }
  if (mask[1])
    dgamma = at::sum(run_elementwise_program({ds.view({n, group, d}), db.view({n, group, d}), m, r},
                                             "mul(sub($0, mul($1, $2)), $3)"),
                     {0})
                 .reshape({c})
                 .to(param);
  if (mask[2]) dbeta = at::sum(db, {0}).to(param);
  return std::make_tuple(dx, dgamma, dbeta);
}

LnShape layer_norm_backward_check(OpScope& op, const Tensor& grad_out, const Tensor& input,
                                  IntArrayRef normalized_shape, const Tensor& mean, const Tensor& rstd,
                                  const Tensor* weight, const Tensor* bias) {
  const char* name = op.name();
  const LnShape s = layer_norm_check(op, input, normalized_shape, weight, bias);
  check_on_device(grad_out, op.device(), name, "grad_out");
  check_on_device(mean, op.device(), name, "mean");
  check_on_device(rstd, op.device(), name, "rstd");
  check_float(grad_out, name, "grad_out");
  check_float(mean, name, "mean");
  check_float(rstd, name, "rstd");
  TORCH_CHECK(grad_out.sizes() == input.sizes(), name, ": grad_out ", grad_out.sizes(), " and input ", input.sizes(),
              " differ in shape");
  TORCH_CHECK(mean.numel() == s.rows && rstd.numel() == s.rows, name, ": mean ", mean.sizes(), " and rstd ",
              rstd.sizes(), " must hold one value per row (", s.rows, ")");
  return s;
}

void layer_norm_backward_run(OpScope& op, const LnShape& s, const Tensor& grad_out, const Tensor& input,
                             const Tensor& mean_in, const Tensor& rstd_in, const Tensor* weight, const Tensor& dx,
                             const Tensor& dw, const Tensor& db) {
  const char* name = op.name();
  if (s.rows == 0 || input.numel() == 0) {
    if (dw.defined()) dw.zero_();
    if (db.defined()) db.zero_();
    return;
  }
  if (!dx.defined() && !dw.defined() && !db.defined()) return;
  // Temporaries first (allocations before the first kernel).
  Tensor mean = mean_in.is_contiguous() ? mean_in : empty_on(op.device(), mean_in.sizes(), mean_in.scalar_type());
  Tensor rstd = rstd_in.is_contiguous() ? rstd_in : empty_on(op.device(), rstd_in.sizes(), rstd_in.scalar_type());
  const mlu::TensorDesc xd = desc(input, name);
  std::size_t ws_bytes = 0;
  op.check(mlu::get_layer_norm_backward_workspace_size(op.handle(), s.normalized_ndim, xd, dw.defined(), db.defined(),
                                                       &ws_bytes),
           "get_layer_norm_backward_workspace_size");
  void* ws = op.workspace(ws_bytes);
  if (!mean.is_same(mean_in)) copy_into(op, mean_in, mean);
  if (!rstd.is_same(rstd_in)) copy_into(op, rstd_in, rstd);
  const OptDesc w(weight, name);
  const OptDesc odx(dx.defined() ? &dx : nullptr, name), odw(dw.defined() ? &dw : nullptr, name),
      odb(db.defined() ? &db : nullptr, name);
  op.check(mlu::layer_norm_backward(op.handle(), s.normalized_ndim, desc(grad_out, name), grad_out.data_ptr(), xd,
                                    input.data_ptr(), desc(mean, name), mean.data_ptr(), desc(rstd, name),
                                    rstd.data_ptr(), w.ptr, w.data, ws, ws_bytes, odx.ptr, odx.data, odw.ptr, odw.data,
                                    odb.ptr, odb.data),
           "layer_norm_backward");
}

// dweight/dbias: the affine parameter's shape and dtype (the input's when it is absent).
ScalarType affine_dtype(const Tensor* t, const Tensor& input) { return t ? t->scalar_type() : input.scalar_type(); }

std::tuple<Tensor, Tensor, Tensor> mlu_native_layer_norm_backward(const Tensor& grad_out, const Tensor& input,
                                                                  c10::SymIntArrayRef normalized_shape_sym,
                                                                  const Tensor& mean, const Tensor& rstd,
                                                                  const OptTensor& weight_opt,
                                                                  const OptTensor& bias_opt,
                                                                  std::array<bool, 3> output_mask) {
  OpScope op("aten::native_layer_norm_backward", input);
  const Tensor *weight = opt(weight_opt), *bias = opt(bias_opt);
  const IntArrayRef normalized_shape = C10_AS_INTARRAYREF_SLOW(normalized_shape_sym);
  const LnShape s = layer_norm_backward_check(op, grad_out, input, normalized_shape, mean, rstd, weight, bias);
  Tensor dx, dw, db;
  if (output_mask[0]) dx = empty_on(op.device(), input.sizes(), input.scalar_type());
  if (output_mask[1]) dw = empty_on(op.device(), normalized_shape, affine_dtype(weight, input));
  if (output_mask[2]) db = empty_on(op.device(), normalized_shape, affine_dtype(bias ? bias : weight, input));
  layer_norm_backward_run(op, s, grad_out, input, mean, rstd, weight, dx, dw, db);
  return std::make_tuple(dx, dw, db);
}

std::tuple<Tensor&, Tensor&, Tensor&> mlu_native_layer_norm_backward_out(
    const Tensor& grad_out, const Tensor& input, c10::SymIntArrayRef normalized_shape_sym, const Tensor& mean,
    const Tensor& rstd, const OptTensor& weight_opt, const OptTensor& bias_opt, std::array<bool, 3> output_mask,
    Tensor& out0, Tensor& out1, Tensor& out2) {
  const char* name = "aten::native_layer_norm_backward.out";
  OpScope op(name, input);
  const Tensor *weight = opt(weight_opt), *bias = opt(bias_opt);
  const IntArrayRef normalized_shape = C10_AS_INTARRAYREF_SLOW(normalized_shape_sym);
  const LnShape s = layer_norm_backward_check(op, grad_out, input, normalized_shape, mean, rstd, weight, bias);
  if (output_mask[0]) check_out(out0, op.device(), input.sizes(), input.scalar_type(), name, "out0");
  if (output_mask[1]) check_out(out1, op.device(), normalized_shape, affine_dtype(weight, input), name, "out1");
  if (output_mask[2])
    check_out(out2, op.device(), normalized_shape, affine_dtype(bias ? bias : weight, input), name, "out2");
  layer_norm_backward_run(op, s, grad_out, input, mean, rstd, weight, output_mask[0] ? out0 : Tensor(),
                          output_mask[1] ? out1 : Tensor(), output_mask[2] ? out2 : Tensor());
  return std::forward_as_tuple(out0, out1, out2);
}

// ---- dropout, bernoulli_ ---------------------------------------------------------------------------

// The random numbers libmlu's dropout_forward reserves for n elements (whole Philox blocks).
std::uint64_t dropout_random_count(int64_t n) { return (static_cast<std::uint64_t>(n) + 3) / 4 * 4; }

void check_dropout_p(double p, const char* op) {
  TORCH_CHECK_VALUE(p >= 0 && p <= 1, op, ": dropout probability has to be between 0 and 1, but got ", p);
}

// train: output = input * mask / (1 - p) with a fresh mask; eval: output = input, mask all true.
void dropout_run(OpScope& op, const Tensor& input, double p, bool train, const Tensor& out,
                 const Tensor& mask) {
  const char* name = op.name();
  if (input.numel() == 0) return;
  if (!train) {
    mask.fill_(true);  // a byte pattern: memset
    copy_into(op, input, out);
    return;
  }
  const mlu::TensorDesc xd = desc(input, name), yd = desc(out, name), md = desc(mask, name);
  op.take_random(dropout_random_count(input.numel()));
  op.check(mlu::dropout_forward(op.handle(), p, xd, input.data_ptr(), yd, out.data_ptr(), md, mask.data_ptr()),
           "dropout_forward");
}

void dropout_check(OpScope& op, const Tensor& input, double p) {
  check_on_device(input, op.device(), op.name(), "input");
  check_dropout_p(p, op.name());
  if (input.numel() != 0) check_float(input, op.name(), "input");
}

std::tuple<Tensor, Tensor> mlu_native_dropout(const Tensor& input, double p, c10::optional<bool> train) {
  OpScope op("aten::native_dropout", input);
  dropout_check(op, input, p);
  // As torch's CPU kernel: an empty input gives an empty mask of the input's dtype.
  const ScalarType mdt = input.numel() == 0 ? input.scalar_type() : at::kBool;
  const bool is_train = !train.has_value() || *train;
  Tensor out = empty_like_dense(input, input.sizes(), input.scalar_type());
  Tensor mask = empty_on(op.device(), input.sizes(), mdt);
  dropout_run(op, input, p, is_train, out, mask);
  return std::make_tuple(out, mask);
}

std::tuple<Tensor&, Tensor&> mlu_native_dropout_out(const Tensor& input, double p, c10::optional<bool> train,
                                                    Tensor& out0, Tensor& out1) {
  const char* name = "aten::native_dropout.out";
  OpScope op(name, input);
  dropout_check(op, input, p);
  check_out(out0, op.device(), input.sizes(), input.scalar_type(), name, "out0");
  check_on_device(out1, op.device(), name, "out1");
  TORCH_CHECK(out1.scalar_type() == at::kBool || input.numel() == 0, name, ": expected out1 (the mask) to have dtype ",
              at::kBool, ", but got ", out1.scalar_type());
  at::native::resize_output(out1, input.sizes());
  dropout_run(op, input, p, !train.has_value() || *train, out0, out1);
  return std::forward_as_tuple(out0, out1);
}

mlu::TensorDesc mask_desc(const Tensor& mask, const char* op) {
  switch (mask.scalar_type()) {
    case at::kBool: return desc(mask, op);
    case at::kChar:
    case at::kByte: return desc_as(mask, mlu::DType::kInt8, op);  // 0/1 values read the same
    default: break;
  }
  TORCH_CHECK_NOT_IMPLEMENTED(false, op, ": a mask of dtype ", mask.scalar_type(), " is not supported on device mlu"
                              "(bool, uint8, int8)");
}

void dropout_backward_run(OpScope& op, const Tensor& grad_output, const Tensor& mask, double scale,
                          const Tensor& grad_input) {
  const char* name = op.name();
  check_on_device(grad_output, op.device(), name, "grad_output");
  check_on_device(mask, op.device(), name, "mask");
  TORCH_CHECK(grad_output.sizes() == mask.sizes(), name, ": grad_output ", grad_output.sizes(), " and mask ",
              mask.sizes(), " differ in shape");
  if (grad_output.numel() == 0) return;
  check_float(grad_output, name, "grad_output");
  op.check(mlu::dropout_backward(op.handle(), scale, desc(grad_output, name), grad_output.data_ptr(),
                                 mask_desc(mask, name), mask.data_ptr(), desc(grad_input, name), grad_input.data_ptr()),
           "dropout_backward");
}

Tensor mlu_native_dropout_backward(const Tensor& grad_output, const Tensor& mask, double scale) {
  OpScope op("aten::native_dropout_backward", grad_output);
  Tensor grad_input = empty_like_dense(grad_output, grad_output.sizes(), grad_output.scalar_type());
  dropout_backward_run(op, grad_output, mask, scale, grad_input);
  return grad_input;
}

Tensor& mlu_native_dropout_backward_out(const Tensor& grad_output, const Tensor& mask, double scale, Tensor& out) {
  const char* name = "aten::native_dropout_backward.out";
  OpScope op(name, grad_output);
  check_out(out, op.device(), grad_output.sizes(), grad_output.scalar_type(), name, "out");
  dropout_backward_run(op, grad_output, mask, scale, out);
  return out;
}

// self = Bernoulli(p) draws, as 0/1 in self's dtype: libmlu dropout_forward with drop
// probability 1 - p (its keep-mask is true with probability p) over a broadcast zero input,
// the mask cast into self. The device generator supplies the Philox stream.
void bernoulli_run(OpScope& op, const Tensor& self, double p, const c10::optional<at::Generator>& gen) {
  const char* name = op.name();
  check_on_device(self, op.device(), name, "self");
  TORCH_CHECK(p >= 0 && p <= 1, name, ": bernoulli_ expects p to be in [0, 1], but got p=", p);
  at::assert_no_internal_overlap(self);
  const ScalarType st = self.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(has_mlu_dtype(st) || st == at::kByte, name, ": dtype ", st,
                              " is not supported on device mlu");
  if (self.numel() == 0) return;
  // Allocations first: the mask, the dropout output (self itself when it is fp32/fp16), the zero.
  const bool y_is_self = st == at::kFloat || st == at::kHalf;  // libmlu dropout's dtypes; others through fp16
  const ScalarType ydt = y_is_self ? st : at::kHalf;
  Tensor mask = empty_on(op.device(), self.sizes(), at::kBool);
  Tensor y = y_is_self ? self : empty_on(op.device(), self.sizes(), ydt);
  Tensor zero = empty_on(op.device(), {1}, ydt);
  zero.zero_();  // memset
  const Tensor x = zero.expand(self.sizes());
  op.take_random(dropout_random_count(self.numel()), gen);
  op.check(mlu::dropout_forward(op.handle(), 1.0 - p, desc(x, name), x.data_ptr(), desc(y, name), y.data_ptr(),
                                desc(mask, name), mask.data_ptr()),
           "dropout_forward");
  const mlu::TensorDesc sd = st == at::kByte ? desc_as(self, mlu::DType::kInt8, name) : desc(self, name);
  op.check(mlu::copy_strided(op.handle(), desc(mask, name), mask.data_ptr(), sd, self.data_ptr()), "copy_strided");
}

Tensor& mlu_bernoulli_float_(Tensor& self, double p, c10::optional<at::Generator> gen) {
  OpScope op("aten::bernoulli_.float", self);
  bernoulli_run(op, self, p, gen);
  return self;
}

Tensor& mlu_bernoulli_float_out(const Tensor& self, double p, c10::optional<at::Generator> gen, Tensor& out) {
  const char* name = "aten::bernoulli.float_out";
  OpScope op(name, self);
  check_on_device(out, op.device(), name, "out");
  at::native::resize_output(out, self.sizes());
  bernoulli_run(op, out, p, gen);
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using mlu::SoftmaxMode;
  // softmax
  m.impl("_softmax", TORCH_FN(mlu_softmax<SoftmaxMode::kSoftmax>));
  m.impl("_softmax.out", TORCH_FN(mlu_softmax_out<SoftmaxMode::kSoftmax>));
  m.impl("_log_softmax", TORCH_FN(mlu_softmax<SoftmaxMode::kLogSoftmax>));
  m.impl("_log_softmax.out", TORCH_FN(mlu_softmax_out<SoftmaxMode::kLogSoftmax>));
  m.impl("batch_norm_backward", TORCH_FN(mlu_batch_norm_backward));
  m.impl("_softmax_backward_data", TORCH_FN(mlu_softmax_backward<SoftmaxMode::kSoftmax>));
  m.impl("_softmax_backward_data.out", TORCH_FN(mlu_softmax_backward_out<SoftmaxMode::kSoftmax>));
  m.impl("_log_softmax_backward_data", TORCH_FN(mlu_softmax_backward<SoftmaxMode::kLogSoftmax>));
  m.impl("_log_softmax_backward_data.out", TORCH_FN(mlu_softmax_backward_out<SoftmaxMode::kLogSoftmax>));
  // nll loss
  m.impl("nll_loss_forward", TORCH_FN(mlu_nll_forward<false>));
  m.impl("nll_loss_forward.output", TORCH_FN(mlu_nll_forward_out<false>));
  m.impl("nll_loss_backward", TORCH_FN(mlu_nll_backward<false>));
  m.impl("nll_loss_backward.grad_input", TORCH_FN(mlu_nll_backward_out<false>));
  m.impl("nll_loss2d_forward", TORCH_FN(mlu_nll_forward<true>));
  m.impl("nll_loss2d_forward.output", TORCH_FN(mlu_nll_forward_out<true>));
  m.impl("nll_loss2d_backward", TORCH_FN(mlu_nll_backward<true>));
  m.impl("nll_loss2d_backward.grad_input", TORCH_FN(mlu_nll_backward_out<true>));
  // pooling
  m.impl("max_pool2d_with_indices", TORCH_FN(mlu_max_pool2d_with_indices));
  m.impl("max_pool2d_with_indices.out", TORCH_FN(mlu_max_pool2d_with_indices_out));
  m.impl("max_pool2d_with_indices_backward", TORCH_FN(mlu_max_pool2d_backward));
  m.impl("max_pool2d_with_indices_backward.grad_input", TORCH_FN(mlu_max_pool2d_backward_out));
  m.impl("avg_pool2d", TORCH_FN(mlu_avg_pool2d));
  m.impl("avg_pool2d.out", TORCH_FN(mlu_avg_pool2d_out));
  m.impl("avg_pool2d_backward", TORCH_FN(mlu_avg_pool2d_backward));
  m.impl("avg_pool2d_backward.grad_input", TORCH_FN(mlu_avg_pool2d_backward_out));
  m.impl("_adaptive_avg_pool2d", TORCH_FN(mlu_adaptive_avg_pool2d));
  m.impl("_adaptive_avg_pool2d.out", TORCH_FN(mlu_adaptive_avg_pool2d_out<false>));
  m.impl("adaptive_avg_pool2d.out", TORCH_FN(mlu_adaptive_avg_pool2d_out<true>));
  m.impl("_adaptive_avg_pool2d_backward", TORCH_FN(mlu_adaptive_avg_pool2d_backward));
  m.impl("_adaptive_avg_pool2d_backward.out", TORCH_FN(mlu_adaptive_avg_pool2d_backward_out));
  // batch norm, layer norm
  m.impl("native_batch_norm", TORCH_FN(mlu_native_batch_norm));
  m.impl("native_batch_norm.out", TORCH_FN(mlu_native_batch_norm_out));
  m.impl("_native_batch_norm_legit", TORCH_FN(mlu_native_batch_norm_legit));
  m.impl("_batch_norm_with_update", TORCH_FN(mlu_batch_norm_with_update));
  m.impl("_batch_norm_no_update", TORCH_FN(mlu_batch_norm_no_update));
  m.impl("_native_batch_norm_legit.no_stats", TORCH_FN(mlu_native_batch_norm_legit_no_stats));
  m.impl("_native_batch_norm_legit_no_training", TORCH_FN(mlu_native_batch_norm_legit_no_training));
  m.impl("native_batch_norm_backward", TORCH_FN(mlu_native_batch_norm_backward));
  m.impl("native_batch_norm_backward.out", TORCH_FN(mlu_native_batch_norm_backward_out));
  m.impl("native_group_norm", TORCH_FN(mlu_native_group_norm));
  m.impl("native_group_norm_backward", TORCH_FN(mlu_native_group_norm_backward));
  m.impl("native_layer_norm", TORCH_FN(mlu_native_layer_norm));
  m.impl("native_layer_norm.out", TORCH_FN(mlu_native_layer_norm_out));
  m.impl("native_layer_norm_backward", TORCH_FN(mlu_native_layer_norm_backward));
  m.impl("native_layer_norm_backward.out", TORCH_FN(mlu_native_layer_norm_backward_out));
  // dropout, bernoulli
  m.impl("native_dropout", TORCH_FN(mlu_native_dropout));
  m.impl("native_dropout.out", TORCH_FN(mlu_native_dropout_out));
  m.impl("native_dropout_backward", TORCH_FN(mlu_native_dropout_backward));
  m.impl("native_dropout_backward.out", TORCH_FN(mlu_native_dropout_backward_out));
  m.impl("bernoulli_.float", TORCH_FN(mlu_bernoulli_float_));
  m.impl("bernoulli.float_out", TORCH_FN(mlu_bernoulli_float_out));
}

}  // namespace mlusim::bridge::ops
