#include "loss/nll_common.h"

#include <algorithm>
#include <limits>
#include <string>

#include "common/error.h"
#include "softmax/reduction_tiling.h"

namespace mlusim::mlu::nn {

using sim::Addr;
using sim::DType;
using sim::Space;

std::int64_t NllShape::samples() const {
  std::int64_t n = 1;
  for (std::int64_t d : sample_dims) n *= d;
  return n;
}

Status check_nll_common(const char* op, const TensorDesc& input, const TensorDesc& target, const TensorDesc* weight,
                        const void* weight_ptr, LossReduction reduction, NllShape* s) {
  MLU_CHECK(reduction == LossReduction::kNone || reduction == LossReduction::kMean || reduction == LossReduction::kSum,
            Status::kBadParam, std::string(op) + ": unknown reduction " + std::to_string(static_cast<int>(reduction)));
  MLU_RETURN_IF_ERROR(check_desc(&input, op, "input"));
  MLU_RETURN_IF_ERROR(check_desc(&target, op, "target"));
  MLU_RETURN_IF_ERROR(check_dtype_in(input, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}, op, "input"));
  MLU_RETURN_IF_ERROR(check_dtype_in(target, {DType::kInt32, DType::kInt64}, op, "target"));
  MLU_CHECK(input.ndim() >= 1, Status::kBadParam, std::string(op) + ": input " + input.str() + " needs at least 1 dim");
  s->class_dim = input.ndim() == 1 ? 0 : 1;
  s->classes = input.dim(s->class_dim);
  s->sample_dims.clear();
  for (int i = 0; i < input.ndim(); ++i)
    if (i != s->class_dim) s->sample_dims.push_back(input.dim(i));
  MLU_CHECK(target.dims() == s->sample_dims, Status::kBadParam,
            std::string(op) + ": target " + target.str() + " does not match input " + input.str() +
                " (expected the input's dims without the class dim " + std::to_string(s->class_dim) + ")");
  if (weight != nullptr) {
    MLU_RETURN_IF_ERROR(check_desc(weight, op, "weight"));
    MLU_RETURN_IF_ERROR(check_dtype_in(*weight, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}, op, "weight"));
    MLU_CHECK(weight->ndim() == 1 && weight->dim(0) == s->classes, Status::kBadParam,
              std::string(op) + ": weight " + weight->str() + " must be [" + std::to_string(s->classes) + "]");
    MLU_RETURN_IF_ERROR(check_ptr(weight_ptr, *weight, op, "weight"));
  }
  return Status::kSuccess;
}

NllViews make_nll_views(const NllShape& s, const TensorDesc& input, const void* input_ptr, const TensorDesc& target,
                        const void* target_ptr, const TensorDesc* per_sample, const void* per_sample_ptr,
                        std::int64_t max_tile) {
  // Views over [sample dims..., class]: the class dim moved last (stride 0 for per-sample tensors).
  std::vector<std::int64_t> dims = s.sample_dims;
  dims.push_back(s.classes);
  std::vector<int> in_map, sample_map;
  for (int i = 0; i < input.ndim(); ++i)
    if (i != s.class_dim) in_map.push_back(i);
  for (std::size_t i = 0; i < s.sample_dims.size(); ++i) sample_map.push_back(static_cast<int>(i));
  in_map.push_back(s.class_dim);
  sample_map.push_back(-1);
  NllViews v;
  v.input_full = make_broadcast_view(input, input_ptr, dims, in_map);
  v.target = make_broadcast_view(target, target_ptr, dims, sample_map);
  v.per_sample = per_sample ? make_broadcast_view(*per_sample, per_sample_ptr, dims, sample_map) : v.target;
  const int ns = static_cast<int>(dims.size()) - 1;
  const std::vector<int> starts = coalesce_groups({&v.input_full, &v.target, &v.per_sample}, {0, ns, ns + 1});
  // Sample views: the coalesced views without their class dim.
  const int nd = starts[1];
  v.class_stride = v.input_full.strides[nd];
  v.classes = v.input_full.dims[nd];
  v.input = v.input_full;
  for (TensorView* t : {&v.input, &v.target, &v.per_sample}) t->ndim = nd;
  v.tiling = plan_elementwise({&v.input, &v.target, &v.per_sample}, max_tile);
  // The full view follows the padding of the sample views (unit dims in front).
  TensorView full = v.input;
  full.ndim = v.input.ndim + 1;
  full.dims[full.ndim - 1] = v.classes;
  full.strides[full.ndim - 1] = v.class_stride;
  v.input_full = full;
  return v;
}

