// Fused ops: several steps in one pass whose intermediates stay on chip (no DRAM round trip
// between the steps). Each builds on an existing engine with an extra on-chip stage:
//
//   conv2d_bn_act_forward  convolution + bias + inference batch norm + activation: the
//                          convolution's output stage (GEMM epilogue, or the depthwise kernel's)
//                          applies a per-channel scale and shift and the activation to the fp32
//                          accumulator before its one rounding and store;
//   linear_act             y = act(x W^T + b): matmul (gemm.h) with MatmulParams::activation, the
//                          activation in the GEMM epilogue;
//   linear_residual        y = act(x W^T + b + r): a residual connection's add in the same
//                          epilogue (MatmulParams::residual), r read on chip block by block;
//   elementwise_program    an arbitrary elementwise expression over any number of broadcast
//                          inputs, compiled to one streaming kernel of VFU steps.
//
// softmax_forward (softmax.h) and layer_norm_forward (norm.h) already are single kernels;
// add_layer_norm_forward / rms_norm_forward fold a residual add into the norm.
//
// Each op records its OpRecord ("fused_conv_bn_act", "fused_linear_act", "fused_linear_residual",
// "fused_elementwise"):
// the MACs, the minimum DRAM bytes (every input read once + the output written once) and the
// kernels it launched. All ops are asynchronous on the handle's queue.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "mlusim/mlu/activation.h"
#include "mlusim/mlu/conv.h"
#include "mlusim/mlu/elementwise.h"
#include "mlusim/mlu/gemm.h"
#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"
#include "mlusim/mlu/tensor.h"

