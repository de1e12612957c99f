// The CPU backend's host kernels (runtime/kernels/cpu) against the reference
// interpreter: each kernel runs on the same random inputs as the tcc op it
// implements, parsed from a small MLIR function. Outputs are poisoned with
// NaN before every call so an element a kernel leaves unwritten fails.
//
// Tolerances: the GEMM is OpenBLAS, which sums in another order, so it
// matches to 1e-5 relative; the other kernels repeat the interpreter's
// arithmetic and match to 1e-6 (NaN matching NaN); the optimizer updates
// must be bit-identical, since both claim torch's exact rounding.
#include "TestUtil.h"

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/vexp.h"
#include "tcc/Interp/Interpreter.h"
#include "tcc/TccOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <random>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

using namespace mlir;
using tcc::data::Array;
using tcc::data::DType;
using namespace testutil;

namespace {

/// "tensor<2x3xf32>" for shape {2, 3}.
std::string ty(const std::vector<int64_t> &shape,
               const std::string &elt = "f32") {
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += std::to_string(d) + "x";
  return s + elt + ">";
}

int64_t count(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::vector<float> poisoned(int64_t n) {
  return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN());
}

/// |got - want| <= tol * max(1, |want|) elementwise; NaN and infinities
/// must match exactly.
void expectClose(const std::vector<float> &got, const Array &want, double tol,
                 const char *what) {
  ASSERT_EQ(want.dtype, DType::F32) << what;
  ASSERT_EQ(int64_t(got.size()), want.numElements()) << what;
  const float *w = want.data<float>();
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(w[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " element " << i;
      continue;
    }
    if (std::isinf(w[i])) {
      EXPECT_EQ(got[i], w[i]) << what << " element " << i;
      continue;
    }
    EXPECT_NEAR(got[i], w[i], tol * std::max(1.0, std::fabs(double(w[i]))))
        << what << " element " << i;
  }
}

void expectBitEqual(const std::vector<float> &got, const Array &want,
                    const char *what) {
  ASSERT_EQ(int64_t(got.size()), want.numElements()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    uint32_t a, b;
    std::memcpy(&a, &got[i], 4);
    std::memcpy(&b, &want.data<float>()[i], 4);
    EXPECT_EQ(a, b) << what << " element " << i << ": " << got[i] << " vs "
                    << want.data<float>()[i];
  }
}

class CpuKernelsTest : public ::testing::Test {
protected:
  CpuKernelsTest() {
    context.loadDialect<tcc::TccDialect, func::FuncDialect>();
  }

  /// Runs the only function of `source` in the interpreter.
  std::vector<Array> interp(const std::string &source,
                            const std::vector<Array> &inputs) {
    module = parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module) << "parse failed:\n" << source;
    std::vector<Array> results;
    if (!module)
      return results;
    std::string error;
    EXPECT_TRUE(tcc::interp::run(*module->getOps<func::FuncOp>().begin(),
                                 inputs, results, error))
        << error;
    return results;
  }

  /// Uniform floats in [lo, hi), deterministic per test.
  Array rand(const std::vector<int64_t> &shape, float lo = -2, float hi = 2) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(count(shape));
    for (float &x : v)
      x = dist(rng);
    return f32(shape, v);
  }

  static std::vector<float> vec(const Array &a) { return values<float>(a); }
  static const float *ptr(const Array &a) { return a.data<float>(); }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  std::mt19937 rng{1234};
};

//===----------------------------------------------------------------------===//
// GEMM
//===----------------------------------------------------------------------===//

// OpenBLAS's fallback to its generic Prescott kernels on a CPU it does not
// recognise (virtual machines) is replaced by the kernels the CPU's
// features allow: after selectBlasKernels, an AVX2 (or AVX-512) CPU runs
// anything but Prescott, unless OPENBLAS_CORETYPE chose; the note says so
// exactly when it changed the kernels. The GEMM tests below then run on
// those kernels.
TEST(CpuBlas, KernelsFitTheCpuFeatures) {
  const std::string &note = tcc::cpu::selectBlasKernels();
  std::string core = openblas_get_corename();
  bool avx2 = false;
#if defined(__x86_64__)
  __builtin_cpu_init();
  avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
  if (avx2 && !std::getenv("OPENBLAS_CORETYPE"))
    EXPECT_NE(core, "Prescott");
  if (!note.empty()) {
    EXPECT_EQ(note.rfind("OpenBLAS: " + core + " kernels (it detected its "
                         "generic 'Prescott'",
                         0),
              0u)
        << note;
    EXPECT_EQ(note.back(), '\n');
  }
  EXPECT_EQ(&tcc::cpu::selectBlasKernels(), &note); // once per process
}

TEST_F(CpuKernelsTest, GemmMatchesBatchedTransposedMatmul) {
  // op(a) = a^T [m, k], op(b) = b^T [k, n] with b broadcast over the batch
  // (stride 0).
  const int64_t batch = 3, m = 17, n = 23, k = 41;
  Array a = rand({batch, k, m}), b = rand({1, n, k});
  auto want = interp(
      "func.func @f(%a: " + ty({batch, k, m}) + ", %b: " + ty({1, n, k}) +
          ") -> " + ty({batch, m, n}) +
          " {\n"
          "  %0 = tcc.matmul %a, %b {transpose_lhs = true, transpose_rhs = "
          "true} : (" +
          ty({batch, k, m}) + ", " + ty({1, n, k}) + ") -> " +
          ty({batch, m, n}) + "\n  return %0 : " + ty({batch, m, n}) + "\n}",
      {a, b});
  ASSERT_EQ(want.size(), 1u);
  std::vector<float> c = poisoned(batch * m * n);
  tcc::cpu::gemm(true, true, batch, m, n, k, 1.0f, ptr(a), k * m, ptr(b), 0,
                 0.0f, c.data(), m * n);
  expectClose(c, want[0], 1e-5, "matmul");
}

