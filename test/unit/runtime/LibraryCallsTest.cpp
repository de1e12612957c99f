//===- LibraryCallsTest.cpp - call steps against references in double -----===//
//
// Each test runs one library call in a train_step whose operands are batch
// inputs and whose results are copied back into parameters (a param result
// of an arena value), then compares them with a reference computed here.
//
//===----------------------------------------------------------------------===//

#include "CallArtifact.h"

#include "kernels/dropout_hash.h"

#include <cmath>
#include <cstring>

using namespace rttest;
using testutil::f32;
using testutil::i64;
using testutil::makeArray;

namespace {

std::vector<float> iota(size_t n, float scale, float shift = 0) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = std::sin(float(i) * 1.7f + shift) * scale;
  return v;
}

void expectNear(const Array &got, const std::vector<double> &want,
                double tol = 1e-5) {
  ASSERT_EQ(got.numElements(), int64_t(want.size()));
  const float *g = got.data<float>();
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(g[i], want[i], tol * std::max(1.0, std::fabs(want[i])))
        << "element " << i;
}

/// Numpy-style batched matmul in double.
std::vector<double> matmulRef(const Array &l, const Array &r, bool tl, bool tr,
                              const std::vector<int64_t> &outShape) {
  size_t orank = outShape.size(), lr = l.shape.size(), rr = r.shape.size();
  int64_t m = outShape[orank - 2], n = outShape[orank - 1];
  int64_t k = l.shape[tl ? lr - 2 : lr - 1];
  std::vector<int64_t> batch(outShape.begin(), outShape.end() - 2);
  int64_t batches = 1;
  for (int64_t d : batch)
    batches *= d;
  auto index = [&](const std::vector<int64_t> &shape, int64_t b) {
    // Row-major coordinates of b in `batch`, broadcast into `shape`'s
    // batch dims.
    std::vector<int64_t> coord(batch.size());
    for (size_t d = batch.size(); d-- > 0;) {
      coord[d] = b % batch[d];
      b /= batch[d];
    }
    size_t sr = shape.size() - 2;
    int64_t idx = 0;
    for (size_t d = 0; d < sr; ++d) {
      int64_t c = coord[batch.size() - sr + d];
      idx = idx * shape[d] + (shape[d] == 1 ? 0 : c);
    }
    return idx;
  };
  std::vector<double> out;
  const float *pl = l.data<float>(), *pr = r.data<float>();
  int64_t lCols = l.shape[lr - 1], rCols = r.shape[rr - 1];
  for (int64_t b = 0; b < batches; ++b) {
    const float *a = pl + index(l.shape, b) * m * k;
    const float *c = pr + index(r.shape, b) * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < k; ++p)
          sum += double(tl ? a[p * lCols + i] : a[i * lCols + p]) *
                 (tr ? c[j * rCols + p] : c[p * rCols + j]);
        out.push_back(sum);
      }
  }
  return out;
}

TEST(LibraryCalls, MatmulBroadcastsSeveralBatchDims) {
  struct Case {
    std::vector<int64_t> l, r, out;
    bool tl, tr;
  } cases[] = {
      {{2, 1, 2, 3}, {3, 3, 2}, {2, 3, 2, 2}, false, false}, // general
      {{2, 4, 3}, {3, 5}, {2, 4, 5}, false, false},          // rows flattened
      {{2, 3, 4}, {2, 5, 3}, {2, 4, 5}, true, true},         // strided
      {{2, 3}, {4, 3, 5}, {4, 2, 5}, false, false},          // lhs broadcast
  };
  int i = 0;
  for (const Case &c : cases) {
    int64_t nl = 1, nr = 1;
    for (int64_t d : c.l)
      nl *= d;
    for (int64_t d : c.r)
      nr *= d;
    Array l = f32(c.l, iota(nl, 1.0f)), r = f32(c.r, iota(nr, 0.5f, 1.0f));
    std::vector<Array> out =
        runCall("matmul" + std::to_string(i++), "matmul",
                {{"transpose_lhs", c.tl}, {"transpose_rhs", c.tr}}, {l, r},
                {{DType::F32, c.out}});
    ASSERT_EQ(out.size(), 1u);
    expectNear(out[0], matmulRef(l, r, c.tl, c.tr, c.out));
  }
}

