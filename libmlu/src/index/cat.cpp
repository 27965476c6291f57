// cat: each input is copied into its slice of out along dim by the copy kernel (strided views
// on both sides, dtype conversion as copy_strided); one kernel per non-empty input.
#include <string>

#include "common/error.h"
#include "common/launch.h"
#include "elementwise/copy.h"
#include "elementwise/streaming_kernel.h"
#include "mlusim/mlu/index.h"

namespace mlusim::mlu {

Status cat(Handle* h, const std::vector<const TensorDesc*>& inputs, const std::vector<const void*>& input_ptrs, int dim,
           const TensorDesc& out, void* out_ptr) {
  const char* op = "cat";
  MLU_RETURN_IF_ERROR(check_handle(h, op));
  MLU_RETURN_IF_ERROR(check_desc(&out, op, "out"));
  MLU_CHECK(!inputs.empty() && inputs.size() == input_ptrs.size(), Status::kBadParam,
            std::string(op) + ": needs one or more inputs and one pointer per input");
  MLU_CHECK(out.ndim() >= 1, Status::kBadParam, std::string(op) + ": zero-dim tensors cannot be concatenated");
  MLU_CHECK(dim >= -out.ndim() && dim < out.ndim(), Status::kBadParam,
            std::string(op) + ": dim " + std::to_string(dim) + " is out of range for out " + out.str());
  if (dim < 0) dim += out.ndim();
  MLU_RETURN_IF_ERROR(check_ptr(out_ptr, out, op, "out"));
  MLU_RETURN_IF_ERROR(ew::check_output_writable(op, "out", out));
  std::int64_t total = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = "inputs[" + std::to_string(i) + "]";
    MLU_RETURN_IF_ERROR(check_desc(inputs[i], op, name.c_str()));
    const TensorDesc& in = *inputs[i];
    MLU_RETURN_IF_ERROR(check_ptr(input_ptrs[i], in, op, name.c_str()));
    if (in.ndim() == 1 && in.dim(0) == 0 && out.ndim() > 1) continue;  // torch skips legacy empty inputs
    bool matches = in.ndim() == out.ndim();
    for (int d = 0; matches && d < out.ndim(); ++d) matches = d == dim || in.dim(d) == out.dim(d);
    MLU_CHECK(matches, Status::kBadParam,
              std::string(op) + ": " + name + " " + in.str() + " must match out " + out.str() + " except in dim " +
                  std::to_string(dim));
    total += in.dim(dim);
  }
  MLU_CHECK(total == out.dim(dim), Status::kBadParam,
            std::string(op) + ": the inputs add up to " + std::to_string(total) + " along dim " + std::to_string(dim) +
                " but out has " + std::to_string(out.dim(dim)));

  std::uint32_t kernels = 0;
  std::uint64_t bytes = 0;
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const TensorDesc& in = *inputs[i];
    if (in.numel() == 0) {
      if (in.ndim() == out.ndim()) offset += in.dim(dim);
      continue;
    }
    // out's slice [offset, offset + size) along dim.
    std::vector<std::int64_t> dims = out.dims();
    dims[static_cast<std::size_t>(dim)] = in.dim(dim);
    TensorDesc slice;
    MLU_RETURN_IF_ERROR(slice.set(out.dtype(), dims, out.strides()));
    auto* base = static_cast<std::uint8_t*>(out_ptr) + offset * out.stride(dim) * static_cast<std::int64_t>(out.element_size());
    MLU_RETURN_IF_ERROR(ew::launch_copy(*h, in, input_ptrs[i], slice, base));
    ++kernels;
    bytes += static_cast<std::uint64_t>(in.numel()) * (in.element_size() + out.element_size());
    offset += in.dim(dim);
  }
  if (kernels > 0) record(*h, op, 0, bytes, kernels);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
