// The TorchScript fusion pass (include/mlusim/torch/fusion.h): specialises a clone of the module's
// forward (inlined, non-tensor attributes as constants, constants propagated) and rewrites it with
// the fused ops of src/ops/fused_ops.cpp. A hand-written walk rather than SubgraphRewriter: every
// combination (conv2d or _convolution, with or without batch norm, eight activations and their
// in-place forms) and the use checks (single use, private in-place targets) stay in one place.
#include "mlusim/torch/fusion.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/inliner.h>

namespace mlusim::bridge {
namespace {

using c10::IValue;
using torch::jit::Block;
using torch::jit::Graph;
using torch::jit::NamedValue;
using torch::jit::Node;
using torch::jit::Value;
using torch::jit::WithInsertPoint;

c10::Symbol sym(const char* qualified) { return c10::Symbol::fromQualString(qualified); }

// ---- specialisation: non-tensor attributes become constants ---------------------------------------

void collect_written(Block* b, std::unordered_set<std::string>& names) {
  for (Node* n : b->nodes()) {
    if (n->kind() == c10::prim::SetAttr) names.insert(n->s(c10::attr::name));
    for (Block* sub : n->blocks()) collect_written(sub, names);
  }
}

bool contains_tensor(const IValue& v) {
  if (v.isTensor() || v.isTensorList()) return true;
  if (v.isList()) {
    for (const IValue& e : v.toListRef())
      if (contains_tensor(e)) return true;
  }
  if (v.isTuple()) {
    for (const IValue& e : v.toTupleRef().elements())
      if (contains_tensor(e)) return true;
  }
  return v.isGenericDict() || v.isObject() || v.isFuture() || v.isCapsule();
}

void specialise(Graph& g, Block* b, const std::unordered_set<std::string>& written,
                std::unordered_map<Value*, c10::intrusive_ptr<c10::ivalue::Object>>& objects) {
  for (Node* n : b->nodes()) {
    if (n->kind() == c10::prim::GetAttr) {
      const auto it = objects.find(n->input(0));
      if (it != objects.end()) {
        const std::string& name = n->s(c10::attr::name);
        const IValue v = it->second->getAttr(name);
        if (v.isObject() && v.toObject()->type()->is_module()) {
          objects[n->output()] = v.toObject();
        } else if (!written.count(name) && !contains_tensor(v)) {
          WithInsertPoint guard(n);
          if (auto c = torch::jit::tryInsertConstant(g, v)) n->output()->replaceAllUsesWith(*c);
        }
      }
    }
    for (Block* sub : n->blocks()) specialise(g, sub, written, objects);
  }
}

// ---- small helpers ----------------------------------------------------------------------------------

bool is_tensor(const Value* v) { return v->type()->isSubtypeOf(*c10::TensorType::get()); }

bool is_none(const Value* v) {
  if (v->type()->kind() == c10::TypeKind::NoneType) return true;
  const auto c = torch::jit::toIValue(v);
  return c && c->isNone();
}

c10::optional<IValue> constant(const Value* v) { return torch::jit::toIValue(v); }

Node* only_user(const Value* v) { return v->uses().size() == 1 ? v->uses()[0].user : nullptr; }

std::string base_name(const Node* n) {
  if (n->kind().ns() != c10::namespaces::aten) return "";
  return n->kind().toUnqualString();
}

const c10::FunctionSchema* schema_of(const Node* n) { return n->maybeSchema(); }

// Input `name` of `n` by its schema argument name (nullptr when absent).
Value* arg(Node* n, const char* name) {
  const c10::FunctionSchema* s = schema_of(n);
  if (!s) return nullptr;
  const auto i = s->argumentIndexWithName(name);
  return i ? n->input(static_cast<std::size_t>(*i)) : nullptr;
}

// A constant int list of 2 values (all zero when `zeros`).
bool constant_pair(const Value* v, bool zeros) {
  const auto c = constant(v);
  if (!c || !c->isIntList()) return false;
  const auto l = c->toIntVector();
  if (l.size() != 2) return false;
  if (zeros)
    for (auto e : l)
      if (e != 0) return false;
  return true;
}

// ---- activations ---------------------------------------------------------------------------------------

// The activation `n` applies to `prev` alone ("" when none we fuse).
std::string activation_of(Node* n, const Value* prev) {
  if (n->inputs().empty() || n->input(0) != prev || n->outputs().size() != 1 || !schema_of(n)) return "";
  const std::string k = base_name(n);
  if ((k == "relu" || k == "relu_") && n->inputs().size() == 1) return "relu";
  if ((k == "relu6" || k == "relu6_") && n->inputs().size() == 1) return "relu6";
  if ((k == "silu" || k == "silu_") && n->inputs().size() == 1) return "silu";
  if ((k == "sigmoid" || k == "sigmoid_") && n->inputs().size() == 1) return "sigmoid";
  if ((k == "tanh" || k == "tanh_") && n->inputs().size() == 1) return "tanh";
  if (k == "gelu") {
    if (n->inputs().size() == 1) return "gelu";
    const auto a = constant(n->input(1));
    if (a && a->isString()) {
      if (a->toStringRef() == "none") return "gelu";
      if (a->toStringRef() == "tanh") return "gelu_tanh";
    }
    return "";
  }
  if ((k == "hardtanh" || k == "hardtanh_") && n->inputs().size() == 3) {
    const auto lo = constant(n->input(1)), hi = constant(n->input(2));
    if (lo && hi && lo->isScalar() && hi->isScalar() && lo->toScalar().toDouble() == 0.0 &&
        hi->toScalar().toDouble() == 6.0)
      return "relu6";
  }
  return "";
}

// ---- conv_bn_act ---------------------------------------------------------------------------------------

struct Conv {
  Value *x = nullptr, *w = nullptr, *b = nullptr, *stride = nullptr, *padding = nullptr, *dilation = nullptr,
        *groups = nullptr;
};

bool match_conv(Node* n, Conv* c) {
  if (n->outputs().size() != 1 || !schema_of(n)) return false;
  if (n->kind() == c10::aten::conv2d) {
    if (n->inputs().size() != 7 || n->input(4)->type()->kind() != c10::TypeKind::ListType) return false;  // not "same"
    *c = {n->input(0), n->input(1), n->input(2), n->input(3), n->input(4), n->input(5), n->input(6)};
    return true;
  }
  if (n->kind() == c10::aten::_convolution && n->inputs().size() >= 9) {
    const auto transposed = constant(n->input(6));
    if (!transposed || !transposed->isBool() || transposed->toBool()) return false;
    if (!constant_pair(n->input(7), /*zeros=*/true)) return false;     // output_padding
    if (!constant_pair(n->input(3), /*zeros=*/false)) return false;    // 2-d stride
    *c = {n->input(0), n->input(1), n->input(2), n->input(3), n->input(4), n->input(5), n->input(8)};
    return true;
  }
  return false;
}

struct BatchNorm {
  Value *weight = nullptr, *bias = nullptr, *mean = nullptr, *var = nullptr, *eps = nullptr;
};

bool match_bn(Node* n, const Value* prev, BatchNorm* bn) {
  if (n->kind() != c10::aten::batch_norm || n->inputs().size() != 9 || n->input(0) != prev) return false;
  const auto training = constant(n->input(5));
  if (!training || !training->isBool() || training->toBool()) return false;
  if (is_none(n->input(3)) || is_none(n->input(4))) return false;  // eval without running stats normalises by the batch
  *bn = {n->input(1), n->input(2), n->input(3), n->input(4), n->input(7)};
  return true;
}

int fuse_conv_bn_act(Graph& g, Block* b) {
  int count = 0;
  std::vector<Node*> nodes(b->nodes().begin(), b->nodes().end());
  std::unordered_set<Node*> gone;
  for (Node* n : nodes) {
    if (gone.count(n)) continue;
    for (Block* sub : n->blocks()) count += fuse_conv_bn_act(g, sub);
    Conv c;
    if (!match_conv(n, &c)) continue;
    std::vector<Node*> chain{n};
    Node* last = n;
    BatchNorm bn;
    bool has_bn = false;
    if (Node* u = only_user(n->output()); u && match_bn(u, n->output(), &bn)) {
      chain.push_back(u);
      last = u;
      has_bn = true;
    }
    std::string act = "none";
    if (Node* u = only_user(last->output())) {
      const std::string a = activation_of(u, last->output());
      if (!a.empty()) {
        act = a;
        chain.push_back(u);
        last = u;
      }
    }
    if (chain.size() == 1) continue;
    WithInsertPoint guard(last);
    const NamedValue none{IValue()};
    Value* out = g.insert(sym("mlu::conv_bn_act"),
                          {c.x, c.w, c.b, has_bn ? NamedValue(bn.weight) : none, has_bn ? NamedValue(bn.bias) : none,
                           has_bn ? NamedValue(bn.mean) : none, has_bn ? NamedValue(bn.var) : none,
                           has_bn ? NamedValue(bn.eps) : NamedValue(IValue(1e-5)), c.stride, c.padding, c.dilation,
                           c.groups, NamedValue(IValue(act))});
    out->node()->setSourceRange(last->sourceRange());
    last->output()->replaceAllUsesWith(out);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      gone.insert(*it);
      (*it)->destroy();
    }
    ++count;
  }
  return count;
}

// ---- linear_act ----------------------------------------------------------------------------------------

int fuse_linear_act(Graph& g, Block* b) {
  int count = 0;
  std::vector<Node*> nodes(b->nodes().begin(), b->nodes().end());
  std::unordered_set<Node*> gone;
  for (Node* n : nodes) {
    if (gone.count(n)) continue;
    for (Block* sub : n->blocks()) count += fuse_linear_act(g, sub);
    if (n->kind() != c10::aten::linear || n->inputs().size() != 3 || n->outputs().size() != 1) continue;
    Node* u = only_user(n->output());
    if (!u) continue;
    const std::string act = activation_of(u, n->output());
    if (act.empty()) continue;
    WithInsertPoint guard(u);
    Value* out = g.insert(sym("mlu::linear_act"), {n->input(0), n->input(1), n->input(2), NamedValue(IValue(act))});
    out->node()->setSourceRange(u->sourceRange());
    u->output()->replaceAllUsesWith(out);
    gone.insert(u);
    gone.insert(n);
    u->destroy();
    n->destroy();
    ++count;
  }
  return count;
}

// ---- elementwise ---------------------------------------------------------------------------------------

struct Operand {
  Value* value = nullptr;  // a tensor operand, or nullptr for a literal
  std::string literal;
};

struct Spec {
  std::string op;
  std::vector<Operand> operands;
  std::string alpha;          // "" = 1
  Value* self = nullptr;      // the tensor an in-place op modifies
  bool keep_dtype = false;    // result cast to self's dtype (in-place binary ops, masked_fill)
};

std::string literal_text(const IValue& v) {
  if (v.isBool()) return v.toBool() ? "true" : "false";
  if (v.isInt()) return std::to_string(v.toInt());
  const double d = v.toDouble();
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

bool make_operand(Value* v, Operand* o) {
  if (is_tensor(v)) {
    o->value = v;
    return true;
  }
  const auto c = constant(v);
  if (!c || !(c->isBool() || c->isInt() || c->isDouble())) return false;
  o->literal = literal_text(*c);
  return true;
}

const std::set<std::string>& binary_ops() {
  static const std::set<std::string> s = {"add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne",
                                          "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"};
  return s;
}
const std::set<std::string>& unary_ops() {
  static const std::set<std::string> s = {"neg", "abs", "square", "relu", "exp", "log", "sqrt", "rsqrt", "sigmoid",
                                          "tanh", "silu", "reciprocal", "logical_not"};
  return s;
}

// The elementwise spec of `n` (false when it is not one we fuse).
bool make_spec(Node* n, Spec* s) {
  if (n->outputs().size() != 1 || !is_tensor(n->output()) || !schema_of(n) || !n->blocks().empty()) return false;
  std::string k = base_name(n);
  if (k.empty()) return false;
  bool inplace = false;
  if (k.size() > 1 && k.back() == '_' && k[k.size() - 2] != '_') {
    inplace = true;
    k.pop_back();
  }
  std::vector<Value*> values;
  if (k == "masked_fill") {
    Value *self = arg(n, "self"), *mask = arg(n, "mask"), *value = arg(n, "value");
    if (!self || !mask || !value) return false;
    s->op = "where";
    values = {mask, value, self};
    s->keep_dtype = true;
    s->self = inplace ? self : nullptr;
    if (!is_tensor(self)) return false;
  } else if (k == "where") {
    Value *c = arg(n, "condition"), *a = arg(n, "self"), *b = arg(n, "other");
    if (!c || !a || !b || inplace) return false;
    s->op = "where";
    values = {c, a, b};
  } else if (k == "rsub") {
    Value *a = arg(n, "self"), *b = arg(n, "other");
    if (!a || !b || inplace) return false;
    s->op = "sub";
    values = {b, a};
  } else if (binary_ops().count(k)) {
    Value* a = arg(n, "self");
    Value* b = arg(n, k == "pow" ? "exponent" : "other");
    if (!a || !b || n->inputs().size() > 3) return false;
    s->op = k;
    values = {a, b};
    if (inplace) {
      if (!is_tensor(a)) return false;
      s->self = a;
      s->keep_dtype = true;
    }
  } else if (unary_ops().count(k) || k == "gelu") {
    Value* a = arg(n, "self");
    if (!a) return false;
    s->op = k;
    if (k == "gelu") {
      if (Value* approx = arg(n, "approximate")) {
        const auto c = constant(approx);
        if (!c || !c->isString()) return false;
        if (c->toStringRef() == "tanh")
          s->op = "gelu_tanh";
        else if (c->toStringRef() != "none")
          return false;
      }
    } else if (n->inputs().size() != 1) {
      return false;
    }
    values = {a};
    if (inplace) s->self = a;
  } else {
    return false;
  }
  if (k == "add" || k == "sub" || k == "rsub") {
    if (Value* alpha = arg(n, "alpha")) {
      const auto c = constant(alpha);
      if (!c || !(c->isInt() || c->isDouble() || c->isBool())) return false;
      const double a = c->isBool() ? (c->toBool() ? 1.0 : 0.0) : c->isInt() ? double(c->toInt()) : c->toDouble();
      if (a != 1.0) s->alpha = literal_text(*c);
    }
  }
  if (k == "div") {
    if (Value* mode = arg(n, "rounding_mode"))
      if (!is_none(mode)) return false;
  }
  bool any_tensor = false;
  for (Value* v : values) {
    Operand o;
    if (!make_operand(v, &o)) return false;
    any_tensor = any_tensor || o.value != nullptr;
    s->operands.push_back(o);
  }
  return any_tensor;
}

// Producers whose result is a fresh tensor (no alias of an input): an in-place op may modify it
// when it is its only use.
bool fresh_producer(const Node* p) {
  if (p->kind().ns() == sym("mlu::conv_bn_act").ns()) return true;
  static const std::set<std::string> fresh = {
      "conv2d", "_convolution", "batch_norm", "linear", "matmul", "layer_norm", "softmax", "log_softmax",
      "add", "sub", "mul", "div", "pow", "maximum", "minimum", "neg", "abs", "square", "relu", "exp", "log",
      "sqrt", "rsqrt", "sigmoid", "tanh", "silu", "reciprocal", "gelu", "where", "masked_fill", "rsub",
      "hardtanh", "mm", "bmm", "addmm", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d"};
  return base_name(p) != "" && fresh.count(base_name(p)) > 0 && p->outputs().size() == 1;
}

bool private_target(Value* self, const Node* member, const std::unordered_set<Node*>& group) {
  if (group.count(self->node())) return true;
  return self->uses().size() == 1 && self->uses()[0].user == member && fresh_producer(self->node());
}

// `group` less `drop` and what reached the root only through it.
std::unordered_set<Node*> without(const std::unordered_set<Node*>& group, Node* drop, Node* root,
                                  const std::unordered_map<Node*, Spec>& specs) {
  std::unordered_set<Node*> keep{root};
  std::vector<Node*> stack{root};
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Operand& o : specs.at(n).operands) {
      if (!o.value) continue;
      Node* p = o.value->node();
      if (group.count(p) && p != drop && !keep.count(p)) {
        keep.insert(p);
        stack.push_back(p);
      }
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (Node* n : std::vector<Node*>(keep.begin(), keep.end())) {
      if (n == root) continue;
      for (const auto& u : n->output()->uses())
        if (!keep.count(u.user)) {
          keep.erase(n);
          changed = true;
          break;
        }
    }
  }
  return keep;
}

void replace_group(Graph& g, const std::unordered_set<Node*>& group, Node* root,
                   const std::unordered_map<Node*, Spec>& specs) {
  std::vector<Node*> members;
  for (Node* n = root->owningBlock()->nodes().front(); n != root->next(); n = n->next())
    if (group.count(n)) members.push_back(n);
  std::unordered_map<Node*, int> uses;
  for (Node* m : members) {
    const Spec& s = specs.at(m);
    for (const Operand& o : s.operands)
      if (o.value && group.count(o.value->node())) ++uses[o.value->node()];
    if (s.keep_dtype) {
      Value* self = s.self ? s.self : s.operands.back().value;  // masked_fill: self is last
      if (self && group.count(self->node())) ++uses[self->node()];
    }
  }
  std::vector<Value*> inputs;
  std::unordered_map<Value*, int> index;
  std::unordered_map<Node*, std::string> text;
  std::vector<std::string> lets;
  auto ref = [&](Value* v) -> std::string {
    if (group.count(v->node())) return text.at(v->node());
    auto [it, inserted] = index.try_emplace(v, static_cast<int>(inputs.size()));
    if (inserted) inputs.push_back(v);
    return "$" + std::to_string(it->second);
  };
  for (Node* m : members) {
    const Spec& s = specs.at(m);
    std::string expr = s.op + "(";
    for (std::size_t i = 0; i < s.operands.size(); ++i) {
      if (i) expr += ", ";
      expr += s.operands[i].value ? ref(s.operands[i].value) : s.operands[i].literal;
    }
    if (!s.alpha.empty()) expr += ", " + s.alpha;
    expr += ")";
    if (s.keep_dtype) {
      Value* self = s.self ? s.self : s.operands.back().value;
      expr = "cast_like(" + expr + ", " + ref(self) + ")";
    }
    if (m != root && uses[m] > 1) {
      const std::string name = "t" + std::to_string(lets.size());
      lets.push_back(name + " = " + expr);
      text[m] = name;
    } else {
      text[m] = expr;
    }
  }
  std::string program;
  for (const std::string& l : lets) program += l + "; ";
  program += text.at(root);

  WithInsertPoint guard(root);
  Value* list = g.insertNode(g.createList(c10::TensorType::get(), inputs))->output();
  Value* out = g.insert(sym("mlu::elementwise"), {list, NamedValue(IValue(program))});
  out->node()->setSourceRange(root->sourceRange());
  root->output()->replaceAllUsesWith(out);
  for (auto it = members.rbegin(); it != members.rend(); ++it) (*it)->destroy();
}

int fuse_elementwise(Graph& g, Block* b) {
  int count = 0;
  for (Node* n : b->nodes())
    for (Block* sub : n->blocks()) count += fuse_elementwise(g, sub);
  std::unordered_map<Node*, Spec> specs;
  std::vector<Node*> nodes(b->nodes().begin(), b->nodes().end());
  for (Node* n : nodes) {
    Spec s;
    if (make_spec(n, &s)) specs.emplace(n, std::move(s));
  }
  std::unordered_set<Node*> assigned;
  for (auto rit = nodes.rbegin(); rit != nodes.rend(); ++rit) {
    Node* root = *rit;
    if (!specs.count(root) || assigned.count(root)) continue;
    std::unordered_set<Node*> group{root};
    for (bool changed = true; changed;) {
      changed = false;
      for (Node* m : std::vector<Node*>(group.begin(), group.end())) {
        for (const Operand& o : specs.at(m).operands) {
          if (!o.value) continue;
          Node* p = o.value->node();
          if (!specs.count(p) || group.count(p) || assigned.count(p) || p->owningBlock() != b) continue;
          bool all_inside = true;
          for (const auto& u : o.value->uses()) all_inside = all_inside && group.count(u.user);
          if (all_inside) {
            group.insert(p);
            changed = true;
          }
        }
      }
    }
    for (bool bad = true; bad && !group.empty();) {
      bad = false;
      for (Node* m : std::vector<Node*>(group.begin(), group.end())) {
        const Spec& s = specs.at(m);
        if (s.self && !private_target(s.self, m, group)) {
          group = m == root ? std::unordered_set<Node*>{} : without(group, m, root, specs);
          bad = true;
          break;
        }
      }
    }
    if (group.size() < 2) continue;
    for (Node* m : group) assigned.insert(m);
    replace_group(g, group, root, specs);
    ++count;
  }
  return count;
}

}  // namespace

FusionStats fuse_torchscript(torch::jit::Module& module, const FusionOptions& options) {
  for (const torch::jit::Module& m : module.modules())
    if (m.hasattr("training") && m.is_training())
      throw std::invalid_argument("fuse_torchscript: the module (" + m.type()->repr_str() +
                                  ") is in training mode; call eval() first: fusion is for inference (BatchNorm "
                                  "folding uses the running statistics, the fused ops have no backward)");
  if (!module.find_method("forward"))
    throw std::invalid_argument("fuse_torchscript: the module has no forward method");
  torch::jit::Module fused = module.clone(/*inplace=*/true);
  std::shared_ptr<Graph> graph = fused.get_method("forward").graph();
  torch::jit::Inline(*graph);
  std::unordered_set<std::string> written;
  collect_written(graph->block(), written);
  std::unordered_map<Value*, c10::intrusive_ptr<c10::ivalue::Object>> objects{{graph->inputs()[0], fused._ivalue()}};
  specialise(*graph, graph->block(), written, objects);
  torch::jit::ConstantPropagation(graph);
  torch::jit::EliminateDeadCode(graph);

  FusionStats stats;
  stats.matches = {{"conv_bn_act", 0}, {"linear_act", 0}, {"elementwise", 0}};
  if (options.conv_bn_act) stats.matches["conv_bn_act"] = fuse_conv_bn_act(*graph, graph->block());
  if (options.linear_act) stats.matches["linear_act"] = fuse_linear_act(*graph, graph->block());
  if (options.elementwise) stats.matches["elementwise"] = fuse_elementwise(*graph, graph->block());
  torch::jit::EliminateDeadCode(graph);
  graph->lint();
  module = fused;
  return stats;
}

}  // namespace mlusim::bridge
