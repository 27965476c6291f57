// `mlusim validate`'s parts: the calibration-table reader (errors name file, line and column) and
// the row runner (a row's cycles are the op's kernels' span, the same as running the op by hand,
// never below the roofline, independent of the rows before it).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cnrt.h>
#include <mlusim_ext.h>

#include <algorithm>
#include <string>

#include "calibration_table.h"
#include "mlusim/mlu/gemm.h"
#include "mlusim/mlu/handle.h"
#include "validate_runner.h"

#ifndef MLUSIM_TEST_DATA_DIR
#error "MLUSIM_TEST_DATA_DIR must name the repository's data/ folder"
#endif

namespace mlusim::cli {
namespace {

using ::testing::HasSubstr;

const std::string kHeader = "workload,kind,M_or_B,K_or_H,N_or_W,Cin,Cout,kernel,stride,pad,hw_cycles\n";

void ExpectTableError(const std::string& text, const std::string& message_part) {
  SCOPED_TRACE(text);
  try {
    parse_calibration_table(text, "t.csv");
    ADD_FAILURE() << "expected CalibrationTableError containing: " << message_part;
  } catch (const CalibrationTableError& e) {
    EXPECT_THAT(e.what(), HasSubstr(message_part));
  }
}

TEST(CalibrationTable, ReadsTheShippedTpuV3Table) {
  const CalibrationTable t = read_calibration_table(std::string(MLUSIM_TEST_DATA_DIR) + "/calibration/tpuv3.csv");
  EXPECT_EQ(t.measured_column, "tpuv3_cycles");
  ASSERT_EQ(t.rows.size(), 8u);
  const CalibrationRow& g = t.rows[0];
  EXPECT_EQ(g.workload, "gemm_256x256x256");
  EXPECT_EQ(g.kind, WorkloadKind::kGemm);
  EXPECT_EQ(g.line, 6);  // after 4 comment lines and the header
  EXPECT_EQ(g.m, 256);
  EXPECT_EQ(g.k, 256);
  EXPECT_EQ(g.n, 256);
  EXPECT_DOUBLE_EQ(g.measured_cycles, 3101.0);
  EXPECT_DOUBLE_EQ(g.macs(), 256.0 * 256 * 256);
  const CalibrationRow& c = t.rows[4];
  EXPECT_EQ(c.workload, "conv_64x56x56x64x64x3x1x1");
  EXPECT_EQ(c.kind, WorkloadKind::kConv2d);
  EXPECT_EQ(c.batch, 64);
  EXPECT_EQ(c.h, 56);
  EXPECT_EQ(c.w, 56);
  EXPECT_EQ(c.cin, 64);
  EXPECT_EQ(c.cout, 64);
  EXPECT_EQ(c.kernel, 3);
  EXPECT_EQ(c.stride, 1);
  EXPECT_EQ(c.pad, 1);
  EXPECT_EQ(c.out_h(), 56);
  EXPECT_DOUBLE_EQ(c.measured_cycles, 1496802.0);
  EXPECT_DOUBLE_EQ(c.macs(), 64.0 * 64 * 56 * 56 * 64 * 9);
}

TEST(CalibrationTable, CommentsBlankLinesCrlfAndColumnOrder) {
  const CalibrationTable t = parse_calibration_table(
      "  # a comment\r\n\r\nkind,workload,hw_cycles,M_or_B,K_or_H,N_or_W,Cin,Cout,kernel,stride,pad,note\r\n"
      "gemm,g,12.5e2,1,2,3,,,,,,anything\r\nconv2d,c,7,2,5,6,3,4,3,2,0,\r\n",
      "t.csv");
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0].workload, "g");
  EXPECT_DOUBLE_EQ(t.rows[0].measured_cycles, 1250.0);
  EXPECT_EQ(t.rows[0].n, 3);
  EXPECT_EQ(t.rows[1].line, 5);
  EXPECT_EQ(t.rows[1].out_h(), 2);  // (5 - 3) / 2 + 1
  EXPECT_EQ(t.rows[1].out_w(), 2);  // (6 - 3) / 2 + 1
}

