// Multi-tensor AdamW on the CUDA backend of the runtime: runs of
// adamw_update steps as one launch, on the artifact of CudaAdamwArtifact.h.
//
// cuda_calls.cpp's adamwGroups decides which adamw_update steps one
// adamw_update_multi launch runs (checked here without a GPU, on fake
// addresses); cuda_backend.cpp uploads each group's table when the session
// opens and launches it at the group's first step. On a GPU, a train_step
// of seven adamw_update calls (sizes 1 to 3 x 16384 + 17, odd ones
// included; weight decays 0.01, 0, 0.1, 0.05; one with its new param in the
// arena, copied back; one with another beta1, so it stays a lone call) runs
// in three sessions: cuda (grouped: one launch for six calls), cuda with
// TCC_CUDA_MULTI_TENSOR=0 (a launch per call) and cpu, from the same random
// state, for three steps (each starting from the cpu session's state):
//   grouped == ungrouped            bit for bit (the same scalars and the
//                                   same per-element roundings; only the
//                                   walk over the elements differs)
//   exp_avg, exp_avg_sq == cpu      bit for bit (no bias correction in them)
//   param == cpu                    within 1 ulp: bit for bit unless the
//                                   device's pow(beta, t) differs from
//                                   glibc's in the last bit of a double and
//                                   that moves the rounding of the f32 step
//                                   size or sqrt(bias_correction2); the
//                                   update (|lr * m / sqrt(v)| < 0.1) is far
//                                   below the params (|p| >= 0.5), so such a
//                                   change moves a param by 1 ulp at most
// and a step operand of 0 is TCC_ERROR_FORMAT naming the group's first
// step, as ungrouped, with nothing written.
#include "CudaAdamwArtifact.h"
#include "CudaTestArtifact.h"
#include "GpuTestUtil.h"

#include "../runtime/RuntimeTestUtil.h"

