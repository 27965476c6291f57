// The shipped presets: each loads, carries the documented hardware figures, and its derived peaks
// stay at or below the published ones.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "config/schema.h"
#include "config/test_util.h"
#include "mlusim/sim/config.h"

namespace mlusim::sim {
namespace {

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;
constexpr std::uint64_t GiB = 1024 * MiB;

// Peak of one TFU dtype in units of 1e12 ops/s: cores x MACs/cycle (rows x cols x arrays) x 2 ops x clock.
double tfu_peak_tera(const HardwareConfig& c, DType t) {
  const TfuArray& a = c.tfu_array(t);
  return c.total_cores() * double(a.rows) * a.cols * a.count * 2.0 * c.core_clock_mhz * 1e6 / 1e12;
}

TEST(Presets, DefaultIsMlu370X4) {
  EXPECT_STREQ(default_config_name(), "mlu370-x4");
  const HardwareConfig c = load_config(default_config_name());
  EXPECT_EQ(c.name, "mlu370-x4");
  EXPECT_EQ(c.source_file, testing::preset_path("mlu370-x4"));
}

TEST(Presets, EveryYamlInConfigDirLoads) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(config_dir())) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    const HardwareConfig c = load_config(entry.path().stem().string());
    EXPECT_EQ(c.name, entry.path().stem().string()) << "a preset's name matches its file name";
    ++count;
  }
  EXPECT_GE(count, 3);
}

// Figures from /work/shared/notes/hardware.md (MLU370-X4 column).
TEST(Presets, Mlu370X4Figures) {
  const HardwareConfig c = load_config("mlu370-x4");
  EXPECT_EQ(c.device_count, 1u);
  EXPECT_EQ(c.clusters, 8u);
  EXPECT_EQ(c.cores_per_cluster, 4u);
  EXPECT_EQ(c.total_cores(), 32u);
  EXPECT_DOUBLE_EQ(c.core_clock_mhz, 1000.0);
  EXPECT_EQ(c.nram_bytes, 640 * KiB);
  EXPECT_EQ(c.sram_bytes, 3968 * KiB);  // 3.875 MiB usable of 4 MB
  EXPECT_EQ(c.l2_bytes, 2 * MiB);
  EXPECT_EQ(c.dram_bytes, 24 * GiB);
  EXPECT_DOUBLE_EQ(c.dram_bandwidth_gbps, 307.2);
  EXPECT_EQ(c.dram_bus_width_bits, 384u);
  EXPECT_EQ(c.vfu_width_bytes, 128u);
  EXPECT_EQ(c.dma_burst_bytes, 64u);
  EXPECT_DOUBLE_EQ(c.host_link_bandwidth_gbps, 26.0);  // PCIe Gen4 x16 pinned, estimate
  EXPECT_DOUBLE_EQ(c.host_link_pageable_gbps, 15.6);   // 60% of pinned, estimate
  EXPECT_DOUBLE_EQ(c.mlu_link_bandwidth_gbps, 0.0);    // the X4 card has no MLU-Link
  EXPECT_DOUBLE_EQ(c.launch_overhead_ns, 5000.0);
  EXPECT_DOUBLE_EQ(c.api_call_ns, 500.0);
  EXPECT_TRUE(c.tfu_fp32.supported());
  EXPECT_TRUE(c.tfu_fp16.supported());
  EXPECT_TRUE(c.tfu_int8.supported());
  EXPECT_EQ(c.tfu_dataflow, Dataflow::kOutputStationary);
  EXPECT_TRUE(c.tfu_fold_overlap);  // estimate: folds pipeline (double-buffered accumulators)
  EXPECT_TRUE(c.tfu_intrinsic_overlap);  // estimate: so do back-to-back intrinsics
}

