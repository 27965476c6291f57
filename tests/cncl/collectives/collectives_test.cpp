// CNCL collectives on the tiny preset with several devices: numbers against a host reference for
// every collective (ring and tree paths), the error codes cncl.h documents, and simulated time
// against the analytic ring bound.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "cncl.h"
#include "cnrt.h"
#include "mlusim_ext.h"

namespace {

constexpr double kLinkGbps = 50, kLinkLatencyNs = 200;

class CnclTest : public ::testing::Test {
 public:
  void start(int ranks, double link_gbps = kLinkGbps, bool bf16 = false) {
    const std::string devices = "devices=" + std::to_string(ranks);
    const std::string bw = "mlu_link.bandwidth_gbps=" + std::to_string(link_gbps);
    const std::string lat = "mlu_link.latency_ns=" + std::to_string(kLinkLatencyNs);
    const char* ov[] = {devices.c_str(), bw.c_str(), lat.c_str(), "vfu.bf16=true"};
    ASSERT_EQ(mlusimLoadConfigWithOverrides("tiny", ov, bf16 ? 4 : 3), cnrtSuccess) << mlusimGetLastErrorMessage();
    n = ranks;
    queues.assign(static_cast<std::size_t>(n), nullptr);
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(cnrtSetDevice(r), cnrtSuccess);
      ASSERT_EQ(cnrtQueueCreate(&queues[static_cast<std::size_t>(r)]), cnrtSuccess);
    }
    ASSERT_EQ(cnrtSetDevice(0), cnrtSuccess);
    std::vector<int> devs(static_cast<std::size_t>(n));
    std::iota(devs.begin(), devs.end(), 0);
    comms.assign(static_cast<std::size_t>(n), nullptr);
    ASSERT_EQ(cnclInitComms(comms.data(), n, devs.data(), nullptr, n, nullptr), CNCL_RET_SUCCESS) << cnclGetLastErrorStr();
  }
  void TearDown() override {
    if (!comms.empty()) {
      EXPECT_EQ(cnclDestroyComms(comms.data(), n), CNCL_RET_SUCCESS);
    }
  }
  void* alloc(int rank, std::size_t bytes) {
    cnrtSetDevice(rank);
    void* p = nullptr;
    EXPECT_EQ(cnrtMalloc(&p, bytes), cnrtSuccess);
    cnrtSetDevice(0);
    return p;
  }
  template <class T> void put(void* d, const std::vector<T>& v) {
    ASSERT_EQ(cnrtMemcpy(d, const_cast<T*>(v.data()), v.size() * sizeof(T), cnrtMemcpyHostToDev), cnrtSuccess);
  }
  template <class T> std::vector<T> get(void* d, std::size_t count) {
    std::vector<T> v(count);
    EXPECT_EQ(cnrtMemcpy(v.data(), d, count * sizeof(T), cnrtMemcpyDevToHost), cnrtSuccess);
    return v;
  }
  void sync_all() {
    for (cnrtQueue_t q : queues) ASSERT_EQ(cnrtQueueSync(q), cnrtSuccess) << mlusimGetLastErrorMessage();
  }
  // Rank r's input: element i = r * 1000 + i (exact in fp32 and int32).
  static std::vector<float> input(int r, std::size_t count) {
    std::vector<float> v(count);
    for (std::size_t i = 0; i < count; ++i) v[i] = static_cast<float>(r * 1000 + static_cast<int>(i % 997));
    return v;
  }
  cnrtQueue_t q(int r) { return queues[static_cast<std::size_t>(r)]; }
  cnclComm_t c(int r) { return comms[static_cast<std::size_t>(r)]; }

  int n = 0;
  std::vector<cnrtQueue_t> queues;
  std::vector<cnclComm_t> comms;
};

// count elements of fp32 sum all-reduce on n ranks, out of place; returns whether all matched.
void check_all_reduce(CnclTest& t, int ranks, std::size_t count, bool in_place) {
  std::vector<void*> send(static_cast<std::size_t>(ranks)), recv(static_cast<std::size_t>(ranks));
  std::vector<float> expect(count, 0.0f);
  for (int r = 0; r < ranks; ++r) {
    send[static_cast<std::size_t>(r)] = t.alloc(r, count * 4);
    recv[static_cast<std::size_t>(r)] = in_place ? send[static_cast<std::size_t>(r)] : t.alloc(r, count * 4);
    const std::vector<float> v = CnclTest::input(r, count);
    t.put(send[static_cast<std::size_t>(r)], v);
    for (std::size_t i = 0; i < count; ++i) expect[i] += v[i];
  }
  for (int r = 0; r < ranks; ++r)
    ASSERT_EQ(cnclAllReduce(send[static_cast<std::size_t>(r)], recv[static_cast<std::size_t>(r)], count, cnclFloat32,
                            cnclSum, t.c(r), t.q(r)),
              CNCL_RET_SUCCESS)
        << cnclGetLastErrorStr();
  t.sync_all();
  for (int r = 0; r < ranks; ++r) EXPECT_EQ(t.get<float>(recv[static_cast<std::size_t>(r)], count), expect) << "rank " << r;
}

