// Peer copies over the interconnect (sim/src/interconnect/interconnect.h): a ring routes the
// short way and pays the link latency per hop, copies that share a link share its bandwidth, a
// full mesh does not, chips of different hosts use their NICs, and a system without a path stages
// through the host. Times are checked against the documented formula on the tiny preset.
#include <string>
#include <vector>

#include "driver_test.h"

namespace mlusim::driver::testing {
namespace {

using InterconnectTest = DriverTest;

constexpr double kDramLatency = 100;  // tiny.yaml dram.latency_ns

// Allocates `bytes` on every device.
std::vector<void*> alloc_all(int devices, std::size_t bytes) {
  std::vector<void*> p;
  for (int d = 0; d < devices; ++d) {
    EXPECT_EQ(cnrtSetDevice(d), cnrtSuccess);
    void* ptr = nullptr;
    EXPECT_EQ(cnrtMalloc(&ptr, bytes), cnrtSuccess) << mlusimGetLastErrorMessage();
    p.push_back(ptr);
  }
  EXPECT_EQ(cnrtSetDevice(0), cnrtSuccess);
  return p;
}

// Simulated ns of the copies (from, to) of `bytes` started at the same instant on their own
// queues: every queue waits for a gate that opens 100 us after it is queued (a host function that
// reports 100 us of work), long after all copies are queued.
double copies_ns(const std::vector<void*>& buf, std::vector<std::pair<int, int>> copies, std::size_t bytes) {
  std::vector<cnrtQueue_t> queues;
  cnrtNotifier_t start;
  EXPECT_EQ(cnrtNotifierCreate(&start), cnrtSuccess);
  cnrtQueue_t first;
  EXPECT_EQ(cnrtQueueCreate(&first), cnrtSuccess);
  EXPECT_EQ(cnrtInvokeHostFunc(first, [](void*) { mlusimHostAdvance(100000); }, nullptr), cnrtSuccess);
  EXPECT_EQ(cnrtPlaceNotifier(start, first), cnrtSuccess);
  for (auto [from, to] : copies) {
    cnrtQueue_t q;
    EXPECT_EQ(cnrtQueueCreate(&q), cnrtSuccess);
    EXPECT_EQ(cnrtQueueWaitNotifier(start, q, 0), cnrtSuccess);
    EXPECT_EQ(cnrtMemcpyPeerAsync(buf[static_cast<std::size_t>(to)], to, buf[static_cast<std::size_t>(from)], from, bytes, q),
              cnrtSuccess)
        << mlusimGetLastErrorMessage();
    queues.push_back(q);
  }
  // One end notifier per queue, all placed before any sync (a sync moves the host clock to the
  // copy's end, and a notifier placed after that would land later than the copy it measures).
  std::vector<cnrtNotifier_t> ends(queues.size());
  for (std::size_t i = 0; i < queues.size(); ++i) {
    EXPECT_EQ(cnrtNotifierCreate(&ends[i]), cnrtSuccess);
    EXPECT_EQ(cnrtPlaceNotifier(ends[i], queues[i]), cnrtSuccess);
  }
  double longest = 0;
  for (std::size_t i = 0; i < queues.size(); ++i) {
    EXPECT_EQ(cnrtQueueSync(queues[i]), cnrtSuccess);
    float ms = 0;
    EXPECT_EQ(cnrtNotifierElapsedTime(start, ends[i], &ms), cnrtSuccess);
    longest = std::max(longest, static_cast<double>(ms) * 1e6);
  }
  return longest;
}

TEST_F(InterconnectTest, RingRoutesPayLatencyPerHopAndShareLinks) {
  load("tiny", {"devices=6", "mlu_link.bandwidth_gbps=10", "mlu_link.latency_ns=300", "mlu_link.topology=ring",
                "mlu_link.ports=2"});
  const std::size_t bytes = 1 << 20;
  const auto buf = alloc_all(6, bytes);
  const double one_hop = copies_ns(buf, {{0, 1}}, bytes);
  const double link_ns = bytes / 10.0;
  EXPECT_NEAR(one_hop, 300 + kDramLatency + link_ns, 1.0);
  const double two_hops = copies_ns(buf, {{0, 2}}, bytes);
  EXPECT_NEAR(two_hops - one_hop, 300, 1.0) << "cut-through: a second hop adds only its latency";
  // 0->2 and 1->2 share the link 1->2: each streams at half its rate.
  const double shared = copies_ns(buf, {{0, 2}, {1, 2}}, bytes);
  EXPECT_GT(shared, 1.9 * link_ns);
  // 0->1 and 2->3 share nothing: as fast as one.
  EXPECT_NEAR(copies_ns(buf, {{0, 1}, {2, 3}}, bytes), one_hop, 1.0);
  // The short way round: 0->4 goes 0->5->4, two hops.
  EXPECT_NEAR(copies_ns(buf, {{0, 4}}, bytes), two_hops, 1.0);
}

TEST_F(InterconnectTest, FullMeshGivesEveryPairItsOwnLink) {
  load("tiny", {"devices=4", "mlu_link.bandwidth_gbps=10", "mlu_link.latency_ns=300"});  // full_mesh by default
  const std::size_t bytes = 1 << 20;
  const auto buf = alloc_all(4, bytes);
  const double one = copies_ns(buf, {{0, 2}}, bytes);
  EXPECT_NEAR(one, 300 + kDramLatency + bytes / 10.0, 1.0);
  EXPECT_NEAR(copies_ns(buf, {{0, 2}, {1, 2}, {3, 2}}, bytes), one, 1.0) << "three links into chip 2";
}

TEST_F(InterconnectTest, HostsTalkOverTheirNics) {
  load("tiny", {"devices=4", "mlu_link.bandwidth_gbps=10", "mlu_link.latency_ns=300", "mlu_link.ports=1",
                "network.chips_per_host=2", "network.nic_bandwidth_gbps=5", "network.nic_latency_ns=2000"});
  const std::size_t bytes = 1 << 20;
  const auto buf = alloc_all(4, bytes);
  EXPECT_NEAR(copies_ns(buf, {{0, 1}}, bytes), 300 + kDramLatency + bytes / 10.0, 1.0) << "same host: MLU-Link";
  const double across = copies_ns(buf, {{1, 2}}, bytes);
  EXPECT_NEAR(across, 2000 + kDramLatency + bytes / 5.0, 1.0);
  // 0->2 and 1->3 use different NICs; 0->2 and 0->3 share chip 0's NIC out.
  EXPECT_NEAR(copies_ns(buf, {{0, 2}, {1, 3}}, bytes), across, 1.0);
  EXPECT_GT(copies_ns(buf, {{0, 2}, {0, 3}}, bytes), 1.9 * bytes / 5.0);
  std::vector<float> v(16, 3.5f);
  upload(buf[1], v);
  ASSERT_EQ(cnrtMemcpyPeer(buf[2], 2, buf[1], 1, 64), cnrtSuccess);
  EXPECT_EQ(download<float>(buf[2], 16), v) << "the bytes arrive";
}

TEST_F(InterconnectTest, NoPathStagesThroughTheHost) {
  // Explicit links 0-1 only: 0->1 over MLU-Link, 2->3 through the host (D2H then H2D, pinned).
  load("tiny", {"devices=4", "mlu_link.bandwidth_gbps=10", "mlu_link.latency_ns=300", "mlu_link.topology=explicit",
                "mlu_link.links=0-1", "mlu_link.ports=1"});
  const std::size_t bytes = 4096;
  const auto buf = alloc_all(4, bytes);
  EXPECT_NEAR(copies_ns(buf, {{0, 1}}, bytes), 300 + kDramLatency + bytes / 10.0, 1.0);
  EXPECT_NEAR(copies_ns(buf, {{2, 3}}, bytes), 2 * (kLinkLatencyNs + kDramLatency + bytes / kPinnedGbps), 1.0);
}

TEST_F(InterconnectTest, BadTopologiesAreConfigErrors) {
  const auto refused = [](std::vector<const char*> ov, const char* needle) {
    EXPECT_EQ(mlusimLoadConfigWithOverrides("tiny", ov.data(), ov.size()), cnrtErrorArgsInvalid)
        << "accepted: " << needle;
    EXPECT_NE(std::string(mlusimGetLastErrorMessage()).find(needle), std::string::npos) << mlusimGetLastErrorMessage();
  };
  refused({"devices=4", "mlu_link.bandwidth_gbps=10", "mlu_link.topology=mesh"}, "'mesh' is not none");
  refused({"devices=4", "mlu_link.bandwidth_gbps=10", "mlu_link.ports=2"}, "mlu_link.ports: chip 0 has 3 links");
  refused({"devices=4", "mlu_link.bandwidth_gbps=10", "mlu_link.topology=explicit", "mlu_link.links=0-9"},
          "beyond the 4");
  refused({"devices=4", "network.chips_per_host=2"}, "chips of different hosts need a network");
  refused({"devices=2", "mlu_link.bandwidth_gbps=10", "mlu_link.links=0-1"}, "only read with mlu_link.topology: explicit");
  load("tiny");  // still usable
}

}  // namespace
}  // namespace mlusim::driver::testing
