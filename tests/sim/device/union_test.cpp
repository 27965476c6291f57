// UNION launches: memory cores stage data in SRAM for their cluster, barriers order the phases.
#include <gtest/gtest.h>

#include "mlusim/sim/kernel_api.h"
#include "sim_fixture.h"

namespace mlusim::sim::testing {
namespace {

using namespace mlusim::dev;

class Union : public SimTest {};

// Each cluster's memory core loads 4 x 256 floats into SRAM; after sync_cluster each compute core
// takes its quarter, adds its global task id, and stores it back.
TEST_F(Union, MemoryCoreStagesThroughSramForItsCluster) {
  constexpr std::size_t kPerCore = 256;
  const std::uint64_t in = dmalloc(8 * kPerCore * 4), out = dmalloc(8 * kPerCore * 4);
  std::vector<float> host(8 * kPerCore);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i);
  upload(in, host);
  const KernelRecord r = run("staged", [in, out] {
    auto shared = sram_alloc<float>(4 * kPerCore);
    const std::uint64_t cluster_base = (task_id() / 4) * 4 * kPerCore * 4;  // memcore: first task of cluster
    if (is_memory_core()) {
      memcpy(shared, Addr{Space::kGdram, in + cluster_base}, 4 * kPerCore * 4, Dir::kGdram2Sram);
      sync_cluster();
      return;
    }
    sync_cluster();
    auto buf = nram_alloc<float>(kPerCore);
    memcpy(buf, shared + core_id() * kPerCore, kPerCore * 4, Dir::kSram2Nram);
    vec_binary_scalar(VecBinaryOp::kAdd, DType::kFloat32, buf, buf, static_cast<double>(task_id()), kPerCore);
    memcpy(Addr{Space::kGdram, out + task_id() * kPerCore * 4}, buf, kPerCore * 4, Dir::kNram2Gdram);
  }, {8, 1, 1}, FunctionType::kUnion1);
  ASSERT_FALSE(r.faulted) << r.fault;
  const auto got = download<float>(out, 8 * kPerCore);
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], host[i] + static_cast<float>(i / kPerCore)) << i;
  EXPECT_EQ(r.engines[static_cast<int>(Engine::kMemcoreDma)].intrinsics, 2u);  // one per cluster
  EXPECT_EQ(r.engines[static_cast<int>(Engine::kMoveDma)].intrinsics, 8u);
}

// sync_all spans both clusters of a UNION2 group: a value written by cluster 0 before the barrier
// is seen by cluster 1 after it (through GDRAM).
TEST_F(Union, SyncAllOrdersClustersOfAGroup) {
  const std::uint64_t flag = dmalloc(64);
  upload(flag, std::vector<std::int32_t>{0});
  std::vector<std::int32_t> seen(8, -1);
  const KernelRecord r = run("sync_all", [flag, &seen] {
    if (is_memory_core()) {
      sync_all();
      return;
    }
    if (cluster_id() == 0 && core_id() == 0) {
      auto n = nram_alloc<std::int32_t>(32);
      vec_fill(DType::kInt32, n, 0.0, 32);  // take some time before writing
      store(Gdram<std::int32_t>(flag), 1234);
    }
    sync_all();
    seen[task_id()] = load(Gdram<std::int32_t>(flag));
  }, {8, 1, 1}, FunctionType::kUnion2);
  ASSERT_FALSE(r.faulted) << r.fault;
  for (std::int32_t v : seen) EXPECT_EQ(v, 1234);
}

// A UNION1 launch with 4 groups on 2 clusters runs two groups at a time; ids are consistent.
TEST_F(Union, GroupsQueueForWholeClusters) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> ids;  // (task_id, cluster_dim)
  const KernelRecord r = run("groups", [&ids] {
    if (is_memory_core()) return;
    ids.emplace_back(task_id(), cluster_dim());
  }, {16, 1, 1}, FunctionType::kUnion1);
  ASSERT_FALSE(r.faulted) << r.fault;
  ASSERT_EQ(ids.size(), 16u);
  std::vector<bool> seen(16, false);
  for (auto [t, cd] : ids) {
    EXPECT_EQ(cd, 1u);
    seen[t] = true;
  }
  for (bool s : seen) EXPECT_TRUE(s);
}

// The device can be rebuilt from a new config in the same process.
TEST_F(Union, RebuildFromANewConfig) {
  build("tiny", {{"topology.clusters", "1"}});
  EXPECT_TRUE(device().validate_launch(KernelLaunch{"k", [] {}, {8, 1, 1}, FunctionType::kUnion2}).has_value());
  const KernelRecord r = run("one cluster", [] {}, {4, 1, 1}, FunctionType::kUnion1);
  EXPECT_FALSE(r.faulted) << r.fault;
  build("tiny");
  const KernelRecord r2 = run("two clusters", [] {}, {8, 1, 1}, FunctionType::kUnion2);
  EXPECT_FALSE(r2.faulted) << r2.fault;
}

}  // namespace
}  // namespace mlusim::sim::testing