class CnclRanks : public CnclTest, public ::testing::WithParamInterface<int> {};

TEST_P(CnclRanks, AllReduceRingAndTreeMatchTheHostSum) {
  start(GetParam());
  check_all_reduce(*this, n, 50000, false);  // large: ring
  check_all_reduce(*this, n, 37, false);     // small, fewer elements than some chunks: tree (n > 2)
  check_all_reduce(*this, n, 4099, true);    // in place
}

TEST_P(CnclRanks, AllGatherReduceScatterBroadcastReduceAlltoAll) {
  start(GetParam());
  const std::size_t count = 1030;
  const auto N = static_cast<std::size_t>(n);
  std::vector<void*> a(N), b(N);
  for (int r = 0; r < n; ++r) {
    a[static_cast<std::size_t>(r)] = alloc(r, count * N * 4);
    b[static_cast<std::size_t>(r)] = alloc(r, count * N * 4);
  }
  // AllGather: rank r contributes input(r).
  for (int r = 0; r < n; ++r) put(a[static_cast<std::size_t>(r)], input(r, count));
  for (int r = 0; r < n; ++r)
    ASSERT_EQ(cnclAllGather(a[static_cast<std::size_t>(r)], b[static_cast<std::size_t>(r)], count, cnclFloat32, c(r), q(r)),
              CNCL_RET_SUCCESS)
        << cnclGetLastErrorStr();
  sync_all();
  std::vector<float> gathered;
  for (int r = 0; r < n; ++r) {
    const std::vector<float> v = input(r, count);
    gathered.insert(gathered.end(), v.begin(), v.end());
  }
  for (int r = 0; r < n; ++r) EXPECT_EQ(get<float>(b[static_cast<std::size_t>(r)], count * N), gathered) << "allgather rank " << r;

  // ReduceScatter (max): rank r holds input(r, count * n); rank k gets max over ranks of block k.
  for (int r = 0; r < n; ++r) put(a[static_cast<std::size_t>(r)], input(r, count * N));
  for (int r = 0; r < n; ++r)
    ASSERT_EQ(cnclReduceScatter(a[static_cast<std::size_t>(r)], b[static_cast<std::size_t>(r)], count, cnclFloat32, cnclMax,
                                c(r), q(r)),
              CNCL_RET_SUCCESS);
  sync_all();
  for (int k = 0; k < n; ++k) {
    const std::vector<float> top = input(n - 1, count * N);
    const std::vector<float> expect(top.begin() + static_cast<long>(k * count), top.begin() + static_cast<long>((k + 1) * count));
    EXPECT_EQ(get<float>(b[static_cast<std::size_t>(k)], count), expect) << "reduce_scatter rank " << k;
  }

  // Broadcast from the last rank.
  const int root = n - 1;
  put(a[static_cast<std::size_t>(root)], input(7, count));
  for (int r = 0; r < n; ++r)
    ASSERT_EQ(cnclBroadcast(a[static_cast<std::size_t>(r)], b[static_cast<std::size_t>(r)], count, cnclFloat32, root, c(r), q(r)),
              CNCL_RET_SUCCESS);
  sync_all();
  for (int r = 0; r < n; ++r) EXPECT_EQ(get<float>(b[static_cast<std::size_t>(r)], count), input(7, count)) << "bcast " << r;

  // Reduce (min) to rank 0 of int32.
  std::vector<std::int32_t> expect_min(count, 1 << 30);
  for (int r = 0; r < n; ++r) {
    std::vector<std::int32_t> v(count);
    for (std::size_t i = 0; i < count; ++i) v[i] = static_cast<std::int32_t>((i * 7919 + static_cast<std::size_t>(r) * 104729) % 100003) - 50000;
    for (std::size_t i = 0; i < count; ++i) expect_min[i] = std::min(expect_min[i], v[i]);
    put(a[static_cast<std::size_t>(r)], v);
  }
  for (int r = 0; r < n; ++r)
    ASSERT_EQ(cnclReduce(a[static_cast<std::size_t>(r)], b[static_cast<std::size_t>(r)], count, cnclInt32, cnclMin, 0, c(r), q(r)),
              CNCL_RET_SUCCESS);
  sync_all();
  EXPECT_EQ(get<std::int32_t>(b[0], count), expect_min);

  // AlltoAll: rank r's block j = input(r * 10 + j); rank j's block r must be it.
  for (int r = 0; r < n; ++r) {
    std::vector<float> v;
    for (int j = 0; j < n; ++j) {
      const std::vector<float> blk = input(r * 10 + j, count);
      v.insert(v.end(), blk.begin(), blk.end());
    }
    put(a[static_cast<std::size_t>(r)], v);
  }
  for (int r = 0; r < n; ++r)
    ASSERT_EQ(cnclAlltoAll(a[static_cast<std::size_t>(r)], b[static_cast<std::size_t>(r)], count, cnclFloat32, c(r), q(r)),
              CNCL_RET_SUCCESS);
  sync_all();
  for (int j = 0; j < n; ++j) {
    const std::vector<float> got = get<float>(b[static_cast<std::size_t>(j)], count * N);
    for (int r = 0; r < n; ++r)
      EXPECT_EQ(std::vector<float>(got.begin() + static_cast<long>(static_cast<std::size_t>(r) * count),
                                   got.begin() + static_cast<long>(static_cast<std::size_t>(r + 1) * count)),
                input(r * 10 + j, count))
          << "alltoall rank " << j << " block " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, CnclRanks, ::testing::Values(2, 3, 4));

TEST_F(CnclTest, Fp16ProductAndInt8SumWrap) {
  start(2);
  const std::size_t count = 300;
  void* a0 = alloc(0, count * 2);
  void* a1 = alloc(1, count * 2);
  std::vector<std::uint16_t> h0(count, 0x4000), h1(count, 0x4200);  // 2.0 and 3.0 in fp16
  put(a0, h0);
  put(a1, h1);
  ASSERT_EQ(cnclGroupStart(), CNCL_RET_SUCCESS);
  ASSERT_EQ(cnclAllReduce(a0, a0, count, cnclFloat16, cnclProd, c(0), q(0)), CNCL_RET_SUCCESS);
  ASSERT_EQ(cnclAllReduce(a1, a1, count, cnclFloat16, cnclProd, c(1), q(1)), CNCL_RET_SUCCESS);
  ASSERT_EQ(cnclGroupEnd(), CNCL_RET_SUCCESS) << cnclGetLastErrorStr();
  sync_all();
  EXPECT_EQ(get<std::uint16_t>(a1, count), std::vector<std::uint16_t>(count, 0x4600));  // 6.0
  void* b0 = alloc(0, count);
  void* b1 = alloc(1, count);
  put(b0, std::vector<std::int8_t>(count, 100));
  put(b1, std::vector<std::int8_t>(count, 100));
  ASSERT_EQ(cnclAllReduce(b0, b0, count, cnclInt8, cnclSum, c(0), q(0)), CNCL_RET_SUCCESS);
  ASSERT_EQ(cnclAllReduce(b1, b1, count, cnclInt8, cnclSum, c(1), q(1)), CNCL_RET_SUCCESS);
  sync_all();
  EXPECT_EQ(get<std::int8_t>(b0, count), std::vector<std::int8_t>(count, static_cast<std::int8_t>(-56)));  // 200 wraps
}

// bf16 sums where the chip has bf16 (tiny with vfu.bf16, as mlu590): each step adds in fp32 and
// rounds to bf16; without it the reduction is refused naming the config.
TEST_F(CnclTest, Bf16SumWhereTheConfigHasBf16) {
  start(2, kLinkGbps, /*bf16=*/true);
  const std::size_t count = 100;
  void* a0 = alloc(0, count * 2);
  void* a1 = alloc(1, count * 2);
  put(a0, std::vector<std::uint16_t>(count, 0x3f80));  // 1.0
  put(a1, std::vector<std::uint16_t>(count, 0x3c40));  // 1.5 x 2^-7: the sum 1.01171875 is a tie
  ASSERT_EQ(cnclGroupStart(), CNCL_RET_SUCCESS);
  ASSERT_EQ(cnclAllReduce(a0, a0, count, cnclBfloat16, cnclSum, c(0), q(0)), CNCL_RET_SUCCESS);
  ASSERT_EQ(cnclAllReduce(a1, a1, count, cnclBfloat16, cnclSum, c(1), q(1)), CNCL_RET_SUCCESS);
  ASSERT_EQ(cnclGroupEnd(), CNCL_RET_SUCCESS) << cnclGetLastErrorStr();
  sync_all();
  // between 1.0078125 (0x3f81, odd) and 1.015625 (0x3f82, even): rounds to even.
  EXPECT_EQ(get<std::uint16_t>(a0, count), std::vector<std::uint16_t>(count, 0x3f82));
  EXPECT_EQ(get<std::uint16_t>(a1, count), std::vector<std::uint16_t>(count, 0x3f82));
}

TEST_F(CnclTest, Bf16SumRefusedWithoutBf16) {
  start(2);
  void* a0 = alloc(0, 64);
  EXPECT_EQ(cnclAllReduce(a0, a0, 8, cnclBfloat16, cnclSum, c(0), q(0)), CNCL_RET_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(cnclGetLastErrorStr()).find("cnclSum in cnclBfloat16: config 'tiny' has no bf16 arithmetic"),
            std::string::npos)
      << cnclGetLastErrorStr();
}

TEST_F(CnclTest, SendRecvMatchInOrderPerPair) {
  start(3);
  const std::size_t count = 777;
  void* s0 = alloc(0, count * 4);
  void* s0b = alloc(0, count * 4);
  void* r2 = alloc(2, count * 4);
  void* r2b = alloc(2, count * 4);
  put(s0, input(1, count));
  put(s0b, input(2, count));
  ASSERT_EQ(cnclRecv(r2, count, cnclFloat32, 0, c(2), q(2)), CNCL_RET_SUCCESS);  // receive first: waits for its send
  ASSERT_EQ(cnclSend(s0, count, cnclFloat32, 2, c(0), q(0)), CNCL_RET_SUCCESS);
  ASSERT_EQ(cnclSend(s0b, count, cnclFloat32, 2, c(0), q(0)), CNCL_RET_SUCCESS);
  ASSERT_EQ(cnclRecv(r2b, count, cnclFloat32, 0, c(2), q(2)), CNCL_RET_SUCCESS);
  sync_all();
  EXPECT_EQ(get<float>(r2, count), input(1, count));
  EXPECT_EQ(get<float>(r2b, count), input(2, count));
  // A matched pair that disagrees on the count.
  ASSERT_EQ(cnclSend(s0, 10, cnclFloat32, 2, c(0), q(0)), CNCL_RET_SUCCESS);
  EXPECT_EQ(cnclRecv(r2, 11, cnclFloat32, 0, c(2), q(2)), CNCL_RET_ERR_INVALID);
  EXPECT_NE(std::string(cnclGetLastErrorStr()).find("the send has 10"), std::string::npos) << cnclGetLastErrorStr();
}

TEST_F(CnclTest, ErrorsNameWhatWasWrong) {
  start(2);
  void* a0 = alloc(0, 64);
  void* a1 = alloc(1, 64);
  const auto expect = [](cnclResult_t got, cnclResult_t want, const char* needle) {
    EXPECT_EQ(got, want) << cnclGetLastErrorStr();
    EXPECT_NE(std::string(cnclGetLastErrorStr()).find(needle), std::string::npos) << cnclGetLastErrorStr();
  };
  expect(cnclAllReduce(a0, a0, 16, cnclFloat32, cnclSum, nullptr, q(0)), CNCL_RET_ERR_INVALID, "not a live communicator");
  expect(cnclAllReduce(a0, a0, 16, cnclFloat32, cnclSum, c(0), q(1)), CNCL_RET_ERR_INVALID, "belongs to mlu1");
  expect(cnclAllReduce(a0, a0, 16, cnclFloat32, cnclSum, c(0), nullptr), CNCL_RET_ERR_INVALID, "queue is NULL");
  expect(cnclAllReduce(a0, a0, 17, cnclFloat32, cnclSum, c(0), q(0)), CNCL_RET_ERR_ARGUMENT, "not inside a live allocation");
  expect(cnclAllReduce(a1, a1, 16, cnclFloat32, cnclSum, c(0), q(0)), CNCL_RET_ERR_ARGUMENT, "mlu0");
  expect(cnclAllReduce(nullptr, a0, 16, cnclFloat32, cnclSum, c(0), q(0)), CNCL_RET_ERR_NULL_POINTER, "sendbuff");
  expect(cnclAllReduce(a0, a0, 8, cnclInt64, cnclSum, c(0), q(0)), CNCL_RET_ERR_UNSUPPORTED, "cnclSum in cnclInt64");
  expect(cnclAllReduce(a0, a0, 8, static_cast<cnclDataType_t>(42), cnclSum, c(0), q(0)), CNCL_RET_ERR_ARGUMENT, "datatype 42");
  expect(cnclAllReduce(a0, a0, 8, cnclFloat32, static_cast<cnclReduceOp_t>(9), c(0), q(0)), CNCL_RET_ERR_ARGUMENT, "op 9");
  expect(cnclBroadcast(a0, a0, 8, cnclFloat32, 2, c(0), q(0)), CNCL_RET_ERR_ARGUMENT, "root 2");
  expect(cnclSend(a0, 8, cnclFloat32, 0, c(0), q(0)), CNCL_RET_ERR_ARGUMENT, "own rank");
  expect(cnclGroupEnd(), CNCL_RET_ERR_INVALID, "no matching cnclGroupStart");
  // Mismatched calls of one collective: the completing call reports it; nothing runs.
  ASSERT_EQ(cnclAllReduce(a0, a0, 8, cnclFloat32, cnclSum, c(0), q(0)), CNCL_RET_SUCCESS);
  expect(cnclAllReduce(a1, a1, 9, cnclFloat32, cnclSum, c(1), q(1)), CNCL_RET_ERR_INVALID, "count 8 vs 9");
  // Communicator creation.
  cnclComm_t more[2] = {nullptr, nullptr};
  const int devs[2] = {0, 1}, dup_ranks[2] = {0, 0}, bad_devs[2] = {0, 5}, same_dev[2] = {1, 1};
  expect(cnclInitComms(more, 2, devs, dup_ranks, 2, nullptr), CNCL_RET_ERR_INIT, "given twice");
  expect(cnclInitComms(more, 2, bad_devs, nullptr, 2, nullptr), CNCL_RET_ERR_ARGUMENT, "is not a device");
  expect(cnclInitComms(more, 2, same_dev, nullptr, 2, nullptr), CNCL_RET_ERR_INIT, "two ranks");
  expect(cnclInitComms(more, 2, devs, nullptr, 3, nullptr), CNCL_RET_ERR_ARGUMENT, "nrank 3");
  EXPECT_EQ(more[0], nullptr);
  // The library still works after all of that.
  check_all_reduce(*this, 2, 1000, false);
}

// Ring all-reduce of S bytes on n ranks is never faster than the analytic bound
// 2(n-1) (a + S / (n B)) (a = link + DRAM latency), and close to it when the links, not DRAM,
// limit: tiny's DRAM moves 64 GB/s and a reduce-scatter step's reduction costs a rank 3 bytes of
// DRAM traffic per byte received (reads two, writes one), so links of 8 GB/s are the bottleneck
// and the ring's copies and reductions must overlap to come near the bound.
TEST_F(CnclTest, RingAllReduceTimeAgainstTheAnalyticBound) {
  const double link_gbps = 8;
  start(4, link_gbps);
  const std::size_t count = 1u << 20;  // 4 MiB of fp32
  std::vector<void*> buf(4);
  for (int r = 0; r < 4; ++r) buf[static_cast<std::size_t>(r)] = alloc(r, count * 4);
  sync_all();
  double t0 = 0, t1 = 0;
  ASSERT_EQ(mlusimGetHostTime(&t0), cnrtSuccess);
  for (int r = 0; r < 4; ++r)
    ASSERT_EQ(cnclAllReduce(buf[static_cast<std::size_t>(r)], buf[static_cast<std::size_t>(r)], count, cnclFloat32, cnclSum,
                            c(r), q(r)),
              CNCL_RET_SUCCESS);
  sync_all();
  ASSERT_EQ(mlusimGetHostTime(&t1), cnrtSuccess);
  const double bytes = count * 4.0, dram_latency_ns = 100;
  const double bound_ns = 2.0 * 3 * (kLinkLatencyNs + dram_latency_ns + bytes / 4 / link_gbps);
  const double took = t1 - t0;
  std::printf("4 MiB ring all-reduce on 4 ranks, %.0f GB/s links: %.1f us simulated, analytic bound %.1f us (ratio %.3f)\n",
              link_gbps, took / 1e3, bound_ns / 1e3, took / bound_ns);
  EXPECT_GE(took, bound_ns);
  // Within 10% when uncontended (measured 1.05x: the launches and the pipeline's fill and drain).
  EXPECT_LE(took, 1.10 * bound_ns) << "copies and reductions of the ring do not overlap";
}

}  // namespace