TEST_F(CpuKernelsTest, GemmMatchesGemmWithBroadcastBias) {
  // tcc.gemm's c broadcasts to [m, n]: the caller fills C, then beta scales.
  const int64_t m = 9, n = 13, k = 31;
  Array a = rand({m, k}), b = rand({k, n}), bias = rand({n});
  auto want = interp(
      "func.func @f(%a: " + ty({m, k}) + ", %b: " + ty({k, n}) +
          ", %c: " + ty({n}) + ") -> " + ty({m, n}) +
          " {\n"
          "  %0 = tcc.gemm %a, %b, %c {alpha = 2.0 : f64, beta = 0.5 : f64} "
          ": (" +
          ty({m, k}) + ", " + ty({k, n}) + ", " + ty({n}) + ") -> " +
          ty({m, n}) + "\n  return %0 : " + ty({m, n}) + "\n}",
      {a, b, bias});
  ASSERT_EQ(want.size(), 1u);
  std::vector<float> c(m * n);
  for (int64_t i = 0; i < m; ++i)
    std::memcpy(&c[i * n], ptr(bias), n * sizeof(float));
  tcc::cpu::gemm(false, false, 1, m, n, k, 2.0f, ptr(a), 0, ptr(b), 0, 0.5f,
                 c.data(), 0);
  expectClose(c, want[0], 1e-5, "gemm");
}

TEST_F(CpuKernelsTest, GemmRowSumsMatchGemmBiasGrad) {
  // tcc.gemm's bias_grad: the sums of op(a)'s rows (a Linear's bias
  // gradient with op(a) = dY^T), both added in order in double: the same
  // bits. 70 outputs: two blocks of the parallel split.
  const int64_t m = 70, n = 5, k = 37;
  Array a = rand({k, m}), b = rand({k, n});
  auto want = interp(
      "func.func @f(%a: " + ty({k, m}) + ", %b: " + ty({k, n}) + ") -> (" +
          ty({m, n}) + ", " + ty({m}) +
          ") {\n"
          "  %0:2 = tcc.gemm %a, %b {transpose_a = true, with_bias_grad = "
          "true} : (" +
          ty({k, m}) + ", " + ty({k, n}) + ") -> (" + ty({m, n}) + ", " +
          ty({m}) + ")\n  return %0#0, %0#1 : " + ty({m, n}) + ", " + ty({m}) +
          "\n}",
      {a, b});
  ASSERT_EQ(want.size(), 2u);
  std::vector<float> sums = poisoned(m);
  tcc::cpu::gemm_row_sums(true, m, k, ptr(a), sums.data());
  expectClose(sums, want[1], 0.0, "bias_grad");
  // Untransposed: the rows of a [m, k] matrix.
  std::vector<float> rows = poisoned(k);
  tcc::cpu::gemm_row_sums(false, k, m, ptr(a), rows.data());
  for (int64_t i = 0; i < k; ++i) {
    double s = 0;
    for (int64_t j = 0; j < m; ++j)
      s += ptr(a)[i * m + j];
    EXPECT_EQ(rows[size_t(i)], static_cast<float>(s)) << "row " << i;
  }
}

//===----------------------------------------------------------------------===//
// Softmax family
//===----------------------------------------------------------------------===//

// vexp.h: expFloat is the correctly rounded exp (the exact value from
// expl, 64-bit mantissa, rounded to float) on a sample of every float in
// [-104, 0] (softmax's range: x - max), where glibc's expf is off by one
// ulp on 97,052 of them; expDouble is within 1 ulp of expl on [-708, 709.78]
// and its limits are exp's.
TEST(Vexp, CorrectlyRoundedFloatAndDoubleWithinOneUlp) {
  float lim = -104.0f;
  uint32_t last;
  std::memcpy(&last, &lim, 4);
  int64_t checked = 0;
  for (uint64_t b = 0x80000000u; b <= last; b += 977) {
    uint32_t bits = uint32_t(b);
    float x;
    std::memcpy(&x, &bits, 4);
    float want = static_cast<float>(std::exp(static_cast<long double>(x)));
    float got = tcc::cpu::expFloat(x);
    ASSERT_EQ(std::memcmp(&want, &got, 4), 0) << "x = " << x;
    ++checked;
  }
  EXPECT_GT(checked, 1000000);
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<double> u(-708.0, 709.78);
  for (int i = 0; i < 200000; ++i) {
    double x = u(gen);
    long double e = std::exp(static_cast<long double>(x));
    double got = tcc::cpu::expDouble(x);
    ASSERT_LE(std::fabs((static_cast<long double>(got) - e) / e),
              std::ldexp(1.0L, -52))
        << "x = " << x;
  }
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(std::isnan(tcc::cpu::expDouble(std::nan(""))));
  EXPECT_EQ(tcc::cpu::expDouble(inf), inf);
  EXPECT_EQ(tcc::cpu::expDouble(710.0), inf);
  EXPECT_EQ(tcc::cpu::expDouble(-inf), 0.0);
  EXPECT_EQ(tcc::cpu::expDouble(-709.0), 0.0); // below -708: 0 (vexp.h)
  EXPECT_EQ(tcc::cpu::expDouble(0.0), 1.0);
  EXPECT_EQ(tcc::cpu::expFloat(-0.0f), 1.0f);
  EXPECT_EQ(tcc::cpu::expFloat(-104.0f), std::exp(-104.0f));
}

