// elementwise_program: validates an ElementwiseProgram, orders its nodes, and compiles the ones
// the output depends on to one ew::Program by chaining the elementwise ops' emitters
// (elementwise/emit.h), then runs it with the streaming kernel over the broadcast inputs.
#include <cmath>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/launch.h"
#include "elementwise/conversion.h"
#include "elementwise/emit.h"
#include "elementwise/iter_space.h"
#include "elementwise/op_checks.h"
#include "elementwise/streaming_kernel.h"
#include "mlusim/mlu/fused.h"

namespace mlusim::mlu {

using Kind = ExprNode::Kind;

namespace {
int append(ElementwiseProgram& p, ExprNode n) {
  p.nodes.push_back(n);
  return static_cast<int>(p.nodes.size()) - 1;
}
}  // namespace

int ElementwiseProgram::input(int index) {
  ExprNode n;
  n.kind = Kind::kInput;
  n.input = index;
  return append(*this, n);
}
int ElementwiseProgram::constant(double value, DType dtype) {
  ExprNode n;
  n.kind = Kind::kConstant;
  n.value = value;
  n.dtype = dtype;
  return append(*this, n);
}
int ElementwiseProgram::unary(UnaryOp op, int x) {
  ExprNode n;
  n.kind = Kind::kUnary;
  n.unary = op;
  n.a = x;
  return append(*this, n);
}
int ElementwiseProgram::binary(BinaryOp op, int a, int b, double alpha) {
  ExprNode n;
  n.kind = Kind::kBinary;
  n.binary = op;
  n.a = a, n.b = b;
  n.alpha = alpha;
  return append(*this, n);
}
int ElementwiseProgram::compare(CompareOp op, int a, int b) {
  ExprNode n;
  n.kind = Kind::kCompare;
  n.compare = op;
  n.a = a, n.b = b;
  return append(*this, n);
}
int ElementwiseProgram::logical(LogicalOp op, int a, int b) {
  ExprNode n;
  n.kind = Kind::kLogical;
  n.logical = op;
  n.a = a, n.b = b;
  return append(*this, n);
}
int ElementwiseProgram::logical_not(int x) {
  ExprNode n;
  n.kind = Kind::kLogicalNot;
  n.a = x;
  return append(*this, n);
}
int ElementwiseProgram::where(int cond, int a, int b) {
  ExprNode n;
  n.kind = Kind::kWhere;
  n.a = cond, n.b = a, n.c = b;
  return append(*this, n);
}
int ElementwiseProgram::cast(int x, DType to) {
  ExprNode n;
  n.kind = Kind::kCast;
  n.a = x;
  n.dtype = to;
  return append(*this, n);
}

namespace {

constexpr const char* kOp = "fused_elementwise";
// A bound on program size (each node may need an NRAM buffer per tile element).
constexpr std::size_t kMaxNodes = 1024;

std::string at(int id) { return std::string(kOp) + ": node " + std::to_string(id); }

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kInput:
      return "input";
    case Kind::kConstant:
      return "constant";
    case Kind::kUnary:
      return "unary";
    case Kind::kBinary:
      return "binary";
    case Kind::kCompare:
      return "compare";
    case Kind::kLogical:
      return "logical";
    case Kind::kLogicalNot:
      return "logical_not";
    case Kind::kWhere:
      return "where";
    case Kind::kCast:
      return "cast";
  }
  return "invalid";
}

int operand_count(Kind k) {
  switch (k) {
    case Kind::kInput:
    case Kind::kConstant:
      return 0;
    case Kind::kUnary:
    case Kind::kLogicalNot:
    case Kind::kCast:
      return 1;
    case Kind::kBinary:
    case Kind::kCompare:
    case Kind::kLogical:
      return 2;
    case Kind::kWhere:
      return 3;
  }
  return 0;
}

bool valid_dtype(DType t) { return static_cast<std::size_t>(t) < sim::kDTypeCount; }

