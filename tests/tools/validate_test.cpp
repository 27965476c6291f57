// `mlusim validate`'s parts: the calibration-table reader (errors name file, line and column) and
// the row runner (a row's cycles are the op's kernels' span, the same as running the op by hand,
// never below the roofline, independent of the rows before it).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cnrt.h>
#include <mlusim_ext.h>

#include <algorithm>
#include <map>
#include <string>

#include "calibration_table.h"
#include "mlusim/mlu/gemm.h"
#include "mlusim/mlu/handle.h"
#include "mlusim/sim/roofline.h"
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
  EXPECT_DOUBLE_EQ(g.measured, 3101.0);
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
  EXPECT_DOUBLE_EQ(c.measured, 1496802.0);
  EXPECT_DOUBLE_EQ(c.macs(), 64.0 * 64 * 56 * 56 * 64 * 9);
}

// The 22-workload table: the 8 calibration rows with tpuv3.csv's measurements, the 14 held-out
// ones as predictions, every kind with its shape.
TEST(CalibrationTable, ReadsTheShippedTwentyTwoWorkloadTable) {
  const std::string dir = std::string(MLUSIM_TEST_DATA_DIR) + "/calibration/";
  const CalibrationTable all = read_calibration_table(dir + "tpuv3-workloads.csv");
  const CalibrationTable measured = read_calibration_table(dir + "tpuv3.csv");
  EXPECT_EQ(all.measured_column, "tpuv3_cycles");
  ASSERT_EQ(all.rows.size(), 22u);
  std::size_t predictions = 0;
  for (const CalibrationRow& r : all.rows) {
    if (!r.is_measured()) {
      ++predictions;
      continue;
    }
    const auto same = std::find_if(measured.rows.begin(), measured.rows.end(),
                                   [&](const CalibrationRow& m) { return m.workload == r.workload; });
    ASSERT_NE(same, measured.rows.end()) << r.workload;
    EXPECT_DOUBLE_EQ(r.measured, same->measured) << r.workload;
    EXPECT_DOUBLE_EQ(r.macs(), same->macs()) << r.workload;
  }
  EXPECT_EQ(predictions, 14u);
  std::map<WorkloadKind, int> kinds;
  for (const CalibrationRow& r : all.rows) ++kinds[r.kind];
  EXPECT_EQ(kinds[WorkloadKind::kAttention], 3);
  EXPECT_EQ(kinds[WorkloadKind::kLayerNorm], 3);
  EXPECT_EQ(kinds[WorkloadKind::kSoftmax], 3);
  EXPECT_EQ(kinds[WorkloadKind::kModel], 2);
  EXPECT_EQ(kinds[WorkloadKind::kEncoder], 3);
  const CalibrationRow& large = all.rows[20];
  EXPECT_EQ(large.workload, "bert_large");
  EXPECT_EQ(large.batch, 16);  // heads
  EXPECT_EQ(large.seq, 512);
  EXPECT_EQ(large.width, 1024);
}

TEST(CalibrationTable, CommentsBlankLinesCrlfAndColumnOrder) {
  const CalibrationTable t = parse_calibration_table(
      "  # a comment\r\n\r\nkind,workload,hw_cycles,M_or_B,K_or_H,N_or_W,Cin,Cout,kernel,stride,pad,note\r\n"
      "gemm,g,12.5e2,1,2,3,,,,,,anything\r\nconv2d,c,7,2,5,6,3,4,3,2,0,\r\n",
      "t.csv");
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0].workload, "g");
  EXPECT_DOUBLE_EQ(t.rows[0].measured, 1250.0);
  EXPECT_EQ(t.rows[0].n, 3);
  EXPECT_EQ(t.rows[1].line, 5);
  EXPECT_EQ(t.rows[1].out_h(), 2);  // (5 - 3) / 2 + 1
  EXPECT_EQ(t.rows[1].out_w(), 2);  // (6 - 3) / 2 + 1
}

