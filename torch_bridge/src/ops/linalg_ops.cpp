// ATen matrix-multiply kernels over libmlu's gemm.h (mm, addmm, bmm, baddbmm, addbmm, addmv, mv,
// dot, vdot, _addmm_activation). CUDA twin: aten/src/ATen/native/cuda/Blas.cpp.
//
// Every product is one libmlu matmul (addbmm: one per batch, accumulating): C = alpha * A x B +
// beta * C (+ bias[N]). Operands go to libmlu with their strides (transposed and sliced views need
// no copy). The `self` term of the add* ops:
//   - beta == 0: not read (NaN/inf in it do not propagate, as torch);
//   - in place (the output is self): C itself with beta;
//   - beta == 1 and self broadcasts along rows (a [N] vector, [1, N], a scalar): libmlu's bias;
//   - otherwise self (broadcast) is copied into the output first (libmlu copy_strided) and used
//     as C with beta.
// An output that overlaps an input is computed into a temporary and copied back.
//
// torch.matmul / nn.functional.linear / einsum are CompositeImplicitAutograd in 1.13 and reach
// these kernels (mm, mv, dot, bmm, addmm) through views, reshape and _unsafe_view.
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "mlusim/mlu/elementwise.h"
#include "mlusim/mlu/gemm.h"
#include "ops/op_support.h"

