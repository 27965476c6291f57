// Batch normalization and layer normalization, forward and backward, with PyTorch's semantics
// (aten native_batch_norm / native_batch_norm_backward, native_layer_norm /
// native_layer_norm_backward). fp32, fp16 and bf16 tensors (bf16 where the config computes it);
// statistics and arithmetic are fp32 on chip, one rounding on store.
// Optional tensors are passed as a null descriptor pointer.
#pragma once

#include <cstddef>

#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"
#include "mlusim/mlu/tensor.h"

namespace mlusim::mlu {

// ---- batch norm: x is [N,C] or [N,C,d1..] (NCHW for 4-d), statistics per channel C ----------

// Training: mean_c and biased var_c over N and the spatial dims; y = (x - mean) * invstd * w + b
// with invstd = 1/sqrt(var + eps). running_mean/running_var (optional, [C], updated in place):
// r = (1 - momentum) * r + momentum * stat, with the UNBIASED variance (M / (M - 1), M values per
// channel). save_mean and save_invstd ([C], optional) receive mean and invstd for the backward.
// weight and bias: [C], optional (1 and 0). workspace: at least
// get_batch_norm_forward_training_workspace_size bytes (null when that is 0), else kBadParam.
//
// Few channel groups over many values (a channels-last tensor with few channels: the kernel's
// tasks own whole channels) split the reduction over the cores: per-slice means and variances
// into the workspace, combined per channel (Chan et al.'s pairwise formula), then y; three
// kernels instead of one. The inference forward splits the same way without a workspace.
Status get_batch_norm_forward_training_workspace_size(Handle* h, const TensorDesc& x, std::size_t* bytes);
Status batch_norm_forward_training(Handle* h, double momentum, double eps, const TensorDesc& x, const void* x_ptr,
                                   const TensorDesc* weight, const void* weight_ptr, const TensorDesc* bias,
                                   const void* bias_ptr, const TensorDesc* running_mean, void* running_mean_ptr,
                                   const TensorDesc* running_var, void* running_var_ptr, const TensorDesc& y,
                                   void* y_ptr, const TensorDesc* save_mean, void* save_mean_ptr,
                                   const TensorDesc* save_invstd, void* save_invstd_ptr, void* workspace,
                                   std::size_t workspace_bytes);

// Inference: y = (x - running_mean) / sqrt(running_var + eps) * w + b.
Status batch_norm_forward_inference(Handle* h, double eps, const TensorDesc& x, const void* x_ptr,
                                    const TensorDesc* weight, const void* weight_ptr, const TensorDesc* bias,
                                    const void* bias_ptr, const TensorDesc& running_mean, const void* running_mean_ptr,
                                    const TensorDesc& running_var, const void* running_var_ptr, const TensorDesc& y,
                                    void* y_ptr);

// Backward. training: mean/invstd are save_mean/save_invstd from the forward, and
//   dx = (dy - mean(dy) - xhat * mean(dy * xhat)) * invstd * w,   xhat = (x - mean) * invstd
// (means over N and spatial dims). Not training: mean/invstd come from running_mean/running_var
// and eps, and dx = dy * invstd * w. Both: dweight = sum(dy * xhat), dbias = sum(dy).
// dx, dweight, dbias are optional (null descriptor = not wanted, torch's output_mask).
// `mean` and `invstd_or_var` are save_mean/save_invstd (training) or running_mean/running_var.
// workspace: at least get_batch_norm_backward_workspace_size bytes (null when that is 0), else
// kBadParam. Split as the forward: per-slice sums of dy and dy * xhat into the workspace, summed
// per channel (dweight, dbias and fp32 copies), then dx from them; three kernels instead of one.
Status get_batch_norm_backward_workspace_size(Handle* h, const TensorDesc& x, std::size_t* bytes);
Status batch_norm_backward(Handle* h, bool training, double eps, const TensorDesc& dy, const void* dy_ptr,
                           const TensorDesc& x, const void* x_ptr, const TensorDesc* weight, const void* weight_ptr,
                           const TensorDesc& mean, const void* mean_ptr, const TensorDesc& invstd_or_var,
                           const void* invstd_or_var_ptr, const TensorDesc* dx, void* dx_ptr, const TensorDesc* dweight,
                           void* dweight_ptr, const TensorDesc* dbias, void* dbias_ptr, void* workspace,
                           std::size_t workspace_bytes);

// ---- layer norm: normalized over the last `normalized_ndim` dims of x ------------------------

// y = (x - mean) * rstd * w + b per row (a row = one index of the leading dims), with
// mean/rstd over the row, biased variance, rstd = 1/sqrt(var + eps) (any finite eps, as torch: NaN
// where var + eps < 0). weight and bias (optional)
// have the normalized dims. mean and rstd (optional) hold one value per row: any dims with that
// many elements (torch gives [lead..., 1, ..., 1]), read in row-major order.
Status layer_norm_forward(Handle* h, int normalized_ndim, double eps, const TensorDesc& x, const void* x_ptr,
                          const TensorDesc* weight, const void* weight_ptr, const TensorDesc* bias,
                          const void* bias_ptr, const TensorDesc& y, void* y_ptr, const TensorDesc* mean,
                          void* mean_ptr, const TensorDesc* rstd, void* rstd_ptr);

// Workspace of layer_norm_backward: per-core partial sums of dweight and dbias (0 when neither
// is wanted).
Status get_layer_norm_backward_workspace_size(Handle* h, int normalized_ndim, const TensorDesc& x, bool want_dweight,
                                              bool want_dbias, std::size_t* bytes);

// xhat = (x - mean) * rstd, g = dy * w:
//   dx = rstd * (g - mean_row(g) - xhat * mean_row(g * xhat)),
//   dweight = sum over rows of dy * xhat, dbias = sum over rows of dy.
// dx, dweight, dbias optional (null descriptor = not wanted).
Status layer_norm_backward(Handle* h, int normalized_ndim, const TensorDesc& dy, const void* dy_ptr,
                           const TensorDesc& x, const void* x_ptr, const TensorDesc& mean, const void* mean_ptr,
                           const TensorDesc& rstd, const void* rstd_ptr, const TensorDesc* weight,
                           const void* weight_ptr, void* workspace, std::size_t workspace_bytes, const TensorDesc* dx,
                           void* dx_ptr, const TensorDesc* dweight, void* dweight_ptr, const TensorDesc* dbias,
                           void* dbias_ptr);

}  // namespace mlusim::mlu
