// A straight-line program of VFU intrinsics that a streaming kernel applies to every tile: the
// elementwise op expressed as casts, unary/binary/select steps on NRAM buffers. Built on the
// host per op call (e.g. fp16 gelu_tanh = cast to fp32, nine arithmetic steps, cast back), then
// executed by the kernel with n = the tile's element count.
//
// Buffers: every input operand gets a double-buffered tile (the next tile's DMA lands in the
// other half); the result gets a double-buffered tile (its store overlaps the next tile);
// constants are filled once per task; intermediate values share single buffers, reused once
// their last reader has run (a step may write over its own operand: the VFU allows exact
// in-place operands).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "mlusim/mlu/tensor.h"
#include "mlusim/sim/kernel_api.h"
#include "mlusim/sim/vector_ops.h"

namespace mlusim::mlu::ew {

using ValueId = int;

enum class StepKind : std::uint8_t { kCast, kUnary, kBinary, kBinaryScalar, kSelect };

struct Step {
  StepKind kind = StepKind::kUnary;
  sim::VecUnaryOp unary = sim::VecUnaryOp::kCopy;
  sim::VecBinaryOp binary = sim::VecBinaryOp::kAdd;
  DType dtype = DType::kFloat32;  // operand dtype (for casts: the source dtype)
  ValueId dst = -1, a = -1, b = -1, cond = -1;
  double scalar = 0;
};

class Program {
 public:
  enum class ValueKind : std::uint8_t { kInput, kConstant, kComputed };
  struct Value {
    ValueKind kind;
    DType dtype;
    int operand = -1;   // kInput: operand index in the iteration space
    double constant = 0;
  };
  struct Buffer {
    std::size_t elem_bytes = 0;
    bool double_buffered = false;
  };

  // The tile of operand `operand` (>= 1; 0 is the output) as stored in GDRAM.
  ValueId input(int operand, DType dtype);
  // A tile filled with `value` (converted as vec_fill converts).
  ValueId constant(DType dtype, double value);
  ValueId cast(ValueId v, DType to);  // v itself when it already has dtype `to`
  ValueId unary(sim::VecUnaryOp op, ValueId v);
  // Comparisons write 1/0 in the operands' dtype, as the VFU does.
  ValueId binary(sim::VecBinaryOp op, ValueId a, ValueId b);
  ValueId binary_scalar(sim::VecBinaryOp op, ValueId a, double scalar);
  // cond is a bool value.
  ValueId select(ValueId cond_bool, ValueId a, ValueId b);

  DType dtype(ValueId v) const { return values_[static_cast<std::size_t>(v)].dtype; }

  // Marks the value the kernel stores (its dtype must be the output's) and assigns buffers.
  void set_result(ValueId v);

  ValueId result() const { return result_; }
  const std::vector<Value>& values() const { return values_; }
  const std::vector<Step>& steps() const { return steps_; }
  const std::vector<Buffer>& buffers() const { return buffers_; }
  int buffer_of(ValueId v) const { return buffer_of_[static_cast<std::size_t>(v)]; }
  // NRAM bytes per tile element over all buffers (double-buffered ones twice).
  std::size_t bytes_per_element() const;

 private:
  ValueId add_value(Value v);
  ValueId add_step(Step s, DType result);

  std::vector<Value> values_;
  std::vector<Step> steps_;
  std::vector<Buffer> buffers_;
  std::vector<int> buffer_of_;
  ValueId result_ = -1;
};

// Kernel side: runs every step on n elements. buffer_addr[b] is buffer b's tile for this
// iteration (the caller picks the half of double-buffered ones).
void run_steps(const Program& p, const std::vector<dev::Addr>& buffer_addr, std::size_t n);
// Fills the constant values' buffers (once per task, `n` = the largest tile).
void fill_constants(const Program& p, const std::vector<dev::Addr>& buffer_addr, std::size_t n);

}  // namespace mlusim::mlu::ew
