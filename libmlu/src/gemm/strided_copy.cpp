#include "gemm/strided_copy.h"

#include <algorithm>
#include <memory>

#include "common/error.h"
#include "common/int_math.h"
#include "common/launch.h"
#include "gemm/device_model.h"
#include "mlusim/sim/kernel_api.h"

namespace mlusim::mlu::gemm {

using namespace mlusim::dev;
using sim::DType;

namespace {

struct CopyJob {
  DType dtype = DType::kFloat32;
  std::size_t batches = 0, rows = 0, cols = 0;
  MatrixView src, dst;
  std::size_t tile_rows = 0, tile_cols = 0;  // work unit: tile_rows x tile_cols of one matrix
};

Addr at(const CopyJob& j, const MatrixView& v, std::size_t b, std::size_t r, std::size_t c) {
  const std::int64_t off = v.batch.offset(b) + i64(r) * v.row_stride + i64(c) * v.col_stride;
  return Addr{Space::kGdram, v.base + static_cast<std::uint64_t>(off * i64(sim::dtype_size(j.dtype)))};
}

struct Unit {
  std::size_t b, r0, nr, c0, nc;
};
std::size_t row_tiles(const CopyJob& j) { return (j.rows + j.tile_rows - 1) / j.tile_rows; }
std::size_t col_tiles(const CopyJob& j) { return (j.cols + j.tile_cols - 1) / j.tile_cols; }
std::size_t unit_count(const CopyJob& j) { return j.batches * row_tiles(j) * col_tiles(j); }
Unit unit_of(const CopyJob& j, std::size_t u) {
  const std::size_t rt = row_tiles(j), ct = col_tiles(j);
  Unit x;
  x.b = u / (rt * ct);
  x.r0 = u / ct % rt * j.tile_rows;
  x.c0 = u % ct * j.tile_cols;
  x.nr = std::min(j.tile_rows, j.rows - x.r0);
  x.nc = std::min(j.tile_cols, j.cols - x.c0);
  return x;
}

// Row segments, or single elements, straight from GDRAM to GDRAM.
void copy_kernel(const CopyJob& j) {
  const std::int64_t es = i64(sim::dtype_size(j.dtype));
  const bool rows_contiguous = (j.src.col_stride == 1 && j.dst.col_stride == 1) || j.cols == 1;
  for (std::size_t u = task_id(); u < unit_count(j); u += task_dim()) {
    const Unit x = unit_of(j, u);
    const CopyShape shape = rows_contiguous ? CopyShape{x.nc * es, x.nr, j.dst.row_stride * es, j.src.row_stride * es}
                                            : CopyShape{static_cast<std::size_t>(es), x.nc, j.dst.col_stride * es,
                                                        j.src.col_stride * es,        x.nr, j.dst.row_stride * es,
                                                        j.src.row_stride * es};
    memcpy_strided_async(at(j, j.dst, x.b, x.r0, x.c0), at(j, j.src, x.b, x.r0, x.c0), shape, Dir::kGdram2Gdram);
  }
  sync_io();
}

// An n x n identity in NRAM (zeros, then n scalar stores of 1 on the diagonal).
void build_identity(DType t, Addr where, std::size_t n) {
  vec_fill(t, where, 0.0, n * n);
  for (std::size_t i = 0; i < n; ++i) {
    const Addr d = where.offset(i64((i * n + i) * sim::dtype_size(t)));
    if (t == DType::kFloat16)
      store(sim::Nram<sim::half>(d.value), sim::half(1.0f));
    else if (t == DType::kBFloat16)
      store(sim::Nram<sim::bfloat16>(d.value), sim::bfloat16(1.0f));
    else
      store(sim::Nram<float>(d.value), 1.0f);
  }
}

// src contiguous along rows (row_stride 1), dst along columns (col_stride 1).
void transpose_kernel(const CopyJob& j) {
  const std::size_t es = sim::dtype_size(j.dtype);
  const std::size_t tr = j.tile_rows, tc = j.tile_cols;
  const std::size_t edge = j.rows % tr;
  const Addr ident = alloc(Space::kNram, tr * tr * es);
  const Addr ident_edge = edge ? alloc(Space::kNram, edge * edge * es) : Addr{};
  const Addr block[2] = {alloc(Space::kWram, tr * tc * es), alloc(Space::kWram, tr * tc * es)};
  const Addr out[2] = {alloc(Space::kNram, tr * tc * es), alloc(Space::kNram, tr * tc * es)};
  const std::size_t units = unit_count(j);
  if (task_id() >= units) return;
  build_identity(j.dtype, ident, tr);
  if (edge) build_identity(j.dtype, ident_edge, edge);
  // Source block [nc, nr]: column c of the tile is a contiguous run of nr elements.
  auto fetch = [&](std::size_t u, Addr dst) {
    const Unit x = unit_of(j, u);
    const CopyShape shape{x.nr * es, x.nc, i64(x.nr * es), j.src.col_stride * i64(es)};
    memcpy_strided_async(dst, at(j, j.src, x.b, x.r0, x.c0), shape, Dir::kGdram2Wram);
  };
  fetch(task_id(), block[0]);
  sync_io();
  std::size_t turn = 0;
  for (std::size_t u = task_id(); u < units; u += task_dim(), ++turn) {
    const Unit x = unit_of(j, u);
    if (u + task_dim() < units) fetch(u + task_dim(), block[(turn + 1) % 2]);
    // out[m, n] = sum_k I[m, k] * block[n, k] = block[n, m]: the [nr, nc] transpose.
    matmul(j.dtype, j.dtype, out[turn % 2], x.nr == tr ? ident : ident_edge, block[turn % 2], x.nr, x.nr, x.nc,
           /*b_transposed=*/true, /*accumulate=*/false);
    sync_io();
    const CopyShape shape{x.nc * es, x.nr, j.dst.row_stride * i64(es), i64(x.nc * es)};
    memcpy_strided_async(at(j, j.dst, x.b, x.r0, x.c0), out[turn % 2], shape, Dir::kNram2Gdram);
  }
  sync_io();
}

MatrixView transposed(const MatrixView& v) { return {v.base, v.batch, v.col_stride, v.row_stride}; }

}  // namespace

MatrixView dense_view(std::uint64_t base, const std::vector<std::int64_t>& dims, std::size_t rows, std::size_t cols) {
  MatrixView v;
  v.base = base;
  v.batch.dims = dims;
  v.batch.strides.assign(dims.size(), 0);
  std::int64_t stride = static_cast<std::int64_t>(rows * cols);
  for (std::size_t i = dims.size(); i-- > 0;) {
    v.batch.strides[i] = stride;
    stride *= dims[i];
  }
  v.row_stride = static_cast<std::int64_t>(cols);
  v.col_stride = 1;
  return v;
}

Status launch_strided_copy(Handle& h, const std::string& name, DType dtype, std::size_t batches, std::size_t rows,
                           std::size_t cols, const MatrixView& src, const MatrixView& dst, std::uint32_t* kernels) {
  *kernels = 0;
  if (batches * rows * cols == 0) return Status::kSuccess;
  auto job = std::make_shared<CopyJob>();
  job->dtype = dtype;
  job->batches = batches;
  job->rows = rows;
  job->cols = cols;
  job->src = src;
  job->dst = dst;
  // Put each side's contiguous dimension where the kernels expect it: a copy wants contiguous
  // rows, a transpose wants the source contiguous along rows and the destination along columns.
  const auto unit_rows = [&](const MatrixView& v) { return v.row_stride == 1 || rows == 1; };
  const auto unit_cols = [&](const MatrixView& v) { return v.col_stride == 1 || cols == 1; };
  if (!unit_cols(src) && unit_rows(src) && unit_rows(dst) && !unit_cols(dst)) {
    job->src = transposed(src), job->dst = transposed(dst), std::swap(job->rows, job->cols);
  } else if (unit_cols(src) && !unit_rows(src) && unit_rows(dst) && !unit_cols(dst)) {
    job->src = transposed(src), job->dst = transposed(dst), std::swap(job->rows, job->cols);
  }
  const DeviceModel d = device_model(h, dtype);
  const std::size_t es = sim::dtype_size(dtype);
  const bool transpose = job->src.row_stride == 1 && job->src.col_stride != 1 && job->dst.col_stride == 1 &&
                         job->cols > 1 && job->rows > 1 && d.on_tfu();
  if (transpose) {
    // One fold row (R source rows) per intrinsic: the identity is R x R, the cheapest K.
    job->tile_rows = std::min<std::size_t>(d.tfu_rows, job->rows);
    const std::size_t ident = 2 * job->tile_rows * job->tile_rows * es + 1024;
    const std::size_t cap =
        std::min(d.wram_bytes / (2 * job->tile_rows * es), (d.nram_bytes - ident) / (2 * job->tile_rows * es));
    job->tile_cols = std::max<std::size_t>(1, std::min<std::size_t>(job->cols, cap / d.tfu_cols * d.tfu_cols));
  } else {
    // About 64 KiB per DMA, whole rows where possible.
    const std::size_t row_bytes = job->cols * es;
    job->tile_cols = job->cols;
    job->tile_rows = std::max<std::size_t>(1, std::min(job->rows, (64 * 1024) / std::max<std::size_t>(1, row_bytes)));
  }
  const cnrtDim3_t dim = block_dim(h, unit_count(*job));
  if (transpose)
    MLU_RETURN_IF_ERROR(launch(
        h, name, [job] { transpose_kernel(*job); }, dim, cnrtFuncTypeBlock));
  else
    MLU_RETURN_IF_ERROR(launch(
        h, name, [job] { copy_kernel(*job); }, dim, cnrtFuncTypeBlock));
  *kernels = 1;
  return Status::kSuccess;
}

}  // namespace mlusim::mlu::gemm
