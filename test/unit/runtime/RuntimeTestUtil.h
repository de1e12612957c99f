//===- RuntimeTestUtil.h - hand-written artifacts for the runtime tests ---===//
//
// No compiler is involved: a test writes manifest.json, plan.json, the
// safetensors files and a kernels/host.so built here from a tiny hand-written
// kernel source with the system C++ compiler (TCC_TEST_CXX).
//
//===----------------------------------------------------------------------===//

#ifndef TCC_TEST_UNIT_RUNTIME_RUNTIMETESTUTIL_H
#define TCC_TEST_UNIT_RUNTIME_RUNTIMETESTUTIL_H

#include "api/tcc_runtime.h"
#include "data/safetensors.h"
#include "data/sha256.h"

#include "../TestUtil.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

namespace rttest {

namespace fs = std::filesystem;
using nlohmann::json;
using tcc::data::Array;
using tcc::data::DType;

/// The generated-kernel stand-ins the test plans call (symbol tcc_<name>).
inline const char *kernelSource() {
  return R"(#include "tcc_kernel.h"
// d = p + b - y: p, y [4, 1], b [1]
TCC_KERNEL(bias_sub) {
  const float *p = (const float *)inputs[0], *b = (const float *)inputs[1],
              *y = (const float *)inputs[2];
  float *o = (float *)output;
  TCC_FOR_EACH(i) o[i] = p[i] + b[0] - y[i];
}
// mean(d * d) over 4 elements, into a scalar
TCC_KERNEL(mean_sq4) {
  const float *d = (const float *)inputs[0];
  float *o = (float *)output;
  TCC_FOR_EACH(i) {
    float s = 0;
    for (int j = 0; j < 4; ++j)
      s += d[j] * d[j];
    o[i] = s / 4.0f;
  }
}
// g = d * c, c a scalar
TCC_KERNEL(scale) {
  const float *d = (const float *)inputs[0], *c = (const float *)inputs[1];
  float *o = (float *)output;
  TCC_FOR_EACH(i) o[i] = d[i] * c[0];
}
// the sum of 4 elements
TCC_KERNEL(sum4) {
  const float *g = (const float *)inputs[0];
  float *o = (float *)output;
  TCC_FOR_EACH(i) o[i] = g[0] + g[1] + g[2] + g[3];
}
// lr = 0.1 / (1 + step), f64 from the i64 step counter
TCC_KERNEL(lr_of_step) {
  const int64_t *s = (const int64_t *)inputs[0];
  double *o = (double *)output;
  TCC_FOR_EACH(i) o[i] = 0.1 / (1.0 + (double)s[0]);
}
TCC_KERNEL(add_relu) {
  const float *a = (const float *)inputs[0], *b = (const float *)inputs[1];
  float *o = (float *)output;
  TCC_FOR_EACH(i) o[i] = tcc_k::nan_max(a[i] + b[i], 0.0f);
}
TCC_KERNEL(zero) {
  float *o = (float *)output;
  TCC_FOR_EACH(i) o[i] = 0.0f;
}
// loss_sum / count
TCC_KERNEL(div) {
  const float *a = (const float *)inputs[0], *b = (const float *)inputs[1];
  float *o = (float *)output;
  TCC_FOR_EACH(i) o[i] = a[0] / b[0];
}
)";
}

/// kernels/host.so of kernelSource(), built once per source text and shared
/// by the test processes (written to a temp name and renamed into place).
inline std::string hostKernels() {
  static const std::string path = [] {
    std::string src = kernelSource();
    // Keyed by the source, the prelude it includes and the compiler.
    std::ifstream prelude(std::string(TCC_KERNEL_INCLUDE_DIR) +
                          "/tcc_kernel.h");
    std::string key = src + std::string(std::istreambuf_iterator<char>(prelude),
                                        {}) +
                      TCC_TEST_CXX;
    std::string base = ::testing::TempDir() + "tcc_rt_host_" +
                       std::to_string(std::hash<std::string>()(key));
    std::string so = base + ".so";
    if (fs::exists(so))
      return so;
    std::string pid = std::to_string(::getpid());
    std::string cc = base + "." + pid + ".cc", tmp = base + "." + pid + ".so";
    std::ofstream(cc) << src;
    std::string cmd = std::string("'") + TCC_TEST_CXX +
                      "' -O2 -fPIC -shared -std=c++17 -ffp-contract=off -I'" +
                      TCC_KERNEL_INCLUDE_DIR + "' '" + cc + "' -o '" + tmp +
                      "'";
    int rc = std::system(cmd.c_str());
    fs::remove(cc);
    if (rc != 0) {
      ADD_FAILURE() << "cannot build the test kernels: " << cmd;
      return std::string();
    }
    fs::rename(tmp, so);
    return so;
  }();
  return path;
}