// The constant's value as its dtype holds it (floats rounded, integers whole and in range).
Status constant_value(const ExprNode& n, int id, double* v) {
  MLU_CHECK(n.dtype != DType::kFloat64, Status::kNotSupported,
            at(id) + ": fp64 constants are not supported (the VFU has no fp64)");
  switch (n.dtype) {
    case DType::kFloat32:
      *v = static_cast<float>(n.value);
      return Status::kSuccess;
    case DType::kFloat16:
      *v = static_cast<float>(sim::half(static_cast<float>(n.value)));
      return Status::kSuccess;
    case DType::kBFloat16:
      *v = static_cast<float>(sim::bfloat16(static_cast<float>(n.value)));
      return Status::kSuccess;
    case DType::kBool:
      MLU_CHECK(n.value == 0.0 || n.value == 1.0, Status::kBadParam,
                at(id) + ": bool constant " + std::to_string(n.value) + " is neither 0 nor 1");
      *v = n.value;
      return Status::kSuccess;
    default:
      break;
  }
  const bool i8 = n.dtype == DType::kInt8, i32 = n.dtype == DType::kInt32;
  const double lo = i8 ? -128.0 : i32 ? -2147483648.0 : -9223372036854775808.0;
  const double hi = i8 ? 127.0 : i32 ? 2147483647.0 : 9223372036854775807.0;
  MLU_CHECK(
      ew::is_integer_valued(n.value) && n.value >= lo && n.value <= hi, Status::kBadParam,
      at(id) + ": constant " + std::to_string(n.value) + " is not a value of " + std::string(sim::dtype_name(n.dtype)));
  *v = n.value;
  return Status::kSuccess;
}

// Structure of every node: operand ids, enums, input indices, dtypes.
Status check_nodes(const ElementwiseProgram& prog, std::size_t inputs) {
  const int count = static_cast<int>(prog.nodes.size());
  MLU_CHECK(!prog.nodes.empty(), Status::kBadParam, std::string(kOp) + ": the program has no nodes");
  MLU_CHECK(prog.nodes.size() <= kMaxNodes, Status::kBadParam,
            std::string(kOp) + ": the program has " + std::to_string(prog.nodes.size()) + " nodes (at most " +
                std::to_string(kMaxNodes) + ")");
  MLU_CHECK(prog.output >= 0 && prog.output < count, Status::kBadParam,
            std::string(kOp) + ": output " + std::to_string(prog.output) + " is not a node id (the program has " +
                std::to_string(count) + " nodes; call set_output)");
  for (int id = 0; id < count; ++id) {
    const ExprNode& n = prog.nodes[static_cast<std::size_t>(id)];
    MLU_CHECK(static_cast<std::uint8_t>(n.kind) <= static_cast<std::uint8_t>(Kind::kCast), Status::kBadParam,
              at(id) + ": unknown kind " + std::to_string(static_cast<int>(n.kind)));
    const int operands[3] = {n.a, n.b, n.c};
    const char* names[3] = {"a", "b", "c"};
    for (int k = 0; k < operand_count(n.kind); ++k)
      MLU_CHECK(operands[k] >= 0 && operands[k] < count, Status::kBadParam,
                at(id) + " (" + kind_name(n.kind) + "): operand " + names[k] + " = " + std::to_string(operands[k]) +
                    " is not a node id (the program has " + std::to_string(count) + " nodes)");
    switch (n.kind) {
      case Kind::kInput:
        MLU_CHECK(n.input >= 0 && static_cast<std::size_t>(n.input) < inputs, Status::kBadParam,
                  at(id) + ": reads input " + std::to_string(n.input) + " but " + std::to_string(inputs) +
                      " inputs were given");
        break;
      case Kind::kUnary:
        MLU_CHECK(ew::is_valid(n.unary), Status::kBadParam,
                  at(id) + ": unknown unary op " + std::to_string(static_cast<int>(n.unary)));
        break;
      case Kind::kBinary:
        MLU_CHECK(ew::is_valid(n.binary), Status::kBadParam,
                  at(id) + ": unknown binary op " + std::to_string(static_cast<int>(n.binary)));
        break;
      case Kind::kCompare:
        MLU_CHECK(ew::is_valid(n.compare), Status::kBadParam,
                  at(id) + ": unknown compare op " + std::to_string(static_cast<int>(n.compare)));
        break;
      case Kind::kLogical:
        MLU_CHECK(ew::is_valid(n.logical), Status::kBadParam,
                  at(id) + ": unknown logical op " + std::to_string(static_cast<int>(n.logical)));
        break;
      case Kind::kConstant:
      case Kind::kCast:
        MLU_CHECK(valid_dtype(n.dtype), Status::kBadParam,
                  at(id) + ": unknown dtype " + std::to_string(static_cast<int>(n.dtype)));
        MLU_CHECK(n.dtype != DType::kFloat64, Status::kNotSupported,
                  at(id) + ": fp64 is not supported (the VFU has no fp64)");
        MLU_RETURN_IF_ERROR(check_computes(n.dtype, kOp, "a node's dtype"));
        break;
      default:
        break;
    }
  }
  return Status::kSuccess;
}

