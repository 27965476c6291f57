// Autocast for the MLU (CUDA twin: the AutocastCUDA registrations of aten/src/ATen/autocast_mode.cpp;
// OpenReg: csrc/amp/autocast_mode.cpp). torch.autocast("mlu", dtype=torch.float16) casts the
// inputs of CUDA's op lists: matmul/conv/linear/SDPA to the lower precision, the precision-
// sensitive ops (softmax, norms, losses, reductions, transcendentals) to fp32, and promotes the
// mixed-input ops; the lists are ATen's own (AT_FORALL_* in ATen/autocast_mode.h), so they follow
// torch's. Every other op falls through.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

// In at::autocast, as torch's own registrations: the KERNEL_* macros and op lists name ATen types
// and functions (Tensor, ScalarType, norm, ...) unqualified.
namespace at::autocast {
namespace {

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

#define MLU_AUTOCAST_LOWER_PRECISION_FP(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define MLU_AUTOCAST_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define MLU_AUTOCAST_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define MLU_AUTOCAST_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
  AT_FORALL_LOWER_PRECISION_FP(MLU_AUTOCAST_LOWER_PRECISION_FP)
  AT_FORALL_FP32(MLU_AUTOCAST_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(MLU_AUTOCAST_FP32_SET_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
  AT_FORALL_PROMOTE(MLU_AUTOCAST_PROMOTE)
}

}  // namespace
}  // namespace at::autocast