TEST(LibraryCalls, GemmAlphaBetaTransposesAndBroadcastC) {
  Array a = f32({3, 2}, iota(6, 1.0f)), b = f32({4, 3}, iota(12, 1.0f, 2.0f));
  Array c = f32({4}, {1, -2, 3, 0.5f});
  std::vector<Array> out = runCall(
      "gemm", "gemm",
      {{"alpha", 0.5}, {"beta", 2.0}, {"transpose_a", true},
       {"transpose_b", true}},
      {a, b, c}, {{DType::F32, {2, 4}}});
  std::vector<double> ab = matmulRef(a, b, true, true, {2, 4}), want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      want.push_back(0.5 * ab[i * 4 + j] + 2.0 * c.data<float>()[j]);
  expectNear(out[0], want);
  // Without C.
  out = runCall("gemm-noc", "gemm", {{"transpose_a", true}}, {a, f32({3, 4}, iota(12, 1.0f)), absent()},
                {{DType::F32, {2, 4}}});
  expectNear(out[0], matmulRef(a, f32({3, 4}, iota(12, 1.0f)), true, false,
                               {2, 4}));
  // A bias and a full C (a projection's bias and residual), and a bias
  // without C.
  Array full = f32({2, 4}, iota(8, -3.0f, 0.5f)), bias = f32({4}, {4, -1, 0.25f, 2});
  out = runCall("gemm-bias-c", "gemm", {{"beta", 0.5}, {"transpose_a", true},
                                        {"transpose_b", true}},
                {a, b, full, bias}, {{DType::F32, {2, 4}}});
  want.clear();
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      want.push_back(ab[i * 4 + j] + bias.data<float>()[j] +
                     0.5 * full.data<float>()[i * 4 + j]);
  expectNear(out[0], want);
  out = runCall("gemm-bias", "gemm", {{"transpose_a", true}, {"transpose_b", true}},
                {a, b, absent(), bias}, {{DType::F32, {2, 4}}});
  want.clear();
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      want.push_back(ab[i * 4 + j] + bias.data<float>()[j]);
  expectNear(out[0], want);
}