TEST(CalibrationTable, ErrorsNameTheLineAndTheColumn) {
  ExpectTableError(kHeader + "g,matmul,1,2,3,,,,,,10\n",
                   "t.csv:2: column 'kind': unknown kind 'matmul' (expected gemm, conv2d, layernorm, softmax, add, "
                   "relu, gelu, attention, encoder or model:NAME)");
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
                   "t.csv:2: column 'hw_cycles': expected a number of cycles > 0 (or nothing: not measured), got 'fast'");
  ExpectTableError(kHeader + "g,gemm,1,2,3,,,,,,0\n", "column 'hw_cycles': expected a number of cycles > 0 (or nothing");
  ExpectTableError(kHeader + "e,encoder,5,16,64,,,,,,10\n",
                   "t.csv:2: column 'M_or_B': 5 heads do not divide the hidden size N_or_W = 64");
  ExpectTableError(kHeader + "m,model:,1,,,,,,,,10\n", "t.csv:2: column 'kind': 'model:' needs a model name");
  ExpectTableError(kHeader + "l,layernorm,4,,,,,,,,10\n",
                   "t.csv:2: column 'N_or_W': expected an integer between 1 and 2147483647, got nothing");
  ExpectTableError(kHeader + "a,attention,2,0,8,,,,,,10\n", "t.csv:2: column 'K_or_H': expected an integer between 1");
  ExpectTableError(kHeader + "g,gemm,1,2,3,,,,,,inf\n", "got 'inf'");
  ExpectTableError(kHeader + "g,gemm,1,2,3,,,,,10\n", "t.csv:2: 10 fields, but the header (line 1) has 11");
  ExpectTableError(kHeader + ",gemm,1,2,3,,,,,,10\n", "t.csv:2: column 'workload': empty workload name");
  ExpectTableError(kHeader + "g,gemm,1,2,3,,,,,,10\n\ng,gemm,1,2,3,,,,,,10\n",
                   "t.csv:4: column 'workload': 'g' already names line 2");
}

// The kinds after PyTorchSim's other validation workloads, and rows without a measurement.
TEST(CalibrationTable, KindsBeyondGemmAndConvAndUnmeasuredRows) {
  const CalibrationTable t = parse_calibration_table(kHeader +
                                                         "ln,layernorm,512,,768,,,,,,1000\n"
                                                         "sm,softmax,64,,128,,,,,,\n"
                                                         "at,attention,12,512,64,,,,,,2e5\n"
                                                         "enc,encoder,12,512,768,,,,,,\n"
                                                         "r18,model:resnet18,2,,,,,,,,5e6\n",
                                                     "t.csv");
  ASSERT_EQ(t.rows.size(), 5u);
  const CalibrationRow &ln = t.rows[0], &sm = t.rows[1], &at = t.rows[2], &enc = t.rows[3], &r18 = t.rows[4];
  EXPECT_EQ(ln.kind, WorkloadKind::kLayerNorm);
  EXPECT_EQ(ln.m, 512);
  EXPECT_EQ(ln.n, 768);
  EXPECT_TRUE(ln.is_measured());
  EXPECT_EQ(sm.kind, WorkloadKind::kSoftmax);
  EXPECT_FALSE(sm.is_measured());  // empty: a prediction
  EXPECT_STREQ(workload_kind_name(sm.kind), "softmax");
  EXPECT_EQ(at.kind, WorkloadKind::kAttention);
  EXPECT_EQ(at.batch, 12);
  EXPECT_EQ(at.seq, 512);
  EXPECT_EQ(at.width, 64);
  EXPECT_DOUBLE_EQ(at.measured, 2e5);
  EXPECT_DOUBLE_EQ(at.macs(), 2.0 * 12 * 512 * 512 * 64);  // k q^T and v^T p
  EXPECT_EQ(enc.kind, WorkloadKind::kEncoder);
  // Q, K, V, output (4 S H^2), FFN (2 x 4 S H^2), attention (2 S^2 H).
  EXPECT_DOUBLE_EQ(enc.macs(), 12.0 * 512 * 768 * 768 + 2.0 * 512 * 512 * 768);
  EXPECT_EQ(r18.kind, WorkloadKind::kModel);
  EXPECT_EQ(r18.model, "resnet18");
  EXPECT_EQ(r18.batch, 2);
  EXPECT_STREQ(workload_kind_name(r18.kind), "model");
  EXPECT_DOUBLE_EQ(ln.macs(), 0.0);
}

