//===- WorkingTestArtifact.h - a plan with parameter working copies -------===//
//
// A hand-written training artifact whose two f32 parameters have bf16 or
// f16 working copies (plan params[i].working): train_step reads each copy
// into a "probe" parameter through a 16-bit matmul by an identity (exact),
// then SGD updates both masters and writes the working copies in the same
// call: w and its copy in place, b and its copy into the arena, copied
// back by a param and a working result. The probes show the working copies
// as the step saw them before its update. Shared by the runtime tests
// (cpu) and the CUDA backend tests.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_TEST_UNIT_RUNTIME_WORKINGTESTARTIFACT_H
#define TCC_TEST_UNIT_RUNTIME_WORKINGTESTARTIFACT_H

#include "CallArtifact.h"
#include "RuntimeTestUtil.h"

#include "data/half.h"

#include <cstring>

namespace rttest {

/// 16-bit bits of `f` in `dtype` (bf16 or f16), rounded to nearest even.
inline uint16_t halfBits(DType dtype, float f) {
  return dtype == DType::BF16 ? tcc::data::floatToBf16(f)
                              : tcc::data::floatToF16(f);
}

/// The initial w: 1 + 2^-8 and 1 + 3 * 2^-8 are halfway between two bf16
/// values, 1 + 2^-11 and 1 + 3 * 2^-11 between two f16 values (ties to
/// even: 1, 1 + 2^-6 / 1, 1 + 2^-9); the third rounds plainly.
inline std::vector<float> workingW0(DType t) {
  float u = t == DType::BF16 ? 1.0f / 256 : 1.0f / 2048;
  return {1.0f + u, 1.0f + 3 * u, 0.1f};
}
/// Their 16-bit bits, worked out by hand (0.1 computed).
inline std::vector<uint16_t> workingW0Bits(DType t) {
  if (t == DType::BF16)
    return {0x3F80, 0x3F82, tcc::data::floatToBf16(0.1f)};
  return {0x3C00, 0x3C02, tcc::data::floatToF16(0.1f)};
}
inline float workingB0() { return -2.7182817f; }

/// The artifact for working dtype `t` (BF16 or F16).
inline TestArtifact workingArtifact(DType t) {
  const char *h = tcc::data::dtypeName(t);
  TestArtifact a;
  json w = tensor("w", "f32", {3, 1}), b = tensor("b", "f32", {1});
  w["working"] = h;
  b["working"] = h;
  a.plan["params"] = {w, b, tensor("probe_w", h, {3, 1}),
                      tensor("probe_b", h, {1, 1})};
  a.weights = {named("w", testutil::f32({3, 1}, workingW0(t))),
               named("b", testutil::f32({1}, {workingB0()})),
               named("probe_w", floats(t, {3, 1}, {0, 0, 0})),
               named("probe_b", floats(t, {1, 1}, {0}))};
  a.manifest["train_config"] = "working copies test";
  a.fn("train_step") = {
      {"arena_bytes", 320},
      {"inputs",
       {tensor("eye", h, {3, 3}), tensor("one", h, {1, 1}),
        tensor("gw", "f32", {3, 1}), tensor("gb", "f32", {1}),
        tensor("lr", "f64", {})}},
      {"values",
       {
           slot("input", h, {3, 3}, 0),     // 0 eye
           slot("input", h, {1, 1}, 1),     // 1 one
           slot("input", "f32", {3, 1}, 2), // 2 gw
           slot("input", "f32", {1}, 3),    // 3 gb
           slot("input", "f64", {}, 4),     // 4 lr
           slot("param", "f32", {3, 1}, 0), // 5 w
           slot("param", "f32", {1}, 1),    // 6 b
           slot("working", h, {3, 1}, 0),   // 7 w's working copy
           slot("working", h, {1}, 1),      // 8 b's working copy
           slot("working", h, {1, 1}, 1),   // 9 ... reshaped
           arena(h, {3, 1}, 0),             // 10 probe of w
           arena(h, {1, 1}, 64),            // 11 probe of b
           arena("f32", {}, 128),           // 12 loss
           slot("param", "f32", {3, 1}, 0), // 13 w' (in place)
           slot("working", h, {3, 1}, 0),   // 14 w's new working (in place)
           arena("f32", {1}, 192),          // 15 b' (copied back)
           arena(h, {1}, 256),              // 16 b's new working (copied back)
       }},
      {"steps",
       {
           call("matmul", {0, 7}, {10}),
           call("matmul", {1, 9}, {11}),
           kernel("zero", {}, 12, 1),
           call("sgd_update", {5, 2, 4, -1, -1, 7}, {13, -1, 14}),
           call("sgd_update", {6, 3, 4, -1, -1, 8}, {15, -1, 16}),
       }},
      {"results",
       {
           {{"role", "loss"}, {"value", 12}},
           {{"role", "param"}, {"index", 0}, {"value", 13}},
           {{"role", "param"}, {"index", 1}, {"value", 15}},
           {{"role", "working"}, {"index", 0}, {"value", 14}},
           {{"role", "working"}, {"index", 1}, {"value", 16}},
           {{"role", "param"}, {"index", 2}, {"value", 10}},
           {{"role", "param"}, {"index", 3}, {"value", 11}},
       }}};
  return a;
}

/// Binds the working artifact's inputs: the identities, the gradients and
/// lr.
inline void bindWorking(tcc_session *s, DType t) {
  Array eye = floats(t, {3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1});
  Array one = floats(t, {1, 1}, {1});
  std::vector<float> gw = {0.37f, -1.25f, 3.1f}, gb = {0.6180339f};
  double lr = 0.0123;
  ASSERT_EQ(tcc_bind_input(s, "eye", eye.bytes.data(), eye.bytes.size()),
            TCC_OK)
      << tcc_last_error();
  ASSERT_EQ(tcc_bind_input(s, "one", one.bytes.data(), one.bytes.size()),
            TCC_OK)
      << tcc_last_error();
  ASSERT_EQ(tcc_bind_input(s, "gw", gw.data(), 12), TCC_OK) << tcc_last_error();
  ASSERT_EQ(tcc_bind_input(s, "gb", gb.data(), 4), TCC_OK) << tcc_last_error();
  ASSERT_EQ(tcc_bind_input(s, "lr", &lr, 8), TCC_OK) << tcc_last_error();
}

/// The probes' bits after a step: w's working copy then b's, as the step
/// read them.
inline std::vector<uint16_t> readProbes(tcc_session *s) {
  std::vector<uint16_t> w = readParam<uint16_t>(s, "probe_w", 3);
  std::vector<uint16_t> b = readParam<uint16_t>(s, "probe_b", 1);
  w.push_back(b[0]);
  return w;
}

/// w then b (the f32 masters) rounded to `t`: what the working copies must
/// hold.
inline std::vector<uint16_t> roundedMasters(tcc_session *s, DType t) {
  std::vector<float> w = readParam<float>(s, "w", 3),
                     b = readParam<float>(s, "b", 1);
  w.push_back(b[0]);
  std::vector<uint16_t> out;
  for (float f : w)
    out.push_back(halfBits(t, f));
  return out;
}

} // namespace rttest

#endif // TCC_TEST_UNIT_RUNTIME_WORKINGTESTARTIFACT_H