TEST_F(CpuKernelsTest, SoftmaxFamilyMatchesInterpreter) {
  const int64_t rows = 5, len = 37;
  std::vector<int64_t> s = {rows, len};
  Array x = rand(s, -8, 8), dy = rand(s);
  // A masked-out score and an all -inf row (NaN in both implementations).
  const float inf = std::numeric_limits<float>::infinity();
  x.data<float>()[3] = -inf;
  for (int64_t j = 0; j < len; ++j)
    x.data<float>()[4 * len + j] = -inf;
  std::string t = ty(s);
  auto want = interp(
      "func.func @f(%x: " + t + ", %dy: " + t + ") -> (" + t + ", " + t + ", " +
          t + ", " + t +
          ") {\n"
          "  %y = tcc.softmax %x {axis = 1 : i64} : (" +
          t + ") -> " + t + "\n  %l = tcc.log_softmax %x {axis = 1 : i64} : (" +
          t + ") -> " + t +
          "\n  %dx = tcc.softmax_grad %y, %dy {axis = 1 : i64} : (" + t + ", " +
          t + ") -> " + t +
          "\n  %dl = tcc.log_softmax_grad %l, %dy {axis = 1 : i64} : (" + t +
          ", " + t + ") -> " + t + "\n  return %y, %l, %dx, %dl : " + t + ", " +
          t + ", " + t + ", " + t + "\n}",
      {x, dy});
  ASSERT_EQ(want.size(), 4u);
  std::vector<float> y = poisoned(rows * len), l = poisoned(rows * len);
  tcc::cpu::softmax_rows(ptr(x), y.data(), rows, len);
  expectClose(y, want[0], 1e-6, "softmax");
  tcc::cpu::log_softmax_rows(ptr(x), l.data(), rows, len);
  expectClose(l, want[1], 1e-6, "log_softmax");
  // The gradients read the interpreter's forward results, so each kernel is
  // checked on its own.
  std::vector<float> dx = poisoned(rows * len);
  tcc::cpu::softmax_grad_rows(ptr(want[0]), ptr(dy), dx.data(), rows, len);
  expectClose(dx, want[2], 1e-6, "softmax_grad");
  dx = poisoned(rows * len);
  tcc::cpu::log_softmax_grad_rows(ptr(want[1]), ptr(dy), dx.data(), rows, len);
  expectClose(dx, want[3], 1e-6, "log_softmax_grad");
  // In place, as the header allows.
  std::vector<float> inPlace = vec(x);
  tcc::cpu::softmax_rows(inPlace.data(), inPlace.data(), rows, len);
  expectClose(inPlace, want[0], 1e-6, "softmax in place");
}

//===----------------------------------------------------------------------===//
// Layer norm
//===----------------------------------------------------------------------===//

