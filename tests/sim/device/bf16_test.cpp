// bf16 intrinsics as a kernel sees them: on a config with bf16 (tiny with vfu.bf16 and a bf16 TFU
// array set by override) results come out of the simulated memories rounded to bf16, time is the
// engines' formulas and MACs are counted under bf16; on a config without it (tiny as shipped, like
// the MLU370 presets) the intrinsic faults naming the op and the config.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "compute/tfu_timing.h"
#include "mlusim/sim/kernel_api.h"
#include "mlusim/sim/roofline.h"
#include "sim_fixture.h"

namespace mlusim::sim::testing {
namespace {

using namespace mlusim::dev;

class Bf16Device : public SimTest {
 protected:
  void with_bf16() { build("tiny", {{"vfu.bf16", "true"}, {"tfu.bf16.rows", "4"}, {"tfu.bf16.cols", "4"}}); }
};

float widen(bfloat16 v) { return static_cast<float>(v); }

TEST_F(Bf16Device, ConfigWithoutBf16FaultsNamingOpAndConfig) {
  ASSERT_FALSE(cfg().vfu_bf16);
  const KernelRecord add = run("bf16_add", [] {
    auto a = nram_alloc<bfloat16>(64);
    vec_binary(VecBinaryOp::kAdd, DType::kBFloat16, a, a, a, 64);
  });
  ASSERT_TRUE(add.faulted);
  EXPECT_NE(add.fault.find("VFU binary op 'add': dtype 'bf16' is not supported by config 'tiny'"), std::string::npos)
      << add.fault;
  const KernelRecord mm = run("bf16_mm", [] {
    auto a = nram_alloc<bfloat16>(16);
    auto c = nram_alloc<float>(16);
    auto b = wram_alloc<bfloat16>(16);
    matmul(DType::kBFloat16, DType::kFloat32, c, a, b, 4, 4, 4, false, false);
  });
  ASSERT_TRUE(mm.faulted);
  EXPECT_NE(mm.fault.find("matmul_bf16: the TFU of config 'tiny' has no bf16 array"), std::string::npos) << mm.fault;
  // Storage works everywhere: a bf16 buffer moves through DMA and a same-dtype copy.
  const KernelRecord copy = run("bf16_copy", [] {
    auto a = nram_alloc<bfloat16>(64), b = nram_alloc<bfloat16>(64);
    vec_unary(VecUnaryOp::kCopy, DType::kBFloat16, b, a, 64);
  });
  EXPECT_FALSE(copy.faulted) << copy.fault;
}

TEST_F(Bf16Device, MatmulOnTheBf16ArrayRoundsOnceAndCountsBf16Macs) {
  with_bf16();
  const std::size_t m = 6, k = 9, n = 5;
  std::vector<bfloat16> a(m * k), b(k * n);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = bfloat16(0.37f * float(i % 7) - 1.1f);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = bfloat16(0.21f * float(i % 5) - 0.4f);
  const std::uint64_t ga = dmalloc(a.size() * 2), gb = dmalloc(b.size() * 2), gc = dmalloc(m * n * 2);
  upload(ga, a);
  upload(gb, b);
  const KernelRecord r = run("bf16_mm", [=] {
    auto na = nram_alloc<bfloat16>(m * k), nc = nram_alloc<bfloat16>(m * n);
    auto wb = wram_alloc<bfloat16>(k * n);
    memcpy(na, Gdram<bfloat16>(ga), m * k * 2, Dir::kGdram2Nram);
    memcpy(wb, Gdram<bfloat16>(gb), k * n * 2, Dir::kGdram2Wram);
    matmul(DType::kBFloat16, DType::kBFloat16, nc, na, wb, m, k, n, false, false);
    memcpy(Gdram<bfloat16>(gc), nc, m * n * 2, Dir::kNram2Gdram);
  });
  ASSERT_FALSE(r.faulted) << r.fault;
  const std::vector<bfloat16> c = download<bfloat16>(gc, m * n);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      float acc = 0;  // fp32 accumulation in order; these short sums are exact or nearly so
      double exact = 0;
      for (std::size_t p = 0; p < k; ++p) {
        acc += widen(a[i * k + p]) * widen(b[p * n + j]);
        exact += double(widen(a[i * k + p])) * widen(b[p * n + j]);
      }
      EXPECT_NEAR(widen(c[i * n + j]), exact, std::fabs(exact) * 0x1p-8 + 1e-6) << i << "," << j;
      EXPECT_EQ(widen(c[i * n + j]), widen(bfloat16(acc))) << i << "," << j;
    }
  EXPECT_EQ(r.macs_by_dtype[static_cast<std::size_t>(DType::kBFloat16)], m * k * n);
  EXPECT_EQ(r.macs_by_dtype[static_cast<std::size_t>(DType::kFloat16)], 0u);
  EXPECT_EQ(r.engines[static_cast<int>(Engine::kTfu)].cycles,
            compute::tfu_gemm_cycles(cfg(), DType::kBFloat16, m, k, n).cycles);
  EXPECT_GT(peak_macs_per_s(cfg(), DType::kBFloat16), 0.0);
  // The bf16 peak is the bf16 array's: cores x 4 x 4 x clock.
  EXPECT_DOUBLE_EQ(tfu_peak_macs_per_s(cfg(), DType::kBFloat16),
                   double(cfg().total_cores()) * 16 * cfg().core_clock_mhz * 1e6);
}

// VFU timing: bf16 has fp16's 16-bit lanes (tiny: 128 bytes -> 64 lanes, startup 10):
// add bf16 x 1000 = 10 + ceil(1000 / 64) = 26 cycles, as fp16.
TEST_F(Bf16Device, VfuElementwiseUsesSixteenBitLanes) {
  with_bf16();
  const KernelRecord r = run("bf16_add", [] {
    auto a = nram_alloc<bfloat16>(1000), b = nram_alloc<bfloat16>(1000);
    vec_fill(DType::kBFloat16, a, 1.5, 1000);
    vec_fill(DType::kBFloat16, b, 0.00390625, 1000);  // 2^-8: 1.5 + 2^-8 is a tie -> 1.5 (even)
    vec_binary(VecBinaryOp::kAdd, DType::kBFloat16, a, a, b, 1000);
    kassert(static_cast<float>(load(a + 999)) == 1.5f, "tie rounds to even");
  });
  ASSERT_FALSE(r.faulted) << r.fault;
  EXPECT_EQ(r.engines[static_cast<int>(Engine::kVfu)].cycles, 26u * 3u);
}

}  // namespace
}  // namespace mlusim::sim::testing
