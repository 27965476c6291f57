#include "elementwise/streaming_kernel.h"

#include <algorithm>
#include <memory>
#include <string>

#include "common/error.h"
#include "common/launch.h"
#include "elementwise/tile_io.h"

namespace mlusim::mlu::ew {
namespace {

// Below this many elements a tile's DMA is dominated by its fixed latency (~220 ns on
// mlu370-x4, i.e. ~11 KB at one core's IO-DMA rate), so small tensors use fewer cores rather
// than smaller tiles.
constexpr std::int64_t kMinTileElems = 2048;
// Every on-chip buffer starts 128-byte aligned: budget that much slack per buffer.
constexpr std::size_t kAlign = 128;

struct StreamLaunch {
  IterSpace space;
  TilePlan plan;
  Program program;
  std::vector<bool> staging;  // per operand
};

void stream_body(const StreamLaunch& L) {
  using dev::Addr;
  const Program& p = L.program;
  const auto n_max = static_cast<std::size_t>(L.plan.max_elems());
  std::vector<Addr> bufs[2];
  for (const Program::Buffer& b : p.buffers()) {
    const Addr first = dev::alloc(sim::Space::kNram, n_max * b.elem_bytes);
    bufs[0].push_back(first);
    bufs[1].push_back(b.double_buffered ? dev::alloc(sim::Space::kNram, n_max * b.elem_bytes) : first);
  }
  std::vector<Addr> staging(L.space.operands.size(), tile::kNoBuffer);
  for (std::size_t k = 1; k < staging.size(); ++k)
    if (L.staging[k]) staging[k] = dev::alloc(sim::Space::kNram, n_max * sim::dtype_size(L.space.operands[k].dtype));
  fill_constants(p, bufs[0], n_max);

  // (operand, buffer) of every input the program reads.
  std::vector<std::pair<std::size_t, int>> inputs;
  for (std::size_t v = 0; v < p.values().size(); ++v)
    if (p.values()[v].kind == Program::ValueKind::kInput)
      inputs.emplace_back(static_cast<std::size_t>(p.values()[v].operand), p.buffer_of(static_cast<ValueId>(v)));
  const int result_buffer = p.buffer_of(p.result());

  const std::int64_t tiles = L.plan.tiles, tasks = dev::task_dim(), task = dev::task_id();
  const std::int64_t first = tiles * task / tasks, last = tiles * (task + 1) / tasks;
  auto issue = [&](std::int64_t t, int set) {
    const Tile tile = tile_at(L.space, L.plan, t);
    for (const auto& [op, buf] : inputs)
      tile::issue_load(tile::box_view(L.space, L.space.operands[op], tile), bufs[set][buf], staging[op]);
  };
  if (first < last) issue(first, 0);
  for (std::int64_t t = first; t < last; ++t) {
    const int set = static_cast<int>((t - first) % 2);
    dev::sync_io();  // tile t's inputs landed; tile t-1's store left its buffer
    const Tile tile = tile_at(L.space, L.plan, t);
    for (const auto& [op, buf] : inputs)
      tile::finish_load(tile::box_view(L.space, L.space.operands[op], tile), bufs[set][buf], staging[op]);
    if (t + 1 < last) issue(t + 1, 1 - set);
    run_steps(p, bufs[set], static_cast<std::size_t>(tile.elems()));
    tile::store(tile::box_view(L.space, L.space.operands[0], tile), bufs[set][result_buffer], true);
  }
  dev::sync_io();
}

}  // namespace

Status check_output_writable(const char* op, const char* name, const TensorDesc& y) {
  for (int d = 0; d < y.ndim(); ++d)
    MLU_CHECK(y.dim(d) <= 1 || y.stride(d) != 0, Status::kBadParam,
              std::string(op) + ": output " + name + " " + y.str() + " has stride 0 on dim " + std::to_string(d) +
                  " (it would write an element twice)");
  return Status::kSuccess;
}

Status launch_stream(Handle& h, const char* name, IterSpace space, Program program) {
  auto L = std::make_shared<StreamLaunch>();
  L->space = std::move(space);
  L->program = std::move(program);
  L->staging.assign(L->space.operands.size(), false);
  std::size_t bytes_per_elem = L->program.bytes_per_element();
  std::size_t buffers = 0;
  for (const Program::Buffer& b : L->program.buffers()) buffers += b.double_buffered ? 2 : 1;
  for (std::size_t k = 1; k < L->space.operands.size(); ++k) {
    L->staging[k] = tile::may_need_staging(box_strides(L->space, L->space.operands[k]));
    if (!L->staging[k]) continue;
    bytes_per_elem += sim::dtype_size(L->space.operands[k].dtype);
    ++buffers;
  }
  const std::size_t budget = h.nram_bytes() > buffers * kAlign ? h.nram_bytes() - buffers * kAlign : 0;
  const auto nram_elems = static_cast<std::int64_t>(budget / std::max<std::size_t>(bytes_per_elem, 1)) / 64 * 64;
  MLU_CHECK(nram_elems > 0, Status::kInternalError,
            std::string(name) + ": NRAM (" + std::to_string(h.nram_bytes()) + " bytes) cannot hold one tile");
  const std::int64_t numel = L->space.numel();
  const std::int64_t balanced = std::max(kMinTileElems, (numel + 2 * h.total_cores() - 1) / (2 * h.total_cores()));
  L->plan = plan_tiles(L->space, std::min(nram_elems, balanced));
  if (L->plan.tiles == 0) return Status::kSuccess;
  const cnrtDim3_t dim = block_dim(h, static_cast<std::uint64_t>(L->plan.tiles));
  return launch(h, name, [L] { stream_body(*L); }, dim, CNRT_FUNC_TYPE_BLOCK);
}

Status run_elementwise(Handle& h, const char* op, const TensorDesc& y, void* y_ptr,
                       const std::vector<const TensorDesc*>& inputs, const std::vector<const void*>& input_ptrs,
                       Program program) {
  if (y.numel() == 0) return Status::kSuccess;
  std::vector<const TensorDesc*> descs{&y};
  std::vector<const void*> ptrs{y_ptr};
  descs.insert(descs.end(), inputs.begin(), inputs.end());
  ptrs.insert(ptrs.end(), input_ptrs.begin(), input_ptrs.end());
  MLU_RETURN_IF_ERROR(launch_stream(h, op, make_iter_space(y.dims(), descs, ptrs), std::move(program)));
  std::uint64_t bytes = static_cast<std::uint64_t>(y.numel()) * y.element_size();
  for (const TensorDesc* d : inputs) bytes += static_cast<std::uint64_t>(d->numel()) * d->element_size();
  record(h, op, 0, bytes, 1);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu::ew