namespace mlusim::bridge::ops {
namespace {

using at::IntArrayRef;
using at::Scalar;
using at::Tensor;

// ---- checks --------------------------------------------------------------------------------------

void check_gemm_dtype(const char* op, const Tensor& t, const char* arg) {
  const at::ScalarType st = t.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(st == at::kFloat || st == at::kHalf || st == at::kBFloat16, op, ": ", arg,
                              " has dtype ", st, ", which is not supported on device mlu"
                              "(libmlu matmul takes float32, float16 and bfloat16)");
}

// All tensors on the op's device, one dtype (float32, float16 or bfloat16).
void check_operands(const OpScope& op, std::initializer_list<std::pair<const Tensor*, const char*>> args) {
  const Tensor* first = nullptr;
  const char* first_name = nullptr;
  for (const auto& [t, name] : args) {
    if (!t->defined()) continue;
    check_on_device(*t, op.device(), op.name(), name);
    if (!first) {
      first = t;
      first_name = name;
      continue;
    }
    TORCH_CHECK(t->scalar_type() == first->scalar_type(), op.name(), ": expected ", first_name, " and ", name,
                " to have the same dtype, but got ", first->scalar_type(), " and ", t->scalar_type());
  }
  if (first) check_gemm_dtype(op.name(), *first, first_name);
}

// ---- libmlu calls -------------------------------------------------------------------------------

// c = alpha * a x b + beta * c (+ bias). a: [..., M, K], b: [..., K, N], c: [..., M, N].
void gemm(OpScope& op, const Tensor& a, const Tensor& b, const Tensor* bias, const Tensor& c, double alpha,
          double beta) {
  mlu::MatmulParams p;
  p.alpha = static_cast<float>(alpha);
  p.beta = static_cast<float>(beta);
  const mlu::TensorDesc da = desc(a, op.name()), db = desc(b, op.name()), dc = desc(c, op.name());
  mlu::TensorDesc dbias;
  if (bias) dbias = desc(*bias, op.name());
  std::size_t bytes = 0;
  op.check(mlu::get_matmul_workspace_size(op.handle(), p, da, db, bias ? &dbias : nullptr, dc, &bytes),
           "get_matmul_workspace_size");
  void* ws = op.workspace(bytes);
  op.check(mlu::matmul(op.handle(), p, da, a.data_ptr(), db, b.data_ptr(), bias ? &dbias : nullptr,
                       bias ? bias->data_ptr() : nullptr, dc, c.data_ptr(), ws, bytes),
           "matmul");
}

// t = t * beta (beta == 0: zeros, whatever t held).
void scale_into(OpScope& op, const Tensor& t, double beta) {
  if (t.numel() == 0 || beta == 1.0) return;
  const mlu::TensorDesc d = desc(t, op.name());
  if (beta == 0.0) {
    op.check(mlu::fill(op.handle(), 0.0, d, t.data_ptr()), "fill");
  } else {
    op.check(mlu::binary_scalar(op.handle(), mlu::BinaryOp::kMul, d, t.data_ptr(), beta, d, t.data_ptr()),
             "binary_scalar");
  }
}

bool same_view(const Tensor& a, const Tensor& b) {
  return a.data_ptr() == b.data_ptr() && a.sizes() == b.sizes() && a.strides() == b.strides();
}

// What C starts as, and the beta / bias that the product(s) then use.
struct Accumulator {
  Tensor bias;        // 1-d [N] view of self, or undefined
  double beta = 0.0;  // for the first product
};

// out (shape S = [..., M, N], already sized) = beta * self + alpha * products, where `products`
// runs the libmlu call(s) into C given the Accumulator. `self` may be undefined (pure product).
// `inputs` are the product's operands (an output overlapping one of them goes through a
// temporary).
template <class Products>
void accumulate(OpScope& op, const Tensor& self, double beta, const Tensor& out, std::initializer_list<Tensor> inputs,
                Products&& products) {
  at::assert_no_internal_overlap(out);
  if (out.numel() == 0) return;
  const bool in_place = self.defined() && same_view(self, out);
  bool overlap = false;
  for (const Tensor& in : inputs)
    if (at::get_overlap_status(out, in) != at::MemOverlapStatus::No) overlap = true;
  // self is read while C is written unless it is C itself.
  if (self.defined() && beta != 0.0 && !in_place && at::get_overlap_status(out, self) != at::MemOverlapStatus::No)
    overlap = true;
  // An in-place op reads self before writing C, so C may only be out itself when it overlaps no input.
  const Tensor c = overlap ? empty_on(op.device(), out.sizes(), out.scalar_type()) : out;
  Accumulator acc;
  if (!self.defined() || beta == 0.0) {
    acc.beta = 0.0;
  } else if (in_place && !overlap) {
    acc.beta = beta;
  } else {
    const std::int64_t n = out.size(-1);
    bool row = beta == 1.0 && self.numel() > 0;
    for (std::int64_t d = 0; d + 1 < self.dim(); ++d) row = row && self.size(d) == 1;
    if (row && self.dim() > 0) row = self.size(-1) == n || self.size(-1) == 1;
    if (row) {
      const std::int64_t stride = self.dim() == 0 || self.size(-1) == 1 ? 0 : self.stride(-1);
      acc.bias = self.as_strided({n}, {stride}, self.storage_offset());
      acc.beta = 0.0;
    } else {
      copy_into(op, self.expand(out.sizes()), c);
      acc.beta = beta;
    }
  }
  products(c, acc);
  if (overlap) copy_into(op, c, out);
}

void check_broadcast(const OpScope& op, const Tensor& self, IntArrayRef shape) {
  TORCH_CHECK(at::is_expandable_to(self.sizes(), shape), op.name(), ": self of shape ", self.sizes(),
              " cannot be broadcast to the result's shape ", shape);
}

void check_in_place_shape(const OpScope& op, const Tensor& self, IntArrayRef shape) {
  TORCH_CHECK(self.sizes() == shape, op.name(), ": the in-place result (self) must have the product's shape ", shape,
              ", but got ", self.sizes());
}

// ---- mm / addmm ----------------------------------------------------------------------------------

void check_mm(const OpScope& op, const Tensor& m1, const Tensor& m2, const char* n1, const char* n2) {
  TORCH_CHECK(m1.dim() == 2, op.name(), ": ", n1, " must be a matrix, got ", m1.dim(), "-D tensor");
  TORCH_CHECK(m2.dim() == 2, op.name(), ": ", n2, " must be a matrix, got ", m2.dim(), "-D tensor");
  TORCH_CHECK(m1.size(1) == m2.size(0), op.name(), ": mat1 and mat2 shapes cannot be multiplied (", m1.size(0), "x",
              m1.size(1), " and ", m2.size(0), "x", m2.size(1), ")");
}

// out = beta * self + alpha * m1 x m2 (self undefined: pure product).
void addmm_into(OpScope& op, const Tensor& self, const Tensor& m1, const Tensor& m2, double beta, double alpha,
                const Tensor& out) {
  accumulate(op, self, beta, out, {m1, m2}, [&](const Tensor& c, const Accumulator& acc) {
    gemm(op, m1, m2, acc.bias.defined() ? &acc.bias : nullptr, c, alpha, acc.beta);
  });
}

Tensor mlu_mm(const Tensor& self, const Tensor& mat2) {
  OpScope op("aten::mm", self);
  check_operands(op, {{&self, "self"}, {&mat2, "mat2"}});
  check_mm(op, self, mat2, "self", "mat2");
  Tensor out = empty_on(op.device(), {self.size(0), mat2.size(1)}, self.scalar_type());
  addmm_into(op, Tensor(), self, mat2, 0.0, 1.0, out);
  return out;
}

Tensor& mlu_mm_out(const Tensor& self, const Tensor& mat2, Tensor& out) {
  OpScope op("aten::mm.out", self);
  check_operands(op, {{&self, "self"}, {&mat2, "mat2"}});
  check_mm(op, self, mat2, "self", "mat2");
  check_out_dtype(out, self.scalar_type(), op.name());
  prepare_out(out, op.device(), {self.size(0), mat2.size(1)}, op.name());
  addmm_into(op, Tensor(), self, mat2, 0.0, 1.0, out);
  return out;
}

void check_addmm(const OpScope& op, const Tensor& self, const Tensor& m1, const Tensor& m2) {
  check_operands(op, {{&self, "self"}, {&m1, "mat1"}, {&m2, "mat2"}});
  check_mm(op, m1, m2, "mat1", "mat2");
  check_broadcast(op, self, {m1.size(0), m2.size(1)});
}

Tensor mlu_addmm(const Tensor& self, const Tensor& m1, const Tensor& m2, const Scalar& beta, const Scalar& alpha) {
  OpScope op("aten::addmm", self);
  check_addmm(op, self, m1, m2);
  Tensor out = empty_on(op.device(), {m1.size(0), m2.size(1)}, self.scalar_type());
  addmm_into(op, self, m1, m2, beta.toDouble(), alpha.toDouble(), out);
  return out;
}

Tensor& mlu_addmm_(Tensor& self, const Tensor& m1, const Tensor& m2, const Scalar& beta, const Scalar& alpha) {
  OpScope op("aten::addmm_", self);
  check_addmm(op, self, m1, m2);
  check_in_place_shape(op, self, {m1.size(0), m2.size(1)});
  addmm_into(op, self, m1, m2, beta.toDouble(), alpha.toDouble(), self);
  return self;
}

Tensor& mlu_addmm_out(const Tensor& self, const Tensor& m1, const Tensor& m2, const Scalar& beta, const Scalar& alpha,
                      Tensor& out) {
  OpScope op("aten::addmm.out", self);
  check_addmm(op, self, m1, m2);
  check_out_dtype(out, self.scalar_type(), op.name());
  prepare_out(out, op.device(), {m1.size(0), m2.size(1)}, op.name());
  addmm_into(op, self, m1, m2, beta.toDouble(), alpha.toDouble(), out);
  return out;
}

// _addmm_activation: relu or gelu (torch's CPU kernel: exact erf gelu) of addmm, in place on the result.
void activate(OpScope& op, const Tensor& out, bool use_gelu) {
  if (out.numel() == 0) return;
  const mlu::TensorDesc d = desc(out, op.name());
  op.check(mlu::unary(op.handle(), use_gelu ? mlu::UnaryOp::kGelu : mlu::UnaryOp::kRelu, d, out.data_ptr(), d,
                      out.data_ptr()),
           "unary");
}

Tensor mlu_addmm_activation(const Tensor& self, const Tensor& m1, const Tensor& m2, const Scalar& beta,
                            const Scalar& alpha, bool use_gelu) {
  OpScope op("aten::_addmm_activation", self);
  check_addmm(op, self, m1, m2);
  Tensor out = empty_on(op.device(), {m1.size(0), m2.size(1)}, self.scalar_type());
  addmm_into(op, self, m1, m2, beta.toDouble(), alpha.toDouble(), out);
  activate(op, out, use_gelu);
  return out;
}

Tensor& mlu_addmm_activation_out(const Tensor& self, const Tensor& m1, const Tensor& m2, const Scalar& beta,
                                 const Scalar& alpha, bool use_gelu, Tensor& out) {
  OpScope op("aten::_addmm_activation.out", self);
  check_addmm(op, self, m1, m2);
  check_out_dtype(out, self.scalar_type(), op.name());
  prepare_out(out, op.device(), {m1.size(0), m2.size(1)}, op.name());
  addmm_into(op, self, m1, m2, beta.toDouble(), alpha.toDouble(), out);
  activate(op, out, use_gelu);
  return out;
}

// ---- bmm / baddbmm / addbmm ----------------------------------------------------------------------

void check_bmm(const OpScope& op, const Tensor& b1, const Tensor& b2, const char* n1, const char* n2) {
  TORCH_CHECK(b1.dim() == 3, op.name(), ": ", n1, " must be a 3D tensor, got ", b1.dim(), "-D");
  TORCH_CHECK(b2.dim() == 3, op.name(), ": ", n2, " must be a 3D tensor, got ", b2.dim(), "-D");
  TORCH_CHECK(b1.size(0) == b2.size(0), op.name(), ": ", n1, " and ", n2, " must have the same number of batches, got ",
              b1.size(0), " and ", b2.size(0));
  TORCH_CHECK(b1.size(2) == b2.size(1), op.name(), ": incompatible matrix sizes for bmm (", b1.size(1), "x",
              b1.size(2), " and ", b2.size(1), "x", b2.size(2), ")");
}

void baddbmm_into(OpScope& op, const Tensor& self, const Tensor& b1, const Tensor& b2, double beta, double alpha,
                  const Tensor& out) {
  accumulate(op, self, beta, out, {b1, b2}, [&](const Tensor& c, const Accumulator& acc) {
    gemm(op, b1, b2, acc.bias.defined() ? &acc.bias : nullptr, c, alpha, acc.beta);
  });
}

Tensor mlu_bmm(const Tensor& self, const Tensor& mat2) {
  OpScope op("aten::bmm", self);
  check_operands(op, {{&self, "self"}, {&mat2, "mat2"}});
  check_bmm(op, self, mat2, "self", "mat2");
  Tensor out = empty_on(op.device(), {self.size(0), self.size(1), mat2.size(2)}, self.scalar_type());
  baddbmm_into(op, Tensor(), self, mat2, 0.0, 1.0, out);
  return out;
}

Tensor& mlu_bmm_out(const Tensor& self, const Tensor& mat2, Tensor& out) {
  OpScope op("aten::bmm.out", self);
  check_operands(op, {{&self, "self"}, {&mat2, "mat2"}});
  check_bmm(op, self, mat2, "self", "mat2");
  check_out_dtype(out, self.scalar_type(), op.name());
  prepare_out(out, op.device(), {self.size(0), self.size(1), mat2.size(2)}, op.name());
  baddbmm_into(op, Tensor(), self, mat2, 0.0, 1.0, out);
  return out;
}

std::vector<std::int64_t> check_baddbmm(const OpScope& op, const Tensor& self, const Tensor& b1, const Tensor& b2) {
  check_operands(op, {{&self, "self"}, {&b1, "batch1"}, {&b2, "batch2"}});
  check_bmm(op, b1, b2, "batch1", "batch2");
  std::vector<std::int64_t> shape{b1.size(0), b1.size(1), b2.size(2)};
  check_broadcast(op, self, shape);
  return shape;
}

Tensor mlu_baddbmm(const Tensor& self, const Tensor& b1, const Tensor& b2, const Scalar& beta, const Scalar& alpha) {
  OpScope op("aten::baddbmm", self);
  const auto shape = check_baddbmm(op, self, b1, b2);
  Tensor out = empty_on(op.device(), shape, self.scalar_type());
  baddbmm_into(op, self, b1, b2, beta.toDouble(), alpha.toDouble(), out);
  return out;
}

Tensor& mlu_baddbmm_(Tensor& self, const Tensor& b1, const Tensor& b2, const Scalar& beta, const Scalar& alpha) {
  OpScope op("aten::baddbmm_", self);
  const auto shape = check_baddbmm(op, self, b1, b2);
  check_in_place_shape(op, self, shape);
  baddbmm_into(op, self, b1, b2, beta.toDouble(), alpha.toDouble(), self);
  return self;
}

Tensor& mlu_baddbmm_out(const Tensor& self, const Tensor& b1, const Tensor& b2, const Scalar& beta,
                        const Scalar& alpha, Tensor& out) {
  OpScope op("aten::baddbmm.out", self);
  const auto shape = check_baddbmm(op, self, b1, b2);
  check_out_dtype(out, self.scalar_type(), op.name());
  prepare_out(out, op.device(), shape, op.name());
  baddbmm_into(op, self, b1, b2, beta.toDouble(), alpha.toDouble(), out);
  return out;
}

// addbmm: out [M, N] = beta * self + alpha * sum_b b1[b] x b2[b]: one GEMM per batch, the first
// with beta (and the bias), the others accumulating (beta 1). fp16 rounds after each batch.
void addbmm_into(OpScope& op, const Tensor& self, const Tensor& b1, const Tensor& b2, double beta, double alpha,
                 const Tensor& out) {
  accumulate(op, self, beta, out, {b1, b2}, [&](const Tensor& c, const Accumulator& acc) {
    const std::int64_t batches = b1.size(0);
    if (batches == 0) {  // beta * self (+ bias), or zeros
      if (acc.bias.defined()) {
        copy_into(op, acc.bias.expand(c.sizes()), c);
      } else {
        scale_into(op, c, acc.beta);
      }
      return;
    }
    for (std::int64_t i = 0; i < batches; ++i) {
      const bool first = i == 0;
      gemm(op, b1.select(0, i), b2.select(0, i), first && acc.bias.defined() ? &acc.bias : nullptr, c, alpha,
           first ? acc.beta : 1.0);
    }
  });
}

std::vector<std::int64_t> check_addbmm(const OpScope& op, const Tensor& self, const Tensor& b1, const Tensor& b2) {
  check_operands(op, {{&self, "self"}, {&b1, "batch1"}, {&b2, "batch2"}});
  check_bmm(op, b1, b2, "batch1", "batch2");
  std::vector<std::int64_t> shape{b1.size(1), b2.size(2)};
  check_broadcast(op, self, shape);
  return shape;
}

Tensor mlu_addbmm(const Tensor& self, const Tensor& b1, const Tensor& b2, const Scalar& beta, const Scalar& alpha) {
  OpScope op("aten::addbmm", self);
  const auto shape = check_addbmm(op, self, b1, b2);
  Tensor out = empty_on(op.device(), shape, self.scalar_type());
  addbmm_into(op, self, b1, b2, beta.toDouble(), alpha.toDouble(), out);
  return out;
}

Tensor& mlu_addbmm_(Tensor& self, const Tensor& b1, const Tensor& b2, const Scalar& beta, const Scalar& alpha) {
  OpScope op("aten::addbmm_", self);
  const auto shape = check_addbmm(op, self, b1, b2);
  check_in_place_shape(op, self, shape);
  addbmm_into(op, self, b1, b2, beta.toDouble(), alpha.toDouble(), self);
  return self;
}

Tensor& mlu_addbmm_out(const Tensor& self, const Tensor& b1, const Tensor& b2, const Scalar& beta, const Scalar& alpha,
                       Tensor& out) {
  OpScope op("aten::addbmm.out", self);
  const auto shape = check_addbmm(op, self, b1, b2);
  check_out_dtype(out, self.scalar_type(), op.name());
  prepare_out(out, op.device(), shape, op.name());
  addbmm_into(op, self, b1, b2, beta.toDouble(), alpha.toDouble(), out);
  return out;
}

// ---- addmv / mv: GEMMs with N = 1 ------------------------------------------------------------------

void check_mv(const OpScope& op, const Tensor& mat, const Tensor& vec) {
  TORCH_CHECK(mat.dim() == 2 && vec.dim() == 1, op.name(), ": vector + matrix @ vector expected, got ", mat.dim(),
              "-D matrix and ", vec.dim(), "-D vector");
  TORCH_CHECK(mat.size(1) == vec.size(0), op.name(), ": size mismatch, got matrix ", mat.size(0), "x", mat.size(1),
              " and vector ", vec.size(0));
}

// out [M] = beta * self + alpha * mat x vec, as C [M, 1] = A [M, K] x B [K, 1].
void addmv_into(OpScope& op, const Tensor& self, const Tensor& mat, const Tensor& vec, double beta, double alpha,
                const Tensor& out) {
  const Tensor self2 = !self.defined() ? self : self.dim() == 1 ? self.unsqueeze(1) : self;  // [M] -> [M, 1]
  const Tensor out2 = out.unsqueeze(1);
  const Tensor vec2 = vec.unsqueeze(1);
  accumulate(op, self2, beta, out2, {mat, vec}, [&](const Tensor& c, const Accumulator& acc) {
    gemm(op, mat, vec2, acc.bias.defined() ? &acc.bias : nullptr, c, alpha, acc.beta);
  });
}

void check_addmv(const OpScope& op, const Tensor& self, const Tensor& mat, const Tensor& vec) {
  check_operands(op, {{&self, "self"}, {&mat, "mat"}, {&vec, "vec"}});
  check_mv(op, mat, vec);
  TORCH_CHECK(self.dim() <= 1, op.name(), ": self must be a vector or a scalar, got ", self.dim(), "-D");
  check_broadcast(op, self, {mat.size(0)});
}

Tensor mlu_addmv(const Tensor& self, const Tensor& mat, const Tensor& vec, const Scalar& beta, const Scalar& alpha) {
  OpScope op("aten::addmv", self);
  check_addmv(op, self, mat, vec);
  Tensor out = empty_on(op.device(), {mat.size(0)}, self.scalar_type());
  addmv_into(op, self, mat, vec, beta.toDouble(), alpha.toDouble(), out);
  return out;
}

Tensor& mlu_addmv_(Tensor& self, const Tensor& mat, const Tensor& vec, const Scalar& beta, const Scalar& alpha) {
  OpScope op("aten::addmv_", self);
  check_addmv(op, self, mat, vec);
  check_in_place_shape(op, self, {mat.size(0)});
  addmv_into(op, self, mat, vec, beta.toDouble(), alpha.toDouble(), self);
  return self;
}

Tensor& mlu_addmv_out(const Tensor& self, const Tensor& mat, const Tensor& vec, const Scalar& beta, const Scalar& alpha,
                      Tensor& out) {
  OpScope op("aten::addmv.out", self);
  check_addmv(op, self, mat, vec);
  check_out_dtype(out, self.scalar_type(), op.name());
  prepare_out(out, op.device(), {mat.size(0)}, op.name());
  addmv_into(op, self, mat, vec, beta.toDouble(), alpha.toDouble(), out);
  return out;
}

Tensor mlu_mv(const Tensor& self, const Tensor& vec) {
  OpScope op("aten::mv", self);
  check_operands(op, {{&self, "self"}, {&vec, "vec"}});
  check_mv(op, self, vec);
  Tensor out = empty_on(op.device(), {self.size(0)}, self.scalar_type());
  addmv_into(op, Tensor(), self, vec, 0.0, 1.0, out);
  return out;
}

Tensor& mlu_mv_out(const Tensor& self, const Tensor& vec, Tensor& out) {
  OpScope op("aten::mv.out", self);
  check_operands(op, {{&self, "self"}, {&vec, "vec"}});
  check_mv(op, self, vec);
  check_out_dtype(out, self.scalar_type(), op.name());
  prepare_out(out, op.device(), {self.size(0)}, op.name());
  addmv_into(op, Tensor(), self, vec, 0.0, 1.0, out);
  return out;
}

// ---- dot / vdot: [1, K] x [K, 1] -------------------------------------------------------------------

void check_dot(const OpScope& op, const Tensor& a, const Tensor& b) {
  check_on_device(a, op.device(), op.name(), "self");
  check_on_device(b, op.device(), op.name(), "other");
  TORCH_CHECK(a.dim() == 1 && b.dim() == 1, op.name(), ": 1D tensors expected, but got ", a.dim(), "D and ", b.dim(),
              "D tensors");
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), op.name(), ": expected both vectors to have same dtype, but found ",
              a.scalar_type(), " and ", b.scalar_type());
  TORCH_CHECK(a.numel() == b.numel(), op.name(), ": inconsistent tensor size, expected tensor [", a.numel(),
              "] and src [", b.numel(), "] to have the same number of elements, but got ", a.numel(), " and ",
              b.numel(), " elements respectively");
  check_gemm_dtype(op.name(), a, "self");
}

