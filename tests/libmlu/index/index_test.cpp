// Indexing ops against naive host references: embedding forward/backward (duplicates,
// padding_idx, determinism), index_select, gather, scatter_add, cat; out-of-range indices trap
// the kernel; bad arguments give status codes.
#include <cstdint>
#include <random>

#include "common/mlu_test.h"
#include "elementwise/strided_ref.h"

namespace mlusim::mlu::testing {
namespace {

std::vector<std::int64_t> random_indices(std::size_t n, std::int64_t bound, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::int64_t> v(n);
  for (auto& x : v) x = static_cast<std::int64_t>(rng() % static_cast<std::uint32_t>(bound));
  return v;
}

template <class T> std::vector<T> narrow(const std::vector<std::int64_t>& v) { return std::vector<T>(v.begin(), v.end()); }

class IndexTest : public MluTest {
 protected:
  // Runs a queued op that must fault with `message` in the kernel trap.
  void expect_trap(const std::string& message) {
    EXPECT_EQ(cnrtQueueSync(h().queue()), cnrtErrorKernelTrap);
    EXPECT_NE(std::string(mlusimGetLastErrorMessage()).find(message), std::string::npos) << mlusimGetLastErrorMessage();
  }
};

TEST_F(IndexTest, EmbeddingForwardGathersRows) {
  const std::int64_t V = 37, D = 19;
  const auto w = random<float>(V * D, 1);
  const auto ids = random_indices(15, V, 2);
  void* wd = to_device(w);
  void* id64 = to_device(ids);
  void* id32 = to_device(narrow<std::int32_t>(ids));
  void* out = dalloc(15 * D * 4);
  for (DType it : {DType::kInt64, DType::kInt32}) {
    ASSERT_EQ(embedding_forward(&h(), desc(DType::kFloat32, {V, D}), wd, desc(it, {3, 5}), it == DType::kInt64 ? id64 : id32,
                                desc(DType::kFloat32, {3, 5, D}), out),
              Status::kSuccess)
        << last_error_detail();
    const auto got = from_device<float>(out, 15 * D);
    for (int i = 0; i < 15; ++i)
      for (int d = 0; d < D; ++d) ASSERT_EQ(got[i * D + d], w[ids[i] * D + d]) << i << "," << d;
  }
}

TEST_F(IndexTest, EmbeddingForwardStridedWeightAndOutput) {
  const std::int64_t V = 11, D = 6;
  const auto w = random<float>(V * D, 3);  // stored [D, V]: weight = w.t()
  const auto ids = random_indices(4, V, 4);
  void* wd = to_device(w);
  void* id = to_device(ids);
  void* out = dalloc(D * 4 * 4);  // out = o.t() of an [D, 4] buffer
  ASSERT_EQ(embedding_forward(&h(), desc(DType::kFloat32, {V, D}, {1, V}), wd, desc(DType::kInt64, {4}), id,
                              desc(DType::kFloat32, {4, D}, {1, 4}), out),
            Status::kSuccess);
  const auto got = from_device<float>(out, D * 4);
  for (int i = 0; i < 4; ++i)
    for (int d = 0; d < D; ++d) ASSERT_EQ(got[d * 4 + i], w[d * V + ids[i]]);
}

TEST_F(IndexTest, EmbeddingOutOfRangeTraps) {
  void* w = dalloc(10 * 4 * 4);
  const std::vector<std::int64_t> bad = {1, 10, 2};
  void* id = to_device(bad);
  void* out = dalloc(3 * 4 * 4);
  ASSERT_EQ(embedding_forward(&h(), desc(DType::kFloat32, {10, 4}), w, desc(DType::kInt64, {3}), id,
                              desc(DType::kFloat32, {3, 4}), out),
            Status::kSuccess);
  expect_trap("embedding: index 10 is out of range for dim 0 of size 10");
  const std::vector<std::int32_t> negative = {-1};
  void* neg = to_device(negative);
  ASSERT_EQ(embedding_forward(&h(), desc(DType::kFloat32, {10, 4}), w, desc(DType::kInt32, {1}), neg,
                              desc(DType::kFloat32, {1, 4}), out),
            Status::kSuccess);
  expect_trap("index -1 is out of range");
}

TEST_F(IndexTest, EmbeddingBackwardAccumulatesInIndexOrder) {
  const std::int64_t V = 13, D = 10, N = 40;
  const auto grad = random<float>(N * D, 5);
  auto ids = random_indices(N, V, 6);
  ids[3] = ids[7] = ids[20] = 4;  // duplicates
  ids[9] = 2;                     // padding row
  void* gd = to_device(grad);
  void* id = to_device(ids);
  void* gw = dalloc(V * D * 4);
  ASSERT_EQ(embedding_backward(&h(), desc(DType::kFloat32, {5, 8, D}), gd, desc(DType::kInt64, {5, 8}), id, 2,
                               desc(DType::kFloat32, {V, D}), gw),
            Status::kSuccess)
      << last_error_detail();
  const auto got = from_device<float>(gw, V * D);
  std::vector<float> want(V * D, 0.0f);
  for (int i = 0; i < N; ++i)
    if (ids[i] != 2)
      for (int d = 0; d < D; ++d) want[ids[i] * D + d] += grad[i * D + d];  // sequential fp32, as torch
  EXPECT_EQ(got, want) << "bitwise equal: same additions in the same order";
}

TEST_F(IndexTest, EmbeddingBackwardHalf) {
  const std::int64_t V = 5, D = 8, N = 30;
  const auto grad = random<half>(N * D, 7);
  const auto ids = random_indices(N, V, 8);
  void* gd = to_device(grad);
  void* id = to_device(narrow<std::int32_t>(ids));
  void* gw = dalloc(V * D * 2);
  ASSERT_EQ(embedding_backward(&h(), desc(DType::kFloat16, {N, D}), gd, desc(DType::kInt32, {N}), id, std::nullopt,
                               desc(DType::kFloat16, {V, D}), gw),
            Status::kSuccess);
  const auto got = from_device<half>(gw, V * D);
  std::vector<half> want(V * D, half(0.0f));
  for (int i = 0; i < N; ++i)
    for (int d = 0; d < D; ++d)
      want[ids[i] * D + d] = half(static_cast<float>(want[ids[i] * D + d]) + static_cast<float>(grad[i * D + d]));
  for (std::size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << i;
}

TEST_F(IndexTest, EmbeddingBadArguments) {
  void* p = dalloc(1024);
  EXPECT_EQ(embedding_forward(&h(), desc(DType::kFloat32, {4, 3, 2}), p, desc(DType::kInt64, {2}), p,
                              desc(DType::kFloat32, {2, 2}), p),
            Status::kBadParam);
  EXPECT_EQ(embedding_forward(&h(), desc(DType::kFloat32, {4, 3}), p, desc(DType::kFloat32, {2}), p,
                              desc(DType::kFloat32, {2, 3}), p),
            Status::kNotSupported);
  EXPECT_EQ(embedding_forward(&h(), desc(DType::kFloat32, {4, 3}), p, desc(DType::kInt64, {2}), p,
                              desc(DType::kFloat32, {2, 4}), p),
            Status::kBadParam);
  EXPECT_EQ(embedding_backward(&h(), desc(DType::kInt32, {2, 3}), p, desc(DType::kInt64, {2}), p, std::nullopt,
                               desc(DType::kInt32, {4, 3}), p),
            Status::kNotSupported);
}

TEST_F(IndexTest, IndexSelectAlongEveryDim) {
  const Dims xd = {7, 9, 5};
  const auto x = random<float>(static_cast<std::size_t>(numel(xd)), 9);
  void* xp = to_device(x);
  for (int dim = 0; dim < 3; ++dim) {
    const auto ids = random_indices(6, xd[dim], 10 + dim);
    void* id = to_device(ids);
    Dims yd = xd;
    yd[dim] = 6;
    void* y = dalloc(static_cast<std::size_t>(numel(yd)) * 4);
    ASSERT_EQ(index_select(&h(), desc(DType::kFloat32, xd), xp, dim, desc(DType::kInt64, {6}), id,
                           desc(DType::kFloat32, yd), y),
              Status::kSuccess)
        << last_error_detail();
    const auto got = from_device<float>(y, static_cast<std::size_t>(numel(yd)));
    for_each_index(yd, [&](const Dims& idx) {
      Dims src = idx;
      src[dim] = ids[static_cast<std::size_t>(idx[dim])];
      ASSERT_EQ(got[static_cast<std::size_t>(offset(idx, yd, contiguous_strides(yd)))],
                x[static_cast<std::size_t>(offset(src, xd, contiguous_strides(xd)))]);
    });
  }
}

TEST_F(IndexTest, IndexSelectTransposedInputAndOutOfRange) {
  const auto x = random<float>(8 * 6, 11);
  void* xp = to_device(x);
  const std::vector<std::int32_t> ids = {5, 0, 5};
  void* id = to_device(ids);
  void* y = dalloc(3 * 8 * 4);
  // x = buffer[6, 8].t() -> [8, 6]; select columns 5, 0, 5.
  ASSERT_EQ(index_select(&h(), desc(DType::kFloat32, {8, 6}, {1, 8}), xp, -1, desc(DType::kInt32, {3}), id,
                         desc(DType::kFloat32, {8, 3}), y),
            Status::kSuccess);
  const auto got = from_device<float>(y, 24);
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 3; ++c) ASSERT_EQ(got[r * 3 + c], x[ids[c] * 8 + r]);
  const std::vector<std::int64_t> bad = {0, 6};
  void* bd = to_device(bad);
  ASSERT_EQ(index_select(&h(), desc(DType::kFloat32, {8, 6}), xp, 1, desc(DType::kInt64, {2}), bd,
                         desc(DType::kFloat32, {8, 2}), y),
            Status::kSuccess);
  expect_trap("index_select: index 6 is out of range for dim 1 of size 6");
  EXPECT_EQ(index_select(&h(), desc(DType::kFloat32, {8, 6}), xp, 2, desc(DType::kInt64, {2}), bd,
                         desc(DType::kFloat32, {8, 2}), y),
            Status::kBadParam);
  EXPECT_EQ(index_select(&h(), desc(DType::kFloat32, {8, 6}), xp, 1, desc(DType::kInt64, {2}), bd,
                         desc(DType::kFloat32, {8, 3}), y),
            Status::kBadParam);
}

TEST_F(IndexTest, GatherAlongEachDim) {
  const Dims xd = {6, 8, 3};
  const auto x = random<float>(static_cast<std::size_t>(numel(xd)), 12);
  void* xp = to_device(x);
  for (int dim = 0; dim < 3; ++dim) {
    const Dims id_dims = {5, 4, 3};
    const auto ids = random_indices(static_cast<std::size_t>(numel(id_dims)), xd[dim], 13 + dim);
    void* id = to_device(ids);
    void* y = dalloc(static_cast<std::size_t>(numel(id_dims)) * 4);
    ASSERT_EQ(gather(&h(), desc(DType::kFloat32, xd), xp, dim, desc(DType::kInt64, id_dims), id,
                     desc(DType::kFloat32, id_dims), y),
              Status::kSuccess)
        << last_error_detail();
    const auto got = from_device<float>(y, static_cast<std::size_t>(numel(id_dims)));
    for_each_index(id_dims, [&](const Dims& idx) {
      const std::size_t flat = static_cast<std::size_t>(offset(idx, id_dims, contiguous_strides(id_dims)));
      Dims src = idx;
      src[dim] = ids[flat];
      ASSERT_EQ(got[flat], x[static_cast<std::size_t>(offset(src, xd, contiguous_strides(xd)))]);
    });
  }
}

TEST_F(IndexTest, GatherOutOfRangeAndBadShapes) {
  void* xp = dalloc(4 * 5 * 4);
  const std::vector<std::int64_t> ids = {0, 1, 5, 2};
  void* id = to_device(ids);
  void* y = dalloc(64);
  ASSERT_EQ(gather(&h(), desc(DType::kFloat32, {4, 5}), xp, 1, desc(DType::kInt64, {4, 1}), id,
                   desc(DType::kFloat32, {4, 1}), y),
            Status::kSuccess);
  expect_trap("gather: index 5 is out of range for dim 1 of size 5");
  EXPECT_EQ(gather(&h(), desc(DType::kFloat32, {4, 5}), xp, 1, desc(DType::kInt64, {4}), id, desc(DType::kFloat32, {4}), y),
            Status::kBadParam);
  EXPECT_EQ(gather(&h(), desc(DType::kFloat32, {4, 5}), xp, 1, desc(DType::kInt64, {5, 1}), id,
                   desc(DType::kFloat32, {5, 1}), y),
            Status::kBadParam);
}

TEST_F(IndexTest, ScatterAddDuplicatesAccumulateDeterministically) {
  const Dims sd = {5, 7};
  const auto self = random<float>(35, 14);
  for (int dim = 0; dim < 2; ++dim) {
    const Dims id_dims = dim == 0 ? Dims{9, 6} : Dims{4, 11};
    const Dims src_dims = dim == 0 ? Dims{10, 7} : Dims{5, 12};
    const auto ids = random_indices(static_cast<std::size_t>(numel(id_dims)), sd[dim], 15 + dim);
    const auto src = random<float>(static_cast<std::size_t>(numel(src_dims)), 17 + dim);
    void* sp = to_device(self);
    void* id = to_device(ids);
    void* srcp = to_device(src);
    void* out = dalloc(35 * 4);
    ASSERT_EQ(scatter_add(&h(), desc(DType::kFloat32, sd), sp, dim, desc(DType::kInt64, id_dims), id,
                          desc(DType::kFloat32, src_dims), srcp, desc(DType::kFloat32, sd), out),
              Status::kSuccess)
        << last_error_detail();
    const auto got = from_device<float>(out, 35);
    std::vector<float> want = self;
    for_each_index(id_dims, [&](const Dims& idx) {
      Dims dst = idx;
      dst[dim] = ids[static_cast<std::size_t>(offset(idx, id_dims, contiguous_strides(id_dims)))];
      want[static_cast<std::size_t>(offset(dst, sd, contiguous_strides(sd)))] +=
          src[static_cast<std::size_t>(offset(idx, src_dims, contiguous_strides(src_dims)))];
    });
    EXPECT_EQ(got, want) << "dim " << dim;
  }
}

TEST_F(IndexTest, ScatterAddInPlaceInt64AndOutOfRange) {
  const std::vector<std::int64_t> self = {1, 2, 3, 4};
  const std::vector<std::int64_t> ids = {3, 0, 3, 3};
  const std::vector<std::int64_t> src = {10, 20, 30, 40};
  void* sp = to_device(self);
  void* id = to_device(ids);
  void* srcp = to_device(src);
  const TensorDesc d = desc(DType::kInt64, {4});
  ASSERT_EQ(scatter_add(&h(), d, sp, 0, d, id, d, srcp, d, sp), Status::kSuccess);
  EXPECT_EQ(from_device<std::int64_t>(sp, 4), (std::vector<std::int64_t>{21, 2, 3, 84}));
  const std::vector<std::int64_t> bad = {4};
  void* bd = to_device(bad);
  ASSERT_EQ(scatter_add(&h(), d, sp, 0, desc(DType::kInt64, {1}), bd, d, srcp, d, sp), Status::kSuccess);
  expect_trap("scatter_add: index 4 is out of range for dim 0 of size 4");
  EXPECT_EQ(scatter_add(&h(), d, sp, 0, d, id, desc(DType::kInt32, {4}), srcp, d, sp), Status::kBadParam);
}

TEST_F(IndexTest, ScatterAssignsLastWriterAndReducesInIndexOrder) {
  // Duplicates in one line: assignment keeps the last update in index order (torch's CPU kernel);
  // mul/max/min reduce every update; a NaN update propagates through max.
  const std::vector<float> self = {1, 2, 3, 4, 5, 6};  // [2, 3]
  const std::vector<std::int64_t> ids = {2, 0, 2, 1, 1, 1};  // [2, 3], dim 1
  const std::vector<float> src = {10, 20, 30, -1, std::nanf(""), 7};
  void* sp = to_device(self);
  void* id = to_device(ids);
  void* srcp = to_device(src);
  void* out = dalloc(6 * 4);
  const TensorDesc d = desc(DType::kFloat32, {2, 3}), di = desc(DType::kInt64, {2, 3});
  auto run = [&](ScatterReduce r) {
    EXPECT_EQ(scatter(&h(), d, sp, 1, di, id, d, srcp, r, d, out), Status::kSuccess) << last_error_detail();
    return from_device<float>(out, 6);
  };
  EXPECT_EQ(run(ScatterReduce::kNone), (std::vector<float>{20, 2, 30, 4, 7, 6}));
  const auto mul = run(ScatterReduce::kMul);
  EXPECT_EQ(mul[0], 20.0f);
  EXPECT_EQ(mul[2], 900.0f);
  EXPECT_TRUE(std::isnan(mul[4]));
  const auto mx = run(ScatterReduce::kMax);
  EXPECT_EQ(mx[2], 30.0f);
  EXPECT_TRUE(std::isnan(mx[4]));
  const auto mn = run(ScatterReduce::kMin);
  EXPECT_EQ(mn[0], 1.0f);
  EXPECT_EQ(mn[2], 3.0f);
  EXPECT_TRUE(std::isnan(mn[4]));
  // A broadcast value (stride-0 src) into a bool tensor: scatter.value.
  const std::vector<std::uint8_t> flags(6, 0), one = {1};
  void* fp = to_device(flags);
  void* vp = to_device(one);
  const TensorDesc db = desc(DType::kBool, {2, 3});
  ASSERT_EQ(scatter(&h(), db, fp, 1, desc(DType::kInt64, {2, 1}), id, desc(DType::kBool, {2, 3}, {0, 0}), vp,
                    ScatterReduce::kNone, db, fp),
            Status::kSuccess)
      << last_error_detail();
  EXPECT_EQ(from_device<std::uint8_t>(fp, 6), (std::vector<std::uint8_t>{0, 0, 1, 1, 0, 0}));
  EXPECT_EQ(scatter(&h(), db, fp, 1, di, id, db, fp, ScatterReduce::kAdd, db, fp), Status::kNotSupported);
}

TEST_F(IndexTest, CatOfStridedAndConvertedInputs) {
  const auto a = random<float>(4 * 3, 20);
  const auto b = random<float>(5 * 4, 21);  // used transposed: [4, 5]
  const auto c = random<half>(4 * 2, 22);
  void* ap = to_device(a);
  void* bp = to_device(b);
  void* cp = to_device(c);
  void* out = dalloc(4 * 10 * 4);
  const TensorDesc ad = desc(DType::kFloat32, {4, 3}), bd = desc(DType::kFloat32, {4, 5}, {1, 4}),
                   cd = desc(DType::kFloat16, {4, 2}), empty = desc(DType::kFloat32, {0});
  ASSERT_EQ(cat(&h(), {&ad, &empty, &bd, &cd}, {ap, nullptr, bp, cp}, 1, desc(DType::kFloat32, {4, 10}), out),
            Status::kSuccess)
      << last_error_detail();
  const auto got = from_device<float>(out, 40);
  for (int r = 0; r < 4; ++r) {
    for (int k = 0; k < 3; ++k) ASSERT_EQ(got[r * 10 + k], a[r * 3 + k]);
    for (int k = 0; k < 5; ++k) ASSERT_EQ(got[r * 10 + 3 + k], b[k * 4 + r]);
    for (int k = 0; k < 2; ++k) ASSERT_EQ(got[r * 10 + 8 + k], static_cast<float>(c[r * 2 + k]));
  }
  ASSERT_EQ(cat(&h(), {&ad, &ad}, {ap, ap}, 0, desc(DType::kFloat32, {8, 3}), out), Status::kSuccess);
  const auto rows = from_device<float>(out, 24);
  for (int i = 0; i < 12; ++i) ASSERT_EQ(rows[i], a[i]) << i;
  for (int i = 0; i < 12; ++i) ASSERT_EQ(rows[12 + i], a[i]) << i;
  EXPECT_EQ(cat(&h(), {&ad, &bd}, {ap, bp}, 0, desc(DType::kFloat32, {8, 3}), out), Status::kBadParam);
  EXPECT_EQ(cat(&h(), {&ad, &ad}, {ap, ap}, 1, desc(DType::kFloat32, {4, 7}), out), Status::kBadParam);
  EXPECT_EQ(cat(&h(), {}, {}, 0, desc(DType::kFloat32, {4}), out), Status::kBadParam);
}

}  // namespace
}  // namespace mlusim::mlu::testing