// Figures from /work/shared/notes/hardware.md (MLU270 column).
TEST(Presets, Mlu270Figures) {
  const HardwareConfig c = load_config("mlu270");
  EXPECT_EQ(c.device_count, 1u);
  EXPECT_EQ(c.clusters, 4u);
  EXPECT_EQ(c.cores_per_cluster, 4u);
  EXPECT_DOUBLE_EQ(c.core_clock_mhz, 1000.0);
  EXPECT_EQ(c.nram_bytes, 384 * KiB);
  EXPECT_EQ(c.wram_bytes, 1 * MiB);
  EXPECT_EQ(c.sram_bytes, 1536 * KiB);  // 1.5 MB usable of 2 MB
  EXPECT_EQ(c.l2_bytes, 1 * MiB);
  EXPECT_EQ(c.dram_channels, 4u);
  EXPECT_DOUBLE_EQ(c.dram_bandwidth_gbps, 102.4);
  EXPECT_EQ(c.dram_bus_width_bits, 256u);
  EXPECT_EQ(c.vfu_width_bytes, 64u);
  EXPECT_DOUBLE_EQ(c.host_link_bandwidth_gbps, 13.0);  // PCIe Gen3 x16 pinned, estimate
  EXPECT_DOUBLE_EQ(c.mlu_link_bandwidth_gbps, 0.0);
  // The MLU270 tensor unit is int8 only.
  EXPECT_FALSE(c.tfu_fp32.supported());
  EXPECT_FALSE(c.tfu_fp16.supported());
  EXPECT_TRUE(c.tfu_int8.supported());
  EXPECT_FALSE(c.tfu_array(DType::kInt32).supported());
}

// Published peaks (notes/hardware.md): MLU370-X4 int8 256 TOPS, fp16 96 TFLOPS, fp32 ~24 TFLOPS
// (estimate in the notes); MLU270 int8 128 TOPS, no floating point in the tensor unit. The
// simulated chip must never be faster than the real one.
TEST(Presets, DerivedTfuPeaksDoNotExceedPublished) {
  struct Published {
    const char* preset;
    DType dtype;
    double tera_ops;
  };
  const std::vector<Published> published = {
      {"mlu370-x4", DType::kInt8, 256.0},
      {"mlu370-x4", DType::kFloat16, 96.0},
      {"mlu370-x4", DType::kFloat32, 24.0},
      {"mlu270", DType::kInt8, 128.0},
  };
  for (const Published& p : published) {
    SCOPED_TRACE(std::string(p.preset) + " " + std::string(dtype_name(p.dtype)));
    const double peak = tfu_peak_tera(load_config(p.preset), p.dtype);
    EXPECT_LE(peak, p.tera_ops);
    EXPECT_GE(peak, 0.9 * p.tera_ops) << "array trimmed far more than needed";
  }
  EXPECT_DOUBLE_EQ(tfu_peak_tera(load_config("mlu370-x4"), DType::kInt8), 253.952);  // 64 x 62
}