namespace mlusim::mlu {

// ---- convolution + bias + batch norm (inference) + activation -------------------------------

// Inference batch norm folded into a convolution: every tensor is optional (null descriptor),
// 1-d [OC], fp32 or fp16 (independently of x's dtype), any stride. Missing ones count as
//   weight (gamma) = 1, bias (beta) = 0, running_mean = 0, and running_var: no normalisation
//   (scale = gamma alone; eps is then unused).
struct BatchNormInference {
  double eps = 1e-5;
  const TensorDesc* weight = nullptr;
  const void* weight_ptr = nullptr;
  const TensorDesc* bias = nullptr;
  const void* bias_ptr = nullptr;
  const TensorDesc* running_mean = nullptr;
  const void* running_mean_ptr = nullptr;
  const TensorDesc* running_var = nullptr;
  const void* running_var_ptr = nullptr;
};

// y = act((conv(x, w) + bias[oc]) * scale[oc] + shift[oc]) with
//   scale = gamma / sqrt(running_var + eps),  shift = beta - running_mean * scale,
// i.e. act(batch_norm_inference(conv2d_forward(x, w, bias))). x, w, y, bias and the convolution
// parameters follow conv2d_forward exactly (conv.h: layouts, any strides, grouped and depthwise,
// fp32 or fp16 with one rounding of the fp32 result). bn: null for none (y = act(conv + bias)).
//
// Folding happens on the device, inside the convolution's kernel: the epilogue that stores a block
// of output channels loads those channels' BN tensors and bias and computes, on the VFU in fp32,
// scale and shift' = beta + (bias - mean) * scale, then applies v * scale + shift' and the
// activation to the fp32 accumulator before rounding and storing it (the depthwise kernel does the
// same per output plane). No fold kernel, no extra workspace, no DRAM round trip: one kernel
// (plus the layout moves conv2d_forward itself needs, e.g. for NHWC outputs). Workspace as
// conv2d_forward's (query get_conv2d_bn_act_workspace_size: the on-chip stage may change the
// tiling). Records "fused_conv_bn_act": conv2d_forward's MACs, the bytes of x, w, bias, the BN
// tensors and y once, and its kernels.
// kBadParam: anything conv2d_forward rejects, a BN tensor that is not 1-d [OC] fp32/fp16 (or has
// no pointer), eps < 0 or not finite, an unknown activation.
Status get_conv2d_bn_act_workspace_size(Handle* h, const ConvParams& p, Activation act, const TensorDesc& x,
                                        const TensorDesc& w, const BatchNormInference* bn, const TensorDesc& y,
                                        std::size_t* bytes);
Status conv2d_bn_act_forward(Handle* h, const ConvParams& p, Activation act, const TensorDesc& x, const void* x_ptr,
                             const TensorDesc& w, const void* w_ptr, const TensorDesc* bias, const void* bias_ptr,
                             const BatchNormInference* bn, const TensorDesc& y, void* y_ptr, void* workspace,
                             std::size_t workspace_bytes);

// ---- linear + bias + activation ----------------------------------------------------------------

// y = act(x W^T + bias), as torch.nn.functional.linear followed by the activation:
// x [..., K] (any strides; 1-d x is one row), w [N, K] (any strides), bias optional [N],
// y [..., N] with x's leading dims. fp32 or fp16 (fp32 accumulation, the bias and the activation
// applied in fp32 on chip, one rounding). Leading dims that x and y can both address as one (e.g.
// contiguous [B, S, K]) become one GEMM of B x S rows; otherwise the GEMM is batched over them
// with w shared. Same engine as matmul with MatmulParams::activation (gemm.h).
// Records "fused_linear_act": MACs = rows x N x K, bytes of x, w, bias and y once.
Status get_linear_act_workspace_size(Handle* h, Activation act, const TensorDesc& x, const TensorDesc& w,
                                     const TensorDesc* bias, const TensorDesc& y, std::size_t* bytes);
Status linear_act(Handle* h, Activation act, const TensorDesc& x, const void* x_ptr, const TensorDesc& w,
                  const void* w_ptr, const TensorDesc* bias, const void* bias_ptr, const TensorDesc& y, void* y_ptr,
                  void* workspace, std::size_t workspace_bytes);

// ---- linear + bias + residual (+ activation) ---------------------------------------------------

// y = act(x W^T + bias + residual): linear_act with a residual connection's add in the GEMM
// epilogue (the transformer's `h = r + dense(x)`): residual has y's dims and dtype, any strides
// (0: broadcast), and must not overlap y. Per output block the epilogue loads the residual's block
// next to the accumulator and adds it in fp32 before the activation and the one rounding, so
// the sum costs its DRAM read and nothing else (an elementwise add would read the GEMM's output
// back and write it again). Records "fused_linear_residual": MACs = rows x N x K, bytes of x, w,
// bias, residual and y once.
Status get_linear_residual_workspace_size(Handle* h, Activation act, const TensorDesc& x, const TensorDesc& w,
                                          const TensorDesc* bias, const TensorDesc& residual, const TensorDesc& y,
                                          std::size_t* bytes);
Status linear_residual(Handle* h, Activation act, const TensorDesc& x, const void* x_ptr, const TensorDesc& w,
                       const void* w_ptr, const TensorDesc* bias, const void* bias_ptr, const TensorDesc& residual,
                       const void* residual_ptr, const TensorDesc& y, void* y_ptr, void* workspace,
                       std::size_t workspace_bytes);

// ---- residual add + layer norm / RMS norm --------------------------------------------------------

// s = x + residual; y = layer_norm(s) over the last normalized_ndim dims, exactly as
// layer_norm_forward (norm.h) of s: weight, bias (optional, the normalized dims, any float dtype),
// mean and rstd (optional, one value per row, contiguous), and sum (optional: s, for the next
// residual connection). x, residual, y and sum share one dtype (fp32, fp16, bf16) and dims, any
// strides. The transformer's `h = x + r; y = LayerNorm(h)` as one kernel: x and r are read once,
// y (and s) written once, instead of the add's write of s and the norm's read of it. For 16-bit
// dtypes s is rounded to the dtype before the statistics (what eager's add hands the norm).
// kNotSupported when a row does not fit NRAM in one pass together with its residual and sum
// (the row size is named). Records "fused_add_layer_norm": bytes of x, residual, y, sum, weight,
// bias and the statistics once; one kernel.
Status add_layer_norm_forward(Handle* h, int normalized_ndim, double eps, const TensorDesc& x, const void* x_ptr,
                              const TensorDesc& residual, const void* residual_ptr, const TensorDesc* weight,
                              const void* weight_ptr, const TensorDesc* bias, const void* bias_ptr,
                              const TensorDesc* sum, void* sum_ptr, const TensorDesc& y, void* y_ptr,
                              const TensorDesc* mean, void* mean_ptr, const TensorDesc* rstd, void* rstd_ptr);

// RMS norm (LLaMA's RMSNorm: no centring, no bias): y = s * rsqrt(mean_row(s^2) + eps) * weight
// with s = x + residual, or s = x when residual is null (then sum must be null too); rstd
// (optional) = rsqrt(mean_row(s^2) + eps) per row. Otherwise as add_layer_norm_forward: one kernel
// where the decomposed form takes a square, a row reduction and a scaling pass. Records
// "fused_add_rms_norm" with a residual, else "rms_norm".
Status rms_norm_forward(Handle* h, int normalized_ndim, double eps, const TensorDesc& x, const void* x_ptr,
                        const TensorDesc* residual, const void* residual_ptr, const TensorDesc* weight,
                        const void* weight_ptr, const TensorDesc* sum, void* sum_ptr, const TensorDesc& y, void* y_ptr,
                        const TensorDesc* rstd, void* rstd_ptr);

// ---- arbitrary elementwise chains ---------------------------------------------------------------

// A node of an elementwise expression. Operands (a, b, c) are the ids (indices in
// ElementwiseProgram::nodes) of other nodes; nodes may be listed in any order, but the graph must
// be acyclic.
struct ExprNode {
  enum class Kind : std::uint8_t {
    kInput,       // inputs[input]
    kConstant,    // a scalar `value` of dtype `dtype` (see the promotion rules below)
    kUnary,       // unary(a)
    kBinary,      // a binary b (add/sub: a + alpha * b, a - alpha * b)
    kCompare,     // a compare b -> bool
    kLogical,     // (a != 0) logical (b != 0) -> bool
    kLogicalNot,  // a == 0 -> bool
    kWhere,       // a ? b : c  (a read as != 0)
    kCast,        // a converted to `dtype` (as cast / Tensor.to)
  };
  Kind kind = Kind::kInput;
  int a = -1, b = -1, c = -1;
  int input = -1;
  double value = 0;    // kConstant
  double alpha = 1.0;  // kBinary
  DType dtype = DType::kFloat32;
  UnaryOp unary = UnaryOp::kNeg;
  BinaryOp binary = BinaryOp::kAdd;
  CompareOp compare = CompareOp::kEq;
  LogicalOp logical = LogicalOp::kAnd;
};

// An elementwise expression with one output. Build it with the helpers (each appends a node and
// returns its id) or fill `nodes` directly. Semantics are those of the matching elementwise.h op,
// applied in sequence, each intermediate having torch's result dtype:
//   - inputs have their tensor's dtype; a zero-dim input (ndim 0) promotes as torch's zero-dim
//     tensors do (only when its category bool < integral < floating is higher);
//   - a constant is a zero-dim value of `dtype` (a Python float is fp32 here, a Python int int64,
//     a bool kBool): 2.0 (fp32) * int32 tensor -> fp32, 2.0 * fp16 tensor -> fp16; its value is
//     rounded to a floating dtype, and must be whole and in range for an integral one (0/1: bool);
//   - binary with a constant operand is binary_scalar (the scalar applied in fp32 for floating
//     results; alpha multiplies a constant b on the host), otherwise binary; compare with a constant
//     is compare_scalar; where, logical and unary as their ops; cast converts as cast().
// So a program computes exactly what the chain of those ops computes with intermediates of their
// result dtypes, in one kernel, reading each input once and writing y once.
struct ElementwiseProgram {
  std::vector<ExprNode> nodes;
  int output = -1;  // the node stored to y (converted to y's dtype, which it must can_cast to)
  // fp32 intermediates ("opmath", as torch's CPU/CUDA kernels compute half): every fp16 value a
  // node computes stays in fp32 on the VFU (fp16 inputs and constants are widened where read) and
  // is rounded to fp16 once, on store. Promotion is unchanged otherwise (categories are the same).
  // Off: each intermediate is rounded to its result dtype, as the sequence of ops would round it.
  // Explicit cast nodes to fp16 still round.
  bool fp32_intermediates = false;