// Nodes in an order where operands come first: every node (so a cycle anywhere is reported),
// depth-first; `live` marks the ones the output depends on.
Status order_nodes(const ElementwiseProgram& prog, std::vector<int>* order, std::vector<bool>* live) {
  const std::size_t count = prog.nodes.size();
  enum : std::uint8_t { kNew, kOpen, kDone };
  std::vector<std::uint8_t> state(count, kNew);
  std::vector<int> path;  // open nodes, for the cycle message
  struct Frame {
    int id, next;
  };
  auto visit = [&](int root) -> Status {
    std::vector<Frame> stack{{root, 0}};
    state[static_cast<std::size_t>(root)] = kOpen;
    path.assign(1, root);
    while (!stack.empty()) {
      Frame& f = stack.back();
      const ExprNode& n = prog.nodes[static_cast<std::size_t>(f.id)];
      const int operands[3] = {n.a, n.b, n.c};
      if (f.next < operand_count(n.kind)) {
        const int m = operands[f.next++];
        if (state[static_cast<std::size_t>(m)] == kOpen) {
          std::string cycle;
          bool in = false;
          for (int p : path) {
            in = in || p == m;
            if (in) cycle += std::to_string(p) + " -> ";
          }
          return fail(Status::kBadParam, at(m) + " depends on itself (cycle " + cycle + std::to_string(m) + ")");
        }
        if (state[static_cast<std::size_t>(m)] == kNew) {
          state[static_cast<std::size_t>(m)] = kOpen;
          path.push_back(m);
          stack.push_back({m, 0});
        }
        continue;
      }
      state[static_cast<std::size_t>(f.id)] = kDone;
      order->push_back(f.id);
      path.pop_back();
      stack.pop_back();
    }
    return Status::kSuccess;
  };
  for (std::size_t id = 0; id < count; ++id)
    if (state[id] == kNew) MLU_RETURN_IF_ERROR(visit(static_cast<int>(id)));
  // Liveness: operands of live nodes, in reverse order (operands precede their users).
  live->assign(count, false);
  (*live)[static_cast<std::size_t>(prog.output)] = true;
  for (std::size_t i = order->size(); i-- > 0;) {
    const int id = (*order)[i];
    if (!(*live)[static_cast<std::size_t>(id)]) continue;
    const ExprNode& n = prog.nodes[static_cast<std::size_t>(id)];
    const int operands[3] = {n.a, n.b, n.c};
    for (int k = 0; k < operand_count(n.kind); ++k) (*live)[static_cast<std::size_t>(operands[k])] = true;
  }
  return Status::kSuccess;
}

