// torchvision's detection ops for the PrivateUse1 key (torchvision dispatches them through the
// dispatcher: torch.ops.torchvision.*), built from device kernels as torchvision's CUDA kernels
// compute them:
//
//   nms(dets, scores, iou_threshold)   boxes sorted by score (the device's stable sort, descending),
//                                      the IoU of every pair > threshold as one elementwise program
//                                      over [N, 1] x [1, N] (fp32), then the greedy pass over that
//                                      mask on the host, as torchvision's CUDA nms does with its
//                                      bit mask (one device-to-host copy of N x N flags)
//
// The schema comes from torchvision's library (loaded by `import torchvision`); registering the
// implementation first is allowed by the dispatcher.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/sort.h>
#include <torch/library.h>

#include "ops/op_support.h"

namespace mlusim::bridge::ops {
namespace {

using at::Tensor;

// A program literal of a double.
std::string literal(double v) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", v);
  std::string s(text);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

Tensor mlu_nms(const Tensor& dets, const Tensor& scores, double iou_threshold) {
  const char* name = "torchvision::nms";
  OpScope op(name, dets);
  TORCH_CHECK(dets.dim() == 2, "boxes should be a 2d tensor, got ", dets.dim(), "D");
  TORCH_CHECK(dets.size(1) == 4, "boxes should have 4 elements in dimension 1, got ", dets.size(1));
  TORCH_CHECK(scores.dim() == 1, "scores should be a 1d tensor, got ", scores.dim(), "D");
  TORCH_CHECK(dets.size(0) == scores.size(0), "boxes and scores should have same number of elements in dimension 0, got ",
              dets.size(0), " and ", scores.size(0));
  TORCH_CHECK(dets.scalar_type() == scores.scalar_type(), "boxes and scores should have the same type");
  check_on_device(scores, op.device(), name, "scores");
  TORCH_CHECK_NOT_IMPLEMENTED(dets.scalar_type() == at::kFloat || dets.scalar_type() == at::kHalf, name, ": dtype ",
                              dets.scalar_type(), " is not supported on device mlu (float32, float16)");
  const int64_t n = dets.size(0);
  if (n == 0) return empty_on(op.device(), {0}, at::kLong);
  const Tensor order = std::get<1>(at::sort(scores, /*stable=*/true, /*dim=*/0, /*descending=*/true));
  const Tensor b = at::index_select(dets, 0, order);
  const Tensor x1 = b.select(1, 0), y1 = b.select(1, 1), x2 = b.select(1, 2), y2 = b.select(1, 3);
  // Operands $0..$3: box i's corners as [N, 1]; $4..$7: box j's as [1, N]; all read as fp32 (the
  // IoU arithmetic of torchvision's kernels for float boxes).
  auto c = [](int k) { return "cast($" + std::to_string(k) + ", f32)"; };
  const std::string area_i = "mul(sub(" + c(2) + ", " + c(0) + "), sub(" + c(3) + ", " + c(1) + "))";
  const std::string area_j = "mul(sub(" + c(6) + ", " + c(4) + "), sub(" + c(7) + ", " + c(5) + "))";
  const std::string w = "maximum(sub(minimum(" + c(2) + ", " + c(6) + "), maximum(" + c(0) + ", " + c(4) + ")), 0.0)";
  const std::string h = "maximum(sub(minimum(" + c(3) + ", " + c(7) + "), maximum(" + c(1) + ", " + c(5) + ")), 0.0)";
  const std::string text = "inter = mul(" + w + ", " + h + "); gt(div(inter, sub(add(" + area_i + ", " + area_j +
                           "), inter)), " + literal(iou_threshold) + ")";
  const Tensor over = run_elementwise_program(
      {x1.view({n, 1}), y1.view({n, 1}), x2.view({n, 1}), y2.view({n, 1}), x1.view({1, n}), y1.view({1, n}),
       x2.view({1, n}), y2.view({1, n})},
      text);
  // The greedy pass on the host over the flags (torchvision's CUDA nms: the same loop over its mask).
  const Tensor flags = over.to(at::kCPU);
  const bool* f = flags.data_ptr<bool>();
  std::vector<char> removed(static_cast<std::size_t>(n), 0);
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < n; ++i) {
    if (removed[static_cast<std::size_t>(i)]) continue;
    keep.push_back(i);
    for (int64_t j = i + 1; j < n; ++j)
      if (f[i * n + j]) removed[static_cast<std::size_t>(j)] = 1;
  }
  Tensor kept = empty_on(op.device(), {static_cast<int64_t>(keep.size())}, at::kLong);
  kept.copy_(at::from_blob(keep.data(), {static_cast<int64_t>(keep.size())}, at::kLong));
  return at::index_select(order, 0, kept);
}

}  // namespace

TORCH_LIBRARY_IMPL(torchvision, PrivateUse1, m) { m.impl("nms", TORCH_FN(mlu_nms)); }

}  // namespace mlusim::bridge::ops
