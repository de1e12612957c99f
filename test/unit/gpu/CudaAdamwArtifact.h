// The multi-tensor AdamW artifact of the CUDA backend tests: a train_step
// of seven adamw_update calls (sizes 1 to 3 x 16384 + 17, weight decays
// 0.01, 0, 0.1, 0.05, one new param in the arena, one call with another
// beta1) with kernels/kernels.fatbin in its manifest. Shared by
// CudaAdamwTest (the grouping and the grouped launch) and CudaBackendTest
// (tcc inspect's verdict).
#ifndef TCC_TEST_UNIT_GPU_CUDAADAMWARTIFACT_H
#define TCC_TEST_UNIT_GPU_CUDAADAMWARTIFACT_H

#include "GpuTestUtil.h"

#include "../runtime/RuntimeTestUtil.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tcc::gputest {

struct AdamwCall {
  int64_t n;
  double weightDecay;
  double beta1 = 0.9;
  bool arenaParam = false; ///< new param into the arena, copied back
};

inline const std::vector<AdamwCall> &adamwCalls() {
  static const std::vector<AdamwCall> calls = {
      {1, 0.01},          {7, 0.0},     {16384 + 3, 0.1, 0.9, true},
      {1001, 0.01, 0.8},  {3 * 16384 + 17, 0.0},
      {64, 0.05},         {4097, 0.01}};
  return calls;
}

/// Names of param i and of its optimizer state.
inline std::string pname(size_t i) { return "p" + std::to_string(i); }
inline std::string mname(size_t i) { return pname(i) + ".exp_avg"; }
inline std::string vname(size_t i) { return pname(i) + ".exp_avg_sq"; }

/// Inputs g0.. (the gradients), lr (f64), t (i64); params p0..; optimizer
/// state p<i>.exp_avg, p<i>.exp_avg_sq; one adamw_update per param, in
/// place but for arenaParam; the loss is a zero kernel.
inline rttest::TestArtifact adamwArtifact() {
  using namespace rttest;
  const std::vector<AdamwCall> &calls = adamwCalls();
  const int64_t k = int64_t(calls.size());
  TestArtifact a;
  a.manifest["files"]["cuda_kernels"] = "kernels/kernels.fatbin";
  a.manifest["train_config"] =
      "loss=mse(p,y) optimizer=adamw:lr=0.001 grad_clip=none "
      "lr_schedule=constant accum=1 freeze= no_decay=";
  a.manifest["schedule"] = {{"kind", "constant"}, {"lr", 0.001}};
  json inputs = json::array(), params = json::array(), opt = json::array(),
       values = json::array(), steps = json::array(), results = json::array();
  for (int64_t i = 0; i < k; ++i) {
    inputs.push_back(tensor("g" + std::to_string(i), "f32", {calls[i].n}));
    values.push_back(slot("input", "f32", {calls[i].n}, i)); // i: g_i
  }
  inputs.push_back(tensor("lr", "f64", {}));
  inputs.push_back(tensor("t", "i64", {}));
  const int64_t lr = values.size(), t = lr + 1;
  values.push_back(slot("input", "f64", {}, k));
  values.push_back(slot("input", "i64", {}, k + 1));
  int64_t offset = 0;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t n = calls[i].n;
    params.push_back(tensor(pname(i), "f32", {n}));
    opt.push_back(tensor(mname(i), "f32", {n}));
    opt.push_back(tensor(vname(i), "f32", {n}));
    std::vector<float> p = randomUniform(size_t(n), 100 + uint32_t(i), 0.5f,
                                         2.0f);
    for (size_t j = 0; j < p.size(); j += 2)
      p[j] = -p[j];
    a.weights.push_back(named(pname(i), testutil::f32({n}, p)));
    const int64_t p0 = values.size();
    values.push_back(slot("param", "f32", {n}, i));
    values.push_back(slot("opt_state", "f32", {n}, 2 * i));
    values.push_back(slot("opt_state", "f32", {n}, 2 * i + 1));
    const int64_t out = values.size();
    if (calls[i].arenaParam) {
      values.push_back(arena("f32", {n}, offset));
      offset += (n * 4 + 63) / 64 * 64;
    } else {
      values.push_back(slot("param", "f32", {n}, i));
    }
    values.push_back(slot("opt_state", "f32", {n}, 2 * i));
    values.push_back(slot("opt_state", "f32", {n}, 2 * i + 1));
    steps.push_back(call("adamw_update", {p0, i, p0 + 1, p0 + 2, lr, t},
                         {out, out + 1, out + 2},
                         {{"beta1", calls[i].beta1},
                          {"beta2", 0.999},
                          {"eps", 1e-8},
                          {"weight_decay", calls[i].weightDecay}}));
    results.push_back({{"role", "param"}, {"index", i}, {"value", out}});
    results.push_back(
        {{"role", "opt_state"}, {"index", 2 * i}, {"value", out + 1}});
    results.push_back(
        {{"role", "opt_state"}, {"index", 2 * i + 1}, {"value", out + 2}});
  }
  const int64_t loss = values.size();
  values.push_back(arena("f32", {}, offset));
  steps.push_back(kernel("zero", {}, loss, 1));
  results.push_back({{"role", "loss"}, {"value", loss}});
  a.plan["params"] = params;
  a.plan["opt_state"] = opt;
  a.fn("train_step") = {{"arena_bytes", offset + 64},
                        {"inputs", inputs},
                        {"values", values},
                        {"steps", steps},
                        {"results", results}};
  return a;
}

} // namespace tcc::gputest

#endif // TCC_TEST_UNIT_GPU_CUDAADAMWARTIFACT_H