// A `<hw>_us` column (device time), the optional dtype column and the elementwise kinds.
TEST(CalibrationTable, MicrosecondColumnDtypesAndElementwiseKinds) {
  const std::string header = "workload,kind,dtype,M_or_B,K_or_H,N_or_W,Cin,Cout,kernel,stride,pad,gpu_us,sm_mhz\n";
  const CalibrationTable t = parse_calibration_table(header +
                                                         "g,gemm,fp16,64,32,16,,,,,,12.5,1980\n"
                                                         "a,add,bf16,8,,4096,,,,,,97.6,\n"
                                                         "r,relu,,8,,16,,,,,,,\n"
                                                         "u,gelu,fp32,2,,3,,,,,,0.5,\n",
                                                     "t.csv");
  EXPECT_EQ(t.measured_column, "gpu_us");
  EXPECT_EQ(t.measured_unit, MeasuredUnit::kMicroseconds);
  ASSERT_EQ(t.rows.size(), 4u);
  EXPECT_EQ(t.rows[0].dtype, sim::DType::kFloat16);
  EXPECT_DOUBLE_EQ(t.rows[0].measured, 12.5);
  EXPECT_EQ(t.rows[1].kind, WorkloadKind::kAdd);
  EXPECT_EQ(t.rows[1].dtype, sim::DType::kBFloat16);
  EXPECT_EQ(t.rows[1].m, 8);
  EXPECT_EQ(t.rows[1].n, 4096);
  EXPECT_EQ(t.rows[2].kind, WorkloadKind::kRelu);
  EXPECT_EQ(t.rows[2].dtype, sim::DType::kFloat32);  // empty dtype: fp32
  EXPECT_FALSE(t.rows[2].is_measured());
  EXPECT_EQ(t.rows[3].kind, WorkloadKind::kGelu);
  EXPECT_STREQ(workload_kind_name(t.rows[3].kind), "gelu");
  EXPECT_EQ(sim::dtype_name(t.rows[0].dtype), "fp16");
  EXPECT_DOUBLE_EQ(t.rows[1].macs(), 0.0);
  // Tables without a dtype column are fp32; cycle columns stay cycles.
  EXPECT_EQ(parse_calibration_table(kHeader + "g,gemm,1,2,3,,,,,,10\n", "t.csv").rows[0].dtype, sim::DType::kFloat32);
  EXPECT_EQ(parse_calibration_table(kHeader + "g,gemm,1,2,3,,,,,,10\n", "t.csv").measured_unit, MeasuredUnit::kCycles);

  ExpectTableError(header + "g,gemm,fp64,1,2,3,,,,,,10,\n",
                   "t.csv:2: column 'dtype': unknown dtype 'fp64' (expected fp32, fp16 or bf16; empty means fp32)");
  ExpectTableError(header + "g,gemm,fp16,1,2,3,,,,,,slow,\n",
                   "t.csv:2: column 'gpu_us': expected a number of microseconds > 0 (or nothing");
  ExpectTableError(header + "m,model:resnet18,fp16,1,,,,,,,,10,\n",
                   "t.csv:2: column 'dtype': model rows run in fp32 (`mlusim run`'s default), not fp16");
  ExpectTableError(header + "a,add,fp16,4,,,,,,,,10,\n",
                   "t.csv:2: column 'N_or_W': expected an integer between 1 and 2147483647, got nothing");
}