TEST(CalibrationTable, ErrorsNameTheLineAndTheColumn) {
  ExpectTableError(kHeader + "g,matmul,1,2,3,,,,,,10\n",
                   "t.csv:2: column 'kind': unknown kind 'matmul' (expected gemm or conv2d)");
  ExpectTableError(kHeader + "g,gemm,1,x,3,,,,,,10\n",
                   "t.csv:2: column 'K_or_H': expected an integer between 1 and 2147483647, got 'x'");
  ExpectTableError(kHeader + "g,gemm,0,2,3,,,,,,10\n", "t.csv:2: column 'M_or_B': expected an integer between 1");
  ExpectTableError(kHeader + "g,gemm,-4,2,3,,,,,,10\n",
                   "column 'M_or_B': expected an integer between 1 and 2147483647, got '-4'");
  ExpectTableError(kHeader + "g,gemm,99999999999,2,3,,,,,,10\n", "got '99999999999'");
  ExpectTableError(kHeader + "c,conv2d,2,8,8,,16,3,1,1,10\n",
                   "t.csv:2: column 'Cin': expected an integer between 1 and 2147483647, got nothing");
  ExpectTableError(kHeader + "c,conv2d,2,8,8,4,16,3,1,-1,10\n", "column 'pad': expected an integer between 0");
  ExpectTableError(kHeader + "c,conv2d,2,2,2,4,16,5,1,1,10\n",
                   "t.csv:2: column 'kernel': 5 is larger than the padded input (4 x 4)");
  ExpectTableError(kHeader + "g,gemm,1,2,3,,,,,,fast\n",
                   "t.csv:2: column 'hw_cycles': expected a number of cycles > 0, got 'fast'");
  ExpectTableError(kHeader + "g,gemm,1,2,3,,,,,,0\n", "column 'hw_cycles': expected a number of cycles > 0, got '0'");
  ExpectTableError(kHeader + "g,gemm,1,2,3,,,,,,inf\n", "got 'inf'");
  ExpectTableError(kHeader + "g,gemm,1,2,3,,,,,10\n", "t.csv:2: 10 fields, but the header (line 1) has 11");
  ExpectTableError(kHeader + ",gemm,1,2,3,,,,,,10\n", "t.csv:2: column 'workload': empty workload name");
  ExpectTableError(kHeader + "g,gemm,1,2,3,,,,,,10\n\ng,gemm,1,2,3,,,,,,10\n",
                   "t.csv:4: column 'workload': 'g' already names line 2");
}

TEST(CalibrationTable, HeaderErrors) {
  ExpectTableError("workload,kind,M_or_B,K_or_H,N_or_W,Cin,Cout,kernel,pad,hw_cycles\n",
                   "t.csv:1: header: missing column 'stride'");
  ExpectTableError("workload,kind,M_or_B,K_or_H,N_or_W,Cin,Cout,kernel,stride,pad\n",
                   "t.csv:1: header: missing the measured column '<hardware>_cycles'");
  ExpectTableError("workload,kind,M_or_B,K_or_H,N_or_W,Cin,Cout,kernel,stride,pad,a_cycles,b_cycles\n",
                   "header: two measured columns, 'a_cycles' and 'b_cycles'");
  ExpectTableError("workload,kind,kind,M_or_B\n", "header: column 'kind' appears twice");
  ExpectTableError("# only a comment\n\n", "t.csv: no header line");
  ExpectTableError(kHeader, "t.csv: no data rows after the header");
  try {
    read_calibration_table("/nonexistent/table.csv");
    ADD_FAILURE() << "expected an error";
  } catch (const CalibrationTableError& e) {
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/table.csv: cannot read the calibration table"));
  }
}

CalibrationRow gemm_row(const std::string& name, std::int64_t m, std::int64_t k, std::int64_t n) {
  CalibrationRow r;
  r.workload = name;
  r.kind = WorkloadKind::kGemm;
  r.m = m, r.k = k, r.n = n;
  r.measured_cycles = 1000;
  return r;
}

// The op's span, run by hand through the driver and libmlu on a fresh tpu-v3 (what the runner must
// reproduce): first kernel start to last kernel end, in 940 MHz cycles.
double gemm_by_hand(std::int64_t m, std::int64_t k, std::int64_t n) {
  EXPECT_EQ(mlusimLoadConfig("tpu-v3"), cnrtSuccess);
  EXPECT_EQ(mlusimSetTimingOnly(1), cnrtSuccess);
  mlu::Handle* h = nullptr;
  EXPECT_EQ(mlu::Handle::create(&h), mlu::Status::kSuccess);
  mlu::TensorDesc a, b, c;
  EXPECT_EQ(a.set(mlu::DType::kFloat32, {m, k}), mlu::Status::kSuccess);
  EXPECT_EQ(b.set(mlu::DType::kFloat32, {k, n}), mlu::Status::kSuccess);
  EXPECT_EQ(c.set(mlu::DType::kFloat32, {m, n}), mlu::Status::kSuccess);
  void *pa = nullptr, *pb = nullptr, *pc = nullptr, *pws = nullptr;
  EXPECT_EQ(cnrtMalloc(&pa, a.span_bytes()), cnrtSuccess);
  EXPECT_EQ(cnrtMalloc(&pb, b.span_bytes()), cnrtSuccess);
  EXPECT_EQ(cnrtMalloc(&pc, c.span_bytes()), cnrtSuccess);
  std::size_t ws = 0;
  EXPECT_EQ(mlu::get_matmul_workspace_size(h, {}, a, b, nullptr, c, &ws), mlu::Status::kSuccess);
  if (ws > 0) {
    EXPECT_EQ(cnrtMalloc(&pws, ws), cnrtSuccess);
  }
  EXPECT_EQ(mlu::matmul(h, {}, a, pa, b, pb, nullptr, nullptr, c, pc, pws, ws), mlu::Status::kSuccess);
  EXPECT_EQ(cnrtQueueSync(h->queue()), cnrtSuccess);
  std::size_t count = 0;
  EXPECT_EQ(mlusimGetKernelRecordCount(0, &count), cnrtSuccess);
  double first = 1e300, last = 0;
  for (std::size_t i = 0; i < count; ++i) {
    mlusimKernelRecord_t r{};
    EXPECT_EQ(mlusimGetKernelRecord(0, i, &r), cnrtSuccess);
    first = std::min(first, r.start_ns), last = std::max(last, r.end_ns);
  }
  for (void* p : {pa, pb, pc, pws})
    if (p != nullptr) cnrtFree(p);
  mlu::Handle::destroy(h);
  mlusimSetTimingOnly(0);
  return (last - first) * 940.0 / 1000.0;
}

