// copy_strided / cast: views to views (contiguous, transposed, permuted, sliced, expanded) and
// every dtype conversion, against naive host references.
#include <cstdint>
#include <limits>

#include "common/mlu_test.h"
#include "elementwise/strided_ref.h"

namespace mlusim::mlu::testing {
namespace {

class CopyStridedTest : public MluTest {
 protected:
  // Copies a float view (dims, src strides) of random data into dst (dims, dst strides) and
  // checks every dst element; elements of dst's buffer outside the view must stay untouched.
  void check_copy(const Dims& src_dims, const Dims& src_strides, const Dims& dst_dims, const Dims& dst_strides,
                  unsigned seed) {
    const auto src = random<float>(static_cast<std::size_t>(span(src_dims, src_strides)), seed);
    std::vector<float> dst(static_cast<std::size_t>(span(dst_dims, dst_strides)), -7.0f);
    void* s = to_device(src);
    void* d = to_device(dst);
    ASSERT_EQ(copy_strided(&h(), desc(DType::kFloat32, src_dims, src_strides), s,
                           desc(DType::kFloat32, dst_dims, dst_strides), d),
              Status::kSuccess)
        << last_error_detail();
    const auto got = from_device<float>(d, dst.size());
    std::vector<float> want = dst;
    for_each_index(dst_dims, [&](const Dims& idx) {
      want[static_cast<std::size_t>(offset(idx, dst_dims, dst_strides))] =
          src[static_cast<std::size_t>(offset(idx, src_dims, src_strides))];
    });
    ASSERT_EQ(got, want);
  }
};

TEST_F(CopyStridedTest, ContiguousOddSize) { check_copy({37, 29}, {29, 1}, {37, 29}, {29, 1}, 1); }

TEST_F(CopyStridedTest, TransposedSourceIsMadeContiguous) {
  check_copy({5, 7}, {1, 5}, {5, 7}, {7, 1}, 2);
  check_copy({67, 45}, {1, 67}, {67, 45}, {45, 1}, 3);
}

TEST_F(CopyStridedTest, WritesIntoTransposedDestination) { check_copy({9, 13}, {13, 1}, {9, 13}, {1, 9}, 4); }

TEST_F(CopyStridedTest, PermuteOfFourDims) {
  // [2,3,4,5] viewed as permute(0,2,1,3) and as permute(3,1,0,2).
  check_copy({2, 4, 3, 5}, {60, 5, 20, 1}, {2, 4, 3, 5}, contiguous_strides({2, 4, 3, 5}), 5);
  check_copy({5, 3, 2, 4}, {1, 20, 60, 5}, {5, 3, 2, 4}, contiguous_strides({5, 3, 2, 4}), 6);
}

TEST_F(CopyStridedTest, SlicedSourceAndDestination) {
  // src = x[1:6, 2:9] of an [8, 11] tensor; dst = y[:, ::2] of a [5, 14] tensor.
  check_copy({5, 7}, {11, 1}, {5, 7}, {14, 2}, 7);
}

// A column-stepped view whose row stride equals its extent (b[:, ::2] of a [9, 11] tensor: dims
// [9, 6], strides [11, 2], last element of a row at offset 10) does not overlap itself.
TEST_F(CopyStridedTest, ColumnSteppedViewsAreNotOverlapping) {
  check_copy({9, 6}, {11, 2}, {9, 6}, {6, 1}, 12);
  check_copy({9, 6}, {6, 1}, {9, 6}, {11, 2}, 13);
  TensorDesc d;
  EXPECT_EQ(d.set(DType::kFloat32, {3, 4}, {3, 1}), Status::kBadParam) << "rows overlap: stride 3 < extent 4";
  EXPECT_EQ(d.set(DType::kFloat32, {2, 3, 2}, {6, 2, 1}), Status::kSuccess);
  EXPECT_EQ(d.set(DType::kFloat32, {2, 3, 2}, {5, 2, 1}), Status::kBadParam) << "offset 5 reached twice";
}

TEST_F(CopyStridedTest, ExpandBroadcastsStrideZero) {
  check_copy({1, 7}, {7, 1}, {6, 7}, {7, 1}, 8);    // row broadcast
  check_copy({6, 1}, {1, 1}, {6, 7}, {7, 1}, 9);    // column broadcast
  check_copy({6, 7}, {0, 1}, {6, 7}, {7, 1}, 10);   // explicit stride 0
  check_copy({}, {}, {3, 4, 5}, {20, 5, 1}, 11);    // zero-dim source
  check_copy({3, 1, 5}, {5, 5, 1}, {3, 4, 5}, {1, 15, 3}, 12);  // broadcast into a permuted dst
}

TEST_F(CopyStridedTest, ManyTilesOnEveryCore) {
  check_copy({3, 129, 257}, {1, 3 * 257, 3}, {3, 129, 257}, contiguous_strides({3, 129, 257}), 13);
  check_copy({300, 700}, {700, 1}, {300, 700}, {700, 1}, 14);
}

TEST_F(CopyStridedTest, EmptyTensorLaunchesNothing) {
  const std::size_t before = h().ops().size();
  EXPECT_EQ(copy_strided(&h(), desc(DType::kFloat32, {0, 5}), nullptr, desc(DType::kFloat32, {0, 5}), nullptr),
            Status::kSuccess);
  EXPECT_EQ(h().ops().size(), before);
}

TEST_F(CopyStridedTest, RecordsBytes) {
  void* s = dalloc(4 * 10 * 4);
  void* d = dalloc(4 * 10 * 2);
  h().clear_ops();
  ASSERT_EQ(copy_strided(&h(), desc(DType::kFloat32, {4, 10}), s, desc(DType::kFloat16, {4, 10}), d), Status::kSuccess);
  ASSERT_EQ(h().ops().size(), 1u);
  EXPECT_EQ(h().ops()[0].name, "copy_strided");
  EXPECT_EQ(h().ops()[0].bytes, 40u * 4 + 40u * 2);
  EXPECT_EQ(h().ops()[0].macs, 0u);
}

TEST_F(CopyStridedTest, BadArguments) {
  void* p = dalloc(64);
  TensorDesc unset;
  EXPECT_EQ(copy_strided(nullptr, desc(DType::kFloat32, {4}), p, desc(DType::kFloat32, {4}), p), Status::kNotInitialized);
  EXPECT_EQ(copy_strided(&h(), unset, p, desc(DType::kFloat32, {4}), p), Status::kBadParam);
  EXPECT_EQ(copy_strided(&h(), desc(DType::kFloat32, {4}), nullptr, desc(DType::kFloat32, {4}), p), Status::kBadParam);
  EXPECT_EQ(copy_strided(&h(), desc(DType::kFloat32, {3}), p, desc(DType::kFloat32, {4}), p), Status::kBadParam);
  EXPECT_EQ(copy_strided(&h(), desc(DType::kFloat32, {4}), p, desc(DType::kFloat32, {4, 2}, {1, 0}), p), Status::kBadParam)
      << "a stride-0 destination writes one element twice";
  EXPECT_EQ(cast(&h(), desc(DType::kFloat32, {1, 4}), p, desc(DType::kFloat32, {4, 4}), p), Status::kBadParam)
      << "cast does not broadcast";
  EXPECT_NE(last_error_detail().find("cast"), std::string::npos);
}

// ---- dtype conversions ---------------------------------------------------------------------

class CastTest : public MluTest {
 protected:
  // Bool data is held as uint8_t on the host (std::vector<bool> has no data()).
  template <class S, class D>
  std::vector<D> run_cast(const std::vector<S>& src, DType st = sim::DTypeOf<S>::value, DType dt = sim::DTypeOf<D>::value) {
    void* s = to_device(src);
    void* d = dalloc(src.size() * sizeof(D));
    const auto n = static_cast<std::int64_t>(src.size());
    EXPECT_EQ(cast(&h(), desc(st, {n}), s, desc(dt, {n}), d), Status::kSuccess)
        << last_error_detail();
    return from_device<D>(d, src.size());
  }
};

TEST_F(CastTest, FloatToIntegralTruncatesTowardZero) {
  const std::vector<float> src = {0.0f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.7f, 2.7f, 8388607.5f, -8388609.0f, 1e9f, -3.99f};
  const auto got = run_cast<float, std::int32_t>(src);
  for (std::size_t i = 0; i < src.size(); ++i) EXPECT_EQ(got[i], static_cast<std::int32_t>(src[i])) << src[i];
  const auto got64 = run_cast<float, std::int64_t>({3e9f, -5e10f, 7.9f, -7.9f});
  EXPECT_EQ(got64, (std::vector<std::int64_t>{3000000000LL, -49999998976LL, 7, -7}));
  const auto got8 = run_cast<float, std::int8_t>({100.9f, -100.9f, 3.5f});
  EXPECT_EQ(got8, (std::vector<std::int8_t>{100, -100, 3}));
}

TEST_F(CastTest, HalfToIntegralTruncates) {
  const auto got = run_cast<half, std::int32_t>({half(2.75f), half(-2.75f), half(1000.5f)});
  EXPECT_EQ(got, (std::vector<std::int32_t>{2, -2, 1000}));
}

TEST_F(CastTest, IntegralNarrowingWraps) {
  const std::vector<std::int32_t> src = {300, -300, 127, 128, -129, 255, 256, -256, 1000000, -1000001};
  const auto got = run_cast<std::int32_t, std::int8_t>(src);
  for (std::size_t i = 0; i < src.size(); ++i) EXPECT_EQ(got[i], static_cast<std::int8_t>(src[i])) << src[i];
  const auto from64 = run_cast<std::int64_t, std::int8_t>({200, -200, 5});
  EXPECT_EQ(from64, (std::vector<std::int8_t>{-56, 56, 5}));
}

TEST_F(CastTest, WideningAndFloatConversions) {
  EXPECT_EQ((run_cast<std::int32_t, std::int64_t>({-5, 7, 2147483647})), (std::vector<std::int64_t>{-5, 7, 2147483647}));
  EXPECT_EQ((run_cast<std::int64_t, std::int32_t>({-5, 7, 2147483647})), (std::vector<std::int32_t>{-5, 7, 2147483647}));
  EXPECT_EQ((run_cast<std::int64_t, float>({1LL << 40, -3})), (std::vector<float>{1099511627776.0f, -3.0f}));
  const auto h16 = run_cast<float, half>({1.0f / 3.0f, 70000.0f, -1e-8f});
  EXPECT_EQ(h16[0], half(1.0f / 3.0f));
  EXPECT_TRUE(std::isinf(static_cast<float>(h16[1])));
  EXPECT_EQ((run_cast<float, double>({0.1f})), (std::vector<double>{static_cast<double>(0.1f)}));
  EXPECT_EQ((run_cast<double, float>({0.1})), (std::vector<float>{0.1f}));
}

TEST_F(CastTest, BoolConversions) {
  using B = std::uint8_t;
  const auto to_bool =
      run_cast<float, B>({0.0f, -0.0f, 0.1f, std::numeric_limits<float>::quiet_NaN(), -3.0f}, DType::kFloat32, DType::kBool);
  EXPECT_EQ(to_bool, (std::vector<B>{0, 0, 1, 1, 1}));
  EXPECT_EQ((run_cast<std::int32_t, B>({0, 5, -1}, DType::kInt32, DType::kBool)), (std::vector<B>{0, 1, 1}));
  EXPECT_EQ((run_cast<B, float>({1, 0}, DType::kBool, DType::kFloat32)), (std::vector<float>{1.0f, 0.0f}));
  EXPECT_EQ((run_cast<B, std::int64_t>({1, 0}, DType::kBool, DType::kInt64)), (std::vector<std::int64_t>{1, 0}));
}

TEST_F(CastTest, Int64NarrowingOutOfRangeFaultsTheKernel) {
  const std::vector<std::int64_t> src = {1, 2, std::int64_t{1} << 40, 4};
  void* s = to_device(src);
  void* d = dalloc(src.size() * sizeof(std::int32_t));
  ASSERT_EQ(cast(&h(), desc(DType::kInt64, {4}), s, desc(DType::kInt32, {4}), d), Status::kSuccess);
  EXPECT_EQ(cnrtQueueSync(h().queue()), cnrtErrorKernelTrap);
  EXPECT_NE(std::string(mlusimGetLastErrorMessage()).find("1099511627776"), std::string::npos) << mlusimGetLastErrorMessage();
}

}  // namespace
}  // namespace mlusim::mlu::testing
