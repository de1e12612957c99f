// GemmPlan (runtime/kernels/cuda/gemm.h) against a float64 reference: every
// transpose combination, batches with strides (and a broadcast operand),
// beta 0 with a NaN-poisoned C (must not propagate) and beta != 0, each
// epilogue, full fp32 and TF32.
//
// bf16 / f16 plans (A, B, C and the bias all 16-bit, f32 accumulation)
// against a float64 reference on the inputs widened from 16 bits.
//
// Tolerances (|got - ref| <= tol * (|ref| + max|ref|)): fp32 1e-5, TF32
// 2e-3 (a 10-bit mantissa per product), the GELU epilogue 2e-3 as well
// (cuBLASLt may evaluate tanh approximately); bf16 1e-2, f16 5e-3 (C is
// rounded once to 16 bits, 2^-9 resp. 2^-12 relative). Without a GPU every
// test prints "no CUDA device: skipped" and skips.
#include "GpuTestUtil.h"

#include "data/half.h"
#include "kernels/cuda/gemm.h"

namespace tcc::gputest {
namespace {

namespace cu = tcc::cuda;
using Gemm = GpuTest;

struct GemmCase {
  bool transA, transB;
  int64_t m, n, k, batch;
  bool broadcastB;
};

const GemmCase kCases[] = {
    {false, false, 1, 1, 1, 1, false},     {false, false, 37, 53, 71, 1, false},
    {true, false, 64, 48, 100, 1, false},  {false, true, 33, 65, 17, 1, false},
    {true, true, 128, 96, 64, 1, false},   {false, true, 17, 19, 32, 4, false},
    {false, false, 20, 24, 28, 3, true},   {true, false, 9, 300, 257, 2, false},
};

double geluTanh(double x) {
  const double k = 0.7978845608028654; // sqrt(2 / pi)
  return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

/// "NT m37 n53 k71 batch1 bias fp32 beta 0.000000": the case in a trace.
std::string caseName(const GemmCase &g, cu::Epilogue epi,
                     const std::string &precision, float beta) {
  return std::string(g.transA ? "T" : "N") + (g.transB ? "T" : "N") + " m" +
         std::to_string(g.m) + " n" + std::to_string(g.n) + " k" +
         std::to_string(g.k) + " batch" + std::to_string(g.batch) +
         (g.broadcastB ? " broadcastB" : "") + " " + cu::epilogueName(epi) +
         " " + precision + " beta " + std::to_string(beta);
}

cu::GemmDesc describe(const GemmCase &g, cu::Epilogue epi) {
  cu::GemmDesc d;
  d.transA = g.transA;
  d.transB = g.transB;
  d.m = g.m;
  d.n = g.n;
  d.k = g.k;
  d.batch = g.batch;
  d.strideA = g.m * g.k;
  d.strideB = g.broadcastB ? 0 : g.k * g.n;
  d.strideC = g.m * g.n;
  d.epilogue = epi;
  return d;
}

/// The plan of `d`, or null: a failure, except that a cuBLASLt without the
/// BGradB epilogue only says so.
std::unique_ptr<cu::GemmPlan> makePlan(const cu::GemmContext &ctx,
                                       const cu::GemmDesc &d,
                                       const std::string &name) {
  std::string error;
  std::unique_ptr<cu::GemmPlan> plan = cu::GemmPlan::create(ctx, d, &error);
  if (!plan && d.epilogue == cu::Epilogue::BGradB)
    std::printf("%s: not supported by this cuBLASLt (%s)\n", name.c_str(),
                error.c_str());
  else if (!plan)
    ADD_FAILURE() << error;
  return plan;
}

/// A case's random operands and their float64 reference (reference()).
struct GemmData {
  std::vector<float> a, b, c0, bias;
  std::vector<double> ref, refBias;
};

GemmData gemmOperands(const GemmCase &g, cu::Epilogue epi) {
  GemmData d;
  const int64_t bB = g.broadcastB ? 1 : g.batch;
  d.a = randomNormal(g.batch * g.m * g.k, 1 + g.m);
  d.b = randomNormal(bB * g.k * g.n, 2 + g.n);
  d.c0 = randomNormal(g.batch * g.m * g.n, 3);
  d.bias = randomNormal(epi == cu::Epilogue::BGradB ? g.m : g.n, 4);
  return d;
}

/// d.ref = alpha * op(A) op(B) + beta * C0 with the epilogue, in float64
/// from the operands as they are; for BGradB d.refBias = A's row sums.
void reference(const GemmCase &g, cu::Epilogue epi, float alpha, float beta,
               GemmData &d) {
  const bool rowBias = epi == cu::Epilogue::BGradB;
  const std::vector<float> &a = d.a, &b = d.b, &c0 = d.c0, &bias = d.bias;
  d.ref.assign(c0.size(), 0.0);
  d.refBias.assign(g.m, 0.0);
  for (int64_t t = 0; t < g.batch; ++t)
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        double s = 0;
        for (int64_t l = 0; l < g.k; ++l) {
          double av = g.transA ? a[t * g.m * g.k + l * g.m + i]
                               : a[t * g.m * g.k + i * g.k + l];
          int64_t bt = g.broadcastB ? 0 : t;
          double bv = g.transB ? b[bt * g.k * g.n + j * g.k + l]
                               : b[bt * g.k * g.n + l * g.n + j];
          s += av * bv;
        }
        double x = alpha * s;
        if (beta != 0)
          x += double(beta) * c0[t * g.m * g.n + i * g.n + j];
        if (epi == cu::Epilogue::Bias)
          x += bias[j];
        if (epi == cu::Epilogue::GeluBias)
          x = geluTanh(x + bias[j]);
        d.ref[t * g.m * g.n + i * g.n + j] = x;
      }
  if (rowBias)
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t l = 0; l < g.k; ++l)
        d.refBias[i] += g.transA ? a[l * g.m + i] : a[i * g.k + l];
}

void runCase(const cu::GemmContext &ctx, const GemmCase &g,
             cu::Epilogue epi, bool tf32, float beta) {
  const std::string name = caseName(g, epi, tf32 ? "tf32" : "fp32", beta);
  SCOPED_TRACE(name);
  cu::GemmDesc d = describe(g, epi);
  d.allowTF32 = tf32;
  std::unique_ptr<cu::GemmPlan> plan = makePlan(ctx, d, name);
  if (!plan)
    return;

  const float alpha = 0.75f;
  GemmData data = gemmOperands(g, epi);
  reference(g, epi, alpha, beta, data);
  const bool rowBias = epi == cu::Epilogue::BGradB;
  const std::vector<float> &c0 = data.c0;
  const std::vector<double> &ref = data.ref, &refBias = data.refBias;

  DevBuf<float> da(data.a), db(data.b), dc(c0.size()), dbias(data.bias);
  if (beta != 0)
    dc.upload(c0); // else C stays poisoned: NaN must not reach the result
  if (rowBias)
    dbias.poison();
  DevBytes ws(plan->workspaceBytes());
  checkStatus(plan->run(da.get(), db.get(), dc.get(), alpha, beta,
                        epi == cu::Epilogue::None ? nullptr : dbias.get(),
                        ws.get(), nullptr),
              "GemmPlan::run");
  const double tol =
      tf32 || epi == cu::Epilogue::GeluBias ? 2e-3 : 1e-5;
  expectClose(dc.download(), ref, tol, "C");
  if (rowBias)
    expectClose(dbias.download(), refBias, tol, "bias gradient");
}

TEST_F(Gemm, EveryLayoutEpilogueAndPrecision) {
  std::string error;
  std::unique_ptr<cu::GemmContext> ctx = cu::GemmContext::create(&error);
  ASSERT_TRUE(ctx) << error;
  for (const GemmCase &g : kCases)
    for (bool tf32 : {false, true}) {
      runCase(*ctx, g, cu::Epilogue::None, tf32, 0.0f);
      runCase(*ctx, g, cu::Epilogue::None, tf32, 0.5f);
      if (g.batch == 1) {
        runCase(*ctx, g, cu::Epilogue::Bias, tf32, 0.0f);
        runCase(*ctx, g, cu::Epilogue::GeluBias, tf32, 0.0f);
        runCase(*ctx, g, cu::Epilogue::BGradB, tf32, 0.0f);
      }
    }
}

/// 16-bit values of `t` (bf16 or f16) for `v`, which is replaced by their
/// widened values.
std::vector<uint16_t> roundTo(cu::GemmDType t, std::vector<float> &v) {
  std::vector<uint16_t> b(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    b[i] = t == cu::GemmDType::BF16 ? data::floatToBf16(v[i])
                                    : data::floatToF16(v[i]);
    v[i] = t == cu::GemmDType::BF16 ? data::bf16ToFloat(b[i])
                                    : data::f16ToFloat(b[i]);
  }
  return b;
}

std::vector<float> widen(cu::GemmDType t, const std::vector<uint16_t> &b) {
  std::vector<float> v(b.size());
  for (size_t i = 0; i < b.size(); ++i)
    v[i] = t == cu::GemmDType::BF16 ? data::bf16ToFloat(b[i])
                                    : data::f16ToFloat(b[i]);
  return v;
}

void runHalfCase(const cu::GemmContext &ctx, const GemmCase &g,
                 cu::Epilogue epi, cu::GemmDType t, float beta) {
  const std::string name = caseName(g, epi, cu::gemmDTypeName(t), beta);
  SCOPED_TRACE(name);
  cu::GemmDesc d = describe(g, epi);
  d.dtype = t;
  std::unique_ptr<cu::GemmPlan> plan = makePlan(ctx, d, name);
  if (!plan)
    return;

  const float alpha = 0.75f;
  // The reference reads the operands as rounded to 16 bits.
  GemmData data = gemmOperands(g, epi);
  std::vector<uint16_t> ab = roundTo(t, data.a), bb = roundTo(t, data.b),
                        cb = roundTo(t, data.c0), biasb = roundTo(t, data.bias);
  reference(g, epi, alpha, beta, data);
  const bool rowBias = epi == cu::Epilogue::BGradB;
  const std::vector<float> &c0 = data.c0;
  const std::vector<double> &ref = data.ref, &refBias = data.refBias;

  DevBuf<uint16_t> da(ab), db(bb), dc(c0.size()), dbias(biasb);
  if (beta != 0)
    dc.upload(cb); // else C stays poisoned: NaN must not reach the result
  if (rowBias)
    dbias.poison();
  DevBytes ws(plan->workspaceBytes());
  checkStatus(plan->run(da.get(), db.get(), dc.get(), alpha, beta,
                        epi == cu::Epilogue::None ? nullptr : dbias.get(),
                        ws.get(), nullptr),
              "GemmPlan::run");
  const double tol = t == cu::GemmDType::BF16 ? 1e-2 : 5e-3;
  expectClose(widen(t, dc.download()), ref, tol, "C");
  if (rowBias)
    expectClose(widen(t, dbias.download()), refBias, tol, "bias gradient");
}

TEST_F(Gemm, Bf16AndF16) {
  std::string error;
  std::unique_ptr<cu::GemmContext> ctx = cu::GemmContext::create(&error);
  ASSERT_TRUE(ctx) << error;
  for (cu::GemmDType t : {cu::GemmDType::BF16, cu::GemmDType::F16})
    for (const GemmCase &g : kCases) {
      runHalfCase(*ctx, g, cu::Epilogue::None, t, 0.0f);
      runHalfCase(*ctx, g, cu::Epilogue::None, t, 0.5f);
      if (g.batch == 1) {
        runHalfCase(*ctx, g, cu::Epilogue::Bias, t, 0.0f);
        runHalfCase(*ctx, g, cu::Epilogue::GeluBias, t, 0.0f);
        runHalfCase(*ctx, g, cu::Epilogue::BGradB, t, 0.0f);
      }
    }
}

/// cuda::column_sums (a GEMM's bias gradient where cuBLASLt has no BGRADB
/// epilogue for the type) against float64 sums, over shapes with few
/// columns and many rows (many chunks), a column count that is no multiple
/// of the block's 32, one row, and the rows of a 16-bit tensor; twice, the
/// same bits (a fixed order).
TEST_F(Gemm, ColumnSumsMatchFloat64) {
  const int64_t shapes[][2] = {{8192, 40}, {333, 97}, {1, 5}, {64, 768}};
  for (auto [rows, cols] : shapes) {
    std::vector<float> x =
        randomNormal(size_t(rows * cols), uint32_t(rows + cols));
    std::vector<double> ref(size_t(cols), 0.0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        ref[size_t(c)] += x[size_t(r * cols + c)];
    DevBuf<float> dx(x), dsum(static_cast<size_t>(cols));
    dsum.poison();
    DevBytes ws(cu::column_sums_workspace_bytes(rows, cols));
    checkStatus(cu::column_sums(cu::FloatType::F32, dx.get(), rows, cols,
                                dsum.get(), ws.get(), nullptr),
                "column_sums");
    std::vector<float> first = dsum.download();
    // f32 partial sums of up to 8192 unit normals: ~1e-5 relative to the
    // sums' spread.
    expectClose(first, ref, 1e-4, "column sums");
    checkStatus(cu::column_sums(cu::FloatType::F32, dx.get(), rows, cols,
                                dsum.get(), ws.get(), nullptr),
                "column_sums");
    EXPECT_EQ(dsum.download(), first) << "column sums differ run to run";
  }
  // bf16 storage: the same sums of the rounded values, rounded once.
  const int64_t rows = 1000, cols = 48;
  std::vector<float> x = randomNormal(size_t(rows * cols), 7);
  std::vector<uint16_t> xb = roundTo(cu::GemmDType::BF16, x);
  std::vector<double> ref(size_t(cols), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      ref[size_t(c)] += x[size_t(r * cols + c)];
  DevBuf<uint16_t> dx(xb), dsum(static_cast<size_t>(cols));
  DevBytes ws(cu::column_sums_workspace_bytes(rows, cols));
  checkStatus(cu::column_sums(cu::FloatType::BF16, dx.get(), rows, cols,
                              dsum.get(), ws.get(), nullptr),
              "column_sums bf16");
  expectClose(widen(cu::GemmDType::BF16, dsum.download()), ref, 1e-2,
              "bf16 column sums");
}

TEST_F(Gemm, BadShapesAreRefused) {
  std::string error;
  std::unique_ptr<cu::GemmContext> ctx = cu::GemmContext::create(&error);
  ASSERT_TRUE(ctx) << error;
  cu::GemmDesc d;
  d.m = 4;
  d.n = 4;
  d.k = 0;
  EXPECT_FALSE(cu::GemmPlan::create(*ctx, d, &error));
  EXPECT_NE(error.find("k"), std::string::npos) << error;
  d.k = 4;
  d.batch = 2;
  d.strideC = 3; // batches of C would overlap
  EXPECT_FALSE(cu::GemmPlan::create(*ctx, d, &error));
}

} // namespace
} // namespace tcc::gputest