/// A per-test directory, removed at the end.
class TempDir {
public:
  explicit TempDir(const std::string &name)
      : path(testutil::tempPath("rt", name)) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string &rel) const {
    return (fs::path(path) / rel).string();
  }
  const std::string path;
};

// Plan values.
inline json tensor(const std::string &name, const char *dtype,
                   std::vector<int64_t> shape) {
  return {{"name", name}, {"dtype", dtype}, {"shape", shape}};
}
inline json arena(const char *dtype, std::vector<int64_t> shape,
                  int64_t offset) {
  return {{"dtype", dtype}, {"shape", shape}, {"storage", "arena"},
          {"offset", offset}};
}
inline json slot(const char *storage, const char *dtype,
                 std::vector<int64_t> shape, int64_t index) {
  return {{"dtype", dtype}, {"shape", shape}, {"storage", storage},
          {"index", index}};
}
inline json kernel(const std::string &name, std::vector<int64_t> inputs,
                   int64_t output, int64_t elements) {
  return {{"kind", "kernel"}, {"symbol", "tcc_" + name}, {"inputs", inputs},
          {"outputs", {output}}, {"elements", elements}};
}
inline json call(const std::string &op, std::vector<int64_t> inputs,
                 std::vector<int64_t> outputs, json attrs = json::object()) {
  return {{"kind", "call"},      {"op", op},          {"attrs", attrs},
          {"inputs", inputs}, {"outputs", outputs}};
}

inline Array named(const std::string &name, Array a) {
  a.name = name;
  return a;
}

/// Records the size and SHA-256 of every file of DIR/manifest.json's
/// "files" that exists in its "integrity", as the compiler does: for tests
/// that edit a file on purpose and expect the error of the edit, not of
/// the damage. A manifest that is not JSON is left alone.
inline void reseal(const std::string &dir) {
  fs::path path = fs::path(dir) / "manifest.json";
  std::ifstream in(path);
  json m = json::parse(in, nullptr, /*allow_exceptions=*/false);
  in.close();
  if (m.is_discarded() || !m.is_object() || !m.contains("files") ||
      !m["files"].is_object())
    return;
  json integrity = json::object();
  for (auto &[key, rel] : m["files"].items()) {
    if (!rel.is_string())
      continue;
    if (!fs::exists(fs::path(dir) / rel.get<std::string>())) {
      // Removed on purpose: its record stays, the loader reports it missing.
      if (m.contains("integrity") && m["integrity"].contains(rel))
        integrity[rel.get<std::string>()] = m["integrity"][rel];
      continue;
    }
    tcc::data::FileDigest d = tcc::data::digestFile(
        (fs::path(dir) / rel.get<std::string>()).string());
    integrity[rel.get<std::string>()] = {{"bytes", d.bytes},
                                         {"sha256", d.sha256}};
  }
  m["integrity"] = integrity;
  std::ofstream(path, std::ios::trunc) << m.dump(2);
}

/// An artifact in memory, written by write().
struct TestArtifact {
  json manifest = {
      {"format", "tcc-artifact"},
      {"version", TCC_ARTIFACT_VERSION},
      {"kind", "training"},
      {"producer", "runtime test"},
      {"source", "hand-written"},
      {"fingerprint", "0123456789abcdef"},
      {"train_config", "loss=mse(p,y) optimizer=sgd:lr=0.1,momentum=0.9 "
                       "grad_clip=none lr_schedule=constant accum=1 freeze= "
                       "no_decay="},
      {"schedule", {{"kind", "constant"}, {"lr", 0.1}}},
      {"accum", 1},
      {"files",
       {{"plan", "plan.json"},
        {"weights", "weights.safetensors"},
        {"kernel_source", "kernels/kernels.cc"},
        {"host_kernels", "kernels/host.so"}}}};
  json plan = {{"version", TCC_ARTIFACT_VERSION},
               {"params", json::array()},
               {"opt_state", json::array()},
               {"functions", json::object()}};
  std::vector<Array> weights, constants;

  json &fn(const std::string &name) { return plan["functions"][name]; }

