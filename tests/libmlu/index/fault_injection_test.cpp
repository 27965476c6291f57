// Index ops under fault injection and timing-only mode: a flipped DMA bit changes the rows
// gathered (or makes an index invalid, which traps); in timing-only mode the index data and the
// rows it selects are still exact, since integers are always computed and copies move data.
#include <cstdint>

#include "common/mlu_test.h"

namespace mlusim::mlu::testing {
namespace {

class IndexFaultTest : public MluTest {
 protected:
  void TearDown() override {
    mlusimSetTimingOnly(0);
    MluTest::TearDown();
  }
};

TEST_F(IndexFaultTest, BitFlipChangesEmbeddingOutput) {
  const std::int64_t V = 50, D = 16, N = 40;
  const auto w = random<float>(V * D, 1);
  std::vector<std::int64_t> ids(N);
  for (std::int64_t i = 0; i < N; ++i) ids[i] = (i * 7) % V;
  void* wd = to_device(w);
  void* id = to_device(ids);
  void* out = dalloc(N * D * 4);
  const TensorDesc wdsc = desc(DType::kFloat32, {V, D}), idsc = desc(DType::kInt64, {N}), odsc = desc(DType::kFloat32, {N, D});
  ASSERT_EQ(embedding_forward(&h(), wdsc, wd, idsc, id, odsc, out), Status::kSuccess);
  const auto clean = from_device<float>(out, N * D);
  for (unsigned long long nth : {1ULL, 2ULL}) {
    ASSERT_EQ(mlusimInjectDmaBitFlip(0, nth), cnrtSuccess);
    ASSERT_EQ(embedding_forward(&h(), wdsc, wd, idsc, id, odsc, out), Status::kSuccess);
    const cnrtRet_t sync = cnrtQueueSync(h().queue());
    if (sync == cnrtErrorKernelTrap) continue;  // a flipped index went out of range: also caught
    ASSERT_EQ(sync, cnrtSuccess);
    EXPECT_NE(from_device<float>(out, N * D), clean) << "DMA " << nth;
  }
}

TEST_F(IndexFaultTest, TimingOnlyModeStillMovesIndexedData) {
  const std::int64_t V = 30, D = 8;
  const auto w = random<float>(V * D, 2);
  const std::vector<std::int32_t> ids = {29, 0, 7, 7, 13};
  void* wd = to_device(w);
  void* id = to_device(ids);
  void* out = dalloc(5 * D * 4);
  void* sel = dalloc(5 * D * 4);
  ASSERT_EQ(mlusimSetTimingOnly(1), cnrtSuccess);
  ASSERT_EQ(embedding_forward(&h(), desc(DType::kFloat32, {V, D}), wd, desc(DType::kInt32, {5}), id,
                              desc(DType::kFloat32, {5, D}), out),
            Status::kSuccess);
  ASSERT_EQ(index_select(&h(), desc(DType::kFloat32, {V, D}), wd, 0, desc(DType::kInt32, {5}), id,
                         desc(DType::kFloat32, {5, D}), sel),
            Status::kSuccess);
  const auto got = from_device<float>(out, 5 * D), got_sel = from_device<float>(sel, 5 * D);
  for (int i = 0; i < 5; ++i)
    for (int d = 0; d < D; ++d) {
      ASSERT_EQ(got[i * D + d], w[ids[i] * D + d]);
      ASSERT_EQ(got_sel[i * D + d], w[ids[i] * D + d]);
    }
  // Out-of-range indices are still caught.
  const std::vector<std::int32_t> bad = {30};
  void* bd = to_device(bad);
  ASSERT_EQ(embedding_forward(&h(), desc(DType::kFloat32, {V, D}), wd, desc(DType::kInt32, {1}), bd,
                              desc(DType::kFloat32, {1, D}), out),
            Status::kSuccess);
  EXPECT_EQ(cnrtQueueSync(h().queue()), cnrtErrorKernelTrap);
}

}  // namespace
}  // namespace mlusim::mlu::testing