TEST(CalibrationTable, HeaderErrors) {
  ExpectTableError("workload,kind,M_or_B,K_or_H,N_or_W,Cin,Cout,kernel,pad,hw_cycles\n",
                   "t.csv:1: header: missing column 'stride'");
  ExpectTableError("workload,kind,M_or_B,K_or_H,N_or_W,Cin,Cout,kernel,stride,pad\n",
                   "t.csv:1: header: missing the measured column '<hardware>_cycles' or '<hardware>_us'");
  ExpectTableError("workload,kind,M_or_B,K_or_H,N_or_W,Cin,Cout,kernel,stride,pad,a_cycles,b_cycles\n",
                   "header: two measured columns, 'a_cycles' and 'b_cycles'");
  ExpectTableError("workload,kind,M_or_B,K_or_H,N_or_W,Cin,Cout,kernel,stride,pad,a_cycles,a_us\n",
                   "header: two measured columns, 'a_cycles' and 'a_us'");
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
  r.measured = 1000;
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
  EXPECT_DOUBLE_EQ(r.error_pct(r.simulated_cycles / 2, MeasuredUnit::kCycles), 100.0);
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

CalibrationRow kind_row(const char* name, WorkloadKind kind) {
  CalibrationRow r;
  r.workload = name;
  r.kind = kind;
  return r;
}

// The vector-unit rows: one kernel each, reading the input and writing the output at least once,
// no matrix unit.
TEST(ValidateRunner, LayerNormAndSoftmaxRows) {
  const ValidateRunner runner("tpu-v3", {}, ConvLayout::kChannelsLast);
  for (WorkloadKind kind : {WorkloadKind::kLayerNorm, WorkloadKind::kSoftmax}) {
    CalibrationRow row = kind_row("v", kind);
    row.m = 256, row.n = 384;
    const RowResult r = runner.run(row);
    SCOPED_TRACE(workload_kind_name(kind));
    EXPECT_EQ(r.kernels, 1u);
    EXPECT_EQ(r.tfu_cycles, 0u);
    EXPECT_EQ(r.macs, 0.0);
    EXPECT_GE(r.dram_bytes, 2u * 256 * 384 * 4);
    EXPECT_GE(r.simulated_cycles, r.bound_cycles);
    EXPECT_GT(r.bound_cycles, 0.0);
  }
}

// Elementwise rows: one kernel each on the vector unit, moving each operand once (add reads two
// [M, N] tensors and writes one, relu and gelu read one and write one), bounded by DRAM.
TEST(ValidateRunner, ElementwiseRows) {
  const ValidateRunner runner("tpu-v3", {}, ConvLayout::kChannelsLast);
  const double bytes_per_cycle = 450.0 / 0.94;  // DRAM GB/s over the 940 MHz clock
  for (WorkloadKind kind : {WorkloadKind::kAdd, WorkloadKind::kRelu, WorkloadKind::kGelu}) {
    CalibrationRow row = kind_row("e", kind);
    row.m = 512, row.n = 1024;
    const RowResult r = runner.run(row);
    SCOPED_TRACE(workload_kind_name(kind));
    const double tensors = kind == WorkloadKind::kAdd ? 3 : 2;
    EXPECT_EQ(r.kernels, 1u);
    EXPECT_EQ(r.tfu_cycles, 0u);
    EXPECT_GE(double(r.dram_bytes), tensors * 512 * 1024 * 4);
    EXPECT_NEAR(r.bound_cycles, tensors * 512 * 1024 * 4 / bytes_per_cycle, 1.0);
    EXPECT_GE(r.simulated_cycles, r.bound_cycles);
  }
}

// A row's dtype reaches its tensors: fp16 moves half the bytes of fp32 and runs on the fp16
// array, whose MACs the roofline counts at the fp16 peak; a bf16 row on a preset without bf16
// arithmetic is an error naming the row.
TEST(ValidateRunner, RowDtypeSetsTheTensorsType) {
  const ValidateRunner runner("tpu-v3", {}, ConvLayout::kChannelsLast);
  CalibrationRow add = kind_row("add", WorkloadKind::kAdd);
  add.m = 256, add.n = 1024;
  const RowResult add32 = runner.run(add);
  add.dtype = sim::DType::kFloat16;
  const RowResult add16 = runner.run(add);
  EXPECT_NEAR(add16.bound_cycles, add32.bound_cycles / 2, 1.0);
  EXPECT_LT(add16.dram_bytes, add32.dram_bytes);
  CalibrationRow g = gemm_row("g16", 512, 512, 512);
  g.dtype = sim::DType::kFloat16;
  const RowResult r = runner.run(g);
  EXPECT_DOUBLE_EQ(r.macs, 512.0 * 512 * 512);
  EXPECT_GE(r.simulated_cycles, r.bound_cycles);
  EXPECT_GT(r.tfu_cycles, 0u);
  // On mlu370-x4, whose fp16 array is larger than its fp32 one, a compute-bound fp16 GEMM's bound
  // is its MACs at the fp16 peak (A, B and C moved once in fp16), not at fp32's.
  const ValidateRunner mlu("mlu370-x4", {}, ConvLayout::kChannelsLast);
  CalibrationRow big = gemm_row("big16", 2048, 2048, 2048);
  big.dtype = sim::DType::kFloat16;
  const std::uint64_t bytes = 3ull * 2048 * 2048 * 2;
  sim::MacsByDtype as16{}, as32{};
  as16[static_cast<std::size_t>(sim::DType::kFloat16)] = 2048ull * 2048 * 2048;
  as32[static_cast<std::size_t>(sim::DType::kFloat32)] = 2048ull * 2048 * 2048;
  const double cycles_per_ps = mlu.config().core_clock_mhz * 1e-6;
  const double bound16 = double(sim::roofline_bound_ps(mlu.config(), as16, bytes)) * cycles_per_ps;
  const double bound32 = double(sim::roofline_bound_ps(mlu.config(), as32, bytes)) * cycles_per_ps;
  ASSERT_LT(bound16, 0.9 * bound32);
  EXPECT_NEAR(mlu.run(big).bound_cycles, bound16, 1.0);
  CalibrationRow b16 = kind_row("bf16_add", WorkloadKind::kAdd);
  b16.m = 16, b16.n = 64, b16.dtype = sim::DType::kBFloat16;
  try {
    runner.run(b16);
    ADD_FAILURE() << "a bf16 row ran on tpu-v3 (vfu.bf16 false)";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("bf16_add:"));
    EXPECT_THAT(e.what(), HasSubstr("bf16"));
  }
  // A measurement in microseconds is compared with the simulated time.
  EXPECT_NEAR(r.simulated(MeasuredUnit::kMicroseconds), r.simulated_ns / 1000, 1e-9);
  EXPECT_NEAR(r.error_pct(r.simulated_ns / 2000, MeasuredUnit::kMicroseconds), 100.0, 1e-9);
}

