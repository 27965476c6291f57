// What the linalg kernels share: the argument checks of batched matrix descriptors, GDRAM
// addressing of one matrix of a batch, and the NRAM budget of a kernel's per-matrix buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"
#include "mlusim/mlu/tensor.h"
#include "mlusim/sim/kernel_api.h"

namespace mlusim::mlu::linalg {

// A batch of row-major matrices: `batch` matrices of rows x cols.
struct MatrixBatch {
  std::int64_t batch = 0, rows = 0, cols = 0;
  std::int64_t elements() const { return rows * cols; }
};

// d is a valid, contiguous fp32 descriptor with at least 2 dims ([*, rows, cols]), p non-null
// unless empty: its batch shape in *out. kNotSupported for another dtype (naming op and name).
Status check_matrices(const TensorDesc* d, const void* p, const char* op, const char* name, MatrixBatch* out);

// d is contiguous with dtype `dtype` and dims = batch_dims + tail, where batch_dims are
// `of`'s dims but its last two (the per-matrix outputs: pivots, info, perm).
Status check_per_matrix(const TensorDesc* d, const void* p, DType dtype, const TensorDesc& of,
                        const std::vector<std::int64_t>& tail, const char* op, const char* name);

// NRAM the calling kernel may plan with per core (capacity less a reserve for alignment).
std::size_t nram_budget(const Handle& h);

// Bytes of NRAM that `count` buffers of the given element counts (fp32/int32) take, each carved
// at a 128-byte boundary as dev::alloc does.
std::size_t nram_bytes(const std::vector<std::int64_t>& element_counts);

// NRAM plans of the kernels (bytes one core needs for one matrix), defined beside each kernel.
std::size_t lu_factor_nram_bytes(std::int64_t m, std::int64_t n);
std::size_t cholesky_nram_bytes(std::int64_t n);
std::size_t qr_factor_nram_bytes(std::int64_t m, std::int64_t n);
std::size_t householder_product_nram_bytes(std::int64_t m, std::int64_t n);
std::size_t jacobi_nram_bytes(std::int64_t rows, std::int64_t cols, bool vectors);
std::size_t triangular_solve_nram_bytes(std::int64_t n, std::int64_t rhs_cols);

// The rotation that zeroes the (p, q) entry of a symmetric 2 x 2 [[app, apq], [apq, aqq]]
// (Golub & Van Loan, sym.schur2), in fp32 as the scalar unit computes it: c, s and t = s / c.
struct Rotation {
  float c = 1.0f, s = 0.0f, t = 0.0f;
};
Rotation jacobi_rotation(float app, float aqq, float apq);

// Rows x and y (len elements) replaced by c x - s y and s x + c y (6 VFU intrinsics; t1, t2 are
// scratch of len elements).
void rotate_rows(sim::Nram<float> x, sim::Nram<float> y, const Rotation& r, sim::Nram<float> t1, sim::Nram<float> t2,
                 std::int64_t len);

// Element `index` of a 4-byte (or `es`-byte) GDRAM array at base.
inline sim::Addr gdram_at(std::uint64_t base, std::int64_t index, std::size_t es = 4) {
  return sim::Addr{sim::Space::kGdram, base + static_cast<std::uint64_t>(index) * es};
}

// fp32 NRAM buffer of `count` elements.
inline sim::Nram<float> nram_floats(std::int64_t count) {
  return dev::nram_alloc<float>(static_cast<std::size_t>(count < 1 ? 1 : count));
}

// v[0, count) = 0, 1, 2, ... in fp32 (exact below 2^24): a fill and ceil(log2 count) doubling
// steps (v[s, 2s) = v[0, s) + s).
void iota(sim::Nram<float> v, std::int64_t count);

}  // namespace mlusim::mlu::linalg
