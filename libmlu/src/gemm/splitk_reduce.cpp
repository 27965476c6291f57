#include "gemm/splitk_reduce.h"

#include <algorithm>
#include <vector>

#include "common/activation.h"
#include "common/int_math.h"
#include "common/launch.h"
#include "gemm/epilogue.h"

namespace mlusim::mlu::gemm {

using namespace mlusim::dev;
using sim::DType;

namespace {

struct ReduceJob {
  OutputSpec out;
  std::uint64_t partial_base = 0;
  std::size_t parts = 0, batches = 0, rows = 0, cols = 0;
  std::size_t block_rows = 0, block_cols = 0;  // elements per block: block_rows x block_cols
};

// Partial buffers besides the accumulator: one per further part, so every load of a block is in
// flight at once (part 0 lands in the accumulator).
std::size_t part_buffers(std::size_t parts) { return parts > 1 ? parts - 1 : 0; }

// NRAM per block element: acc + the partial buffers + (fp16) out stage, old C (raw + fp32) + bias
// tile (+ the activation's scratch where it needs one; + the channel affine's eight [rows] buffers,
// bounded by 32 bytes per element since a block has at most as many rows as elements, its
// [rows x cols] tile and its [cols] ones).
constexpr std::size_t kBytesPerElement = 4 + 2 + 4 + 4 + 4;
std::size_t bytes_per_element(const OutputSpec& out, std::size_t parts) {
  return kBytesPerElement + 4 * part_buffers(parts) + (activation_needs_temp(out.act) ? 4 : 0) +
         (out.affine.enabled ? 40 : 0);
}

void reduce_kernel(const ReduceJob& j) {
  const std::size_t es = sim::dtype_size(j.out.dtype);
  const std::size_t e = j.block_rows * j.block_cols;
  const Addr acc = alloc(Space::kNram, e * 4);
  std::vector<Addr> part(j.parts, acc);  // part 0 lands in acc
  for (std::size_t p = 1; p < j.parts; ++p) part[p] = alloc(Space::kNram, e * 4);
  EpilogueBuffers epi;
  if (j.out.dtype != DType::kFloat32) epi.out_stage = alloc(Space::kNram, e * es);
  if (j.out.beta != 0.0f) {
    epi.c_old = alloc(Space::kNram, e * es);
    if (j.out.dtype != DType::kFloat32) epi.c_old32 = alloc(Space::kNram, e * 4);
  }
  if (j.out.bias) {
    epi.bias_raw = alloc(Space::kNram, std::max(j.block_rows, j.block_cols) * es);
    epi.bias32 = alloc(Space::kNram, e * 4);
  }
  if (j.out.affine.enabled) epi.affine = alloc_affine_buffers(j.block_rows, j.block_cols);
  if (activation_needs_temp(j.out.act)) epi.act_tmp = alloc(Space::kNram, e * 4);
  const std::size_t row_blocks = (j.rows + j.block_rows - 1) / j.block_rows;
  const std::size_t col_blocks = (j.cols + j.block_cols - 1) / j.block_cols;
  const std::size_t units = j.batches * row_blocks * col_blocks;
  for (std::size_t u = task_id(); u < units; u += task_dim()) {
    const std::size_t b = u / (row_blocks * col_blocks);
    const std::size_t r0 = u / col_blocks % row_blocks * j.block_rows, c0 = u % col_blocks * j.block_cols;
    const std::size_t nr = std::min(j.block_rows, j.rows - r0), nc = std::min(j.block_cols, j.cols - c0);
    auto load_part = [&](std::size_t p, Addr dst) {
      const std::uint64_t row = (p * j.batches + b) * j.rows + r0;
      const Addr src{Space::kGdram, j.partial_base + (row * j.cols + c0) * 4};
      const CopyShape shape = nc == j.cols ? CopyShape{nr * nc * 4}
                                           : CopyShape{nc * 4, nr, static_cast<std::int64_t>(nc * 4),
                                                       static_cast<std::int64_t>(j.cols * 4)};
      memcpy_strided_async(dst, src, shape, Dir::kGdram2Nram);
    };
    // Every part's load and the epilogue's operands at once, then one wait: a block is small
    // (a core's share of the output), so its loads are latency-bound and must overlap.
    if (j.parts == 0) vec_fill(DType::kFloat32, acc, 0.0, nr * nc);  // empty depth: the product is 0
    for (std::size_t p = 0; p < j.parts; ++p) load_part(p, part[p]);
    if (j.out.bias && !j.out.bias_per_row) prepare_col_bias(j.out, b, c0, nc, nr, epi);
    if (j.out.bias && j.out.bias_per_row) load_row_bias(j.out, b, r0, nr, epi);
    if (j.out.beta != 0.0f) load_c_old(j.out, b, r0, nr, c0, nc, epi);
    if (j.out.affine.enabled) load_row_affine(j.out, b, r0, nr, epi);
    sync_io();
    for (std::size_t p = 1; p < j.parts; ++p)
      vec_binary(sim::VecBinaryOp::kAdd, DType::kFloat32, acc, acc, part[p], nr * nc);
    finish_block(j.out, acc, b, r0, nr, c0, nc, epi);
    sync_io();
  }
}


}  // namespace

Status launch_splitk_reduce(Handle& h, const std::string& name, const OutputSpec& out, std::uint64_t partial_base,
                            std::size_t parts, std::size_t batches, std::size_t rows, std::size_t cols) {
  auto job = std::make_shared<ReduceJob>();
  job->out = out;
  job->partial_base = partial_base;
  job->parts = parts;
  job->batches = batches;
  job->rows = rows;
  job->cols = cols;
  // Blocks of about one core's share of the output, so every core of the device works (the
  // reduction is DRAM-bound only when at least ~6 cores stream: a core's IO-DMA is a sixth of
  // DRAM's bandwidth; blocks as large as NRAM allows left two cores reducing ResNet-18's layer-3
  // partials, 11.5 us instead of ~3.5), and no larger than NRAM holds (less a little for the
  // alignment padding of the buffers). Rows are whole where a core's share spans them.
  const std::size_t slack = (out.affine.enabled ? 2560 : 1024) + 128 * part_buffers(parts);
  const std::size_t fit = std::max<std::size_t>(32, (h.nram_bytes() - slack) / bytes_per_element(out, parts) / 32 * 32);
  const std::size_t share = std::min(fit, std::max<std::size_t>(32, ceil_div(batches * rows * cols, h.total_cores())));
  if (cols <= share) {
    job->block_cols = cols;
    job->block_rows = std::min(rows, share / cols);
    job->block_rows = ceil_div(rows, ceil_div(rows, job->block_rows));  // equal row blocks
  } else {
    job->block_rows = 1;
    const std::size_t pieces = ceil_div(cols, share);
    job->block_cols = std::min(cols, (ceil_div(cols, pieces) + 31) / 32 * 32);  // equal, whole 32s
    if (job->block_cols > fit) job->block_cols = fit;
  }
  const std::size_t units =
      batches * ((rows + job->block_rows - 1) / job->block_rows) * ((cols + job->block_cols - 1) / job->block_cols);
  return launch(
      h, name, [job] { reduce_kernel(*job); }, block_dim(h, units), cnrtFuncTypeBlock);
}

}  // namespace mlusim::mlu::gemm
