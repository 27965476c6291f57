// VFU cycle model against hand-computed values of the documented formulas.
#include "compute/vfu_timing.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace mlusim::sim::compute {
namespace {

HardwareConfig vfu_config() {
  HardwareConfig cfg{};
  cfg.name = "unit";
  cfg.vfu_width_bytes = 128;  // fp32 32 lanes, fp16 64, int8/bool 128
  cfg.vfu_startup_cycles = 10;
  cfg.vfu_transcendental_factor = 8;
  return cfg;
}

TEST(VfuTiming, ElementsPerCycleFollowDtypeWidth) {
  const HardwareConfig cfg = vfu_config();
  EXPECT_EQ(vfu_elems_per_cycle(cfg, DType::kFloat32), 32u);
  EXPECT_EQ(vfu_elems_per_cycle(cfg, DType::kInt32), 32u);
  EXPECT_EQ(vfu_elems_per_cycle(cfg, DType::kFloat16), 64u);
  EXPECT_EQ(vfu_elems_per_cycle(cfg, DType::kInt8), 128u);
  EXPECT_EQ(vfu_elems_per_cycle(cfg, DType::kBool), 128u);
  EXPECT_EQ(vfu_elems_per_cycle(cfg, DType::kFloat64), 16u);
  HardwareConfig narrow = cfg;
  narrow.vfu_width_bytes = 2;
  EXPECT_EQ(vfu_elems_per_cycle(narrow, DType::kFloat32), 1u);  // never below one element
  narrow.vfu_width_bytes = 0;
  EXPECT_THROW(vfu_elems_per_cycle(narrow, DType::kFloat32), std::invalid_argument);
}

TEST(VfuTiming, SimpleAndTranscendentalElementwise) {
  const HardwareConfig cfg = vfu_config();
  // startup + ceil(n / epc) * passes
  EXPECT_EQ(vfu_binary_cycles(cfg, VecBinaryOp::kAdd, DType::kFloat32, 100), 10u + 4u);
  EXPECT_EQ(vfu_binary_cycles(cfg, VecBinaryOp::kAdd, DType::kFloat32, 96), 10u + 3u);
  EXPECT_EQ(vfu_binary_cycles(cfg, VecBinaryOp::kLt, DType::kInt8, 129), 10u + 2u);
  EXPECT_EQ(vfu_binary_cycles(cfg, VecBinaryOp::kDiv, DType::kFloat32, 100), 10u + 4u * 8u);
  EXPECT_EQ(vfu_binary_cycles(cfg, VecBinaryOp::kPow, DType::kFloat16, 100), 10u + 2u * 8u);
  EXPECT_EQ(vfu_unary_cycles(cfg, VecUnaryOp::kExp, DType::kFloat16, 100), 10u + 2u * 8u);
  EXPECT_EQ(vfu_unary_cycles(cfg, VecUnaryOp::kGelu, DType::kFloat32, 1), 10u + 8u);
  EXPECT_EQ(vfu_unary_cycles(cfg, VecUnaryOp::kRelu, DType::kFloat32, 1000), 10u + 32u);
  EXPECT_EQ(vfu_unary_cycles(cfg, VecUnaryOp::kNot, DType::kBool, 256), 10u + 2u);
  EXPECT_EQ(vfu_unary_cycles(cfg, VecUnaryOp::kCopy, DType::kFloat64, 17), 10u + 2u);
  // The intrinsic is issued even when empty.
  EXPECT_EQ(vfu_binary_cycles(cfg, VecBinaryOp::kMul, DType::kFloat32, 0), 10u);
}

TEST(VfuTiming, ReductionPaysPerRowVectorsAndOneTreeTail) {
  const HardwareConfig cfg = vfu_config();
  // startup + rows * ceil(n / epc) + ceil(log2(epc)); fp32: epc 32 -> tree depth 5.
  EXPECT_EQ(vfu_reduce_cycles(cfg, VecReduceOp::kSum, DType::kFloat32, 3, 40), 10u + 3u * 2u + 5u);
  EXPECT_EQ(vfu_reduce_cycles(cfg, VecReduceOp::kMax, DType::kFloat32, 1, 32), 10u + 1u + 5u);
  // fp16: epc 64 -> depth 6; int8: epc 128 -> depth 7.
  EXPECT_EQ(vfu_reduce_cycles(cfg, VecReduceOp::kSumSquares, DType::kFloat16, 10, 8), 10u + 10u + 6u);
  EXPECT_EQ(vfu_reduce_cycles(cfg, VecReduceOp::kMin, DType::kInt8, 2, 300), 10u + 2u * 3u + 7u);
  HardwareConfig odd = cfg;
  odd.vfu_width_bytes = 96;  // fp32 epc 24 -> ceil(log2 24) = 5
  EXPECT_EQ(vfu_reduce_cycles(odd, VecReduceOp::kSum, DType::kFloat32, 1, 48), 10u + 2u + 5u);
}

TEST(VfuTiming, CastFillSelect) {
  const HardwareConfig cfg = vfu_config();
  // Casts stream at the wider dtype's rate.
  EXPECT_EQ(vfu_cast_cycles(cfg, DType::kFloat32, DType::kFloat16, 100), 10u + 4u);
  EXPECT_EQ(vfu_cast_cycles(cfg, DType::kFloat16, DType::kFloat32, 100), 10u + 4u);
  EXPECT_EQ(vfu_cast_cycles(cfg, DType::kInt8, DType::kFloat16, 100), 10u + 2u);
  EXPECT_EQ(vfu_cast_cycles(cfg, DType::kFloat32, DType::kFloat64, 100), 10u + 7u);
  EXPECT_EQ(vfu_cast_cycles(cfg, DType::kInt32, DType::kInt64, 16), 10u + 1u);
  EXPECT_EQ(vfu_fill_cycles(cfg, DType::kFloat16, 65), 10u + 2u);
  EXPECT_EQ(vfu_select_cycles(cfg, DType::kInt32, 33), 10u + 2u);
}

TEST(VfuTiming, RejectsWhatTheArithmeticRejects) {
  const HardwareConfig cfg = vfu_config();
  try {
    vfu_unary_cycles(cfg, VecUnaryOp::kExp, DType::kInt32, 10);
    FAIL() << "exp on int32 must be rejected";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("exp"), std::string::npos) << msg;
    EXPECT_NE(msg.find("int32"), std::string::npos) << msg;
  }
  EXPECT_THROW(vfu_binary_cycles(cfg, VecBinaryOp::kAdd, DType::kFloat64, 10), std::invalid_argument);
  EXPECT_THROW(vfu_binary_cycles(cfg, VecBinaryOp::kAnd, DType::kFloat32, 10), std::invalid_argument);
  EXPECT_THROW(vfu_reduce_cycles(cfg, VecReduceOp::kSum, DType::kBool, 1, 10), std::invalid_argument);
  EXPECT_THROW(vfu_fill_cycles(cfg, DType::kInt64, 10), std::invalid_argument);
  EXPECT_THROW(vfu_select_cycles(cfg, DType::kFloat64, 10), std::invalid_argument);
}

TEST(VfuTiming, CostClasses) {
  EXPECT_EQ(cost_class(VecBinaryOp::kAdd), VfuCostClass::kSimple);
  EXPECT_EQ(cost_class(VecBinaryOp::kGe), VfuCostClass::kSimple);
  EXPECT_EQ(cost_class(VecBinaryOp::kDiv), VfuCostClass::kTranscendental);
  EXPECT_EQ(cost_class(VecUnaryOp::kRelu), VfuCostClass::kSimple);
  EXPECT_EQ(cost_class(VecUnaryOp::kTanh), VfuCostClass::kTranscendental);
  EXPECT_EQ(cost_class(VecUnaryOp::kSin), VfuCostClass::kTranscendental);
  EXPECT_EQ(cost_class(VecUnaryOp::kCos), VfuCostClass::kTranscendental);
  EXPECT_EQ(op_name(VecBinaryOp::kGe), "ge");
  EXPECT_EQ(op_name(VecUnaryOp::kGelu), "gelu");
  EXPECT_EQ(op_name(VecReduceOp::kSumSquares), "sum_squares");
}

}  // namespace
}  // namespace mlusim::sim::compute