// Figures from /work/shared/notes/hardware.md (MLU590-M9 column); the rest are estimates in the
// YAML. The MLU500 class is the first with bf16: compute capability 5, bf16 in VFU and TFU.
TEST(Presets, Mlu590Figures) {
  const HardwareConfig c = load_config("mlu590");
  EXPECT_EQ(c.total_cores(), 32u);
  EXPECT_DOUBLE_EQ(c.core_clock_mhz, 1600.0);
  EXPECT_EQ(c.nram_bytes, 320 * KiB);
  EXPECT_EQ(c.sram_bytes, 1920 * KiB);  // 1.875 MiB usable of 2 MB
  EXPECT_EQ(c.l2_bytes, 48 * MiB);
  EXPECT_EQ(c.dram_bytes, 80 * GiB);
  EXPECT_DOUBLE_EQ(c.dram_bandwidth_gbps, 2764.8);
  EXPECT_EQ(c.vfu_width_bytes, 128u);  // vector ops/cycle/core fp16/fp32 128/64
  EXPECT_EQ(c.capability_major, 5u);
  EXPECT_TRUE(c.vfu_bf16);
  EXPECT_TRUE(c.computes(DType::kBFloat16));
  EXPECT_TRUE(c.tfu_bf16.supported());
  // Tensor MACs/cycle/core int8/fp16/fp32 = 4096/2048/512; bf16 at fp16's rate (estimate).
  EXPECT_EQ(c.tfu_int8.macs_per_cycle(), 4096u);
  EXPECT_EQ(c.tfu_fp16.macs_per_cycle(), 2048u);
  EXPECT_EQ(c.tfu_fp32.macs_per_cycle(), 512u);
  EXPECT_EQ(c.tfu_bf16.macs_per_cycle(), c.tfu_fp16.macs_per_cycle());
  // The notes' peak estimates (~419 / ~210 / ~52) are this same product, rounded.
  EXPECT_NEAR(tfu_peak_tera(c, DType::kInt8), 419.0, 0.5);
  EXPECT_NEAR(tfu_peak_tera(c, DType::kFloat16), 210.0, 0.5);
  EXPECT_NEAR(tfu_peak_tera(c, DType::kFloat32), 52.0, 0.5);
  EXPECT_DOUBLE_EQ(tfu_peak_tera(c, DType::kBFloat16), tfu_peak_tera(c, DType::kFloat16));
}