TEST(LibraryCalls, LayerNormSoftmaxLogSoftmax) {
  Array x = f32({3, 5}, iota(15, 2.0f));
  Array scale = f32({5}, {1, 2, 0.5f, -1, 1}), bias = f32({5}, iota(5, 0.1f));
  std::vector<Array> out =
      runCall("layernorm", "layer_norm", {{"axis", -1}, {"epsilon", 1e-5}},
              {x, scale, bias}, {{DType::F32, {3, 5}}});
  std::vector<double> want, xhat;
  const float *px = x.data<float>();
  for (int r = 0; r < 3; ++r) {
    double mean = 0, var = 0;
    for (int j = 0; j < 5; ++j)
      mean += px[r * 5 + j] / 5.0;
    for (int j = 0; j < 5; ++j)
      var += (px[r * 5 + j] - mean) * (px[r * 5 + j] - mean) / 5.0;
    for (int j = 0; j < 5; ++j) {
      xhat.push_back((px[r * 5 + j] - mean) / std::sqrt(var + 1e-5));
      want.push_back(xhat.back() * scale.data<float>()[j] +
                     bias.data<float>()[j]);
    }
  }
  expectNear(out[0], want);

  // The gradient with a residual gradient and dx's row sum. dy constant
  // along each row (row r: r + 1) and no scale make layer norm's own dx
  // zero (dy - mean(dy) = 0, and sum(xhat) = 0), so dx is the residual,
  // dx's sum its column sums, scale_grad sum_r (r + 1) xhat[r], and
  // bias_grad 1 + 2 + 3 = 6 per column.
  Array dy = f32({3, 5}, {1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3});
  Array residual = f32({3, 5}, iota(15, -4.0f));
  out = runCall("layernorm-grad", "layer_norm_grad",
                {{"axis", -1}, {"epsilon", 1e-5}}, {x, absent(), dy, residual},
                {{DType::F32, {3, 5}}, {DType::F32, {5}}, {DType::F32, {5}},
                 {DType::F32, {5}}});
  ASSERT_EQ(out.size(), 4u);
  const float *pr = residual.data<float>();
  expectNear(out[0], std::vector<double>(pr, pr + 15), 1e-5);
  std::vector<double> dScale(5, 0.0), colSums(5, 0.0);
  for (int r = 0; r < 3; ++r)
    for (int j = 0; j < 5; ++j) {
      dScale[j] += (r + 1) * xhat[r * 5 + j];
      colSums[j] += pr[r * 5 + j];
    }
  expectNear(out[1], dScale);
  expectNear(out[2], std::vector<double>(5, 6.0));
  expectNear(out[3], colSums, 1e-5);

  out =
      runCall("softmax", "softmax", {{"axis", 1}}, {x}, {{DType::F32, {3, 5}}});
  std::vector<Array> logOut = runCall(
      "logsoftmax", "log_softmax", {{"axis", 1}}, {x}, {{DType::F32, {3, 5}}});
  std::vector<double> sm, lsm;
  for (int r = 0; r < 3; ++r) {
    double sum = 0;
    for (int j = 0; j < 5; ++j)
      sum += std::exp(double(px[r * 5 + j]));
    for (int j = 0; j < 5; ++j) {
      sm.push_back(std::exp(double(px[r * 5 + j])) / sum);
      lsm.push_back(px[r * 5 + j] - std::log(sum));
    }
  }
  expectNear(out[0], sm);
  expectNear(logOut[0], lsm);
}

TEST(LibraryCalls, CausalAttentionWithKeyMask) {
  int64_t B = 1, H = 2, T = 3, D = 4;
  Array q = f32({B, H, T, D}, iota(24, 1.0f)),
        k = f32({B, H, T, D}, iota(24, 1.0f, 0.3f)),
        v = f32({B, H, T, D}, iota(24, 1.0f, 0.7f));
  Array mask = makeArray<uint8_t>("", DType::Bool, {B, T}, {1, 0, 1});
  std::vector<Array> out =
      runCall("attention", "attention", {{"scale", 0.5}, {"causal", true}},
              {q, k, v, mask}, {{DType::F32, {B, H, T, D}}});
  std::vector<double> want;
  const float *pq = q.data<float>(), *pk = k.data<float>(),
              *pv = v.data<float>();
  for (int h = 0; h < H; ++h)
    for (int i = 0; i < T; ++i) {
      std::vector<double> p(T, 0);
      double mx = -INFINITY, sum = 0;
      for (int j = 0; j <= i; ++j) {
        if (!mask.data<uint8_t>()[j])
          continue;
        double s = 0;
        for (int e = 0; e < D; ++e)
          s += double(pq[(h * T + i) * D + e]) * pk[(h * T + j) * D + e];
        p[j] = 0.5 * s;
        mx = std::max(mx, p[j]);
      }
      for (int j = 0; j <= i; ++j)
        if (mask.data<uint8_t>()[j])
          sum += p[j] = std::exp(p[j] - mx);
      for (int e = 0; e < D; ++e) {
        double o = 0;
        for (int j = 0; j <= i; ++j)
          if (mask.data<uint8_t>()[j])
            o += p[j] / sum * pv[(h * T + j) * D + e];
        want.push_back(o);
      }
    }
  expectNear(out[0], want);
}