  int input(int index);
  int constant(double value, DType dtype = DType::kFloat32);
  int unary(UnaryOp op, int x);
  int binary(BinaryOp op, int a, int b, double alpha = 1.0);
  int compare(CompareOp op, int a, int b);
  int logical(LogicalOp op, int a, int b);
  int logical_not(int x);
  int where(int cond, int a, int b);
  int cast(int x, DType to);
  void set_output(int node) { output = node; }
};

// An input tensor of elementwise_program.
struct TensorArg {
  const TensorDesc* desc = nullptr;
  const void* ptr = nullptr;
};

// y = program(inputs) elementwise: every input broadcasts (numpy rules, any strides incl. 0) to
// y's dims, which must be the broadcast shape of all inputs; y may have any strides but no
// stride-0 dim of size > 1. Only the nodes the output depends on run; inputs no node reads are
// not loaded. One streaming kernel (none for an empty y). Dtypes: fp32, fp16, int32, int8, bool
// and int64 (narrowed to int32 on the VFU, as elsewhere); fp64 anywhere is kNotSupported.
// kBadParam with a detail naming the node: an operand id that is no node, a cycle, an input index
// outside `inputs`, a bad enum value, an output not set, a constant not representable in its
// dtype, a result dtype y cannot hold (can_cast), anything the individual op would reject.
// Records "fused_elementwise" with 0 MACs, bytes = each read input's elements + y's, 1 kernel.
Status elementwise_program(Handle* h, const ElementwiseProgram& program, const std::vector<TensorArg>& inputs,
                           const TensorDesc& y, void* y_ptr);

}  // namespace mlusim::mlu