std::size_t resident_weight_bytes(std::size_t nram_bytes) { return nram_bytes / 4; }

NllBuffers alloc_nll_buffers(const NllTargetArgs& a, std::size_t max_tile) {
  NllBuffers b;
  b.targets = dev::alloc(Space::kNram, max_tile * 8);
  b.weights = dev::alloc(Space::kNram, max_tile * 4);
  b.max_tile = max_tile;
  const auto classes = static_cast<std::size_t>(a.views.classes);
  b.resident = a.has_weight && classes * 4 <= resident_weight_bytes(dev::capacity(Space::kNram));
  if (b.resident) {
    b.class_weights = dev::alloc(Space::kNram, std::max<std::size_t>(classes, 1) * 4);
    Box all;
    all.extent[0] = a.views.classes;
    load_f32_async(a.weight, all, b.class_weights, classes);
    dev::sync_io();
    widen_f32(a.weight.dtype, b.class_weights, classes);
  }
  return b;
}

std::vector<CountedSample> read_targets(const NllTargetArgs& a, const NllBuffers& buf, const Box& b) {
  const NllViews& v = a.views;
  const ElementwiseTiling& t = v.tiling;
  const auto n = static_cast<std::size_t>(b.count(t.ndim));
  load_box_async(v.target, b, buf.targets);
  dev::sync_io();
  // int64 targets narrow in place (a value beyond int32 faults: no class index is that large).
  if (v.target.dtype == DType::kInt64) dev::vec_cast(DType::kInt32, buf.targets, DType::kInt64, buf.targets, n);
  const bool ignore_fits = a.ignore_index >= std::numeric_limits<std::int32_t>::min() &&
                           a.ignore_index <= std::numeric_limits<std::int32_t>::max();
  const Addr weight_staging = buf.weights.offset(static_cast<std::int64_t>(n * (4 - a.weight.elem_size())));
  if (a.has_weight) {
    if (buf.resident)
      dev::vec_fill(DType::kFloat32, buf.weights, 0.0, n);
    else
      dev::vec_fill(a.weight.dtype, weight_staging, 0.0, n);
  } else if (ignore_fits) {  // weights = (target != ignore_index) as 1/0
    dev::vec_binary_scalar(sim::VecBinaryOp::kNe, DType::kInt32, buf.weights, buf.targets,
                           static_cast<double>(a.ignore_index), n);
    dev::vec_cast(DType::kFloat32, buf.weights, DType::kInt32, buf.weights, n);
  } else {
    dev::vec_fill(DType::kFloat32, buf.weights, 1.0, n);
  }
  std::vector<CountedSample> counted;
  counted.reserve(n);
  const auto es = static_cast<std::int64_t>(v.input.elem_size());
  const auto wes = static_cast<std::int64_t>(a.weight.elem_size());
  const std::int64_t rows = b.extent[t.ndim - 2], cols = b.extent[t.ndim - 1];
  std::int64_t base = 0;  // element offset of the box's first sample
  for (int i = 0; i < t.ndim; ++i) base += b.start[i] * v.input.strides[i];
  std::size_t in_flight = 0;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      const auto j = static_cast<std::uint32_t>(r * cols + c);
      const std::int32_t target = dev::load(sim::Nram<std::int32_t>(buf.targets.value) + j);
      if (ignore_fits && target == a.ignore_index) continue;
      if (target < 0 || target >= v.classes)
        dev::trap("nll_loss: target " + std::to_string(target) + " is out of bounds [0, " + std::to_string(v.classes) +
                  ")");
      const std::int64_t sample = base + r * v.input.strides[t.ndim - 2] + c * v.input.strides[t.ndim - 1];
      counted.push_back({j, (sample + target * v.class_stride) * es});
      if (!a.has_weight) continue;
      if (buf.resident) {
        dev::store(sim::Nram<float>(buf.weights.value) + j,
                   dev::load(sim::Nram<float>(buf.class_weights.value) + target));
        continue;
      }
      dev::memcpy_async(
          weight_staging.offset(static_cast<std::int64_t>(j) * wes),
          Addr{Space::kGdram, a.weight.base + static_cast<std::uint64_t>(target * a.weight.strides[0] * wes)},
          static_cast<std::size_t>(wes), dev::Dir::kGdram2Nram);
      if (++in_flight % kGatherBatch == 0) dev::sync_io();
    }
  dev::sync_io();
  if (a.has_weight && !buf.resident) widen_f32(a.weight.dtype, buf.weights, n);
  return counted;
}

}  // namespace mlusim::mlu::nn
