// Compute engine formulas (VFU, TFU, scalar) as seen by a kernel, on tiny.yaml. Expected cycles
// are written out from each formula's doc comment with tiny's numbers.
#include <algorithm>
#include <functional>

#include <gtest/gtest.h>

#include "compute/tfu_timing.h"
#include "mlusim/sim/engine_costs.h"
#include "mlusim/sim/kernel_api.h"
#include "sim_fixture.h"

namespace mlusim::sim::testing {
namespace {

using namespace mlusim::dev;

class EngineTiming : public SimTest {
 protected:
  // One fp32 conv2d intrinsic: a 6x6 input of `cin` channels, 3x3 kernel, 8 output channels.
  KernelRecord conv_6x6(std::uint32_t cin, bool weights_k_major = false) {
    return run("conv", [cin, weights_k_major] {
      auto in = nram_alloc<float>(6 * 6 * cin), out = nram_alloc<float>(4 * 4 * 8);
      auto w = wram_alloc<float>(8 * 3 * 3 * cin);
      ConvParams p;
      p.in_h = p.in_w = 6, p.in_c = cin, p.out_c = 8, p.k_h = p.k_w = 3;
      p.weights_k_major = weights_k_major;
      conv2d(DType::kFloat32, DType::kFloat32, out, in, w, p, false);
    });
  }
};

// VFU 128 bytes wide: 32 fp32 lanes, 64 fp16 lanes; startup 10 cycles; transcendental ops take
// 4 passes. add fp32 x 1000: 10 + ceil(1000/32) = 42. exp fp16 x 1000: 10 + 4*ceil(1000/64) = 74.
TEST_F(EngineTiming, VfuElementwiseFormula) {
  const KernelRecord add = run("add", [] {
    auto a = nram_alloc<float>(1000), b = nram_alloc<float>(1000);
    vec_binary(VecBinaryOp::kAdd, DType::kFloat32, a, a, b, 1000);
  });
  ASSERT_FALSE(add.faulted) << add.fault;
  EXPECT_EQ(add.cycles, 42u);
  EXPECT_EQ(add.engines[static_cast<int>(Engine::kVfu)].cycles, 42u);
  const KernelRecord ex = run("exp", [] {
    auto a = nram_alloc<half>(1000);
    vec_unary(VecUnaryOp::kExp, DType::kFloat16, a, a, 1000);
  });
  EXPECT_EQ(ex.cycles, 74u);
}

// TFU fp32 array 4x4, output-stationary, no fold overlap (SCALE-Sim v2 semantics):
// M=K=N=8: folds = 2*2, per fold K + R + C - 2 = 14, cycles = 4*14 - 1 = 55.
TEST_F(EngineTiming, TfuMatmulMatchesSystolicFormula) {
  ASSERT_EQ(cfg().tfu_dataflow, Dataflow::kOutputStationary);
  ASSERT_FALSE(cfg().tfu_fold_overlap);
  const KernelRecord r = run("mm", [] {
    auto a = nram_alloc<float>(64), c = nram_alloc<float>(64);
    auto b = wram_alloc<float>(64);
    matmul(DType::kFloat32, DType::kFloat32, c, a, b, 8, 8, 8, false, false);
  });
  ASSERT_FALSE(r.faulted) << r.fault;
  EXPECT_EQ(r.cycles, 55u);
  EXPECT_EQ(r.engines[static_cast<int>(Engine::kTfu)].cycles, 55u);
  EXPECT_EQ(r.macs, 512u);
}

// A stored depth-major (matmul_a_k_major): the same cycles and MACs as matmul, the product of
// the transpose of what A holds, and its A range checked like matmul's (M x K elements).
TEST_F(EngineTiming, TfuMatmulAKMajorTakesMatmulsCyclesAndReadsATransposed) {
  const std::uint64_t a = dmalloc(6 * 5 * 4), b = dmalloc(5 * 3 * 4), c = dmalloc(6 * 3 * 4);
  std::vector<float> av(30), bv(15);
  for (std::size_t i = 0; i < av.size(); ++i) av[i] = static_cast<float>(i % 7) - 3.0f;  // A^T [5][6]
  for (std::size_t i = 0; i < bv.size(); ++i) bv[i] = static_cast<float>(i % 4) + 0.5f;   // B [5][3]
  upload(a, av);
  upload(b, bv);
  const KernelRecord r = run("mm_akm", [a, b, c] {
    auto an = nram_alloc<float>(30), cn = nram_alloc<float>(18);
    auto bw = wram_alloc<float>(15);
    memcpy(an, Gdram<float>(a), 30 * 4, Dir::kGdram2Nram);
    memcpy(bw, Gdram<float>(b), 15 * 4, Dir::kGdram2Wram);
    matmul_a_k_major(DType::kFloat32, DType::kFloat32, cn, an, bw, 6, 5, 3, false, false);
    memcpy(Gdram<float>(c), cn, 18 * 4, Dir::kNram2Gdram);
  });
  ASSERT_FALSE(r.faulted) << r.fault;
  const auto want = compute::tfu_gemm_cycles(cfg().tfu_fp32, cfg().tfu_dataflow, cfg().tfu_fold_overlap, 6, 5, 3);
  EXPECT_EQ(r.engines[static_cast<int>(Engine::kTfu)].cycles, want.cycles);
  EXPECT_EQ(r.macs, 90u);
  const std::vector<float> got = download<float>(c, 18);
  for (std::size_t i = 0; i < 6; ++i)
    for (std::size_t j = 0; j < 3; ++j) {
      double v = 0;
      for (std::size_t p = 0; p < 5; ++p) v += double(av[p * 6 + i]) * bv[p * 3 + j];
      EXPECT_FLOAT_EQ(got[i * 3 + j], static_cast<float>(v)) << i << "," << j;
    }
  const KernelRecord oob = run("mm_akm_oob", [] {
    // A (4 x 8 floats) runs past the end of tiny's 64 KiB NRAM.
    const Nram<float> c(std::uint64_t{0}), a(std::uint64_t{64 * 1024 - 64});
    matmul_a_k_major(DType::kFloat32, DType::kFloat32, c, a, Wram<float>(std::uint64_t{0}), 4, 8, 4, false, false);
  });
  ASSERT_TRUE(oob.faulted);
  EXPECT_NE(oob.fault.find("matmul A"), std::string::npos) << oob.fault;
}

// Each intrinsic's time is its own formula, for odd shapes and both dataflows, with fold overlap.
TEST_F(EngineTiming, TfuCyclesEqualTheFormulaForOddShapes) {
  for (const char* df : {"output_stationary", "weight_stationary"}) {
    for (const char* overlap : {"false", "true"}) {
      build("tiny", {{"tfu.dataflow", df}, {"tfu.fold_overlap", overlap}});
      for (auto [m, k, n] : {std::tuple{5, 7, 3}, std::tuple{17, 9, 33}, std::tuple{1, 64, 1}}) {
        const KernelRecord r = run("mm", [m = m, k = k, n = n] {
          auto a = nram_alloc<half>(m * k);
          auto c = nram_alloc<float>(m * n);
          auto b = wram_alloc<half>(k * n);
          matmul(DType::kFloat16, DType::kFloat32, c, a, b, m, k, n, false, false);
        });
        ASSERT_FALSE(r.faulted) << r.fault;
        const auto want = compute::tfu_gemm_cycles(cfg().tfu_fp16, cfg().tfu_dataflow, cfg().tfu_fold_overlap, m, k, n);
        EXPECT_EQ(r.cycles, want.cycles) << df << " overlap=" << overlap << " " << m << "x" << k << "x" << n;
        // never faster than the array's peak: M*K*N / (R*C)
        EXPECT_GE(r.cycles * 64, static_cast<std::uint64_t>(m * k * n));
      }
    }
  }
}

// tfu.arrays: 2 identical arrays share an intrinsic's folds. fp32 4x4, OS, no overlap, M=K=N=8:
// 4 folds of K + R + C - 2 = 14; two per array -> 2 * 14 - 1 = 27 (one array: 55, above).
TEST_F(EngineTiming, TfuWithTwoArraysSplitsTheFolds) {
  build("tiny", {{"tfu.arrays", "2"}});
  ASSERT_EQ(cfg().tfu_fp32.count, 2u);
  const KernelRecord r = run("mm", [] {
    auto a = nram_alloc<float>(64), c = nram_alloc<float>(64);
    auto b = wram_alloc<float>(64);
    matmul(DType::kFloat32, DType::kFloat32, c, a, b, 8, 8, 8, false, false);
  });
  ASSERT_FALSE(r.faulted) << r.fault;
  EXPECT_EQ(r.cycles, 27u);
  EXPECT_EQ(r.engines[static_cast<int>(Engine::kTfu)].cycles, 27u);
  EXPECT_EQ(r.macs, 512u);
  // The conv intrinsic too: 6x6 input, 3x3 kernel, 4 -> 8 channels: M = 16, K = 36, N = 8 on 4x4:
  // 4 x 2 = 8 folds of 36 + 4 + 4 - 2 = 42; 4 per array -> 4 * 42 - 1 = 167.
  const KernelRecord conv = conv_6x6(4);
  ASSERT_FALSE(conv.faulted) << conv.fault;
  EXPECT_EQ(conv.cycles, 167u);
  // Depth-major weights ([KH,KW,C,OC]) change only the WRAM read order.
  const KernelRecord k_major = conv_6x6(4, /*weights_k_major=*/true);
  ASSERT_FALSE(k_major.faulted) << k_major.fault;
  EXPECT_EQ(k_major.cycles, 167u);
}

// tfu.intrinsic_overlap (tfu_timing.h, "Back-to-back intrinsics"): an intrinsic issued the moment the
// last one ends hides that one's drain. fp32 4x4 OS with fold overlap, M = N = 8, K = 100: 4 folds,
// per_fold = 100 + 4 + 4 - 2 = 106, cycles = 106 + 3 x 100 - 1 = 405, drain = 106 - 100 - 1 = 5:
// two chained cost as much as one intrinsic of their 8 folds, 106 + 7 x 100 - 1 = 805.
class TfuIntrinsicOverlap : public EngineTiming {
 protected:
  static constexpr std::uint64_t kOne = 405, kDrain = 5;
  // No L2 model: a copy takes as long in every run, whatever the runs before left cached.
  void SetUp() override {
    build("tiny", {{"tfu.fold_overlap", "true"}, {"tfu.intrinsic_overlap", "true"}, {"l2.cache", "false"}});
  }
  // Two 8 x 100 x 8 matmuls; `between` runs after the first. The second's A: its own buffer, or
  // the first's C (a_is_c); it accumulates into the first's C when `accumulate`.
  KernelRecord two(bool a_is_c, bool accumulate, std::function<void()> between = {}) {
    return run("mm2", [=] {
      auto a = nram_alloc<float>(8 * 100), a2 = nram_alloc<float>(8 * 100), c = nram_alloc<float>(64);
      auto c2 = nram_alloc<float>(64);
      auto b = wram_alloc<float>(100 * 8);
      matmul(DType::kFloat32, DType::kFloat32, c, a, b, 8, 100, 8, false, false);
      if (between) between();
      matmul(DType::kFloat32, DType::kFloat32, accumulate ? c : c2, a_is_c ? Addr(c) : Addr(a2), b, 8,
             a_is_c ? 8 : 100, 8, false, accumulate);
    });
  }
};

TEST_F(TfuIntrinsicOverlap, BackToBackHidesTheDrain) {
  KernelRecord r = two(false, false);
  ASSERT_FALSE(r.faulted) << r.fault;
  EXPECT_EQ(r.cycles, 2 * kOne - kDrain);
  EXPECT_EQ(r.engines[static_cast<int>(Engine::kTfu)].cycles, 2 * kOne - kDrain);
  EXPECT_EQ(2 * kOne - kDrain, compute::tfu_gemm_cycles(cfg().tfu_fp32, cfg().tfu_dataflow, true, 16, 100, 8).cycles);
  // What planners are told of it (engine_costs.h): a 1-tap conv intrinsic is the same product,
  // and the chained one adds its cycles less the drain.
  const std::uint64_t plain = tfu_conv_intrinsic_cycles(cfg(), DType::kFloat32, 8, 1, 100, 8);
  const std::uint64_t chained = tfu_conv_intrinsic_chained_cycles(cfg(), DType::kFloat32, 8, 1, 100, 8);
  EXPECT_EQ(plain, kOne);
  EXPECT_EQ(chained, kOne - kDrain);
  EXPECT_EQ(r.cycles, plain + chained);
  // Accumulating into the last one's C does not wait for it (sums added as they drain).
  r = two(false, true);
  EXPECT_EQ(r.cycles, 2 * kOne - kDrain);
}

TEST_F(TfuIntrinsicOverlap, WhatBreaksTheChain) {
  // Reading the last one's output as A: it waits for the drain. 8 x 8 x 8: 4 folds of 8 + 6,
  // 14 + 3 x 8 - 1 = 37.
  KernelRecord r = two(true, false);
  ASSERT_FALSE(r.faulted) << r.fault;
  EXPECT_EQ(r.cycles, kOne + 37);
  // A VFU op between them (add fp32 x 32: 10 + 1 cycles).
  r = two(false, false, [] {
    auto v = nram_alloc<float>(32);
    vec_binary(VecBinaryOp::kAdd, DType::kFloat32, v, v, v, 32);
  });
  EXPECT_EQ(r.cycles, 2 * kOne + 11);
  // An intrinsic on another array (fp16 after fp32): that array has nothing to hide behind.
  r = run("mm_dtypes", [] {
    auto a = nram_alloc<float>(8 * 100), c = nram_alloc<float>(64), c2 = nram_alloc<float>(64);
    auto a16 = nram_alloc<half>(8 * 100);
    auto b = wram_alloc<float>(100 * 8);
    auto b16 = wram_alloc<half>(100 * 8);
    matmul(DType::kFloat32, DType::kFloat32, c, a, b, 8, 100, 8, false, false);
    matmul(DType::kFloat16, DType::kFloat32, c2, a16, b16, 8, 100, 8, false, false);
  });
  ASSERT_FALSE(r.faulted) << r.fault;
  EXPECT_EQ(r.cycles, kOne + compute::tfu_gemm_cycles(cfg().tfu_fp16, cfg().tfu_dataflow, true, 8, 100, 8).cycles);
  // The key off: every intrinsic pays its drain, and planners are told so.
  build("tiny", {{"tfu.fold_overlap", "true"}});
  r = two(false, false);
  EXPECT_EQ(r.cycles, 2 * kOne);
  EXPECT_EQ(tfu_conv_intrinsic_chained_cycles(cfg(), DType::kFloat32, 8, 1, 100, 8), kOne);
}

// The second intrinsic's A loaded by a copy issued before the first: it enters the array when the
// copy has landed, at the earliest kDrain cycles before the first ends; a copy landing after the
// first ended stalls the core (sync_io) and nothing is hidden. Copies of D cycles around kOne (the
// copy's own time measured alone; the sizes found by a scan, not written down).
TEST_F(TfuIntrinsicOverlap, OperandsReadyLateHideLess) {
  constexpr std::size_t kMaxBytes = 16384;
  const std::uint64_t src = dmalloc(kMaxBytes);
  auto copy_cycles = [&](std::size_t bytes) {
    return run("copy", [=] {
             auto a2 = nram_alloc<float>(kMaxBytes / 4);
             memcpy_async(a2, Gdram<float>(src), bytes, Dir::kGdram2Nram);
             sync_io();
           }).cycles;
  };
  std::size_t edge = 64;  // the first size whose copy lands inside the drain or later
  while (edge < kMaxBytes && copy_cycles(edge) <= kOne - kDrain) edge += 64;
  ASSERT_LT(edge, kMaxBytes) << "no copy as long as an intrinsic";
  int partial = 0;
  for (std::size_t bytes = edge - 128; bytes <= edge + 128; bytes += 8) {
    const std::uint64_t d = copy_cycles(bytes);
    const KernelRecord r = run("mm2", [=] {
      auto a = nram_alloc<float>(8 * 100), a2 = nram_alloc<float>(kMaxBytes / 4), c = nram_alloc<float>(64);
      auto c2 = nram_alloc<float>(64);
      auto b = wram_alloc<float>(100 * 8);
      memcpy_async(a2, Gdram<float>(src), bytes, Dir::kGdram2Nram);
      matmul(DType::kFloat32, DType::kFloat32, c, a, b, 8, 100, 8, false, false);
      sync_io();
      matmul(DType::kFloat32, DType::kFloat32, c2, a2, b, 8, 100, 8, false, false);
    });
    ASSERT_FALSE(r.faulted) << r.fault;
    const std::uint64_t want = d > kOne ? d + kOne : 2 * kOne - std::min(kDrain, kOne - d);
    EXPECT_EQ(r.cycles, want) << bytes << " bytes, copy " << d << " cycles";
    partial += d > kOne - kDrain && d < kOne;
  }
  EXPECT_GT(partial, 0) << "no copy landed inside the drain; move the byte range";
}

// tfu.conv_depth_per_tap: the conv intrinsic's depth folds tap by tap on a weight-stationary array.
// 6x6 input, 3x3 kernel, 2 -> 8 channels on fp32 4x4, no overlap: M = 16, per fold M + 2R + C - 2
// = 26; im2col K = 18: 5 x 2 = 10 folds, 10 * 26 - 1 = 259; per tap 9 x ceil(2 / 4) x 2 = 18
// folds, 18 * 26 - 1 = 467. Output-stationary streams K: the key changes nothing there.
TEST_F(EngineTiming, TfuConvDepthPerTap) {
  auto conv_cycles = [this] {
    const KernelRecord r = conv_6x6(2);
    EXPECT_FALSE(r.faulted) << r.fault;
    EXPECT_EQ(r.macs, 16u * 18u * 8u);
    return r.cycles;
  };
  build("tiny", {{"tfu.dataflow", "weight_stationary"}});
  EXPECT_EQ(conv_cycles(), 259u);
  build("tiny", {{"tfu.dataflow", "weight_stationary"}, {"tfu.conv_depth_per_tap", "true"}});
  EXPECT_EQ(conv_cycles(), 467u);
  build("tiny", {{"tfu.conv_depth_per_tap", "true"}});
  const std::uint64_t os_per_tap = conv_cycles();
  build("tiny", {});
  EXPECT_EQ(conv_cycles(), os_per_tap);
}

// Scalar unit: on-chip access = scalar.onchip_access_cycles; GDRAM adds one DRAM latency.
TEST_F(EngineTiming, ScalarLoadsAndStores) {
  const std::uint64_t g = dmalloc(64);
  upload(g, std::vector<std::int32_t>{41});
  std::int32_t seen = 0;
  const KernelRecord r = run("scalar", [g, &seen] {
    auto n = nram_alloc<std::int32_t>(1);
    const std::int32_t v = load(Gdram<std::int32_t>(g));
    store(n, v + 1);
    seen = load(n);
  });
  ASSERT_FALSE(r.faulted) << r.fault;
  EXPECT_EQ(seen, 42);
  const std::uint64_t onchip = cfg().scalar_onchip_cycles;
  EXPECT_EQ(r.cycles, 3 * onchip + 100);  // 3 accesses + one 100 ns DRAM round trip
  EXPECT_EQ(r.engines[static_cast<int>(Engine::kScalar)].intrinsics, 3u);
}

// A VFU op on a dtype the VFU lacks faults the kernel with op and dtype named.
TEST_F(EngineTiming, UnsupportedDtypeFaults) {
  const KernelRecord r = run("exp_int", [] {
    auto a = nram_alloc<std::int32_t>(16);
    vec_unary(VecUnaryOp::kExp, DType::kInt32, a, a, 16);
  });
  ASSERT_TRUE(r.faulted);
  EXPECT_NE(r.fault.find("exp"), std::string::npos) << r.fault;
  EXPECT_NE(r.fault.find("int32"), std::string::npos) << r.fault;
}

// A TFU without an fp32 array (MLU270-like) faults fp32 matmul and names the config key.
TEST_F(EngineTiming, TfuWithoutArrayForDtypeFaults) {
  build("tiny", {{"tfu.fp32.rows", "0"}, {"tfu.fp32.cols", "0"}});
  const KernelRecord r = run("mm", [] {
    auto a = nram_alloc<float>(16), c = nram_alloc<float>(16);
    auto b = wram_alloc<float>(16);
    matmul(DType::kFloat32, DType::kFloat32, c, a, b, 4, 4, 4, false, false);
  });
  ASSERT_TRUE(r.faulted);
  EXPECT_NE(r.fault.find("tfu.fp32"), std::string::npos) << r.fault;
}

}  // namespace
}  // namespace mlusim::sim::testing
