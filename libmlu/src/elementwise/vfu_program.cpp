#include "elementwise/vfu_program.h"

#include <algorithm>
#include <map>

namespace mlusim::mlu::ew {

ValueId Program::add_value(Value v) {
  values_.push_back(v);
  return static_cast<ValueId>(values_.size() - 1);
}

ValueId Program::add_step(Step s, DType result) {
  s.dst = add_value(Value{ValueKind::kComputed, result});
  steps_.push_back(s);
  return s.dst;
}

ValueId Program::input(int operand, DType dtype) {
  for (std::size_t v = 0; v < values_.size(); ++v)
    if (values_[v].kind == ValueKind::kInput && values_[v].operand == operand) return static_cast<ValueId>(v);
  return add_value(Value{ValueKind::kInput, dtype, operand});
}

ValueId Program::constant(DType dtype, double value) {
  return add_value(Value{ValueKind::kConstant, dtype, -1, value});
}

ValueId Program::cast(ValueId v, DType to) {
  if (dtype(v) == to) return v;
  Step s;
  s.kind = StepKind::kCast;
  s.dtype = dtype(v);
  s.a = v;
  return add_step(s, to);
}

ValueId Program::unary(sim::VecUnaryOp op, ValueId v) {
  Step s;
  s.kind = StepKind::kUnary;
  s.unary = op;
  s.dtype = dtype(v);
  s.a = v;
  return add_step(s, dtype(v));
}

ValueId Program::binary(sim::VecBinaryOp op, ValueId a, ValueId b) {
  Step s;
  s.kind = StepKind::kBinary;
  s.binary = op;
  s.dtype = dtype(a);
  s.a = a;
  s.b = b;
  return add_step(s, dtype(a));
}

ValueId Program::binary_scalar(sim::VecBinaryOp op, ValueId a, double scalar) {
  Step s;
  s.kind = StepKind::kBinaryScalar;
  s.binary = op;
  s.dtype = dtype(a);
  s.a = a;
  s.scalar = scalar;
  return add_step(s, dtype(a));
}

ValueId Program::select(ValueId cond, ValueId a, ValueId b) {
  Step s;
  s.kind = StepKind::kSelect;
  s.dtype = dtype(a);
  s.cond = cond;
  s.a = a;
  s.b = b;
  return add_step(s, dtype(a));
}

void Program::set_result(ValueId v) {
  result_ = v;
  buffers_.clear();
  buffer_of_.assign(values_.size(), -1);
  auto new_buffer = [&](ValueId id, bool double_buffered) {
    buffers_.push_back(Buffer{sim::dtype_size(dtype(id)), double_buffered});
    buffer_of_[static_cast<std::size_t>(id)] = static_cast<int>(buffers_.size() - 1);
  };
  for (std::size_t id = 0; id < values_.size(); ++id) {
    if (values_[id].kind == ValueKind::kInput) new_buffer(static_cast<ValueId>(id), true);
    if (values_[id].kind == ValueKind::kConstant) new_buffer(static_cast<ValueId>(id), false);
  }
  if (values_[static_cast<std::size_t>(v)].kind == ValueKind::kComputed) new_buffer(v, true);

  // Intermediates: single buffers pooled by element size, freed after their last reader.
  std::vector<int> last_use(values_.size(), -1);
  for (std::size_t i = 0; i < steps_.size(); ++i)
    for (ValueId u : {steps_[i].a, steps_[i].b, steps_[i].cond})
      if (u >= 0) last_use[static_cast<std::size_t>(u)] = static_cast<int>(i);
  auto is_temp = [&](ValueId id) {
    return id != result_ && values_[static_cast<std::size_t>(id)].kind == ValueKind::kComputed;
  };
  std::map<std::size_t, std::vector<int>> free_pool;
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    const Step& s = steps_[i];
    for (ValueId u : {s.a, s.b, s.cond}) {
      if (u < 0 || !is_temp(u) || last_use[static_cast<std::size_t>(u)] != static_cast<int>(i)) continue;
      auto& pool = free_pool[sim::dtype_size(dtype(u))];
      const int b = buffer_of_[static_cast<std::size_t>(u)];
      if (std::find(pool.begin(), pool.end(), b) == pool.end()) pool.push_back(b);
    }
    if (!is_temp(s.dst)) continue;
    auto& pool = free_pool[sim::dtype_size(dtype(s.dst))];
    if (pool.empty()) {
      new_buffer(s.dst, false);
    } else {
      buffer_of_[static_cast<std::size_t>(s.dst)] = pool.back();
      pool.pop_back();
    }
    if (last_use[static_cast<std::size_t>(s.dst)] < 0) pool.push_back(buffer_of_[static_cast<std::size_t>(s.dst)]);
  }
}

std::size_t Program::bytes_per_element() const {
  std::size_t bytes = 0;
  for (const Buffer& b : buffers_) bytes += b.elem_bytes * (b.double_buffered ? 2 : 1);
  return bytes;
}

void run_steps(const Program& p, const std::vector<dev::Addr>& buffer_addr, std::size_t n) {
  auto at = [&](ValueId v) { return buffer_addr[static_cast<std::size_t>(p.buffer_of(v))]; };
  for (const Step& s : p.steps()) {
    switch (s.kind) {
      case StepKind::kCast: dev::vec_cast(p.dtype(s.dst), at(s.dst), s.dtype, at(s.a), n); break;
      case StepKind::kUnary: dev::vec_unary(s.unary, s.dtype, at(s.dst), at(s.a), n); break;
      case StepKind::kBinary: dev::vec_binary(s.binary, s.dtype, at(s.dst), at(s.a), at(s.b), n); break;
      case StepKind::kBinaryScalar: dev::vec_binary_scalar(s.binary, s.dtype, at(s.dst), at(s.a), s.scalar, n); break;
      case StepKind::kSelect: dev::vec_select(s.dtype, at(s.dst), at(s.cond), at(s.a), at(s.b), n); break;
    }
  }
}

void fill_constants(const Program& p, const std::vector<dev::Addr>& buffer_addr, std::size_t n) {
  for (std::size_t v = 0; v < p.values().size(); ++v) {
    const Program::Value& val = p.values()[v];
    if (val.kind != Program::ValueKind::kConstant) continue;
    dev::vec_fill(val.dtype, buffer_addr[static_cast<std::size_t>(p.buffer_of(static_cast<ValueId>(v)))], val.constant, n);
  }
}

}  // namespace mlusim::mlu::ew