void dot_into(OpScope& op, const Tensor& a, const Tensor& b, const Tensor& out) {
  const Tensor out2 = out.as_strided({1, 1}, {1, 1}, out.storage_offset());
  accumulate(op, Tensor(), 0.0, out2, {a, b}, [&](const Tensor& c, const Accumulator&) {
    gemm(op, a.unsqueeze(0), b.unsqueeze(1), nullptr, c, 1.0, 0.0);
  });
}

Tensor dot_impl(const char* name, const Tensor& self, const Tensor& other) {
  OpScope op(name, self);
  check_dot(op, self, other);
  Tensor out = empty_on(op.device(), {}, self.scalar_type());
  dot_into(op, self, other, out);
  return out;
}

Tensor& dot_out_impl(const char* name, const Tensor& self, const Tensor& other, Tensor& out) {
  OpScope op(name, self);
  check_dot(op, self, other);
  check_out_dtype(out, self.scalar_type(), op.name());
  prepare_out(out, op.device(), {}, op.name());
  dot_into(op, self, other, out);
  return out;
}

// vdot conjugates self: the same as dot for the real dtypes the device has.
Tensor mlu_dot(const Tensor& self, const Tensor& other) { return dot_impl("aten::dot", self, other); }
Tensor mlu_vdot(const Tensor& self, const Tensor& other) { return dot_impl("aten::vdot", self, other); }
Tensor& mlu_dot_out(const Tensor& self, const Tensor& other, Tensor& out) {
  return dot_out_impl("aten::dot.out", self, other, out);
}
Tensor& mlu_vdot_out(const Tensor& self, const Tensor& other, Tensor& out) {
  return dot_out_impl("aten::vdot.out", self, other, out);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("mm", TORCH_FN(mlu_mm));
  m.impl("mm.out", TORCH_FN(mlu_mm_out));
  m.impl("addmm", TORCH_FN(mlu_addmm));
  m.impl("addmm_", TORCH_FN(mlu_addmm_));
  m.impl("addmm.out", TORCH_FN(mlu_addmm_out));
  m.impl("_addmm_activation", TORCH_FN(mlu_addmm_activation));
  m.impl("_addmm_activation.out", TORCH_FN(mlu_addmm_activation_out));
  m.impl("bmm", TORCH_FN(mlu_bmm));
  m.impl("bmm.out", TORCH_FN(mlu_bmm_out));
  m.impl("baddbmm", TORCH_FN(mlu_baddbmm));
  m.impl("baddbmm_", TORCH_FN(mlu_baddbmm_));
  m.impl("baddbmm.out", TORCH_FN(mlu_baddbmm_out));
  m.impl("addbmm", TORCH_FN(mlu_addbmm));
  m.impl("addbmm_", TORCH_FN(mlu_addbmm_));
  m.impl("addbmm.out", TORCH_FN(mlu_addbmm_out));
  m.impl("addmv", TORCH_FN(mlu_addmv));
  m.impl("addmv_", TORCH_FN(mlu_addmv_));
  m.impl("addmv.out", TORCH_FN(mlu_addmv_out));
  m.impl("mv", TORCH_FN(mlu_mv));
  m.impl("mv.out", TORCH_FN(mlu_mv_out));
  m.impl("dot", TORCH_FN(mlu_dot));
  m.impl("dot.out", TORCH_FN(mlu_dot_out));
  m.impl("vdot", TORCH_FN(mlu_vdot));
  m.impl("vdot.out", TORCH_FN(mlu_vdot_out));
}

}  // namespace mlusim::bridge::ops
