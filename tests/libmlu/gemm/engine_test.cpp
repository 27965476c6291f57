// The GEMM engine under forced tilings on the tiny preset: every staging mode (X through the SRAM
// ring, Y through SRAM panels, direct loads), accumulators streamed through SRAM, split depth with
// the reduction kernel, and the TFU intrinsic count each plan implies. Also: halving NRAM and WRAM
// changes the intrinsic count, never the numbers (beyond fp32 summation order); taller strips
// where copy latency is exposed; the VFU path on a preset without an fp TFU.
#include <numeric>

#include "common/mlu_test.h"
#include "gemm/device_model.h"
#include "gemm/gemm_engine.h"
#include "gemm/matrix_operands.h"

namespace mlusim::mlu::testing {
namespace {

using gemm::BatchIndexer;

class EngineTest : public MluTest {
 protected:
  // C = A x B for row-major A [m, k], B [k, n] (fp32), through a job with `plan` (schedule rebuilt).
  std::vector<float> run(std::size_t m, std::size_t k, std::size_t n, gemm::GemmPlan* plan, bool force_plan,
                         std::uint64_t* tfu_intrinsics) {
    a_ = random<float>(m * k, 1);
    b_ = random<float>(k * n, 2);
    void* pa = to_device(a_);
    void* pb = to_device(b_);
    void* pc = dalloc(m * n * 4);
    auto job = std::make_shared<gemm::EngineJob>();
    job->problem.rows = m, job->problem.cols = n, job->problem.depth = k;
    job->x =
        std::make_shared<gemm::MatrixRows>(addr(pa), DType::kFloat32, static_cast<std::int64_t>(k), BatchIndexer{});
    job->y =
        std::make_shared<gemm::MatrixCols>(addr(pb), DType::kFloat32, static_cast<std::int64_t>(n), 1, BatchIndexer{});
    const gemm::DeviceModel d = gemm::device_model(h(), DType::kFloat32);
    if (force_plan)
      gemm::schedule_plan(job->problem, d, *job->y, plan);
    else
      *plan = gemm::plan_gemm(job->problem, d, *job->y);
    job->plan = *plan;
    job->out.dtype = DType::kFloat32;
    job->out.base = addr(pc);
    job->out.row_stride = static_cast<std::int64_t>(n);
    const std::size_t ws = gemm::splitk_workspace_bytes(job->problem, job->plan);
    void* pws = ws ? dalloc(ws) : nullptr;
    EXPECT_EQ(cnrtQueueSync(h().queue()), cnrtSuccess);
    EXPECT_EQ(mlusimResetStats(0), cnrtSuccess);
    std::uint32_t kernels = 0;
    EXPECT_EQ(gemm::run_engine(h(), "engine_test", job, pws, ws, &kernels), Status::kSuccess) << last_error_detail();
    std::vector<float> c = from_device<float>(pc, m * n);
    mlusimDeviceStats_t stats{};
    EXPECT_EQ(mlusimGetDeviceStats(0, &stats), cnrtSuccess);
    *tfu_intrinsics = stats.engine_intrinsics[2];
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        double want = 0;
        for (std::size_t p = 0; p < k; ++p) want += static_cast<double>(a_[i * k + p]) * b_[p * n + j];
        EXPECT_NEAR(c[i * n + j], want, 1e-4 * (1 + std::fabs(want))) << i << "," << j;
      }
    return c;
  }

  // Intrinsics the plan implies: per cluster, tile, depth step and core, one per strip of rows.
  static std::uint64_t expected_intrinsics(const gemm::GemmProblem& p, const gemm::GemmPlan& plan) {
    std::uint64_t count = 0;
    for (const auto& tiles : plan.schedule)
      for (const gemm::TileTask& t : tiles) {
        const bool first = &t == &tiles.front();
        const std::size_t steps = gemm::depth_steps(p, plan.kc, t.k_begin, t.k_end, first).size();
        for (std::size_t q = 0; q < plan.pr * plan.pc; ++q) {
          const gemm::Span r = gemm::split_units(t.nr, plan.pr, plan.row_unit, q / plan.pc);
          const gemm::Span c = gemm::split_units(t.nc, plan.pc, plan.col_unit, q % plan.pc);
          if (c.size > 0) count += steps * ((r.size + plan.ms - 1) / plan.ms);
        }
      }
    return count;
  }

  static std::uint64_t addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }
  std::vector<float> a_, b_;
};

gemm::GemmPlan forced(unsigned pr, unsigned pc, std::size_t mt, std::size_t nt, std::size_t a_strips, std::size_t kc,
                      std::size_t ksplit) {
  gemm::GemmPlan p;
  p.pr = pr, p.pc = pc, p.ms = 4, p.mt = mt, p.nt = nt, p.a_strips = a_strips, p.kc = kc;
  p.row_unit = 4, p.col_unit = 4;  // the tiny preset's fp32 array is 4 x 4
  p.x_staged = pc > 1, p.y_staged = pr > 1, p.ksplit = ksplit;
  return p;
}