  void write(const std::string &dir) const {
    fs::create_directories(fs::path(dir) / "kernels");
    json m = manifest;
    if (!constants.empty())
      m["files"]["constants"] = "constants.safetensors";
    json p = plan;
    if (!p.contains("kernels"))
      p["kernels"] = kernelTableOf(p);
    std::ofstream(fs::path(dir) / "plan.json") << p.dump(2);
    tcc::data::writeSafetensors((fs::path(dir) / "weights.safetensors").string(),
                                weights);
    if (!constants.empty())
      tcc::data::writeSafetensors(
          (fs::path(dir) / "constants.safetensors").string(), constants);
    std::ofstream(fs::path(dir) / "kernels" / "kernels.cc") << kernelSource();
    std::string so = hostKernels();
    if (!so.empty())
      fs::copy_file(so, fs::path(dir) / "kernels" / "host.so",
                    fs::copy_options::overwrite_existing);
    // The manifest last, with the files' sizes and digests (unless the
    // test wrote its own "integrity").
    std::ofstream(fs::path(dir) / "manifest.json") << m.dump(2);
    if (!m.contains("integrity"))
      reseal(dir);
  }

  /// The plan's kernel table as the compiler writes it: one entry per
  /// symbol, from the first step that calls it.
  static json kernelTableOf(const json &plan) {
    json table = json::array();
    for (auto &[name, fn] : plan["functions"].items()) {
      if (!fn.contains("steps"))
        continue;
      for (const json &step : fn["steps"]) {
        if (step.value("kind", "") != "kernel")
          continue;
        bool known = false;
        for (const json &k : table)
          known |= k["symbol"] == step["symbol"];
        if (known)
          continue;
        auto buffer = [&](const json &id) {
          const json &v = fn["values"][id.get<size_t>()];
          int64_t elements = 1;
          for (const json &d : v["shape"])
            elements *= d.get<int64_t>();
          return json{{"dtype", v["dtype"]}, {"elements", elements}};
        };
        json inputs = json::array();
        for (const json &id : step["inputs"])
          inputs.push_back(buffer(id));
        table.push_back({{"symbol", step["symbol"]},
                         {"inputs", inputs},
                         {"output", buffer(step["outputs"][0])}});
      }
    }
    return table;
  }
};

/// Linear regression, p = x @ w + b, loss = mean((p - y)^2), trained by
/// SGD: w without momentum (updated in place), b with momentum 0.9 (its new
/// value computed into the arena and copied back; the buffer in place).
/// lr = 0.1 / (1 + step) is computed by a kernel from the step counter; the
/// gradient scale 2 / N = 0.5 is a constant.
inline TestArtifact linearRegression() {
  TestArtifact a;
  a.plan["params"] = {tensor("w", "f32", {3, 1}), tensor("b", "f32", {1})};
  a.plan["opt_state"] = {tensor("b.momentum_buffer", "f32", {1})};
  a.weights = {named("w", testutil::f32({3, 1}, {0.5f, -0.25f, 1.0f})),
               named("b", testutil::f32({1}, {0.125f}))};
  a.constants = {named("two_over_n", testutil::f32({}, {0.5f}))};
  json inputs = {tensor("x", "f32", {4, 3}), tensor("y", "f32", {4, 1})};
  a.fn("train_step") = {
      {"arena_bytes", 512},
      {"inputs", inputs},
      {"values",
       {
           slot("input", "f32", {4, 3}, 0),                   // 0 x
           slot("input", "f32", {4, 1}, 1),                   // 1 y
           slot("param", "f32", {3, 1}, 0),                   // 2 w
           slot("param", "f32", {1}, 1),                      // 3 b
           slot("opt_state", "f32", {1}, 0),                  // 4 buf
           {{"dtype", "i64"}, {"shape", json::array()}, {"storage", "step"}},
           {{"dtype", "f32"},
            {"shape", json::array()},
            {"storage", "constant"},
            {"name", "two_over_n"}}, // 6 c
           arena("f32", {4, 1}, 0),   // 7 p
           arena("f32", {4, 1}, 64),  // 8 d
           arena("f32", {}, 128),     // 9 loss
           arena("f32", {4, 1}, 192), // 10 g
           arena("f32", {3, 1}, 256), // 11 gw
           arena("f32", {1}, 320),    // 12 gb
           arena("f64", {}, 384),     // 13 lr
           slot("param", "f32", {3, 1}, 0),  // 14 w' (in place)
           arena("f32", {1}, 448),           // 15 b' (copied back)
           slot("opt_state", "f32", {1}, 0), // 16 buf' (in place)
       }},
      {"steps",
       {
           call("matmul", {0, 2}, {7}),
           kernel("bias_sub", {7, 3, 1}, 8, 4),
           kernel("mean_sq4", {8}, 9, 1),
           kernel("scale", {8, 6}, 10, 4),
           call("matmul", {0, 10}, {11}, {{"transpose_lhs", true}}),
           kernel("sum4", {10}, 12, 1),
           kernel("lr_of_step", {5}, 13, 1),
           call("sgd_update", {2, 11, 13, -1}, {14}),
           call("sgd_update", {3, 12, 13, 4}, {15, 16}, {{"momentum", 0.9}}),
       }},
      {"results",
       {
           {{"role", "loss"}, {"value", 9}},
           {{"role", "param"}, {"index", 0}, {"value", 14}},
           {{"role", "param"}, {"index", 1}, {"value", 15}},
           {{"role", "opt_state"}, {"index", 0}, {"value", 16}},
       }}};
  a.fn("eval_step") = {
      {"arena_bytes", 192},
      {"inputs", inputs},
      {"values",
       {slot("input", "f32", {4, 3}, 0), slot("input", "f32", {4, 1}, 1),
        slot("param", "f32", {3, 1}, 0), slot("param", "f32", {1}, 1),
        arena("f32", {4, 1}, 0), arena("f32", {4, 1}, 64),
        arena("f32", {}, 128)}},
      {"steps",
       {call("matmul", {0, 2}, {4}), kernel("bias_sub", {4, 3, 1}, 5, 4),
        kernel("mean_sq4", {5}, 6, 1)}},
      {"results", {{{"role", "loss"}, {"value", 6}}}}};
  return a;
}

