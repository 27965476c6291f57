#include "conv/row_permute.h"

#include <algorithm>
#include <memory>

#include "common/copy_shape.h"
#include "common/error.h"
#include "common/launch.h"
#include "gemm/device_model.h"
#include "mlusim/sim/kernel_api.h"

namespace mlusim::mlu::conv {

using namespace mlusim::dev;

namespace {

std::int64_t i64(std::size_t v) { return static_cast<std::int64_t>(v); }

struct Job {
  RowPermute p;
  DType dtype = DType::kFloat32;
  bool on_tfu = false;
  std::size_t chunk = 1;  // rows per work unit
};

void kernel(const Job& j) {
  const RowPermute& p = j.p;
  const std::size_t es = sim::dtype_size(j.dtype), w = static_cast<std::size_t>(p.src.w()), ow = p.out_w;
  const std::size_t h = static_cast<std::size_t>(p.src.h()), planes = static_cast<std::size_t>(p.src.n() * p.src.c());
  const std::size_t rows = planes * h, units = (rows + j.chunk - 1) / j.chunk;
  if (task_id() >= units) return;
  const Addr in[2] = {alloc(Space::kNram, j.chunk * w * es), alloc(Space::kNram, j.chunk * w * es)};
  const Addr out[2] = {alloc(Space::kNram, j.chunk * ow * es), alloc(Space::kNram, j.chunk * ow * es)};
  const std::size_t zero_bytes = std::max<std::size_t>(1, p.gap_rows) * ow * es;
  const Addr zeros = alloc(Space::kNram, zero_bytes);
  vec_fill(DType::kInt8, zeros, 0.0, zero_bytes);
  // P in WRAM as one dense [w, piece] block per output piece (piece k = output columns
  // [k * piece, (k + 1) * piece)), so each piece's result rows land together in NRAM: a run of
  // rows of one piece is then one contiguous segment on both sides of the store (the DMA moves
  // every segment in whole bursts; pieces are as short as 7 elements in a ResNet's last stage).
  const std::size_t piece = ow / p.pieces;
  Addr matrix;
  if (j.on_tfu) {
    const Addr m = alloc(Space::kNram, w * ow * es);
    matrix = alloc(Space::kWram, w * ow * es);
    vec_fill(j.dtype, m, 0.0, w * ow);
    for (const auto& [from, to] : p.ones) {
      const Addr one = m.offset(i64(((to / piece * w + from) * piece + to % piece) * es));
      if (j.dtype == DType::kFloat16)
        store(sim::Nram<sim::half>(one.value), sim::half(1.0f));
      else
        store(sim::Nram<float>(one.value), 1.0f);
    }
    memcpy(matrix, m, w * ow * es, Dir::kNram2Wram);
  }
  const std::int64_t s_n = p.src.strides[0], s_c = p.src.strides[1], s_r = p.src.strides[2], s_q = p.src.strides[3];
  const bool rows_uniform = (s_c == i64(h) * s_r || p.src.c() == 1) && (s_n == p.src.c() * s_c || p.src.n() == 1);
  // Flattened row g = plane * h + r of the source, runs of rows that stay in one plane.
  auto for_each_run = [&](std::size_t g0, std::size_t n, auto&& fn) {
    for (std::size_t g = g0; g < g0 + n;) {
      const std::size_t plane = g / h, r = g % h, len = std::min(g0 + n, (plane + 1) * h) - g;
      fn(plane, r, len, g - g0);
      g += len;
    }
  };
  auto src_addr = [&](std::size_t plane, std::size_t r) {
    const std::size_t n = plane / static_cast<std::size_t>(p.src.c()), c = plane % static_cast<std::size_t>(p.src.c());
    return Addr{Space::kGdram,
                p.src_base + static_cast<std::uint64_t>((i64(n) * s_n + i64(c) * s_c + i64(r) * s_r) * i64(es))};
  };
  auto load_rows = [&](std::size_t u, Addr dst) {
    const std::size_t g0 = u * j.chunk, n = std::min(j.chunk, rows - g0);
    auto one = [&](Addr at, Addr src, std::size_t nr) {
      if (s_q == 1 || w == 1)
        memcpy_strided_async(at, src, coalesce(CopyShape{w * es, nr, i64(w * es), s_r * i64(es)}), Dir::kGdram2Nram);
      else
        memcpy_strided_async(at, src, CopyShape{es, w, i64(es), s_q * i64(es), nr, i64(w * es), s_r * i64(es)},
                             Dir::kGdram2Nram);
    };
    if (rows_uniform) return one(dst, src_addr(g0 / h, g0 % h), n);
    for_each_run(g0, n, [&](std::size_t plane, std::size_t r, std::size_t len, std::size_t at) {
      one(dst.offset(i64(at * w * es)), src_addr(plane, r), len);
    });
  };
  load_rows(task_id(), in[0]);
  sync_io();
  std::size_t turn = 0;
  for (std::size_t u = task_id(); u < units; u += task_dim(), ++turn) {
    const std::size_t g0 = u * j.chunk, n = std::min(j.chunk, rows - g0);
    const Addr src = in[turn % 2], res = out[turn % 2];
    if (u + task_dim() < units) load_rows(u + task_dim(), in[(turn + 1) % 2]);
    // The chunk's result: piece k of row i at res + (k * n + i) * piece elements.
    const std::int64_t piece_bytes = i64(n * piece * es);
    if (j.on_tfu) {
      for (std::size_t k = 0; k < p.pieces; ++k)
        matmul(j.dtype, j.dtype, res.offset(i64(k) * piece_bytes), src, matrix.offset(i64(k * w * piece * es)), n, w,
               piece, /*b_transposed=*/false, /*accumulate=*/false);
    } else {
      vec_fill(j.dtype, res, 0.0, n * ow);
      for (const auto& [from, to] : p.ones)  // column `from` of every row to column `to`
        memcpy_strided(res.offset(i64(to / piece) * piece_bytes + i64(to % piece * es)), src.offset(i64(from * es)),
                       CopyShape{es, n, i64(piece * es), i64(w * es)}, Dir::kNram2Nram);
    }
    sync_io();  // the next chunk's rows are in; the stores of two chunks ago have left out[turn % 2]
    for_each_run(g0, n, [&](std::size_t plane, std::size_t r, std::size_t len, std::size_t at) {
      const Addr dst{Space::kGdram, p.dst_base + static_cast<std::uint64_t>(
                                                     (i64(plane) * p.plane_stride + i64(r) * p.row_stride) * i64(es))};
      memcpy_strided_async(dst, res.offset(i64(at * piece * es)),
                           coalesce(CopyShape{piece * es, len, p.row_stride * i64(es), i64(piece * es), p.pieces,
                                              p.piece_stride * i64(es), piece_bytes}),
                           Dir::kNram2Gdram);
      const std::size_t gaps = r + len < h ? len : len - 1;  // no zero rows after a plane's last row
      if (p.gap_rows > 0 && gaps > 0)
        memcpy_strided_async(dst.offset(p.row_stride / i64(p.gap_rows + 1) * i64(es)), zeros,
                             CopyShape{p.gap_rows * ow * es, gaps, p.row_stride * i64(es), 0}, Dir::kNram2Gdram);
    });
  }
  sync_io();
}

}  // namespace

Status launch_row_permute(Handle& h, const std::string& name, DType dtype, const RowPermute& p,
                          std::uint32_t* kernels) {
  *kernels = 0;
  const std::size_t w = static_cast<std::size_t>(p.src.w()),
                    rows = static_cast<std::size_t>(p.src.n() * p.src.c() * p.src.h());
  if (rows * w == 0) return Status::kSuccess;
  auto job = std::make_shared<Job>();
  job->p = p;
  job->dtype = dtype;
  const gemm::DeviceModel d = gemm::device_model(h, dtype);
  job->on_tfu = d.on_tfu();
  const std::size_t es = sim::dtype_size(dtype);
  const std::size_t fixed =
      (job->on_tfu ? w * p.out_w * es : 0) + std::max<std::size_t>(1, p.gap_rows) * p.out_w * es + 1024;
  const std::size_t per_row = 2 * (w + p.out_w) * es;
  MLU_CHECK(fixed + per_row <= d.nram_bytes && (!job->on_tfu || w * p.out_w * es <= d.wram_bytes),
            Status::kNotSupported,
            name + ": rows of " + std::to_string(w) + " elements are too wide for this device's NRAM/WRAM");
  // Enough rows per unit to keep every core busy, at most what NRAM holds, in whole fold rows.
  const std::size_t cap = (d.nram_bytes - fixed) / per_row;
  const std::size_t fair = (rows + h.total_cores() - 1) / h.total_cores();
  std::size_t chunk = std::max<std::size_t>(1, std::min({cap, fair, std::size_t{512}}));
  if (job->on_tfu && chunk > d.tfu_rows) chunk = chunk / d.tfu_rows * d.tfu_rows;
  job->chunk = chunk;
  const std::size_t units = (rows + chunk - 1) / chunk;
  MLU_RETURN_IF_ERROR(launch(
      h, name, [job] { kernel(*job); }, block_dim(h, units), cnrtFuncTypeBlock));
  *kernels = 1;
  return Status::kSuccess;
}

}  // namespace mlusim::mlu::conv