TEST(ValidateRunner, GemmRowIsTheOpsKernelSpanOnTheConfig) {
  const double by_hand = gemm_by_hand(256, 256, 256);
  const ValidateRunner runner("tpu-v3", {}, ConvLayout::kChannelsLast);
  EXPECT_EQ(runner.config().name, "tpu-v3");
  const RowResult r = runner.run(gemm_row("g256", 256, 256, 256));
  EXPECT_DOUBLE_EQ(r.simulated_cycles, by_hand);
  EXPECT_NEAR(r.simulated_ns * 0.94, r.simulated_cycles, 1e-6);
  EXPECT_GE(r.kernels, 1u);
  EXPECT_LE(r.kernel_cycles, r.simulated_cycles + r.kernels);  // kernels lie inside the span
  // Not below what the timing model allows: the TFU's busy time (two 128x128 MXUs; at least
  // M K N / (128 x 128 x 2) = 512 cycles) and reading A, B and writing C once at 450 GB/s
  // (786432 B / 478.7 B per cycle = 1643 cycles): the roofline bound.
  EXPECT_GE(r.tfu_cycles, 512u);
  EXPECT_GE(r.tfu_intrinsics, 1u);
  EXPECT_GE(r.simulated_cycles, double(r.tfu_cycles));
  EXPECT_NEAR(r.bound_cycles, 3.0 * 256 * 256 * 4 / (450.0 / 0.94), 1.0);
  EXPECT_GE(r.simulated_cycles, r.bound_cycles);
  EXPECT_GE(r.dram_bytes, 3u * 256 * 256 * 4);
  EXPECT_DOUBLE_EQ(r.error_pct(r.simulated_cycles / 2), 100.0);
}

TEST(ValidateRunner, RowsAreIndependentAndOverridesApply) {
  const ValidateRunner runner("tpu-v3", {}, ConvLayout::kChannelsLast);
  CalibrationRow conv;
  conv.workload = "conv";
  conv.kind = WorkloadKind::kConv2d;
  conv.batch = 2, conv.h = 8, conv.w = 8, conv.cin = 16, conv.cout = 16, conv.kernel = 3, conv.stride = 1, conv.pad = 1;
  const CalibrationRow gemm = gemm_row("g", 128, 64, 128);
  const RowResult g1 = runner.run(gemm);
  const RowResult c1 = runner.run(conv);
  const RowResult g2 = runner.run(gemm);  // after another row: the same, on a fresh device
  EXPECT_DOUBLE_EQ(g1.simulated_cycles, g2.simulated_cycles);
  EXPECT_GE(c1.kernels, 1u);
  EXPECT_GE(c1.simulated_cycles, c1.bound_cycles);
  EXPECT_GT(c1.tfu_cycles, 0u);
  // Dense NCHW runs too (libmlu's native conv layout).
  const RowResult c_nchw = ValidateRunner("tpu-v3", {}, ConvLayout::kNchw).run(conv);
  EXPECT_GE(c_nchw.simulated_cycles, c_nchw.bound_cycles);
  // --set reaches the device: DRAM at 1% of the bandwidth makes the GEMM slower.
  const RowResult slow = ValidateRunner("tpu-v3", {"dram.bandwidth_gbps=4.5"}, ConvLayout::kNchw).run(gemm);
  EXPECT_GT(slow.simulated_cycles, 5 * g1.simulated_cycles);
}

TEST(ValidateRunner, BadConfigIsAConfigError) {
  EXPECT_THROW(ValidateRunner("tpu-v3", {"tfu.arrays=0"}, ConvLayout::kNchw), sim::ConfigError);
  EXPECT_THROW(ValidateRunner("no-such-chip", {}, ConvLayout::kNchw), sim::ConfigError);
}

}  // namespace
}  // namespace mlusim::cli