inline std::vector<float> regressionX() {
  return {1, 2, 3, -1, 0.5f, 2, 0, 1, -1, 2, -2, 0.25f};
}
inline std::vector<float> regressionY() { return {1, -2, 0.5f, 3}; }

/// tcc_session_open of `dir` on `backend`, every other option its default.
inline tcc_status openOn(const std::string &dir, const char *backend,
                         tcc_session **s) {
  tcc_session_options options;
  tcc_session_options_init(&options);
  options.backend = backend;
  return tcc_session_open(dir.c_str(), &options, s);
}

/// Opens `dir`; fails the test (returning null) when it cannot.
inline tcc_session *openOrFail(const std::string &dir) {
  tcc_session *s = nullptr;
  tcc_status st = tcc_session_open(dir.c_str(), nullptr, &s);
  EXPECT_EQ(st, TCC_OK) << tcc_last_error();
  return s;
}

/// The status of opening `dir`, with the message in `message`.
inline tcc_status openStatus(const std::string &dir, std::string &message) {
  tcc_session *s = nullptr;
  tcc_status st = tcc_session_open(dir.c_str(), nullptr, &s);
  message = st == TCC_OK ? "" : tcc_last_error();
  tcc_session_close(s);
  return st;
}

inline void bindRegression(tcc_session *s) {
  std::vector<float> x = regressionX(), y = regressionY();
  ASSERT_EQ(tcc_bind_input(s, "x", x.data(), x.size() * 4), TCC_OK)
      << tcc_last_error();
  ASSERT_EQ(tcc_bind_input(s, "y", y.data(), y.size() * 4), TCC_OK)
      << tcc_last_error();
}

template <class T>
std::vector<T> readParam(tcc_session *s, const char *name, size_t n) {
  std::vector<T> v(n);
  EXPECT_EQ(tcc_read_param(s, name, v.data(), n * sizeof(T)), TCC_OK)
      << tcc_last_error();
  return v;
}

/// The regression trained for 4 steps on `s` (its inputs bound here): each
/// loss, then w, b and the momentum buffer.
inline std::vector<double> trainRegression(tcc_session *s) {
  bindRegression(s);
  std::vector<double> out;
  for (int t = 0; t < 4; ++t) {
    double loss = -1;
    EXPECT_EQ(tcc_train_step(s, &loss), TCC_OK) << tcc_last_error();
    out.push_back(loss);
  }
  for (float w : readParam<float>(s, "w", 3))
    out.push_back(w);
  out.push_back(readParam<float>(s, "b", 1)[0]);
  float m = -1;
  EXPECT_EQ(tcc_read_opt_state(s, "b.momentum_buffer", &m, 4), TCC_OK);
  out.push_back(m);
  return out;
}

} // namespace rttest

#endif // TCC_TEST_UNIT_RUNTIME_RUNTIMETESTUTIL_H