TEST(LibraryCalls, CrossEntropyGrad) {
  Array logits = f32({3, 4}, iota(12, 2.0f));
  Array labels = makeArray<int32_t>("", DType::I32, {3}, {2, -100, 0});
  Array seed = f32({}, {0.25f});
  std::vector<Array> out =
      runCall("xent-grad", "cross_entropy_grad", {}, {logits, labels, seed},
              {{DType::F32, {3, 4}}});
  std::vector<double> want;
  const float *x = logits.data<float>();
  for (int r = 0; r < 3; ++r) {
    int label = labels.data<int32_t>()[r];
    double sum = 0;
    for (int j = 0; j < 4; ++j)
      sum += std::exp(double(x[r * 4 + j]));
    for (int j = 0; j < 4; ++j)
      want.push_back(label == -100 ? 0.0
                                   : (std::exp(double(x[r * 4 + j])) / sum -
                                      (j == label)) *
                                         0.25);
  }
  expectNear(out[0], want);
}

TEST(LibraryCalls, EmbeddingAndItsGradient) {
  Array table = f32({5, 3}, iota(15, 1.0f));
  Array ids = makeArray<int32_t>("", DType::I32, {2, 2}, {4, 0, 4, 2});
  std::vector<Array> out = runCall("embedding", "embedding", {}, {table, ids},
                                   {{DType::F32, {2, 2, 3}}});
  std::vector<double> want;
  for (int j = 0; j < 4; ++j)
    for (int e = 0; e < 3; ++e)
      want.push_back(table.data<float>()[ids.data<int32_t>()[j] * 3 + e]);
  expectNear(out[0], want, 0);

  // gather_grad on axis 0: repeated and negative (from the end) ids add up.
  Array gids = i64({4}, {1, -1, 1, 3});
  Array dy = f32({4, 3}, iota(12, 1.0f));
  out = runCall("gather-grad", "gather_grad", {{"axis", 0}}, {gids, dy},
                {{DType::F32, {5, 3}}});
  std::vector<double> dtable(15, 0.0);
  for (int j = 0; j < 4; ++j) {
    int64_t id = gids.data<int64_t>()[j];
    id += id < 0 ? 5 : 0;
    for (int e = 0; e < 3; ++e)
      dtable[id * 3 + e] += dy.data<float>()[j * 3 + e];
  }
  expectNear(out[0], dtable);

  // An id out of range is a data error naming the input and the row.
  std::string msg;
  ids = makeArray<int32_t>("", DType::I32, {2, 2}, {4, 0, 9, 2});
  runCall("embedding-bad", "embedding", {}, {table, ids},
          {{DType::F32, {2, 2, 3}}}, TCC_ERROR_DATA, &msg);
  EXPECT_NE(msg.find("train_step step 0 (embedding): id 9 in row 2 of input "
                     "'in1' is out of range for a vocabulary of 5"),
            std::string::npos)
      << msg;
}

TEST(LibraryCalls, DropoutDrawsTheSharedHashMask) {
  const int64_t n = 1000;
  Array x = f32({n}, iota(n, 1.0f));
  Array offset = i64({}, {7});
  std::vector<Array> out =
      runCall("dropout", "dropout", {{"ratio", 0.25}, {"seed", 42}},
              {x, offset}, {{DType::F32, {n}}, {DType::Bool, {n}}});
  ASSERT_EQ(out.size(), 2u);
  uint64_t seed = tcc::dropoutSeed(42, 7);
  uint32_t threshold = tcc::dropoutKeepThreshold(0.25);
  const float scale = static_cast<float>(1.0 / 0.75);
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    bool keep = tcc::dropoutKeep(seed, i, threshold);
    kept += keep;
    EXPECT_EQ(out[1].data<uint8_t>()[i], keep ? 1 : 0) << i;
    float want = keep ? x.data<float>()[i] * scale : 0.0f;
    EXPECT_EQ(std::memcmp(&out[0].data<float>()[i], &want, 4), 0) << i;
  }
  EXPECT_GT(kept, 650);
  EXPECT_LT(kept, 850);
}

