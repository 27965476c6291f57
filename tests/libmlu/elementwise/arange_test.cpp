// arange: values against a host loop (fp32 exactly for integral values, fp16 and int dtypes,
// strided outputs, many tiles per core), and the documented refusals.
#include <cmath>
#include <vector>

#include "common/mlu_test.h"
#include "mlusim/mlu/elementwise.h"

namespace mlusim::mlu::testing {
namespace {

using ArangeTest = MluTest;

TEST_F(ArangeTest, ValuesForEveryDtypeAndStride) {
  struct Case {
    DType t;
    std::int64_t n, stride;
    double start, step;
  };
  for (const Case& c : {Case{DType::kFloat32, 70001, 1, -5, 3}, Case{DType::kFloat32, 37, 3, 0.5, 0.25},
                        Case{DType::kInt32, 5000, 2, 100, -7}, Case{DType::kInt8, 60, 1, -30, 1},
                        Case{DType::kFloat16, 300, 1, -2, 0.5}}) {
    const std::size_t es = sim::dtype_size(c.t);
    std::vector<std::uint8_t> init(static_cast<std::size_t>(c.n * c.stride) * es, 0x5a);
    void* y = to_device(init);
    ASSERT_EQ(arange(&h(), c.start, c.step, desc(c.t, {c.n}, {c.stride}), y), Status::kSuccess) << last_error_detail();
    const auto got = from_device<std::uint8_t>(y, init.size());
    for (std::int64_t i = 0; i < c.n; ++i) {
      const double want = c.start + static_cast<double>(i) * c.step;
      const std::uint8_t* p = got.data() + static_cast<std::size_t>(i * c.stride) * es;
      double v = 0;
      if (c.t == DType::kFloat32) v = *reinterpret_cast<const float*>(p);
      if (c.t == DType::kInt32) v = *reinterpret_cast<const std::int32_t*>(p);
      if (c.t == DType::kInt8) v = *reinterpret_cast<const std::int8_t*>(p);
      if (c.t == DType::kFloat16) v = float(*reinterpret_cast<const sim::half*>(p));
      ASSERT_EQ(v, want) << sim::dtype_name(c.t) << " element " << i;
      if (c.stride > 1 && i + 1 < c.n) {
        ASSERT_EQ(p[es], 0x5a) << "gap after element " << i << " untouched";
      }
    }
  }
}

TEST_F(ArangeTest, Refusals) {
  void* y = dalloc(64);
  EXPECT_EQ(arange(&h(), 0, 1, desc(DType::kInt64, {4}), y), Status::kNotSupported);
  EXPECT_EQ(arange(&h(), 0, 1, desc(DType::kFloat32, {2, 2}), y), Status::kBadParam) << "not 1-d";
  EXPECT_EQ(arange(&h(), 120, 5, desc(DType::kInt8, {4}), y), Status::kBadParam) << "overflows int8";
  EXPECT_EQ(arange(&h(), 0, 0.5, desc(DType::kInt32, {4}), y), Status::kBadParam) << "fractional step";
  EXPECT_EQ(arange(&h(), NAN, 1, desc(DType::kFloat32, {4}), y), Status::kBadParam);
  EXPECT_EQ(arange(&h(), 0, 1, desc(DType::kFloat32, {0}), y), Status::kSuccess) << "empty: nothing to do";
}

}  // namespace
}  // namespace mlusim::mlu::testing