// bf16 only where the hardware has it: the MLU370 and MLU270 presets (compute capability 3) and
// tiny have none, and a bf16 tensor array without bf16 conversions is rejected.
TEST(Presets, Bf16OnlyOnMlu500Class) {
  for (const char* name : {"mlu370-x4", "mlu370-x8", "mlu270", "tiny"}) {
    SCOPED_TRACE(name);
    const HardwareConfig c = load_config(name);
    EXPECT_FALSE(c.computes(DType::kBFloat16));
    EXPECT_FALSE(c.tfu_bf16.supported());
    EXPECT_EQ(c.capability_major, 3u);
  }
  try {
    load_config("mlu370-x4", {{"tfu.bf16.rows", "32"}, {"tfu.bf16.cols", "46"}});
    ADD_FAILURE() << "a bf16 array without vfu.bf16 loaded";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("vfu.bf16 is false"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(load_config("mlu370-x4", {{"vfu.bf16", "true"}}).computes(DType::kBFloat16));  // what-if
}

// One TPU v3 TensorCore from public figures (configs/tpu-v3.yaml: Google Cloud TPU docs, Jouppi et al.
// CACM 2020 / ISCA 2021, Norrie et al. Hot Chips 2020).
TEST(Presets, TpuV3Figures) {
  const HardwareConfig c = load_config("tpu-v3");
  EXPECT_EQ(c.device_count, 1u);
  EXPECT_EQ(c.total_cores(), 1u);                     // one TensorCore
  EXPECT_DOUBLE_EQ(c.core_clock_mhz, 940.0);
  EXPECT_EQ(c.dram_bytes, 16 * GiB);                  // 32 GiB HBM2 per chip, 2 TensorCores
  EXPECT_DOUBLE_EQ(c.dram_bandwidth_gbps, 450.0);     // 900 GB/s per chip
  EXPECT_EQ(c.nram_bytes + c.wram_bytes + c.sram_bytes, 16 * MiB);  // VMEM, split over the three roles
  EXPECT_EQ(c.vfu_width_bytes, 8u * 128u * 4u);       // 8 sublanes x 128 lanes x 32 bit
  for (DType t : {DType::kFloat32, DType::kFloat16}) {  // the MXUs (fp32 = one bf16 pass, fp16 = bf16)
    EXPECT_EQ(c.tfu_array(t).rows, 128u);
    EXPECT_EQ(c.tfu_array(t).cols, 128u);
    EXPECT_EQ(c.tfu_array(t).count, 2u);              // 2 MXUs per TensorCore
  }
  EXPECT_FALSE(c.tfu_int8.supported());               // bf16 multiplies only
  EXPECT_EQ(c.tfu_dataflow, Dataflow::kWeightStationary);
  EXPECT_TRUE(c.tfu_fold_overlap);
  EXPECT_FALSE(c.tfu_intrinsic_overlap);                // chosen by the calibration GEMMs (fidelity.md)
  EXPECT_TRUE(c.tfu_conv_depth_per_tap);                // channels on the lanes, one matmul per kernel position
  // 123 TFLOPS bf16 per chip, published rounded to three digits: 2 cores x 2 MXUs x 16384 MACs x 2 x
  // 0.94 GHz = 123.2 (the one preset whose derived peak is the published product itself).
  EXPECT_NEAR(2 * tfu_peak_tera(c, DType::kFloat16), 123.0, 0.5);
  EXPECT_DOUBLE_EQ(tfu_peak_tera(c, DType::kFloat32), tfu_peak_tera(c, DType::kFloat16));
}

// One NVIDIA H200 SXM from public figures and the driver's report of the measured part
// (configs/h200.yaml: the H200 datasheet, the H100 and A100 architecture whitepapers, the CUDA
// programming guide's throughput table).
TEST(Presets, H200Figures) {
  const HardwareConfig c = load_config("h200");
  EXPECT_EQ(c.total_cores(), 132u);                   // 132 SMs, one per cluster
  EXPECT_EQ(c.cores_per_cluster, 1u);
  EXPECT_DOUBLE_EQ(c.core_clock_mhz, 1980.0);         // the SM clock's maximum
  EXPECT_DOUBLE_EQ(c.dram_bandwidth_gbps, 4800.0);    // HBM3e 4.8 TB/s
  EXPECT_EQ(c.l2_bytes, 60 * MiB);
  EXPECT_EQ(c.nram_bytes, 256 * KiB);                 // the register file
  EXPECT_EQ(c.wram_bytes + c.sram_bytes, 228 * KiB);  // the shared memory, split over two roles
  EXPECT_EQ(c.vfu_width_bytes / 4, 128u);             // 128 FP32 lanes per SM
  EXPECT_EQ(c.tfu_array(DType::kFloat16).count, 4u);  // 4 tensor cores per SM
  // The datasheet's dense peaks are at 1830 MHz: fp16/bf16 989.4 TFLOPS, TF32 494.7, INT8 1978.9 TOPS.
  const double datasheet_clock = 1830.0 / 1980.0;
  EXPECT_NEAR(tfu_peak_tera(c, DType::kFloat16) * datasheet_clock, 989.4, 0.5);
  EXPECT_NEAR(tfu_peak_tera(c, DType::kBFloat16) * datasheet_clock, 989.4, 0.5);
  EXPECT_NEAR(tfu_peak_tera(c, DType::kFloat32) * datasheet_clock, 494.7, 0.5);
  EXPECT_NEAR(tfu_peak_tera(c, DType::kInt8) * datasheet_clock, 1978.9, 0.5);
  EXPECT_TRUE(c.computes(DType::kBFloat16));
  EXPECT_EQ(c.capability_major, 9u);
}

// Vector ops/cycle/core fp16/fp32 (notes/hardware.md): MLU270 64/32, MLU370 128/64. An FMA lane
// counts 2 ops, so ops/cycle = width / dtype size x 2.
TEST(Presets, VfuWidthMatchesPublishedVectorRate) {
  const HardwareConfig mlu370 = load_config("mlu370-x4");
  const HardwareConfig mlu270 = load_config("mlu270");
  const HardwareConfig mlu590 = load_config("mlu590");
  EXPECT_EQ(mlu590.vfu_width_bytes / 4 * 2, 64u);
  EXPECT_EQ(mlu590.vfu_width_bytes / 2 * 2, 128u);
  EXPECT_EQ(mlu370.vfu_width_bytes / 4 * 2, 64u);
  EXPECT_EQ(mlu370.vfu_width_bytes / 2 * 2, 128u);
  EXPECT_EQ(mlu270.vfu_width_bytes / 4 * 2, 32u);
  EXPECT_EQ(mlu270.vfu_width_bytes / 2 * 2, 64u);
}

// One core alone must not saturate DRAM, or DRAM contention between cores never shows.
TEST(Presets, PerCoreDmaIsBelowDramBandwidth) {
  for (const char* name : {"mlu370-x4", "mlu270", "mlu590", "h200", "tiny"}) {
    SCOPED_TRACE(name);
    const HardwareConfig c = load_config(name);
    EXPECT_LT(c.io_dma_bandwidth_gbps, c.dram_bandwidth_gbps);
    EXPECT_LT(c.memcore_dma_bandwidth_gbps, c.dram_bandwidth_gbps);
    EXPECT_GT(c.io_dma_bandwidth_gbps * c.total_cores(), c.dram_bandwidth_gbps);
  }
}

TEST(Presets, TinyIsSmallWithRoundNumbers) {
  const HardwareConfig c = load_config("tiny");
  EXPECT_EQ(c.name, "tiny");
  EXPECT_LE(c.dram_bytes, 256 * MiB);
  EXPECT_EQ(c.dram_bytes, 64 * MiB);
  EXPECT_EQ(c.clusters, 2u);
  EXPECT_EQ(c.cores_per_cluster, 4u);
  EXPECT_EQ(c.nram_bytes, 64 * KiB);
  EXPECT_EQ(c.wram_bytes, 64 * KiB);
  EXPECT_EQ(c.sram_bytes, 256 * KiB);
  EXPECT_DOUBLE_EQ(c.core_clock_mhz, 1000.0);
  EXPECT_EQ(c.dram_channels, 4u);
  EXPECT_DOUBLE_EQ(c.dram_bandwidth_gbps, 64.0);
  EXPECT_DOUBLE_EQ(c.io_dma_bandwidth_gbps, 16.0);
  EXPECT_DOUBLE_EQ(c.move_dma_bandwidth_gbps, 32.0);
  EXPECT_DOUBLE_EQ(c.memcore_dma_bandwidth_gbps, 32.0);
  EXPECT_DOUBLE_EQ(c.sram_bandwidth_gbps, 64.0);
  EXPECT_DOUBLE_EQ(c.noc_bandwidth_gbps, 128.0);
  EXPECT_EQ(c.tfu_fp32.rows, 4u);
  EXPECT_EQ(c.tfu_fp32.cols, 4u);
  EXPECT_EQ(c.tfu_fp16.rows, 8u);
  EXPECT_EQ(c.tfu_int8.cols, 16u);
  // Inherited from mlu370-x4.yaml through `extends:`.
  EXPECT_EQ(c.vfu_width_bytes, 128u);
  EXPECT_DOUBLE_EQ(c.mlu_link_bandwidth_gbps, 0.0);
  EXPECT_EQ(c.tfu_dataflow, Dataflow::kOutputStationary);
  EXPECT_FALSE(c.tfu_fold_overlap);  // its own: SCALE-Sim v2's schedule (mlu370-x4 pipelines folds)
  EXPECT_FALSE(c.tfu_intrinsic_overlap);
}

// configs/README.md documents every key of the schema.
TEST(Presets, ReadmeDocumentsEveryKey) {
  std::ifstream in(config_dir() / "README.md");
  ASSERT_TRUE(in) << "configs/README.md missing";
  std::stringstream text;
  text << in.rdbuf();
  for (const config_internal::Field& field : config_internal::schema())
    EXPECT_THAT(text.str(), ::testing::HasSubstr(std::string("`") + field.key + "`"));
}

}  // namespace
}  // namespace mlusim::sim