TEST(LibraryCalls, AdamwUpdate) {
  const int64_t n = 6;
  Array p = f32({n}, iota(n, 1.0f)), g = f32({n}, iota(n, 0.1f, 1.0f)),
        m = f32({n}, iota(n, 0.01f, 2.0f)),
        v = f32({n}, std::vector<float>(n, 0.001f));
  Array lr = makeArray<double>("", DType::F64, {}, {1e-2});
  Array step = i64({}, {3});
  std::vector<Array> out = runCall(
      "adamw", "adamw_update", {{"weight_decay", 0.1}}, {p, g, m, v, lr, step},
      {{DType::F32, {n}}, {DType::F32, {n}}, {DType::F32, {n}}});
  std::vector<double> wp, wm, wv;
  for (int64_t i = 0; i < n; ++i) {
    double pi = p.data<float>()[i] * (1 - 1e-2 * 0.1);
    double mi = 0.9 * m.data<float>()[i] + 0.1 * g.data<float>()[i];
    double vi = 0.999 * v.data<float>()[i] +
                0.001 * g.data<float>()[i] * g.data<float>()[i];
    double denom = std::sqrt(vi) / std::sqrt(1 - std::pow(0.999, 3)) + 1e-8;
    wp.push_back(pi - 1e-2 / (1 - std::pow(0.9, 3)) * mi / denom);
    wm.push_back(mi);
    wv.push_back(vi);
  }
  expectNear(out[0], wp);
  expectNear(out[1], wm);
  expectNear(out[2], wv);
  // Step 0 is not an AdamW step: the plan computes its step operand wrongly.
  std::string msg;
  runCall("adamw0", "adamw_update", {}, {p, g, m, v, lr, i64({}, {0})},
          {{DType::F32, {n}}, {DType::F32, {n}}, {DType::F32, {n}}},
          TCC_ERROR_FORMAT, &msg);
  EXPECT_NE(msg.find("step 0 is not a valid AdamW step"), std::string::npos)
      << msg;
}

TEST(LibraryCalls, LargeKernelsAreSplitOverThreadsExactly) {
  // add_relu over 2^20 elements: split across threads, every element as a
  // single-threaded loop computes it.
  const int64_t n = int64_t(1) << 20;
  TestArtifact a;
  a.plan["params"] = {tensor("out", "f32", {n})};
  Array zero = f32({n}, std::vector<float>(n, 0.0f));
  a.weights = {named("out", zero)};
  a.fn("train_step") = {
      {"arena_bytes", 4 * n + 64},
      {"inputs", {tensor("a", "f32", {n}), tensor("b", "f32", {n})}},
      {"values",
       {slot("input", "f32", {n}, 0), slot("input", "f32", {n}, 1),
        arena("f32", {n}, 0), arena("f32", {}, 4 * n)}},
      {"steps", {kernel("add_relu", {0, 1}, 2, n), kernel("zero", {}, 3, 1)}},
      {"results",
       {{{"role", "loss"}, {"value", 3}},
        {{"role", "param"}, {"index", 0}, {"value", 2}}}}};
  TempDir dir("threads");
  a.write(dir.path);
  tcc_session *s = openOrFail(dir.path);
  ASSERT_TRUE(s);
  std::vector<float> x = iota(n, 1.0f), y = iota(n, 1.0f, 0.5f);
  ASSERT_EQ(tcc_bind_input(s, "a", x.data(), 4 * n), TCC_OK);
  ASSERT_EQ(tcc_bind_input(s, "b", y.data(), 4 * n), TCC_OK);
  double loss;
  ASSERT_EQ(tcc_train_step(s, &loss), TCC_OK) << tcc_last_error();
  std::vector<float> out = readParam<float>(s, "out", n);
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) {
    float want = x[i] + y[i];
    want = want < 0 ? 0.0f : want;
    wrong += std::memcmp(&out[i], &want, 4) != 0;
  }
  EXPECT_EQ(wrong, 0);
  tcc_session_close(s);
}

} // namespace