TEST_F(CpuKernelsTest, LayerNormMatchesInterpreter) {
  // Normalised over the trailing [4, 6]: 3 rows of 24.
  std::vector<int64_t> xs = {3, 4, 6}, ps = {4, 6};
  const int64_t rows = 3, len = 24;
  const double eps = 1e-5;
  Array x = rand(xs, -3, 5), scale = rand(ps), bias = rand(ps), dy = rand(xs),
        res = rand(xs);
  std::string tx = ty(xs), tp = ty(ps);
  std::string attrs = "{axis = 1 : i64, epsilon = 1.0e-05 : f64}";
  // With scale and bias, the gradient also adds a residual gradient; both
  // forms sum their input gradient over the rows (input_grad_sum).
  for (bool affine : {true, false}) {
    SCOPED_TRACE(affine ? "with scale, bias and residual"
                        : "without scale, bias and residual");
    std::string src =
        affine ? "func.func @f(%x: " + tx + ", %s: " + tp + ", %b: " + tp +
                     ", %dy: " + tx + ", %r: " + tx + ") -> (" + tx + ", " +
                     tx + ", " + tp + ", " + tp + ", " + tp +
                     ") {\n  %y = tcc.layer_norm %x scale %s bias %b " +
                     attrs + " : (" + tx + ", " + tp + ", " + tp + ") -> " +
                     tx +
                     "\n  %dx, %ds, %db, %dsum = tcc.layer_norm_grad %x "
                     "scale %s grad %dy residual %r " +
                     attrs + " : (" + tx + ", " + tp + ", " + tx + ", " + tx +
                     ") -> (" + tx + ", " + tp + ", " + tp + ", " + tp + ")\n"
               : "func.func @f(%x: " + tx + ", %dy: " + tx + ") -> (" + tx +
                     ", " + tx + ", " + tp + ", " + tp + ", " + tp +
                     ") {\n  %y = tcc.layer_norm %x " + attrs + " : (" + tx +
                     ") -> " + tx +
                     "\n  %dx, %ds, %db, %dsum = tcc.layer_norm_grad %x grad "
                     "%dy " +
                     attrs + " : (" + tx + ", " + tx + ") -> (" + tx + ", " +
                     tp + ", " + tp + ", " + tp + ")\n";
    src += "  return %y, %dx, %ds, %db, %dsum : " + tx + ", " + tx + ", " + tp +
           ", " + tp + ", " + tp + "\n}";
    auto want = affine ? interp(src, {x, scale, bias, dy, res})
                       : interp(src, {x, dy});
    ASSERT_EQ(want.size(), 5u);
    const float *s = affine ? ptr(scale) : nullptr;
    const float *b = affine ? ptr(bias) : nullptr;
    const float *r = affine ? ptr(res) : nullptr;

    std::vector<float> y = poisoned(rows * len), mean = poisoned(rows),
                       rstd = poisoned(rows);
    tcc::cpu::layer_norm_fwd(ptr(x), s, b, y.data(), mean.data(), rstd.data(),
                             rows, len, eps);
    expectClose(y, want[0], 1e-6, "layer_norm");
    for (int64_t r = 0; r < rows; ++r) {
      double m = 0, v = 0;
      for (int64_t j = 0; j < len; ++j)
        m += ptr(x)[r * len + j];
      m /= len;
      for (int64_t j = 0; j < len; ++j)
        v += std::pow(ptr(x)[r * len + j] - m, 2);
      EXPECT_NEAR(mean[r], m, 1e-6);
      EXPECT_NEAR(rstd[r], 1 / std::sqrt(v / len + eps), 1e-6);
    }

    // Recomputed statistics repeat the interpreter; the forward's float
    // statistics differ from them by float rounding, hence 1e-5.
    for (bool saved : {false, true}) {
      SCOPED_TRACE(saved ? "saved statistics" : "recomputed statistics");
      std::vector<float> dx = poisoned(rows * len), ds = poisoned(len),
                         db = poisoned(len), dsum = poisoned(len);
      tcc::cpu::layer_norm_bwd(ptr(x), s, ptr(dy), r,
                               saved ? mean.data() : nullptr,
                               saved ? rstd.data() : nullptr, dx.data(),
                               ds.data(), db.data(), dsum.data(), rows, len,
                               eps);
      double tol = saved ? 1e-5 : 1e-6;
      expectClose(dx, want[1], tol, "layer_norm dx");
      expectClose(ds, want[2], tol, "layer_norm dscale");
      expectClose(db, want[3], tol, "layer_norm dbias");
      expectClose(dsum, want[4], tol, "layer_norm dx's sum");
      // The sum is dx's, row by row (hand-summed in double).
      for (int64_t j = 0; j < len; ++j) {
        double sum = 0;
        for (int64_t i = 0; i < rows; ++i)
          sum += dx[i * len + j];
        EXPECT_NEAR(dsum[j], sum, 1e-6 * (1 + std::abs(sum)));
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

enum class MaskKind { None, Keep, Bias };

TEST_F(CpuKernelsTest, AttentionMatchesInterpreter) {
  const int64_t B = 2, H = 3, D = 4, Dv = 5;
  struct Case {
    int64_t tq, tk;
    bool causal;
    MaskKind mask;
  };
  for (Case c :
       {Case{3, 6, false, MaskKind::None}, Case{5, 5, true, MaskKind::None},
        Case{4, 6, true, MaskKind::Keep}, Case{6, 4, false, MaskKind::Bias},
        // More rows than OpenBLAS's smallest blocks, split over the pool;
        // causal ones run in blocks of 32 query rows (a partial last one;
        // keys no query sees; more queries than keys).
        Case{37, 45, true, MaskKind::Keep}, Case{100, 100, true, MaskKind::None},
        Case{70, 64, true, MaskKind::Bias}}) {
    SCOPED_TRACE("tq " + std::to_string(c.tq) + " tk " + std::to_string(c.tk) +
                 " causal " + std::to_string(c.causal) + " mask " +
                 std::to_string(int(c.mask)));
    std::vector<int64_t> qs = {B, H, c.tq, D}, ks = {B, H, c.tk, D},
                         vs = {B, H, c.tk, Dv}, os = {B, H, c.tq, Dv},
                         ms = {B, c.tk};
    Array q = rand(qs), k = rand(ks), v = rand(vs), dout = rand(os);
    std::vector<Array> inputs = {q, k, v, dout};
    tcc::cpu::KeyMask mask;
    std::string maskArg, maskUse, maskType;
    if (c.mask == MaskKind::Keep) {
      // Key 0 stays visible so no causal row is fully hidden.
      std::vector<uint8_t> keep(B * c.tk);
      for (int64_t i = 0; i < B * c.tk; ++i)
        keep[i] = i % c.tk == 0 || (i * 7) % 3 != 0;
      inputs.push_back(makeArray("", DType::Bool, ms, keep));
      maskType = ty(ms, "i1");
    } else if (c.mask == MaskKind::Bias) {
      inputs.push_back(rand(ms, -3, 0));
      maskType = ty(ms);
    }
    if (c.mask != MaskKind::None) {
      maskArg = ", %m: " + maskType;
      maskUse = ", %m";
      maskType = ", " + maskType;
    }
    std::string attrs = std::string("{scale = 0.5 : f64") +
                        (c.causal ? ", causal = true}" : "}");
    std::string tq = ty(qs), tk = ty(ks), tv = ty(vs), to = ty(os);
    auto want = interp(
        "func.func @f(%q: " + tq + ", %k: " + tk + ", %v: " + tv +
            ", %do: " + to + maskArg + ") -> (" + to + ", " + tq + ", " + tk +
            ", " + tv + ") {\n  %o = tcc.attention %q, %k, %v" + maskUse + " " +
            attrs + " : (" + tq + ", " + tk + ", " + tv + maskType + ") -> " +
            to + "\n  %dq, %dk, %dv = tcc.attention_grad %q, %k, %v, %do" +
            maskUse + " " + attrs + " : (" + tq + ", " + tk + ", " + tv + ", " +
            to + maskType + ") -> (" + tq + ", " + tk + ", " + tv +
            ")\n  return %o, %dq, %dk, %dv : " + to + ", " + tq + ", " + tk +
            ", " + tv + "\n}",
        inputs);
    ASSERT_EQ(want.size(), 4u);
    if (c.mask == MaskKind::Keep)
      mask.keep = inputs[4].data<uint8_t>();
    if (c.mask == MaskKind::Bias)
      mask.bias = ptr(inputs[4]);

    std::vector<float> o = poisoned(count(os));
    tcc::cpu::attention_fwd(ptr(q), ptr(k), ptr(v), o.data(), B, H, c.tq, c.tk,
                            D, Dv, 0.5, c.causal, mask);
    expectClose(o, want[0], 1e-6, "attention");
    std::vector<float> dq = poisoned(count(qs)), dk = poisoned(count(ks)),
                       dv = poisoned(count(vs));
    tcc::cpu::attention_bwd(ptr(q), ptr(k), ptr(v), ptr(dout), dq.data(),
                            dk.data(), dv.data(), B, H, c.tq, c.tk, D, Dv, 0.5,
                            c.causal, mask);
    expectClose(dq, want[1], 1e-6, "attention dq");
    expectClose(dk, want[2], 1e-6, "attention dk");
    expectClose(dv, want[3], 1e-6, "attention dv");
  }
}

// Token rows (tcc-fold-attention-layout): q, k and v read from one
// [B, T, 3 * H * D] tensor at columns 0, H * D, 2 * H * D, the result and
// the gradients written as [B, T, H * D]. Against the interpreter on the
// same token-rows IR (which runs on heads-first copies) at the dense
// test's tolerance, and bit for bit against the kernels on heads-first
// copies of the same data: only addresses change. Also over packed tokens
// (cu_seqlens), where token r of head h is element (r / T, h, r % T).
TEST_F(CpuKernelsTest, AttentionTokenRows) {
  const int64_t B = 2, T = 6, H = 3, D = 4, C = H * D, W = 3 * C;
  // [B, T, width] rows from `column` -> [B, H, T, D], and back.
  auto headsFirst = [&](const float *rows, int64_t width, int64_t column) {
    std::vector<float> out(B * H * T * D);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t t = 0; t < T; ++t)
          for (int64_t x = 0; x < D; ++x)
            out[((b * H + h) * T + t) * D + x] =
                rows[(b * T + t) * width + column + h * D + x];
    return out;
  };
  auto tokenRows = [&](const std::vector<float> &heads) {
    std::vector<float> out(B * T * C);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t t = 0; t < T; ++t)
          for (int64_t x = 0; x < D; ++x)
            out[(b * T + t) * C + h * D + x] =
                heads[((b * H + h) * T + t) * D + x];
    return out;
  };
  using tcc::kernels::AttentionLayout;
  using tcc::kernels::AttentionStrides;
  AttentionLayout rows;
  rows.q = rows.k = rows.v = AttentionStrides::tokenRows(T, W, D);
  rows.o = rows.dq = rows.dk = rows.dv = AttentionStrides::tokenRows(T, C, D);
  for (bool causal : {false, true})
    for (bool packed : {false, true}) {
      SCOPED_TRACE(std::string("causal ") + (causal ? "1" : "0") +
                   " packed " + (packed ? "1" : "0"));
      Array x = rand({B, T, W}), dout = rand({B, T, C});
      const float *q = ptr(x), *k = q + C, *v = q + 2 * C;
      tcc::cpu::KeyMask mask;
      // Packed tokens: sequences of 4 and 5 tokens in 12 rows (3 padding).
      std::vector<int32_t> cu = {0, 4, 9};
      if (packed)
        mask.cuSeqlens = cu.data();
      std::vector<float> o = poisoned(B * T * C), dq = poisoned(B * T * C),
                         dk = poisoned(B * T * C), dv = poisoned(B * T * C);
      tcc::cpu::attention_fwd(q, k, v, o.data(), B, H, T, T, D, D, 0.5, causal,
                              mask, rows);
      tcc::cpu::attention_bwd(q, k, v, ptr(dout), dq.data(), dk.data(),
                              dv.data(), B, H, T, T, D, D, 0.5, causal, mask,
                              rows);
      // The same on heads-first copies.
      std::vector<float> qh = headsFirst(ptr(x), W, 0),
                         kh = headsFirst(ptr(x), W, C),
                         vh = headsFirst(ptr(x), W, 2 * C),
                         gh = headsFirst(ptr(dout), C, 0);
      std::vector<float> oh(B * H * T * D), dqh(oh.size()), dkh(oh.size()),
          dvh(oh.size());
      tcc::cpu::attention_fwd(qh.data(), kh.data(), vh.data(), oh.data(), B,
                              H, T, T, D, D, 0.5, causal, mask);
      tcc::cpu::attention_bwd(qh.data(), kh.data(), vh.data(), gh.data(),
                              dqh.data(), dkh.data(), dvh.data(), B, H, T, T,
                              D, D, 0.5, causal, mask);
      expectBitEqual(o, f32({B, T, C}, tokenRows(oh)), "result");
      expectBitEqual(dq, f32({B, T, C}, tokenRows(dqh)), "query_grad");
      expectBitEqual(dk, f32({B, T, C}, tokenRows(dkh)), "key_grad");
      expectBitEqual(dv, f32({B, T, C}, tokenRows(dvh)), "value_grad");
      if (packed)
        continue; // the interpreter's packed form is the dense test's
      std::string tx = ty({B, T, W}), tr = ty({B, T, C});
      std::string attrs = std::string("{scale = 0.5 : f64") +
                          (causal ? ", causal = true" : "") +
                          ", heads = 3 : i64, head_dim = 4 : i64, "
                          "key_column = 12 : i64, value_column = 24 : i64}";
      auto want = interp(
          "func.func @f(%x: " + tx + ", %do: " + tr + ") -> (" + tr + ", " +
              tr + ", " + tr + ", " + tr +
              ") {\n  %o = tcc.attention %x, %x, %x " + attrs + " : (" + tx +
              ", " + tx + ", " + tx + ") -> " + tr +
              "\n  %dq, %dk, %dv = tcc.attention_grad %x, %x, %x, %do " +
              attrs + " : (" + tx + ", " + tx + ", " + tx + ", " + tr +
              ") -> (" + tr + ", " + tr + ", " + tr + ")\n  return %o, %dq, " +
              "%dk, %dv : " + tr + ", " + tr + ", " + tr + ", " + tr + "\n}",
          {x, dout});
      ASSERT_EQ(want.size(), 4u);
      expectClose(o, want[0], 1e-6, "attention");
      expectClose(dq, want[1], 1e-6, "attention dq");
      expectClose(dk, want[2], 1e-6, "attention dk");
      expectClose(dv, want[3], 1e-6, "attention dv");
    }
}

//===----------------------------------------------------------------------===//
// Cross-entropy
//===----------------------------------------------------------------------===//

TEST_F(CpuKernelsTest, CrossEntropyMatchesInterpreter) {
  const int64_t rows = 7, classes = 11;
  std::vector<int64_t> ls = {rows, classes};
  Array logits = rand(ls, -6, 6);
  for (int64_t ignore : {int64_t(-100), int64_t(3)}) {
    SCOPED_TRACE("ignore_index " + std::to_string(ignore));
    std::vector<int64_t> labels = {0, 3, -100, 10, 3, 5, -100};
    if (ignore != -100)
      labels = {0, 3, 2, 10, 3, 5, 1};
    Array lab = i64({rows}, labels), seed = f32({}, {0.25f});
    std::string tl = ty(ls), tt = ty({rows}, "i64"), ts = ty({});
    std::string attr = "{ignore_index = " + std::to_string(ignore) + " : i64}";
    auto want = interp(
        "func.func @f(%l: " + tl + ", %t: " + tt + ", %g: " + ts + ") -> (" +
            ts + ", " + ts + ", " + tl +
            ") {\n  %s, %n = tcc.cross_entropy %l, %t " + attr + " : (" + tl +
            ", " + tt + ") -> (" + ts + ", " + ts +
            ")\n  %d = tcc.cross_entropy_grad %l, %t, %g " + attr + " : (" +
            tl + ", " + tt + ", " + ts + ") -> " + tl +
            "\n  return %s, %n, %d : " + ts + ", " + ts + ", " + tl + "\n}",
        {logits, lab, seed});
    ASSERT_EQ(want.size(), 3u);
    std::vector<float> sum = poisoned(1), n = poisoned(1);
    EXPECT_EQ(tcc::cpu::cross_entropy_fwd(ptr(logits), labels.data(), rows,
                                          classes, ignore, sum.data(),
                                          n.data()),
              -1);
    expectClose(sum, want[0], 1e-6, "loss sum");
    expectBitEqual(n, want[1], "count");
    std::vector<float> d = poisoned(rows * classes);
    EXPECT_EQ(tcc::cpu::cross_entropy_grad(ptr(logits), labels.data(), 0.25f,
                                           d.data(), rows, classes, ignore),
              -1);
    expectClose(d, want[2], 1e-6, "logits grad");
  }
  // A label neither ignored nor a class names its row.
  std::vector<int64_t> bad = {0, 1, 11, 2, 3, 4, 5};
  float sum, n;
  std::vector<float> d(rows * classes);
  EXPECT_EQ(tcc::cpu::cross_entropy_fwd(ptr(logits), bad.data(), rows, classes,
                                        -100, &sum, &n),
            2);
  EXPECT_EQ(tcc::cpu::cross_entropy_grad(ptr(logits), bad.data(), 1.0f,
                                         d.data(), rows, classes, -100),
            2);
}

//===----------------------------------------------------------------------===//
// Embedding
//===----------------------------------------------------------------------===//

TEST_F(CpuKernelsTest, EmbeddingAndScatterAddMatchInterpreter) {
  const int64_t vocab = 7, dim = 5;
  std::vector<int64_t> ts = {vocab, dim}, is = {2, 3}, os = {2, 3, dim};
  // Repeated ids accumulate; -1 (gather_grad only) counts from the end.
  std::vector<int64_t> ids = {4, 0, 4, 6, 2, 4}, gradIds = {4, 0, -1, 6, 2, 4};
  Array table = rand(ts), dy = rand(os);
  std::string tt = ty(ts), ti = ty(is, "i64"), to = ty(os);
  auto want = interp(
      "func.func @f(%t: " + tt + ", %i: " + ti + ", %j: " + ti +
          ", %dy: " + to + ") -> (" + to + ", " + tt +
          ") {\n  %e = tcc.embedding %t, %i : (" + tt + ", " + ti + ") -> " +
          to + "\n  %g = tcc.gather_grad %j, %dy {axis = 0 : i64} : (" + ti +
          ", " + to + ") -> " + tt + "\n  return %e, %g : " + to + ", " + tt +
          "\n}",
      {table, i64(is, ids), i64(is, gradIds), dy});
  ASSERT_EQ(want.size(), 2u);
  std::vector<float> e = poisoned(count(os)), g = poisoned(count(ts));
  EXPECT_EQ(
      tcc::cpu::gather_rows(ptr(table), ids.data(), 6, vocab, dim, e.data()),
      -1);
  expectBitEqual(e, want[0], "embedding");
  EXPECT_EQ(tcc::cpu::scatter_add_rows(gradIds.data(), ptr(dy), 6, vocab, dim,
                                       g.data()),
            -1);
  expectClose(g, want[1], 1e-6, "embedding grad");
  // Out-of-range ids name their position; an embedding id never wraps.
  EXPECT_EQ(tcc::cpu::gather_rows(ptr(table), gradIds.data(), 6, vocab, dim,
                                  e.data()),
            2);
  std::vector<int64_t> bad = {0, 7};
  EXPECT_EQ(
      tcc::cpu::scatter_add_rows(bad.data(), ptr(dy), 2, vocab, dim, g.data()),
      1);
}

//===----------------------------------------------------------------------===//
// Optimizers: bit-exact
//===----------------------------------------------------------------------===//

TEST_F(CpuKernelsTest, SgdUpdateIsBitExact) {
  const int64_t n = 997;
  std::string t = ty({n}), tl = ty({}, "f64");
  Array p = rand({n}), g = rand({n}, -0.1f, 0.1f), buf = rand({n});
  Array lr = makeArray("", DType::F64, {}, std::vector<double>{0.037});
  struct Case {
    double momentum, wd;
    bool nesterov;
  };
  for (Case c : {Case{0, 0, false}, Case{0, 0.01, false},
                 Case{0.9, 0.01, false}, Case{0.9, 0.001, true}}) {
    SCOPED_TRACE("momentum " + std::to_string(c.momentum) + " wd " +
                 std::to_string(c.wd) + " nesterov " +
                 std::to_string(c.nesterov));
    bool useBuf = c.momentum != 0;
    char attrs[160];
    std::snprintf(attrs, sizeof(attrs),
                  "{momentum = %.17e : f64, weight_decay = %.17e : f64%s}",
                  c.momentum, c.wd, c.nesterov ? ", nesterov = true" : "");
    std::string src =
        useBuf
            ? "func.func @f(%p: " + t + ", %g: " + t + ", %lr: " + tl +
                  ", %b: " + t + ") -> (" + t + ", " + t +
                  ") {\n  %np, %nb = tcc.sgd_update %p, %g, %lr, %b " + attrs +
                  " : (" + t + ", " + t + ", " + tl + ", " + t + ") -> (" + t +
                  ", " + t + ")\n  return %np, %nb : " + t + ", " + t + "\n}"
            : "func.func @f(%p: " + t + ", %g: " + t + ", %lr: " + tl +
                  ") -> " + t + " {\n  %np = tcc.sgd_update %p, %g, %lr " +
                  attrs + " : (" + t + ", " + t + ", " + tl + ") -> " + t +
                  "\n  return %np : " + t + "\n}";
    auto want = useBuf ? interp(src, {p, g, lr, buf}) : interp(src, {p, g, lr});
    ASSERT_EQ(want.size(), useBuf ? 2u : 1u);
    std::vector<float> np = poisoned(n), nb = poisoned(n);
    tcc::cpu::sgd_update(ptr(p), ptr(g), useBuf ? ptr(buf) : nullptr, np.data(),
                         useBuf ? nb.data() : nullptr, n, 0.037, c.momentum,
                         c.wd, c.nesterov);
    expectBitEqual(np, want[0], "param");
    if (useBuf)
      expectBitEqual(nb, want[1], "momentum buffer");
    // In place gives the same bits.
    std::vector<float> ip = vec(p), ib = vec(buf);
    tcc::cpu::sgd_update(ip.data(), ptr(g), useBuf ? ib.data() : nullptr,
                         ip.data(), useBuf ? ib.data() : nullptr, n, 0.037,
                         c.momentum, c.wd, c.nesterov);
    expectBitEqual(ip, want[0], "param in place");
  }
}

TEST_F(CpuKernelsTest, AdamwUpdateIsBitExact) {
  const int64_t n = 1009;
  std::string t = ty({n}), tl = ty({}, "f64"), ts = ty({}, "i64");
  Array p = rand({n}), g = rand({n}, -0.5f, 0.5f), m = rand({n}, -0.1f, 0.1f),
        v = rand({n}, 0, 0.01f);
  Array lr = makeArray("", DType::F64, {}, std::vector<double>{3e-4});
  for (int64_t step : {int64_t(1), int64_t(7)}) {
    SCOPED_TRACE("step " + std::to_string(step));
    std::string attrs = "{beta1 = 0.9 : f64, beta2 = 0.95 : f64, eps = "
                        "1.0e-08 : f64, weight_decay = 0.1 : f64}";
    auto want = interp(
        "func.func @f(%p: " + t + ", %g: " + t + ", %m: " + t + ", %v: " + t +
            ", %lr: " + tl + ", %s: " + ts + ") -> (" + t + ", " + t + ", " +
            t +
            ") {\n  %np, %nm, %nv = tcc.adamw_update %p, %g, %m, %v, %lr, %s " +
            attrs + " : (" + t + ", " + t + ", " + t + ", " + t + ", " + tl +
            ", " + ts + ") -> (" + t + ", " + t + ", " + t +
            ")\n  return %np, %nm, %nv : " + t + ", " + t + ", " + t + "\n}",
        {p, g, m, v, lr, i64({}, {step})});
    ASSERT_EQ(want.size(), 3u);
    std::vector<float> np = poisoned(n), nm = poisoned(n), nv = poisoned(n);
    EXPECT_TRUE(tcc::cpu::adamw_update(ptr(p), ptr(g), ptr(m), ptr(v),
                                       np.data(), nm.data(), nv.data(), n, 3e-4,
                                       step, 0.9, 0.95, 1e-8, 0.1));
    expectBitEqual(np, want[0], "param");
    expectBitEqual(nm, want[1], "exp_avg");
    expectBitEqual(nv, want[2], "exp_avg_sq");
    std::vector<float> ip = vec(p), im = vec(m), iv = vec(v);
    EXPECT_TRUE(tcc::cpu::adamw_update(ip.data(), ptr(g), im.data(), iv.data(),
                                       ip.data(), im.data(), iv.data(), n, 3e-4,
                                       step, 0.9, 0.95, 1e-8, 0.1));
    expectBitEqual(ip, want[0], "param in place");
    expectBitEqual(iv, want[2], "exp_avg_sq in place");
  }
  std::vector<float> out = poisoned(n);
  EXPECT_FALSE(tcc::cpu::adamw_update(ptr(p), ptr(g), ptr(m), ptr(v),
                                      out.data(), out.data(), out.data(), n,
                                      3e-4, 0, 0.9, 0.95, 1e-8, 0.1));
  EXPECT_TRUE(std::isnan(out[0])) << "step 0 must write nothing";
}

//===----------------------------------------------------------------------===//
// The worker pool (kernels/cpu/parallel.h)
//===----------------------------------------------------------------------===//

// Every index of [0, n) is run exactly once, in chunks of at least
// min_chunk (but the last), also from inside a body (run inline), and the
// workers take the caller's flush-to-zero mode.
TEST_F(CpuKernelsTest, ParallelForRunsEachIndexOnce) {
  ASSERT_GE(tcc::cpu::parallel_threads(), 1u);
  for (int64_t n : {0, 1, 5, 1000, 100003})
    for (int64_t minChunk : {1, 7, 4096}) {
      SCOPED_TRACE("n " + std::to_string(n) + " min_chunk " +
                   std::to_string(minChunk));
      std::vector<int> runs(size_t(n), 0), nested(size_t(n), 0);
      std::vector<int64_t> shortChunks(1, 0);
      std::mutex m;
      tcc::cpu::parallel_for(n, minChunk, [&](int64_t begin, int64_t end) {
        if (end - begin < minChunk && end != n) {
          std::lock_guard<std::mutex> lock(m);
          ++shortChunks[0];
        }
        for (int64_t i = begin; i < end; ++i)
          ++runs[size_t(i)];
        tcc::cpu::parallel_for(end - begin, 1, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i)
            ++nested[size_t(begin + i)];
        });
      });
      EXPECT_EQ(std::count(runs.begin(), runs.end(), 1), n);
      EXPECT_EQ(std::count(nested.begin(), nested.end(), 1), n);
      EXPECT_EQ(shortChunks[0], 0);
    }
#if defined(__x86_64__) || defined(__i386__)
  // 1e-30 * 1e-10 is subnormal: flushed to 0 on every thread.
  const int64_t n = 1 << 16;
  std::vector<float> a(size_t(n), 1e-30f), b(size_t(n), 1e-10f),
      c(size_t(n), 1.0f);
  unsigned saved = _mm_getcsr();
  _mm_setcsr(saved | 0x8040); // FTZ | DAZ
  tcc::cpu::parallel_for(n, 1024, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      c[size_t(i)] = a[size_t(i)] * b[size_t(i)];
  });
  _mm_setcsr(saved);
  EXPECT_EQ(std::count(c.begin(), c.end(), 0.0f), n);