CompareOp mirrored(CompareOp op) {  // a op b == b mirrored(op) a
  switch (op) {
    case CompareOp::kLt:
      return CompareOp::kGt;
    case CompareOp::kLe:
      return CompareOp::kGe;
    case CompareOp::kGt:
      return CompareOp::kLt;
    case CompareOp::kGe:
      return CompareOp::kLe;
    default:
      return op;
  }
}

// One node's value from its operands' values.
Status compile_node(ew::Program& p, const ExprNode& n, int id, const std::vector<ew::Val>& v,
                    const std::vector<int>& operand_of_input, const std::vector<TensorArg>& inputs, ew::Val* out) {
  auto val = [&](int node) -> const ew::Val& { return v[static_cast<std::size_t>(node)]; };
  switch (n.kind) {
    case Kind::kInput: {
      const TensorDesc& d = *inputs[static_cast<std::size_t>(n.input)].desc;
      *out = ew::Val{p.input(operand_of_input[static_cast<std::size_t>(n.input)], d.dtype()), d.dtype(), d.ndim() == 0};
      return Status::kSuccess;
    }
    case Kind::kConstant: {
      double value = 0;
      MLU_RETURN_IF_ERROR(constant_value(n, id, &value));
      *out = ew::Val{-1, n.dtype, true, true, value};
      return Status::kSuccess;
    }
    case Kind::kUnary:
      return ew::emit_unary(p, n.unary, val(n.a), out);
    case Kind::kBinary: {
      const ew::Val &a = val(n.a), &b = val(n.b);
      const std::string name = std::string(ew::binary_name(n.binary));
      const bool add_sub = n.binary == BinaryOp::kAdd || n.binary == BinaryOp::kSub;
      const DType result = ew::result_type(a, b);
      if (b.constant && !a.constant)
        return ew::emit_binary_scalar(p, name.c_str(), n.binary, a, add_sub ? b.value * n.alpha : b.value, result,
                                      false, out);
      if (a.constant && !b.constant && (!add_sub || n.alpha == 1.0))
        return ew::emit_binary_scalar(p, name.c_str(), n.binary, b, a.value, result, true, out);
      return ew::emit_binary(p, name.c_str(), n.binary, a, b, n.alpha, out);
    }
    case Kind::kCompare: {
      const ew::Val &a = val(n.a), &b = val(n.b);
      ew::ValueId r;
      if (b.constant && !a.constant)
        r = ew::emit_compare_scalar(p, n.compare, a, b.value);
      else if (a.constant && !b.constant)
        r = ew::emit_compare_scalar(p, mirrored(n.compare), b, a.value);
      else
        r = ew::emit_compare(p, n.compare, a, b);
      *out = ew::Val{ew::convert(p, r, DType::kBool), DType::kBool, a.zero_dim && b.zero_dim};
      return Status::kSuccess;
    }
    case Kind::kLogical:
      *out = ew::Val{ew::emit_logical(p, n.logical, val(n.a), val(n.b)), DType::kBool,
                     val(n.a).zero_dim && val(n.b).zero_dim};
      return Status::kSuccess;
    case Kind::kLogicalNot:
      *out = ew::Val{ew::emit_logical_not(p, val(n.a)), DType::kBool, val(n.a).zero_dim};
      return Status::kSuccess;
    case Kind::kWhere:
      *out = ew::emit_where(p, val(n.a), val(n.b), val(n.c));
      return Status::kSuccess;
    case Kind::kCast: {
      const ew::Val& x = val(n.a);
      *out = ew::Val{ew::convert(p, ew::as(p, x, ew::vfu_dtype(x.dtype)), n.dtype), n.dtype, x.zero_dim};
      return Status::kSuccess;
    }
  }
  return fail(Status::kBadParam, at(id) + ": unknown kind");
}

}  // namespace

