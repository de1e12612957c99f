//===- CallArtifact.h - one-call artifacts for the library-call tests -----===//
//
// A train_step of a single library call (RuntimeTestUtil.h's hand-written
// artifacts), its operands batch inputs and its results copied into
// parameters, and running it through the C API; with the float / bf16 /
// f16 arrays the calls take. Shared by the runtime's library-call tests
// (LibraryCallsTest, HalfCallsTest) and the CUDA backend's bf16 / f16 call
// tests (test/unit/gpu).
//
//===----------------------------------------------------------------------===//

#ifndef TCC_TEST_UNIT_RUNTIME_CALLARTIFACT_H
#define TCC_TEST_UNIT_RUNTIME_CALLARTIFACT_H

#include "RuntimeTestUtil.h"

#include "data/half.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace rttest {

/// A result of the call: its dtype and shape; an absent optional result is
/// written as -1 (absentResult()).
struct CallResult {
  DType dtype;
  std::vector<int64_t> shape;
  bool absent = false;
};
inline CallResult absentResult() { return {DType::F32, {}, true}; }
/// The results a call artifact's run returns: those not absent, in order.
inline std::vector<CallResult>
presentResults(const std::vector<CallResult> &results) {
  std::vector<CallResult> present;
  for (const CallResult &r : results)
    if (!r.absent)
      present.push_back(r);
  return present;
}

/// An absent optional operand (an Array named "-").
inline Array absent() {
  Array a;
  a.name = "-";
  return a;
}

inline bool isHalf(DType t) { return t == DType::BF16 || t == DType::F16; }

/// `v` rounded into an array of `dtype` (f32, bf16, f16) of `shape`.
inline Array floats(DType dtype, std::vector<int64_t> shape,
                    const std::vector<float> &v) {
  Array a;
  a.dtype = dtype;
  a.shape = std::move(shape);
  a.bytes.resize(v.size() * tcc::data::dtypeSize(dtype));
  for (size_t i = 0; i < v.size(); ++i) {
    if (dtype == DType::F32) {
      std::memcpy(a.bytes.data() + 4 * i, &v[i], 4);
      continue;
    }
    uint16_t h = dtype == DType::BF16 ? tcc::data::floatToBf16(v[i])
                                      : tcc::data::floatToF16(v[i]);
    std::memcpy(a.bytes.data() + 2 * i, &h, 2);
  }
  return a;
}

/// Element i of a float array of any float dtype, widened.
inline float at(const Array &a, int64_t i) {
  if (a.dtype == DType::F32)
    return a.data<float>()[i];
  uint16_t h = a.data<uint16_t>()[i];
  return a.dtype == DType::BF16 ? tcc::data::bf16ToFloat(h)
                                : tcc::data::f16ToFloat(h);
}

/// n smooth values in [-scale, scale].
inline std::vector<float> wave(size_t n, float scale, float shift = 0) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = std::sin(float(i) * 1.3f + shift) * scale;
  return v;
}

/// A train_step of one call: inputs "in0".. (an absent() operand is
/// passed as -1), each present result K copied into parameter "outK" (zero
/// at the start); the loss is a zero kernel. Null `attrs` are an empty object.
inline TestArtifact callArtifact(const std::string &op, json attrs,
                                 const std::vector<Array> &inputs,
                                 const std::vector<CallResult> &results) {
  TestArtifact a;
  if (attrs.is_null())
    attrs = json::object();
  json fnInputs = json::array(), values = json::array(), ids = json::array();
  int64_t n = 0;
  for (const Array &in : inputs) {
    if (in.name == "-") {
      ids.push_back(-1);
      continue;
    }
    std::string name = "in" + std::to_string(n);
    const char *dtype = tcc::data::dtypeName(in.dtype);
    fnInputs.push_back(tensor(name, dtype, in.shape));
    ids.push_back(values.size());
    values.push_back(slot("input", dtype, in.shape, n++));
  }
  int64_t offset = 0;
  json outIds = json::array(), roles = json::array(), params = json::array();
  int64_t p = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    const CallResult &r = results[i];
    if (r.absent) {
      outIds.push_back(-1);
      continue;
    }
    std::string name = "out" + std::to_string(i);
    const char *dtype = tcc::data::dtypeName(r.dtype);
    params.push_back(tensor(name, dtype, r.shape));
    Array zero;
    zero.name = name;
    zero.dtype = r.dtype;
    zero.shape = r.shape;
    zero.bytes.assign(zero.numElements() * tcc::data::dtypeSize(r.dtype), 0);
    a.weights.push_back(zero);
    outIds.push_back(values.size());
    roles.push_back(
        {{"role", "param"}, {"index", p++}, {"value", values.size()}});
    values.push_back(arena(dtype, r.shape, offset));
    offset += (int64_t(zero.bytes.size()) + 63) / 64 * 64;
  }
  roles.push_back({{"role", "loss"}, {"value", values.size()}});
  values.push_back(arena("f32", {}, offset));
  a.plan["params"] = params;
  a.fn("train_step") = {
      {"arena_bytes", offset + 64},
      {"inputs", fnInputs},
      {"values", values},
      {"steps",
       {call(op, ids.get<std::vector<int64_t>>(),
             outIds.get<std::vector<int64_t>>(), attrs),
        kernel("zero", {}, values.size() - 1, 1)}},
      {"results", roles}};
  return a;
}

/// Runs the call artifact `a`, written to `dir`, once on `backend` with
/// `inputs` bound; train_step must return `expect` (its message goes to
/// `message`). The results, read back from the parameters "outK"; empty
/// when the session does not open.
inline std::vector<Array> runCallArtifact(const std::string &dir,
                                          const TestArtifact &a,
                                          const char *backend,
                                          const std::vector<Array> &inputs,
                                          tcc_status expect = TCC_OK,
                                          std::string *message = nullptr) {
  tcc_session *s = nullptr;
  EXPECT_EQ(openOn(dir, backend, &s), TCC_OK)
      << backend << ": " << tcc_last_error();
  if (!s)
    return {};
  int n = 0;
  for (const Array &in : inputs)
    if (in.name != "-") {
      std::string name = "in" + std::to_string(n++);
      EXPECT_EQ(tcc_bind_input(s, name.c_str(), in.bytes.data(),
                               in.bytes.size()),
                TCC_OK)
          << backend << ": " << tcc_last_error();
    }
  double loss;
  tcc_status st = tcc_train_step(s, &loss);
  EXPECT_EQ(st, expect) << backend << ": " << tcc_last_error();
  if (message)
    *message = st == TCC_OK ? "" : tcc_last_error();
  std::vector<Array> out;
  for (const Array &w : a.weights) {
    Array o = w;
    EXPECT_EQ(tcc_read_param(s, w.name.c_str(), o.bytes.data(), o.bytes.size()),
              TCC_OK)
        << backend << ": " << tcc_last_error();
    out.push_back(o);
  }
  tcc_session_close(s);
  return out;
}

/// The call's artifact, written to a TempDir(tag), run once on the cpu
/// backend (runCallArtifact).
inline std::vector<Array> runCall(const std::string &tag, const std::string &op,
                                  const json &attrs,
                                  const std::vector<Array> &inputs,
                                  const std::vector<CallResult> &results,
                                  tcc_status expect = TCC_OK,
                                  std::string *message = nullptr) {
  TempDir dir(tag);
  TestArtifact a = callArtifact(op, attrs, inputs, results);
  a.write(dir.path);
  return runCallArtifact(dir.path, a, "cpu", inputs, expect, message);
}

} // namespace rttest

#endif // TCC_TEST_UNIT_RUNTIME_CALLARTIFACT_H