#include "exec/artifact.h"
#include "exec/cuda_calls.h"
#include "kernels/cuda/cuda_kernels.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tcc::gputest {
namespace {

using namespace rttest;
using CudaBackend = GpuTest;

/// Grouped: every call but the one with beta1 0.8.
const std::vector<size_t> kAdamwGroup = {0, 1, 2, 4, 5, 6};

/// Every value of `fn` at a made-up address: each slot 16 MiB apart, arena
/// values at their offsets (adamwGroups only compares byte ranges).
std::vector<uint8_t *> fakeAddresses(const tcc::rt::Function &fn) {
  using tcc::rt::Storage;
  std::vector<uint8_t *> ptrs;
  for (const tcc::rt::Value &v : fn.values) {
    uintptr_t base = 0;
    int64_t at = v.index;
    switch (v.storage) {
    case Storage::Input:
      base = uintptr_t(1) << 40;
      break;
    case Storage::Param:
      base = uintptr_t(2) << 40;
      break;
    case Storage::OptState:
      base = uintptr_t(3) << 40;
      break;
    case Storage::Arena:
      base = uintptr_t(4) << 40;
      at = 0;
      break;
    default:
      base = uintptr_t(5) << 40;
      at = int64_t(ptrs.size());
      break;
    }
    uintptr_t p = base + uintptr_t(at) * (uintptr_t(1) << 24) +
                  (v.storage == Storage::Arena ? uintptr_t(v.offset) : 0);
    ptrs.push_back(reinterpret_cast<uint8_t *>(p));
  }
  return ptrs;
}

using Groups = std::vector<std::vector<size_t>>;

TEST(CudaAdamwGroups, RunsOfIndependentCallsWithOneKey) {
  TempDir dir("cuda-adamw-groups");
  adamwArtifact().write(dir.path);
  tcc::rt::Artifact art = tcc::rt::loadArtifact(dir.path);
  const tcc::rt::Function base = *art.function("train_step");
  auto groups = [](const tcc::rt::Function &fn) {
    std::vector<uint8_t *> ptrs = fakeAddresses(fn);
    return tcc::rt::adamwGroups(fn, ptrs.data(), {});
  };
  // Weight decays differ within the group; beta1 0.8 keeps step 3 alone.
  EXPECT_EQ(groups(base), Groups{kAdamwGroup});

  // A step reading what an earlier one writes ends the run there.
  tcc::rt::Function dep = base;
  dep.steps[4].inputs[1] = dep.steps[1].outputs[0]; // grad := new p1
  // (counted as p4's size: a smaller gradient would be a block update,
  // which is never grouped)
  dep.values[size_t(dep.steps[1].outputs[0])].elements =
      dep.values[size_t(dep.steps[4].inputs[0])].elements;
  EXPECT_EQ(groups(dep), (Groups{{0, 1, 2}, {4, 5, 6}}));
  // ... and one writing what an earlier one reads.
  tcc::rt::Function war = base;
  war.steps[5].outputs[1] = war.steps[0].inputs[1]; // new exp_avg := g0
  EXPECT_EQ(groups(war), (Groups{{0, 1, 2, 4}, {5, 6}}));

  // A block update (a weight gradient made in row blocks under a memory
  // budget) updates part of its parameter: it runs alone and ends the run.
  tcc::rt::Function block = base;
  block.steps[5].attrs.elementOffset = 16;
  EXPECT_EQ(groups(block), (Groups{{0, 1, 2, 4}}));

  // Another lr value: its own group.
  tcc::rt::Function lr = base;
  lr.values.push_back(lr.values[lr.steps[0].inputs[4]]);
  lr.values.back().index = 99;
  for (size_t s : {1, 5})
    lr.steps[s].inputs[4] = int64_t(lr.values.size()) - 1;
  EXPECT_EQ(groups(lr), (Groups{{0, 2, 4, 6}, {1, 5}}));

  // Any other step in between ends the run.
  tcc::rt::Function split = base;
  split.steps.insert(split.steps.begin() + 2, split.steps.back());
  EXPECT_EQ(groups(split), (Groups{{0, 1}, {3, 5, 6, 7}}));

  // One skip flag for all (dynamic loss scaling's): grouped as without.
  tcc::rt::Function shared = base;
  for (tcc::rt::Step &st : shared.steps) {
    st.inputs.resize(7, -1);
    st.inputs[6] = shared.steps[0].inputs[5];
  }
  EXPECT_EQ(groups(shared), groups(base));

  // Not grouped: a skip operand the others do not share, an empty tensor
  // (its call launches nothing), a lone call.
  tcc::rt::Function skip = base;
  skip.steps[0].inputs.resize(7, -1);
  skip.steps[0].inputs[6] = skip.steps[0].inputs[5];
  skip.steps[6].inputs.resize(7, -1); // absent: still grouped
  EXPECT_EQ(groups(skip), (Groups{{1, 2, 4, 5, 6}}));
  tcc::rt::Function empty = base;
  empty.values[empty.steps[0].inputs[0]].elements = 0;
  empty.values[empty.steps[0].inputs[0]].bytes = 0;
  EXPECT_EQ(groups(empty), (Groups{{1, 2, 4, 5, 6}}));
  tcc::rt::Function lone = base;
  lone.steps.erase(lone.steps.begin() + 1, lone.steps.end() - 1);
  EXPECT_EQ(groups(lone), Groups{});

  // The table: one entry per member, chunks of 16384 elements.
  std::vector<uint8_t *> ptrs = fakeAddresses(base);
  int64_t chunks = -1;
  std::vector<char> table =
      tcc::rt::adamwGroupTable(base, kAdamwGroup, ptrs.data(), {}, chunks);
  EXPECT_EQ(chunks, 1 + 1 + 2 + 4 + 1 + 1);
  ASSERT_EQ(table.size(), cuda::adamw_table_bytes(6));
  cuda::AdamwTensor second;
  std::memcpy(&second, table.data() + sizeof(second), sizeof(second));
  EXPECT_EQ(second.n, 7);
  EXPECT_EQ(second.weightDecay, 0.0);
  EXPECT_EQ(second.param, reinterpret_cast<const float *>(
                              ptrs[base.steps[1].inputs[0]]));
  EXPECT_EQ(second.newParam, second.param); // in place
  cuda::AdamwTensor third;
  std::memcpy(&third, table.data() + 2 * sizeof(third), sizeof(third));
  EXPECT_NE(third.newParam, third.param); // into the arena
  EXPECT_EQ(third.weightDecay, 0.1);

  // The artifact itself is well formed: a cpu session trains it.
  tcc_session *cpu = nullptr;
  ASSERT_EQ(tcc_session_open(dir.path.c_str(), nullptr, &cpu), TCC_OK)
      << tcc_last_error();
  for (size_t i = 0; i < adamwCalls().size(); ++i) {
    std::vector<float> g = randomNormal(size_t(adamwCalls()[i].n), 7);
    ASSERT_EQ(tcc_bind_input(cpu, ("g" + std::to_string(i)).c_str(), g.data(),
                             g.size() * 4),
              TCC_OK)
        << tcc_last_error();
  }
  double lrValue = 1e-3;
  int64_t step = 1;
  ASSERT_EQ(tcc_bind_input(cpu, "lr", &lrValue, 8), TCC_OK) << tcc_last_error();
  ASSERT_EQ(tcc_bind_input(cpu, "t", &step, 8), TCC_OK) << tcc_last_error();
  ASSERT_EQ(tcc_train_step(cpu, nullptr), TCC_OK) << tcc_last_error();
  tcc_session_close(cpu);
}

/// One tensor of every param and optimizer slot of a session.
struct AdamwState {
  std::vector<std::vector<float>> p, m, v;
};

AdamwState readState(tcc_session *s) {
  AdamwState st;
  for (size_t i = 0; i < adamwCalls().size(); ++i) {
    size_t n = size_t(adamwCalls()[i].n);
    st.p.push_back(readParam<float>(s, pname(i).c_str(), n));
    std::vector<float> m(n), v(n);
    EXPECT_EQ(tcc_read_opt_state(s, mname(i).c_str(), m.data(), n * 4), TCC_OK)
        << tcc_last_error();
    EXPECT_EQ(tcc_read_opt_state(s, vname(i).c_str(), v.data(), n * 4), TCC_OK)
        << tcc_last_error();
    st.m.push_back(m);
    st.v.push_back(v);
  }
  return st;
}

void writeState(tcc_session *s, const AdamwState &st) {
  for (size_t i = 0; i < st.p.size(); ++i) {
    size_t bytes = st.p[i].size() * 4;
    ASSERT_EQ(tcc_write_param(s, pname(i).c_str(), st.p[i].data(), bytes),
              TCC_OK)
        << tcc_last_error();
    ASSERT_EQ(tcc_write_opt_state(s, mname(i).c_str(), st.m[i].data(), bytes),
              TCC_OK)
        << tcc_last_error();
    ASSERT_EQ(tcc_write_opt_state(s, vname(i).c_str(), st.v[i].data(), bytes),
              TCC_OK)
        << tcc_last_error();
  }
}

void bindAdamwInputs(tcc_session *s, uint32_t seed, double lr, int64_t t) {
  for (size_t i = 0; i < adamwCalls().size(); ++i) {
    std::vector<float> g =
        randomNormal(size_t(adamwCalls()[i].n), seed + uint32_t(i));
    ASSERT_EQ(tcc_bind_input(s, ("g" + std::to_string(i)).c_str(), g.data(),
                             g.size() * 4),
              TCC_OK)
        << tcc_last_error();
  }
  ASSERT_EQ(tcc_bind_input(s, "lr", &lr, 8), TCC_OK) << tcc_last_error();
  ASSERT_EQ(tcc_bind_input(s, "t", &t, 8), TCC_OK) << tcc_last_error();
}

/// Elements of `got` not bit-equal to `want`; fails for any more than 1 ulp
/// apart (same sign, adjacent bit patterns).
size_t expectWithinUlp(const std::vector<float> &got,
                       const std::vector<float> &want, const std::string &what) {
  EXPECT_EQ(got.size(), want.size()) << what;
  size_t differ = 0;
  for (size_t j = 0; j < std::min(got.size(), want.size()); ++j) {
    int32_t a, b;
    std::memcpy(&a, &got[j], 4);
    std::memcpy(&b, &want[j], 4);
    if (a == b)
      continue;
    ++differ;
    EXPECT_LE(std::abs(int64_t(a) - int64_t(b)), 1)
        << what << " element " << j << ": cuda " << got[j] << ", cpu "
        << want[j];
  }
  return differ;
}

TEST_F(CudaBackend, MultiTensorAdamwMatchesPerCallAndCpu) {
  TempDir dir("cuda-adamw-multi");
  adamwArtifact().write(dir.path);
  installTestFatbin(dir);
  auto open = [&](const char *backend) {
    tcc_session *s = nullptr;
    EXPECT_EQ(openOn(dir.path, backend, &s), TCC_OK)
        << backend << ": " << tcc_last_error();
    return s;
  };
  tcc_session *cpu = open("cpu"), *grouped = open("cuda");
  ::setenv("TCC_CUDA_MULTI_TENSOR", "0", 1);
  tcc_session *perCall = open("cuda");
  ::unsetenv("TCC_CUDA_MULTI_TENSOR");
  ASSERT_TRUE(cpu && grouped && perCall);

  // A random optimizer state (exp_avg_sq >= 0), the same everywhere.
  AdamwState start = readState(cpu);
  for (size_t i = 0; i < start.p.size(); ++i) {
    start.m[i] = randomNormal(start.m[i].size(), 200 + uint32_t(i), 0.1f);
    start.v[i] = randomNormal(start.v[i].size(), 300 + uint32_t(i), 0.01f);
    for (float &x : start.v[i])
      x = x * x;
  }
  for (tcc_session *s : {cpu, grouped, perCall})
    writeState(s, start);

  size_t paramsOff = 0, total = 0;
  for (int64_t t = 1; t <= 3; ++t) {
    SCOPED_TRACE("step " + std::to_string(t));
    const double lr = 1e-3 * (1.0 + 0.25 * double(t));
    for (tcc_session *s : {cpu, grouped, perCall}) {
      bindAdamwInputs(s, 1000 * uint32_t(t), lr, t);
      ASSERT_EQ(tcc_train_step(s, nullptr), TCC_OK) << tcc_last_error();
    }
    AdamwState c = readState(cpu), g = readState(grouped),
               u = readState(perCall);
    for (size_t i = 0; i < c.p.size(); ++i) {
      std::string what = pname(i);
      expectBitEqual(g.p[i], u.p[i], what + " grouped vs per call");
      expectBitEqual(g.m[i], u.m[i], mname(i) + " grouped vs per call");
      expectBitEqual(g.v[i], u.v[i], vname(i) + " grouped vs per call");
      expectBitEqual(g.m[i], c.m[i], mname(i) + " cuda vs cpu");
      expectBitEqual(g.v[i], c.v[i], vname(i) + " cuda vs cpu");
      paramsOff += expectWithinUlp(g.p[i], c.p[i], what + " cuda vs cpu");
      total += c.p[i].size();
    }
    // The next step starts from the cpu state in all three sessions.
    writeState(grouped, c);
    writeState(perCall, c);
  }
  std::printf("  multi-tensor AdamW: %zu of %zu params 1 ulp off the cpu "
              "backend, the rest bit for bit\n",
              paramsOff, total);

  // Step 0: nothing written, the error names the group's first step, as a
  // launch per call does.
  AdamwState before = readState(grouped);
  std::string messages[2];
  tcc_session *cuda[2] = {grouped, perCall};
  for (int k = 0; k < 2; ++k) {
    bindAdamwInputs(cuda[k], 5000, 1e-3, 0);
    EXPECT_EQ(tcc_train_step(cuda[k], nullptr), TCC_ERROR_FORMAT);
    messages[k] = tcc_last_error();
  }
  EXPECT_EQ(messages[0], messages[1]);
  EXPECT_NE(messages[0].find("train_step step 0 (adamw_update): step 0 is "
                             "not a valid AdamW step"),
            std::string::npos)
      << messages[0];
  AdamwState after = readState(grouped);
  for (size_t i = 0; i < before.p.size(); ++i) {
    expectBitEqual(after.p[i], before.p[i], pname(i) + " after step 0");
    expectBitEqual(after.m[i], before.m[i], mname(i) + " after step 0");
    expectBitEqual(after.v[i], before.v[i], vname(i) + " after step 0");
  }
  for (tcc_session *s : {cpu, grouped, perCall})
    tcc_session_close(s);
}

} // namespace
} // namespace tcc::gputest
