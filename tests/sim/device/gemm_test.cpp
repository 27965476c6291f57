// The tiled GEMM example kernel end to end: numbers against a naive host reference, timing-only
// mode with identical cycles, determinism of cycles and trace bytes, and roofline.
#include <gtest/gtest.h>

#include <random>

#include "mlusim/sim/examples/tiled_gemm.h"
#include "mlusim/sim/roofline.h"
#include "mlusim/sim/trace.h"
#include "sim_fixture.h"

namespace mlusim::sim::testing {
namespace {

template <class T>
std::vector<T> random_matrix(std::size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<T> v(count);
  for (auto& x : v) x = static_cast<T>(d(rng));
  return v;
}

// Naive triple loop in double: independent of the simulator's Eigen path.
template <class T>
std::vector<double> reference_gemm(const std::vector<T>& a, const std::vector<T>& b, std::size_t m, std::size_t k,
                                   std::size_t n) {
  std::vector<double> c(m * n, 0.0);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t p = 0; p < k; ++p)
      for (std::size_t j = 0; j < n; ++j)
        c[i * n + j] += static_cast<double>(static_cast<float>(a[i * k + p])) * static_cast<float>(b[p * n + j]);
  return c;
}

class Gemm : public SimTest {
 protected:
  template <class T>
  KernelRecord gemm(std::size_t m, std::size_t k, std::size_t n, std::vector<T>* out, unsigned seed = 1) {
    const auto a = random_matrix<T>(m * k, seed), b = random_matrix<T>(k * n, seed + 1);
    examples::GemmArgs g{dmalloc(a.size() * sizeof(T)), dmalloc(b.size() * sizeof(T)), dmalloc(m * n * sizeof(T)), m, k,
                         n, DTypeOf<T>::value};
    upload(g.a, a);
    upload(g.b, b);
    upload(g.c, std::vector<T>(m * n, T(0)));
    const KernelRecord r = run("tiled_gemm", [g] { examples::tiled_gemm_kernel(g); }, {cfg().total_cores(), 1, 1});
    EXPECT_FALSE(r.faulted) << r.fault;
    if (out) *out = download<T>(g.c, m * n);
    reference_ = reference_gemm(a, b, m, k, n);
    return r;
  }
  std::vector<double> reference_;
};

TEST_F(Gemm, Fp32OddShapesMatchHostReference) {
  for (auto [m, k, n] : {std::tuple{37, 53, 29}, std::tuple{1, 200, 1}, std::tuple{130, 70, 150}}) {
    std::vector<float> c;
    gemm<float>(m, k, n, &c);
    for (std::size_t i = 0; i < c.size(); ++i)
      ASSERT_NEAR(c[i], reference_[i], 1e-4 * k) << m << "x" << k << "x" << n << " at " << i;
  }
}

// fp16 inputs, fp32 accumulation, one rounding to fp16 at the end: |err| <= 2^-11 |c| + 1e-3.
TEST_F(Gemm, Fp16MatchesHostReferenceWithinHalfPrecision) {
  std::vector<half> c;
  gemm<half>(64, 100, 48, &c);
  for (std::size_t i = 0; i < c.size(); ++i)
    ASSERT_NEAR(static_cast<float>(c[i]), reference_[i], std::abs(reference_[i]) / 1024.0 + 1e-3) << i;
}

// Halving NRAM changes the tiling (more tiles, more copies and intrinsics) and the cycles, not the
// numbers.
TEST_F(Gemm, SmallerNramChangesCountsNotNumbers) {
  std::vector<float> big, small;
  const KernelRecord r1 = gemm<float>(96, 96, 96, &big);
  build("tiny", {{"core.nram_bytes", "32KiB"}});
  const KernelRecord r2 = gemm<float>(96, 96, 96, &small);
  EXPECT_EQ(big, small);
  EXPECT_GT(r2.engines[static_cast<int>(Engine::kTfu)].intrinsics, r1.engines[static_cast<int>(Engine::kTfu)].intrinsics);
  EXPECT_NE(r1.cycles, r2.cycles);
}

TEST_F(Gemm, TimingOnlyModeGivesIdenticalCyclesWithoutArithmetic) {
  std::vector<float> functional, timing_only;
  const KernelRecord f = gemm<float>(64, 80, 72, &functional);
  build();  // fresh on-chip memories: nothing left over from the functional run
  device().set_functional(false);
  const KernelRecord t = gemm<float>(64, 80, 72, &timing_only);
  EXPECT_EQ(f.cycles, t.cycles);
  EXPECT_EQ(f.end_ps - f.start_ps, t.end_ps - t.start_ps);
  EXPECT_EQ(f.traffic.read_bytes, t.traffic.read_bytes);
  double nonzero = 0;
  for (float v : timing_only) nonzero += v != 0.0f;
  EXPECT_EQ(nonzero, 0) << "timing-only mode must skip the floating-point work";
}

TEST_F(Gemm, SameProgramSameCyclesAndTraceBytes) {
  auto once = [this] {
    build();
    TraceWriter& tw = Simulator::instance().trace();
    tw.begin(TraceLevel::kIntrinsics);
    const KernelRecord r = gemm<float>(48, 40, 56, nullptr);
    tw.end();
    return std::pair{r.cycles, tw.dump()};
  };
  const auto [c1, t1] = once();
  const auto [c2, t2] = once();
  EXPECT_EQ(c1, c2);
  EXPECT_GT(t1.size(), 1000u);
  EXPECT_EQ(t1, t2);
}

// Simulated time is never below the roofline bound: max(MACs / TFU peak, DRAM bytes / DRAM bw).
TEST_F(Gemm, NeverFasterThanRoofline) {
  for (auto [m, k, n] : {std::tuple{64, 64, 64}, std::tuple{33, 65, 17}, std::tuple{128, 16, 128}}) {
    const KernelRecord r = gemm<half>(m, k, n, nullptr);
    const double seconds = (r.end_ps - r.start_ps) * 1e-12;
    const double peak_macs = double(cfg().tfu_fp16.macs_per_cycle()) * cfg().total_cores() * cfg().core_clock_mhz * 1e6;
    const double min_dram_bytes = 2.0 * (m * k + k * n + m * n);
    EXPECT_GE(seconds, double(m) * k * n / peak_macs);
    EXPECT_GE(seconds, min_dram_bytes / (cfg().dram_bandwidth_gbps * 1e9));
  }
}

}  // namespace
}  // namespace mlusim::sim::testing