#endif
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

TEST_F(CpuKernelsTest, ConvMatchesInterpreter) {
  // Grouped, strided, dilated, asymmetrically padded, with a bias; and the
  // backward op on the same window. sgemm sums in float: 1e-5.
  tcc::kernels::WindowShape s;
  s.n = 2, s.c = 4, s.h = 7, s.w = 6, s.oc = 6, s.kh = 3, s.kw = 2;
  s.sh = 2, s.sw = 1, s.padTop = 1, s.padBottom = 2, s.padLeft = 0,
  s.padRight = 1, s.dh = 1, s.dw = 2, s.group = 2;
  s.oh = 4, s.ow = 5;
  std::vector<int64_t> xs{s.n, s.c, s.h, s.w}, ws{s.oc, 2, s.kh, s.kw},
      ys{s.n, s.oc, s.oh, s.ow};
  Array x = rand(xs), w = rand(ws), b = rand({s.oc}), dy = rand(ys);
  std::string attrs = "{stride_h = 2 : i64, pad_top = 1 : i64, pad_bottom = 2 "
                      ": i64, pad_right = 1 : i64, dilation_w = 2 : i64, group "
                      "= 2 : i64}";
  std::string tb = ty({s.oc});
  auto want = interp(
      "func.func @f(%x: " + ty(xs) + ", %w: " + ty(ws) + ", %b: " + tb +
          ", %dy: " + ty(ys) + ") -> (" + ty(ys) + ", " + ty(xs) + ", " +
          ty(ws) + ", " + tb + ") {\n  %y = tcc.conv %x, %w, %b " + attrs +
          " : (" + ty(xs) + ", " + ty(ws) + ", " + tb + ") -> " + ty(ys) +
          "\n  %dx, %dw, %db = tcc.conv_grad %x, %w, %dy " + attrs + " : (" +
          ty(xs) + ", " + ty(ws) + ", " + ty(ys) + ") -> (" + ty(xs) + ", " +
          ty(ws) + ", " + tb + ")\n  return %y, %dx, %dw, %db : " + ty(ys) +
          ", " + ty(xs) + ", " + ty(ws) + ", " + tb + "\n}",
      {x, w, b, dy});
  ASSERT_EQ(want.size(), 4u);
  std::vector<float> y = poisoned(count(ys));
  tcc::cpu::conv2d_fwd(s, ptr(x), ptr(w), ptr(b), y.data());
  expectClose(y, want[0], 1e-5, "conv");
  std::vector<float> dx = poisoned(count(xs)), dw = poisoned(count(ws)),
                     db = poisoned(s.oc);
  tcc::cpu::conv2d_bwd(s, ptr(x), ptr(w), ptr(dy), dx.data(), dw.data(),
                       db.data());
  expectClose(dx, want[1], 1e-5, "conv_grad input_grad");
  expectClose(dw, want[2], 1e-5, "conv_grad weight_grad");
  expectClose(db, want[3], 1e-5, "conv_grad bias_grad");
}