Status elementwise_program(Handle* h, const ElementwiseProgram& program, const std::vector<TensorArg>& inputs,
                           const TensorDesc& y, void* y_ptr) {
  MLU_RETURN_IF_ERROR(check_handle(h, kOp));
  std::vector<std::string> names;
  names.reserve(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) names.push_back("input " + std::to_string(i));
  std::vector<ew::Arg> args;
  for (std::size_t i = 0; i < inputs.size(); ++i) args.push_back({names[i].c_str(), inputs[i].desc, inputs[i].ptr});
  MLU_RETURN_IF_ERROR(ew::check_elementwise(h, kOp, args, {"y", &y, y_ptr}));
  MLU_RETURN_IF_ERROR(check_nodes(program, inputs.size()));
  std::vector<int> order;
  std::vector<bool> live;
  MLU_RETURN_IF_ERROR(order_nodes(program, &order, &live));

  // Operands of the streaming kernel: y, then the inputs live nodes read (in index order).
  std::vector<int> operand_of_input(inputs.size(), -1);
  for (std::size_t id = 0; id < program.nodes.size(); ++id)
    if (live[id] && program.nodes[id].kind == Kind::kInput)
      operand_of_input[static_cast<std::size_t>(program.nodes[id].input)] = 0;
  std::vector<const TensorDesc*> descs{&y};
  std::vector<const void*> ptrs{y_ptr};
  std::uint64_t bytes = static_cast<std::uint64_t>(y.numel()) * y.element_size();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (operand_of_input[i] < 0) continue;
    operand_of_input[i] = static_cast<int>(descs.size());
    descs.push_back(inputs[i].desc);
    ptrs.push_back(inputs[i].ptr);
    bytes += static_cast<std::uint64_t>(inputs[i].desc->numel()) * inputs[i].desc->element_size();
  }

  ew::Program p;
  std::vector<ew::Val> values(program.nodes.size());
  // Operands as the nodes read them: with fp32 intermediates, fp16 values read as fp32 (an fp16
  // input or cast converts exactly, a constant keeps its fp16-rounded value).
  std::vector<ew::Val> read(program.nodes.size());
  for (int id : order) {
    if (!live[static_cast<std::size_t>(id)]) continue;
    const ExprNode& n = program.nodes[static_cast<std::size_t>(id)];
    const Status s = compile_node(p, n, id, program.fp32_intermediates ? read : values, operand_of_input, inputs,
                                  &values[static_cast<std::size_t>(id)]);
    ew::Val& r = read[static_cast<std::size_t>(id)];
    r = values[static_cast<std::size_t>(id)];
    if (program.fp32_intermediates && (r.dtype == DType::kFloat16 || r.dtype == DType::kBFloat16))
      r.dtype = DType::kFloat32;
    if (s != Status::kSuccess) {
      const std::string detail = last_error_detail();
      if (detail.rfind(kOp, 0) == 0) return s;  // already names the node
      return fail(s, at(id) + " (" + kind_name(n.kind) + "): " + detail);
    }
  }
  const ew::Val& result = values[static_cast<std::size_t>(program.output)];
  const Status cast_ok = ew::check_output_dtype(kOp, result.dtype, y);
  if (cast_ok != Status::kSuccess)
    return fail(cast_ok, at(program.output) + " (the output): result type " +
                             std::string(sim::dtype_name(result.dtype)) + " can't be cast to y's dtype " +
                             std::string(sim::dtype_name(y.dtype())));
  const ew::ValueId r = result.constant ? ew::as(p, result, ew::vfu_dtype(result.dtype)) : result.id;
  p.set_result(ew::convert(p, r, y.dtype()));
  if (y.numel() == 0) {
    record(*h, kOp, 0, 0, 0);
    return Status::kSuccess;
  }
  MLU_RETURN_IF_ERROR(ew::launch_stream(*h, kOp, ew::make_iter_space(y.dims(), descs, ptrs), std::move(p)));
  record(*h, kOp, 0, bytes, 1);
  return Status::kSuccess;
}

}  // namespace mlusim::mlu
