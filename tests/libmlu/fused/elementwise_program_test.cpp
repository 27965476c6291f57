// elementwise_program: chains with broadcasting and non-contiguous inputs against a naive host
// reference and against the same chain run as separate binary/unary/... ops (bit-exact: the
// program is those ops' VFU recipes in one kernel); type promotion with constants and zero-dim
// inputs; one kernel and fewer GDRAM bytes than the chain; bad programs give kBadParam naming the
// node.
#include <cmath>
#include <cstring>
#include <string>

#include "elementwise/strided_ref.h"
#include "fused/fused_test_util.h"

namespace mlusim::mlu::testing {
namespace {

// A host tensor over strided storage with its descriptor and device copy.
template <class T>
struct HostTensor {
  Dims dims, strides;
  std::vector<T> data;
  TensorDesc d;
  void* p = nullptr;
  double at(const Dims& idx) const { return as_double(data[static_cast<std::size_t>(offset(idx, dims, strides))]); }
};

class ElementwiseProgramTest : public MluTest {
 protected:
  template <class T>
  HostTensor<T> tensor(Dims dims, Dims strides, unsigned seed, float lo = -2.0f, float hi = 2.0f) {
    HostTensor<T> t;
    t.dims = dims;
    t.strides = strides.empty() ? contiguous_strides(dims) : strides;
    t.data = random<T>(static_cast<std::size_t>(std::max<std::int64_t>(span(dims, t.strides), 1)), seed, lo, hi);
    t.d = desc(sim::DTypeOf<T>::value, dims, t.strides);
    t.p = to_device(t.data);
    return t;
  }
  template <class T>
  std::vector<T> out(const void* p, const Dims& dims) {
    return from_device<T>(p, static_cast<std::size_t>(numel(dims)));
  }
};

// y = gelu(a * b + c) * 0.5 with a [4, 1, 33], b a transposed [5, 33] view, c [4, 5, 1].
TEST_F(ElementwiseProgramTest, BroadcastChainMatchesReferenceAndUnfusedOps) {
  for (DType dt : {DType::kFloat32, DType::kFloat16}) {
    SCOPED_TRACE(sim::dtype_name(dt));
    const Dims ydims{4, 5, 33};
    ElementwiseProgram prog;
    const int a = prog.input(0), b = prog.input(1), c = prog.input(2);
    const int ab = prog.binary(BinaryOp::kMul, a, b);
    const int abc = prog.binary(BinaryOp::kAdd, ab, c);
    const int g = prog.unary(UnaryOp::kGelu, abc);
    prog.set_output(prog.binary(BinaryOp::kMul, g, prog.constant(0.5)));
    auto run = [&](auto tag) {
      using T = decltype(tag);
      HostTensor<T> ta = tensor<T>({4, 1, 33}, {}, 1);
      HostTensor<T> tb = tensor<T>({5, 33}, {1, 5}, 2);  // a transposed view of [33, 5] storage
      HostTensor<T> tc = tensor<T>({4, 5, 1}, {}, 3);
      const TensorDesc yd = desc(dt, ydims);
      void* y = dalloc(static_cast<std::size_t>(numel(ydims)) * sizeof(T));
      h().clear_ops();
      const DeviceCost fused = device_cost(h(), [&] {
        ASSERT_EQ(elementwise_program(handle_, prog, {{&ta.d, ta.p}, {&tb.d, tb.p}, {&tc.d, tc.p}}, yd, y),
                  Status::kSuccess)
            << last_error_detail();
      });
      std::vector<double> want;
      for_each_index(ydims, [&](const Dims& i) {
        const double v = ta.at(i) * tb.at(i) + tc.at(i);
        want.push_back(0.5 * ref_activation(Activation::kGelu, v));
      });
      const std::vector<T> got = out<T>(y, ydims);
      expect_close(got, want, dt == DType::kFloat16 ? 2e-2 : 1e-5, dt == DType::kFloat16 ? 1e-2 : 1e-5, "reference");
      ASSERT_EQ(h().ops().size(), 1u);
      EXPECT_EQ(h().ops().back().name, "fused_elementwise");
      EXPECT_EQ(h().ops().back().kernels, 1u);
      EXPECT_EQ(fused.kernels, 1u);
      EXPECT_EQ(h().ops().back().bytes, (4 * 33 + 5 * 33 + 4 * 5 + 4 * 5 * 33) * sizeof(T));

      // The same chain as four ops with intermediates of the result dtype.
      void* t1 = dalloc(static_cast<std::size_t>(numel(ydims)) * sizeof(T));
      void* t2 = dalloc(static_cast<std::size_t>(numel(ydims)) * sizeof(T));
      void* t3 = dalloc(static_cast<std::size_t>(numel(ydims)) * sizeof(T));
      void* y2 = dalloc(static_cast<std::size_t>(numel(ydims)) * sizeof(T));
      const DeviceCost unfused = device_cost(h(), [&] {
        ASSERT_EQ(binary(handle_, BinaryOp::kMul, ta.d, ta.p, tb.d, tb.p, yd, t1), Status::kSuccess);
        ASSERT_EQ(binary(handle_, BinaryOp::kAdd, yd, t1, tc.d, tc.p, yd, t2), Status::kSuccess);
        ASSERT_EQ(unary(handle_, UnaryOp::kGelu, yd, t2, yd, t3), Status::kSuccess);
        ASSERT_EQ(binary_scalar(handle_, BinaryOp::kMul, yd, t3, 0.5, yd, y2), Status::kSuccess);
      });
      const std::vector<T> seq = out<T>(y2, ydims);
      for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(as_double(got[i]), as_double(seq[i])) << "element " << i << " differs from the unfused chain";
      EXPECT_EQ(unfused.kernels, 4u);
      EXPECT_LT(fused.gdram_bytes, unfused.gdram_bytes);
      // The three intermediates are neither written nor read back.
      EXPECT_LE(fused.gdram_bytes + 5 * static_cast<std::uint64_t>(numel(ydims)) * sizeof(T), unfused.gdram_bytes);
    };
    if (dt == DType::kFloat32)
      run(float{});
    else
      run(half{});
  }
}

// Promotion: int32 * 2.5 (fp32 constant) -> fp32; a leaky relu where(x > 0, x, 0.1 x) in fp16
// with a constant-first compare (0 < x) and a constant-first subtraction (1 - x); int8 + int64
// constant stays int8 (wrapping); a zero-dim fp32 tensor does not promote an fp16 tensor; cast.
TEST_F(ElementwiseProgramTest, PromotionConstantsAndCasts) {
  {  // (int32 a * 2.5) - 1 with fp32 output, and a separately cast int8 wrap
    HostTensor<std::int32_t> a;
    a.dims = {3, 7};
    a.strides = contiguous_strides(a.dims);
    for (int i = 0; i < 21; ++i) a.data.push_back(i * 37 - 300);
    a.d = desc(DType::kInt32, a.dims);
    a.p = to_device(a.data);
    ElementwiseProgram prog;
    const int x = prog.input(0);
    prog.set_output(prog.binary(BinaryOp::kSub, prog.binary(BinaryOp::kMul, x, prog.constant(2.5)),
                                prog.constant(1, DType::kInt64)));
    const TensorDesc yd = desc(DType::kFloat32, a.dims);
    void* y = dalloc(21 * 4);
    ASSERT_EQ(elementwise_program(handle_, prog, {{&a.d, a.p}}, yd, y), Status::kSuccess) << last_error_detail();
    const std::vector<float> got = out<float>(y, a.dims);
    for (int i = 0; i < 21; ++i) EXPECT_EQ(got[i], float(a.data[i]) * 2.5f - 1.0f) << i;
    // An fp32 result cannot go to an int32 y.
    const TensorDesc yi = desc(DType::kInt32, a.dims);
    EXPECT_EQ(elementwise_program(handle_, prog, {{&a.d, a.p}}, yi, y), Status::kBadParam);
    EXPECT_NE(last_error_detail().find("can't be cast"), std::string::npos) << last_error_detail();

    ElementwiseProgram wrap;  // int8(a) + 100 (int64 constant): int8 arithmetic wraps as torch's
    wrap.set_output(
        wrap.binary(BinaryOp::kAdd, wrap.cast(wrap.input(0), DType::kInt8), wrap.constant(100, DType::kInt64)));
    const TensorDesc y8 = desc(DType::kInt8, a.dims);
    void* p8 = dalloc(21);
    ASSERT_EQ(elementwise_program(handle_, wrap, {{&a.d, a.p}}, y8, p8), Status::kSuccess) << last_error_detail();
    const std::vector<std::int8_t> g8 = out<std::int8_t>(p8, a.dims);
    for (int i = 0; i < 21; ++i)
      EXPECT_EQ(g8[i], static_cast<std::int8_t>(static_cast<std::int8_t>(a.data[i]) + 100)) << i;
  }
  {  // fp16 leaky relu, 1 - x, and a zero-dim fp32 scale: ((0 < x) ? x : 0.1 * x) * s + (1 - x)
    HostTensor<half> x = tensor<half>({6, 9}, {1, 6}, 5);  // transposed view
    HostTensor<float> s = tensor<float>({}, {}, 6);        // zero-dim fp32: the result stays fp16
    ElementwiseProgram prog;
    const int xi = prog.input(0), si = prog.input(1);
    const int pos = prog.compare(CompareOp::kLt, prog.constant(0.0), xi);
    const int leaky = prog.where(pos, xi, prog.binary(BinaryOp::kMul, xi, prog.constant(0.1)));
    const int scaled = prog.binary(BinaryOp::kMul, leaky, si);
    prog.set_output(prog.binary(BinaryOp::kAdd, scaled, prog.binary(BinaryOp::kSub, prog.constant(1.0), xi)));
    const TensorDesc yd = desc(DType::kFloat16, {6, 9});
    void* y = dalloc(54 * 2);
    ASSERT_EQ(elementwise_program(handle_, prog, {{&x.d, x.p}, {&s.d, s.p}}, yd, y), Status::kSuccess)
        << last_error_detail();
    // Unfused: compare_scalar, binary_scalar, where, binary (fp16 x 0-dim fp32 -> fp16), rsub, add.
    const TensorDesc b = desc(DType::kBool, {6, 9}), f = desc(DType::kFloat16, {6, 9});
    void *t_pos = dalloc(54), *t_mul = dalloc(108), *t_leaky = dalloc(108), *t_scaled = dalloc(108),
         *t_rsub = dalloc(108), *y2 = dalloc(108);
    ASSERT_EQ(compare_scalar(handle_, CompareOp::kGt, x.d, x.p, 0.0, b, t_pos), Status::kSuccess);
    ASSERT_EQ(binary_scalar(handle_, BinaryOp::kMul, x.d, x.p, 0.1, f, t_mul), Status::kSuccess);
    ASSERT_EQ(where(handle_, b, t_pos, x.d, x.p, f, t_mul, f, t_leaky), Status::kSuccess);
    ASSERT_EQ(binary(handle_, BinaryOp::kMul, f, t_leaky, s.d, s.p, f, t_scaled), Status::kSuccess);
    ASSERT_EQ(binary_scalar(handle_, BinaryOp::kSub, x.d, x.p, 1.0, f, t_rsub, /*scalar_first=*/true),
              Status::kSuccess);
    ASSERT_EQ(binary(handle_, BinaryOp::kAdd, f, t_scaled, f, t_rsub, f, y2), Status::kSuccess);
    const std::vector<half> got = out<half>(y, {6, 9}), seq = out<half>(y2, {6, 9});
    std::vector<double> want;
    for_each_index({6, 9}, [&](const Dims& i) {
      const double v = x.at(i);
      want.push_back((v > 0 ? v : 0.1 * v) * s.data[0] + (1 - v));
    });
    expect_close(got, want, 2e-2, 1e-2, "reference");
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(as_double(got[i]), as_double(seq[i])) << i;
  }
}

// Bool output of a comparison chain, an input that no live node reads (not loaded, not counted),
// dead nodes, an input read twice, and logical ops.
TEST_F(ElementwiseProgramTest, DeadNodesUnusedInputsAndLogic) {
  HostTensor<float> a = tensor<float>({8, 16}, {}, 7), b = tensor<float>({16}, {}, 8);
  HostTensor<float> unused = tensor<float>({8, 16}, {}, 9);
  ElementwiseProgram prog;
  const int x = prog.input(0), z = prog.input(2);
  prog.unary(UnaryOp::kExp, prog.input(1));  // dead: input 1 is never loaded
  const int gt = prog.compare(CompareOp::kGt, x, z);
  const int small = prog.compare(CompareOp::kLe, prog.unary(UnaryOp::kAbs, x), prog.constant(1.0));
  prog.set_output(prog.logical(LogicalOp::kAnd, gt, prog.logical_not(small)));
  const TensorDesc yd = desc(DType::kBool, {8, 16});
  void* y = dalloc(128);
  h().clear_ops();
  ASSERT_EQ(elementwise_program(handle_, prog, {{&a.d, a.p}, {&unused.d, unused.p}, {&b.d, b.p}}, yd, y),
            Status::kSuccess)
      << last_error_detail();
  const std::vector<std::uint8_t> got = out<std::uint8_t>(y, {8, 16});
  std::size_t k = 0;
  for_each_index({8, 16}, [&](const Dims& i) {
    const double va = a.at(i), vb = b.at(i);
    EXPECT_EQ(got[k++], (va > vb && !(std::fabs(va) <= 1.0)) ? 1 : 0);
  });
  EXPECT_EQ(h().ops().back().bytes, (128 + 16) * 4 + 128u);  // a, b read; y written; input 1 not read
}

// alpha on tensors (as binary's) and on a constant (folded on the host), and a program of constants
// only (y is filled).
TEST_F(ElementwiseProgramTest, AlphaAndConstantsOnly) {
  HostTensor<float> a = tensor<float>({3, 50}, {}, 11), b = tensor<float>({50}, {}, 12);
  const TensorDesc yd = desc(DType::kFloat32, {3, 50});
  void* y = dalloc(150 * 4);
  void* y2 = dalloc(150 * 4);
  ElementwiseProgram prog;
  const int d = prog.binary(BinaryOp::kSub, prog.input(0), prog.input(1), 2.0);
  prog.set_output(prog.binary(BinaryOp::kAdd, d, prog.constant(3.0), 0.5));
  ASSERT_EQ(elementwise_program(handle_, prog, {{&a.d, a.p}, {&b.d, b.p}}, yd, y), Status::kSuccess)
      << last_error_detail();
  ASSERT_EQ(binary(handle_, BinaryOp::kSub, a.d, a.p, b.d, b.p, yd, y2, 2.0), Status::kSuccess);
  ASSERT_EQ(binary_scalar(handle_, BinaryOp::kAdd, yd, y2, 1.5, yd, y2), Status::kSuccess);
  EXPECT_EQ(out<float>(y, {3, 50}), out<float>(y2, {3, 50}));

  ElementwiseProgram fill_prog;
  fill_prog.set_output(fill_prog.binary(BinaryOp::kMul, fill_prog.constant(1.5), fill_prog.constant(4, DType::kInt64)));
  ASSERT_EQ(elementwise_program(handle_, fill_prog, {}, yd, y), Status::kSuccess) << last_error_detail();
  for (float v : out<float>(y, {3, 50})) EXPECT_EQ(v, 6.0f);
}

// fp32_intermediates: an fp16 chain computes in fp32 and rounds once on store (torch's opmath),
// bit-exact against the host's float arithmetic; without it every step rounds to fp16.
TEST_F(ElementwiseProgramTest, Fp16ChainWithFp32IntermediatesRoundsOnce) {
  HostTensor<half> x = tensor<half>({8, 50}, {}, 13, -3.0f, 3.0f);
  const TensorDesc yd = desc(DType::kFloat16, {8, 50});
  void* y = dalloc(400 * 2);
  ElementwiseProgram prog;
  const int in = prog.input(0);
  const int sq = prog.binary(BinaryOp::kMul, in, in);
  const int t = prog.binary(BinaryOp::kMul, prog.binary(BinaryOp::kAdd, sq, prog.constant(3.0)), in);
  prog.set_output(prog.binary(BinaryOp::kSub, prog.binary(BinaryOp::kDiv, t, prog.constant(7.0)), prog.constant(1.0)));
  std::vector<half> want(400), per_step(400);
  for (std::size_t i = 0; i < 400; ++i) {
    const float v = static_cast<float>(x.data[i]);
    want[i] = half(((v * v + 3.0f) * v) / 7.0f - 1.0f);
    const float s = static_cast<float>(half(v * v)), a = static_cast<float>(half(s + 3.0f));
    const float m = static_cast<float>(half(a * v)), d = static_cast<float>(half(m / 7.0f));
    per_step[i] = half(d - 1.0f);
  }
  auto bits = [](const std::vector<half>& v) {
    std::vector<std::uint16_t> b(v.size());
    std::memcpy(b.data(), v.data(), v.size() * 2);
    return b;
  };
  prog.fp32_intermediates = true;
  ASSERT_EQ(elementwise_program(handle_, prog, {{&x.d, x.p}}, yd, y), Status::kSuccess) << last_error_detail();
  EXPECT_EQ(bits(out<half>(y, {8, 50})), bits(want));
  prog.fp32_intermediates = false;
  ASSERT_EQ(elementwise_program(handle_, prog, {{&x.d, x.p}}, yd, y), Status::kSuccess) << last_error_detail();
  EXPECT_EQ(bits(out<half>(y, {8, 50})), bits(per_step));
  EXPECT_NE(bits(want), bits(per_step));  // the data tells the two apart
}

TEST_F(ElementwiseProgramTest, BadPrograms) {
  HostTensor<float> a = tensor<float>({4, 4}, {}, 1);
  const TensorDesc yd = desc(DType::kFloat32, {4, 4});
  void* y = dalloc(64);
  auto expect_bad = [&](const ElementwiseProgram& prog, const std::string& needle, Status want = Status::kBadParam,
                        const TensorDesc* out = nullptr) {
    EXPECT_EQ(elementwise_program(handle_, prog, {{&a.d, a.p}}, out ? *out : yd, y), want) << needle;
    EXPECT_NE(last_error_detail().find(needle), std::string::npos) << last_error_detail();
  };
  expect_bad(ElementwiseProgram{}, "no nodes");
  {
    ElementwiseProgram p;
    p.input(0);
    expect_bad(p, "call set_output");
  }
  {
    ElementwiseProgram p;
    p.set_output(p.binary(BinaryOp::kAdd, p.input(0), 7));
    expect_bad(p, "node 1 (binary): operand b = 7 is not a node id");
  }
  {  // 0 = neg(2), 1 = input, 2 = add(0, 1): a cycle through nodes 0 and 2
    ElementwiseProgram p;
    p.nodes.resize(3);
    p.nodes[0].kind = ExprNode::Kind::kUnary, p.nodes[0].a = 2;
    p.nodes[1].kind = ExprNode::Kind::kInput, p.nodes[1].input = 0;
    p.nodes[2].kind = ExprNode::Kind::kBinary, p.nodes[2].a = 0, p.nodes[2].b = 1;
    p.output = 2;
    expect_bad(p, "depends on itself (cycle");
    p.nodes[0].a = 0;  // a self loop
    expect_bad(p, "node 0 depends on itself");
  }
  {
    ElementwiseProgram p;
    p.set_output(p.unary(UnaryOp::kExp, p.input(3)));
    expect_bad(p, "reads input 3 but 1 inputs were given");
  }
  {
    ElementwiseProgram p;
    p.set_output(p.unary(static_cast<UnaryOp>(99), p.input(0)));
    expect_bad(p, "unknown unary op");
  }
  {
    ElementwiseProgram p;
    p.set_output(p.binary(BinaryOp::kAdd, p.input(0), p.constant(2.5, DType::kInt32)));
    expect_bad(p, "not a value of int32");
  }
  {
    ElementwiseProgram p;
    p.set_output(p.binary(BinaryOp::kAdd, p.input(0), p.constant(2, DType::kBool)));
    expect_bad(p, "neither 0 nor 1");
  }
  {  // bool - bool: as binary, subtraction of bools is rejected
    ElementwiseProgram p;
    const int b = p.compare(CompareOp::kGt, p.input(0), p.constant(0.0));
    p.set_output(p.binary(BinaryOp::kSub, b, b));
    expect_bad(p, "node 3 (binary): sub: subtraction with bool");
  }
  {  // integral math with a fractional alpha
    ElementwiseProgram p;
    const int i = p.cast(p.input(0), DType::kInt32);
    p.set_output(p.binary(BinaryOp::kAdd, i, i, 0.5));
    const TensorDesc yi = desc(DType::kInt32, {4, 4});
    expect_bad(p, "alpha", Status::kBadParam, &yi);
  }
  {
    ElementwiseProgram p;
    p.set_output(p.cast(p.input(0), DType::kFloat64));
    expect_bad(p, "fp64", Status::kNotSupported);
  }
  {  // y not the broadcast shape
    ElementwiseProgram p;
    p.set_output(p.input(0));
    const TensorDesc wrong = desc(DType::kFloat32, {4, 5});
    expect_bad(p, "broadcast shape", Status::kBadParam, &wrong);
  }
  EXPECT_TRUE(h().ops().empty());
}

}  // namespace
}  // namespace mlusim::mlu::testing