TEST_F(EngineTest, ForcedTilingsComputeTheSameProduct) {
  const std::size_t m = 37, k = 300, n = 29;
  const gemm::GemmProblem problem{1, m, n, k};
  const gemm::GemmPlan plans[] = {
      forced(1, 4, 12, 8, 3, 128, 1),  // X through the SRAM ring, Y straight to WRAM
      forced(1, 4, 20, 8, 2, 64, 1),   // three of five strips stream through SRAM
      forced(2, 2, 8, 16, 2, 100, 1),  // both operands staged
      forced(4, 1, 8, 32, 2, 96, 1),   // Y staged, X straight to NRAM
      forced(1, 4, 12, 8, 3, 64, 3),   // depth split over clusters, then reduced
  };
  for (gemm::GemmPlan plan : plans) {
    std::uint64_t intrinsics = 0;
    run(m, k, n, &plan, true, &intrinsics);
    EXPECT_EQ(intrinsics, expected_intrinsics(problem, plan)) << plan.str();
  }
}

TEST_F(EngineTest, HalvingOnChipMemoryChangesIntrinsicsNotNumbers) {
  gemm::GemmPlan plan;
  std::uint64_t full = 0, half = 0;
  const std::vector<float> c_full = run(160, 600, 96, &plan, false, &full);
  EXPECT_EQ(full, expected_intrinsics(gemm::GemmProblem{1, 160, 96, 600}, plan));
  const char* halved[] = {"core.nram_bytes=32KiB", "core.wram_bytes=32KiB"};
  ASSERT_EQ(mlusimLoadConfigWithOverrides("tiny", halved, 2), cnrtSuccess);
  Handle::destroy(handle_);
  allocations_.clear();
  ASSERT_EQ(Handle::create(&handle_), Status::kSuccess);
  const std::vector<float> c_half = run(160, 600, 96, &plan, false, &half);
  EXPECT_EQ(half, expected_intrinsics(gemm::GemmProblem{1, 160, 96, 600}, plan));
  EXPECT_NE(full, half);
  // Both match the reference (checked in run); they differ at most by fp32 summation order.
  for (std::size_t i = 0; i < c_full.size(); ++i) EXPECT_NEAR(c_full[i], c_half[i], 1e-4 * (1 + std::fabs(c_full[i])));
}

// Output-stationary strips of 2R or 4R rows (one intrinsic of several fold rows each): the same
// product, one intrinsic per strip.
TEST_F(EngineTest, TallStripsComputeTheSameProduct) {
  const std::size_t m = 37, k = 300, n = 29;
  // X direct or through the SRAM ring; all strips in NRAM, or three of five streamed through SRAM.
  for (gemm::GemmPlan plan : {forced(4, 1, 16, 32, 2, 96, 1), forced(1, 4, 16, 8, 2, 128, 1),
                              forced(1, 4, 40, 8, 2, 128, 1)}) {
    plan.ms = 8;
    std::uint64_t intrinsics = 0;
    run(m, k, n, &plan, true, &intrinsics);
    EXPECT_EQ(intrinsics, expected_intrinsics(gemm::GemmProblem{1, m, n, k}, plan)) << plan.str();
  }
}

// The planner takes taller strips only where an R-row strip's intrinsic is shorter than the
// latency of the copy feeding the next strip (gemm_plan.cpp). On mlu370-x4 a 512^3 fp32 GEMM
// keeps 16-row strips (its estimate alone would take 64: an unoverlapped first load and last
// epilogue it does not count); on tiny with copies that wait 5000 cycles (DRAM and on-chip alike)
// the strips grow, and the numbers stay right.
TEST_F(EngineTest, TallerStripsOnlyWhereTheCopyLatencyIsExposed) {
  auto reload = [this](const char* preset, std::vector<const char*> sets) {
    ASSERT_EQ(mlusimLoadConfigWithOverrides(preset, sets.data(), sets.size()), cnrtSuccess);
    Handle::destroy(handle_);
    allocations_.clear();
    ASSERT_EQ(Handle::create(&handle_), Status::kSuccess);
  };
  gemm::GemmPlan plan;
  std::uint64_t intrinsics = 0;
  reload("mlu370-x4", {});
  run(512, 512, 512, &plan, false, &intrinsics);
  EXPECT_EQ(plan.ms, gemm::device_model(h(), DType::kFloat32).tfu_rows) << plan.str();
  reload("tiny", {"dram.latency_ns=5000", "dma.move_latency_cycles=5000"});
  run(160, 600, 96, &plan, false, &intrinsics);
  EXPECT_GT(plan.ms, 4u) << plan.str();  // tiny's fp32 array is 4 x 4
  EXPECT_EQ(intrinsics, expected_intrinsics(gemm::GemmProblem{1, 160, 96, 600}, plan));
}

TEST_F(EngineTest, VfuPathWithoutAnFpTfu) {
  ASSERT_EQ(mlusimLoadConfig("mlu270"), cnrtSuccess);
  Handle::destroy(handle_);
  allocations_.clear();
  ASSERT_EQ(Handle::create(&handle_), Status::kSuccess);
  gemm::GemmPlan plan;
  std::uint64_t intrinsics = 0;
  run(45, 70, 33, &plan, false, &intrinsics);
  EXPECT_FALSE(plan.on_tfu);
  EXPECT_EQ(intrinsics, 0u);  // vec_matmul on the VFU, nothing on the TFU
}

}  // namespace
}  // namespace mlusim::mlu::testing