TEST_F(CpuKernelsTest, PoolsMatchInterpreter) {
  // Overlapping, padded, dilated windows; one window of the max pool lies
  // wholly in padding rows except one.
  tcc::kernels::WindowShape s;
  s.n = 2, s.c = 3, s.h = 5, s.w = 6, s.oc = 3, s.kh = 3, s.kw = 2;
  s.sh = 2, s.sw = 2, s.padTop = 1, s.padBottom = 1, s.padLeft = 1,
  s.padRight = 0, s.dh = 1, s.dw = 2;
  s.oh = 3, s.ow = 3;
  std::vector<int64_t> xs{s.n, s.c, s.h, s.w}, ys{s.n, s.c, s.oh, s.ow};
  Array x = rand(xs), dy = rand(ys);
  std::string win = "kernel_h = 3 : i64, kernel_w = 2 : i64, stride_h = 2 : "
                    "i64, stride_w = 2 : i64, pad_top = 1 : i64, pad_bottom = "
                    "1 : i64, pad_left = 1 : i64, dilation_w = 2 : i64";
  for (bool include : {false, true}) {
    std::string avg =
        win + ", count_include_pad = " + (include ? "true" : "false");
    auto want = interp(
        "func.func @f(%x: " + ty(xs) + ", %dy: " + ty(ys) + ") -> (" + ty(ys) +
            ", " + ty(xs) + ", " + ty(ys) + ", " + ty(xs) +
            ") {\n  %m = tcc.max_pool %x {" + win + "} : (" + ty(xs) + ") -> " +
            ty(ys) + "\n  %dm = tcc.max_pool_grad %x, %dy {" + win + "} : (" +
            ty(xs) + ", " + ty(ys) + ") -> " + ty(xs) +
            "\n  %a = tcc.avg_pool %x {" + avg + "} : (" + ty(xs) + ") -> " +
            ty(ys) + "\n  %da = tcc.avg_pool_grad %x, %dy {" + avg + "} : (" +
            ty(xs) + ", " + ty(ys) + ") -> " + ty(xs) +
            "\n  return %m, %dm, "
            "%a, %da : " +
            ty(ys) + ", " + ty(xs) + ", " + ty(ys) + ", " + ty(xs) + "\n}",
        {x, dy});
    ASSERT_EQ(want.size(), 4u);
    s.countIncludePad = include;
    std::vector<float> y = poisoned(count(ys)), dx = poisoned(count(xs));
    tcc::cpu::max_pool2d_fwd(s, ptr(x), y.data());
    expectClose(y, want[0], 1e-6, "max_pool");
    tcc::cpu::max_pool2d_bwd(s, ptr(x), ptr(dy), dx.data());
    expectClose(dx, want[1], 1e-6, "max_pool_grad");
    y = poisoned(count(ys)), dx = poisoned(count(xs));
    tcc::cpu::avg_pool2d_fwd(s, ptr(x), y.data());
    expectClose(y, want[2], 1e-6, include ? "avg_pool incl" : "avg_pool");
    tcc::cpu::avg_pool2d_bwd(s, ptr(dy), dx.data());
    expectClose(dx, want[3], 1e-6,
                include ? "avg_pool_grad incl" : "avg_pool_grad");
  }
}

} // namespace
