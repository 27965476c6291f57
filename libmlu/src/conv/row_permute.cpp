#include "conv/row_permute.h"

#include <algorithm>
#include <memory>

#include "common/copy_shape.h"
#include "common/error.h"
#include "common/int_math.h"
#include "common/launch.h"
#include "gemm/device_model.h"
#include "mlusim/sim/kernel_api.h"

namespace mlusim::mlu::conv {

using namespace mlusim::dev;

namespace {

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
  // Blocks of a row: bw input elements each, nb of them (the row padded to pitch elements),
  // obw output elements each; per row and piece, row_piece results in NRAM, store_piece stored.
  const std::size_t bw = p.block_w ? p.block_w : w, nb = (w + bw - 1) / bw, pitch = nb * bw;
  const std::size_t obw = p.block_w ? p.block_out : ow, pb = obw / p.pieces, row_piece = nb * pb;
  const std::size_t store_piece = ow / p.pieces;
  const Addr in[2] = {alloc(Space::kNram, j.chunk * pitch * es), alloc(Space::kNram, j.chunk * pitch * es)};
  const Addr out[2] = {alloc(Space::kNram, j.chunk * nb * obw * es), alloc(Space::kNram, j.chunk * nb * obw * es)};
  if (pitch > w)  // the padding of each row stays zero: the loads never write it
    for (const Addr& a : in) vec_fill(j.dtype, a, 0.0, j.chunk * pitch);
  const std::size_t zero_bytes = std::max<std::size_t>(1, p.gap_rows) * ow * es;
  const Addr zeros = alloc(Space::kNram, zero_bytes);
  vec_fill(DType::kInt8, zeros, 0.0, zero_bytes);
  // P in WRAM as one dense [bw, pb] block per output piece (piece k = block output columns
  // [k * pb, (k + 1) * pb)), so each piece's result rows land together in NRAM: a run of
  // rows of one piece is then one contiguous segment on both sides of the store (the DMA moves
  // every segment in whole bursts; pieces are as short as 7 elements in a ResNet's last stage).
  const std::size_t piece = pb;
  Addr matrix;
  if (j.on_tfu) {
    const Addr m = alloc(Space::kNram, bw * obw * es);
    matrix = alloc(Space::kWram, bw * obw * es);
    vec_fill(j.dtype, m, 0.0, bw * obw);
    for (const auto& [from, to] : p.ones) {
      const Addr one = m.offset(i64(((to / piece * bw + from) * piece + to % piece) * es));
      if (j.dtype == DType::kFloat16)
        store(sim::Nram<sim::half>(one.value), sim::half(1.0f));
      else if (j.dtype == DType::kBFloat16)
        store(sim::Nram<sim::bfloat16>(one.value), sim::bfloat16(1.0f));
      else
        store(sim::Nram<float>(one.value), 1.0f);
    }
    memcpy(matrix, m, bw * obw * es, Dir::kNram2Wram);
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
        memcpy_strided_async(at, src, coalesce(CopyShape{w * es, nr, i64(pitch * es), s_r * i64(es)}),
                             Dir::kGdram2Nram);
      else
        memcpy_strided_async(at, src, CopyShape{es, w, i64(es), s_q * i64(es), nr, i64(pitch * es), s_r * i64(es)},
                             Dir::kGdram2Nram);
    };
    if (rows_uniform) return one(dst, src_addr(g0 / h, g0 % h), n);
    for_each_run(g0, n, [&](std::size_t plane, std::size_t r, std::size_t len, std::size_t at) {
      one(dst.offset(i64(at * pitch * es)), src_addr(plane, r), len);
    });
  };
  load_rows(task_id(), in[0]);
  sync_io();
  std::size_t turn = 0;
  for (std::size_t u = task_id(); u < units; u += task_dim(), ++turn) {
    const std::size_t g0 = u * j.chunk, n = std::min(j.chunk, rows - g0);
    const Addr src = in[turn % 2], res = out[turn % 2];
    if (u + task_dim() < units) load_rows(u + task_dim(), in[(turn + 1) % 2]);
    // The chunk's result: piece k of row i at res + (k * n + i) * row_piece elements (block b
    // of the row at + b * piece): the n rows of pitch elements are n * nb rows of bw.
    const std::int64_t piece_bytes = i64(n * row_piece * es);
    if (j.on_tfu) {
      for (std::size_t k = 0; k < p.pieces; ++k)
        matmul(j.dtype, j.dtype, res.offset(i64(k) * piece_bytes), src, matrix.offset(i64(k * bw * piece * es)),
               n * nb, bw, piece, /*b_transposed=*/false, /*accumulate=*/false);
    } else {
      vec_fill(j.dtype, res, 0.0, n * nb * obw);
      for (const auto& [from, to] : p.ones)  // column `from` of every block to column `to`
        memcpy_strided(res.offset(i64(to / piece) * piece_bytes + i64(to % piece * es)), src.offset(i64(from * es)),
                       CopyShape{es, n * nb, i64(piece * es), i64(bw * es)}, Dir::kNram2Nram);
    }
    sync_io();  // the next chunk's rows are in; the stores of two chunks ago have left out[turn % 2]
    for_each_run(g0, n, [&](std::size_t plane, std::size_t r, std::size_t len, std::size_t at) {
      const Addr dst{Space::kGdram, p.dst_base + static_cast<std::uint64_t>(
                                                     (i64(plane) * p.plane_stride + i64(r) * p.row_stride) * i64(es))};
      memcpy_strided_async(dst, res.offset(i64(at * row_piece * es)),
                           coalesce(CopyShape{store_piece * es, len, p.row_stride * i64(es), i64(row_piece * es), p.pieces,
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
  const std::size_t bw = p.block_w ? p.block_w : w, nb = (w + bw - 1) / bw, obw = p.block_w ? p.block_out : p.out_w;
  const std::size_t fixed =
      (job->on_tfu ? bw * obw * es : 0) + std::max<std::size_t>(1, p.gap_rows) * p.out_w * es + 1024;
  const std::size_t per_row = 2 * nb * (bw + obw) * es;
  MLU_CHECK(fixed + per_row <= d.nram_bytes && (!job->on_tfu || bw * obw * es <= d.wram_bytes),
            Status::kNotSupported,
            name + ": rows of " + std::to_string(w) + " elements are too wide for this device's NRAM/WRAM");
  // Two units per core where there are rows enough (one unit's stores and the next one's loads
  // overlap the TFU; measured on ResNet-18's splits, one or three units per core are slower),
  // at most what NRAM holds. Units are not rounded to whole fold rows: that left some cores
  // an extra unit.
  const std::size_t cap = (d.nram_bytes - fixed) / per_row;
  const std::size_t slots = 2 * std::size_t{h.total_cores()};
  const std::size_t fair = (rows + slots - 1) / slots;
  const std::size_t chunk = std::max<std::size_t>(1, std::min({cap, fair, std::size_t{512}}));
  job->chunk = chunk;
  const std::size_t units = (rows + chunk - 1) / chunk;
  MLU_RETURN_IF_ERROR(launch(
      h, name, [job] { kernel(*job); }, block_dim(h, units), cnrtFuncTypeBlock));
  *kernels = 1;
  return Status::kSuccess;
}

}  // namespace mlusim::mlu::conv