// Attention runs its three ops as written (and the encoder its ten): the MACs libmlu records are
// the workload's, and the span is not below the roofline.
TEST(ValidateRunner, AttentionAndEncoderRows) {
  const ValidateRunner runner("tpu-v3", {}, ConvLayout::kChannelsLast);
  CalibrationRow at = kind_row("at", WorkloadKind::kAttention);
  at.batch = 4, at.seq = 128, at.width = 64;
  const RowResult a = runner.run(at);
  EXPECT_DOUBLE_EQ(a.macs, at.macs());
  EXPECT_GE(a.kernels, 3u);  // two matmuls and a softmax (and any operand repacking)
  EXPECT_GT(a.tfu_cycles, 0u);
  EXPECT_GE(a.simulated_cycles, a.bound_cycles);
  // The scores [B, S, S] go to DRAM and back: at least written, read and written by the softmax, read.
  EXPECT_GE(a.dram_bytes, 4u * 4 * 128 * 128 * 4);
  CalibrationRow enc = kind_row("enc", WorkloadKind::kEncoder);
  enc.batch = 4, enc.seq = 64, enc.width = 128;
  const RowResult e = runner.run(enc);
  EXPECT_DOUBLE_EQ(e.macs, enc.macs());
  EXPECT_GE(e.kernels, 10u);
  EXPECT_GE(e.simulated_cycles, e.bound_cycles);
  // Twice the heads with the same width: the same linears, the attention's MACs unchanged too
  // (B S^2 D with D = H / B), so about the same time.
  enc.batch = 8;
  EXPECT_DOUBLE_EQ(runner.run(enc).macs, e.macs);
}

// model:NAME rows need the PyTorch layer's runner, which the CLI installs; without one the row
// is an error naming it, and with one the runner gets the row, the config and the trace path.
TEST(ValidateRunner, ModelRowsGoThroughTheInstalledRunner) {
  ValidateRunner runner("tpu-v3", {"dram.latency_ns=50"}, ConvLayout::kChannelsLast);
  CalibrationRow row = kind_row("r18", WorkloadKind::kModel);
  row.model = "resnet18", row.batch = 2;
  try {
    runner.run(row);
    ADD_FAILURE() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("r18: 'model:resnet18' rows run through the PyTorch layer"));
  }
  std::string seen;
  runner.set_model_runner([&](const CalibrationRow& r, const std::string& config,
                              const std::vector<std::string>& overrides, const std::string& trace) {
    seen = r.model + " " + std::to_string(r.batch) + " " + config + " " + overrides.at(0) + " [" + trace + "]";
    RowResult out;
    out.simulated_cycles = 42;
    return out;
  });
  EXPECT_EQ(runner.run(row).simulated_cycles, 42.0);
  EXPECT_EQ(seen, "resnet18 2 tpu-v3 dram.latency_ns=50 []");
  runner.set_trace_dir("/tmp/t");
  runner.run(row);
  EXPECT_EQ(seen, "resnet18 2 tpu-v3 dram.latency_ns=50 [/tmp/t/r18.json]");
}

TEST(ValidateRunner, BadConfigIsAConfigError) {
  EXPECT_THROW(ValidateRunner("tpu-v3", {"tfu.arrays=0"}, ConvLayout::kNchw), sim::ConfigError);
  EXPECT_THROW(ValidateRunner("no-such-chip", {}, ConvLayout::kNchw), sim::ConfigError);
}

}  // namespace
}  // namespace mlusim::cli