namespace mlusim::sim::testing {
namespace {

// Every preset runs GEMMs of odd shapes correctly and never below the roofline; MLU270's TFU has
// no fp16/fp32 array, so the kernel multiplies on the VFU there (and the roofline uses VFU peak).
class GemmPresets : public Gemm, public ::testing::WithParamInterface<const char*> {};

TEST_P(GemmPresets, OddShapesCorrectAndAboveRoofline) {
  build(GetParam());
  for (auto [m, k, n] : {std::tuple{67, 45, 129}, std::tuple{256, 31, 64}}) {
    std::vector<half> c;
    const KernelRecord r = gemm<half>(m, k, n, &c);
    for (std::size_t i = 0; i < c.size(); ++i)
      ASSERT_NEAR(static_cast<float>(c[i]), reference_[i], std::abs(reference_[i]) / 1024.0 + 1e-3) << i;
    MacsByDtype macs{};
    macs[static_cast<std::size_t>(DType::kFloat16)] = std::uint64_t(m) * k * n;
    const std::uint64_t min_bytes = 2ull * (m * k + k * n + m * n);
    EXPECT_GE(r.end_ps - r.start_ps, roofline_bound_ps(cfg(), macs, min_bytes)) << GetParam();
    const bool tfu = cfg().tfu_fp16.supported();
    EXPECT_EQ(r.engines[static_cast<int>(Engine::kTfu)].intrinsics > 0, tfu) << GetParam();
  }
}

INSTANTIATE_TEST_SUITE_P(AllPresets, GemmPresets, ::testing::Values("tiny", "mlu270", "mlu370-x4"));

}  // namespace
}  // namespace mlusim::sim::testing
