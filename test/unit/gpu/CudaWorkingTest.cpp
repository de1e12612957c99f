// Working copies of parameters on the CUDA backend: the optimizer kernels
// write each new f32 parameter also rounded to nearest even into its bf16 /
// f16 working copy (runtime/kernels/cuda/optimizer.cu), per call and in
// the multi-tensor AdamW groups, whose table may mix tensors with and
// without one. Checked against the CPU kernels and the CPU backend:
//  * SGD bit for bit (parameter, buffer and working copy);
//  * AdamW's parameter as GpuKernelsTest checks it (bit for bit but where
//    the device's pow differs from glibc's in the last bit of a double), and
//    its working copy bit for bit the GPU's new parameter rounded, and
//    equal to the CPU's wherever the two parameters are;
//  * a skipped update (loss scaling's overflow) copies the working
//    operand to the result where they are not the same;
//  * adamwGroups / adamwGroupTable (no GPU needed): working copies join a
//    group, their bytes count in the independence check, the table carries
//    them per tensor;
//  * sessions of hand-written artifacts on cuda against cpu.
// Without a GPU every test but the grouping one prints "no CUDA device:
// skipped" and skips.
#include "CudaTestArtifact.h"
#include "GpuTestUtil.h"

#include "../runtime/RuntimeTestUtil.h"
#include "../runtime/WorkingTestArtifact.h"

#include "data/half.h"
#include "exec/artifact.h"
#include "exec/cuda_calls.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cuda/cuda_kernels.h"

#include <cstdlib>
#include <cstring>
#include <memory>

namespace tcc::gputest {
namespace {

namespace cu = tcc::cuda;
using namespace rttest;
using Gpu = GpuTest;

cu::FloatType floatType(DType t) {
  return t == DType::BF16 ? cu::FloatType::BF16 : cu::FloatType::F16;
}

/// `p` rounded to `t`, element by element (data/half.h).
std::vector<uint16_t> rounded(DType t, const std::vector<float> &p) {
  std::vector<uint16_t> out;
  for (float f : p)
    out.push_back(halfBits(t, f));
  return out;
}

/// Random 16-bit patterns of finite values (a stale working copy).
std::vector<uint16_t> stale(DType t, size_t n, uint32_t seed) {
  return rounded(t, randomNormal(n, seed, 4.0f));
}

//===----------------------------------------------------------------------===//
// The kernels
//===----------------------------------------------------------------------===//

TEST_F(Gpu, SgdWorkingCopyMatchesCpuBitForBit) {
  const int64_t n = 10007;
  std::vector<float> p = randomNormal(n, 1), g = randomNormal(n, 2),
                     buf = randomNormal(n, 3, 0.1f);
  const double lr = 0.0371;
  DevBuf<double> dlr(std::vector<double>{lr});
  for (DType t : {DType::BF16, DType::F16})
    for (double momentum : {0.0, 0.9})
      for (bool inPlace : {false, true}) {
        SCOPED_TRACE(std::string(tcc::data::dtypeName(t)) + " momentum " +
                     std::to_string(momentum) +
                     (inPlace ? " in place" : " out of place"));
        std::vector<float> refP(n), refB(n);
        std::vector<uint16_t> refW(n);
        cpu::sgd_update(p.data(), g.data(), buf.data(), refP.data(),
                        refB.data(), n, lr, momentum, 0.01, momentum != 0,
                        {refW.data(), t == DType::BF16});
        EXPECT_EQ(refW, rounded(t, refP));
        DevBuf<float> dp(p), dg(g), db(buf), np(n), nb(n);
        DevBuf<uint16_t> win(stale(t, n, 4)), wout(n);
        cu::WorkingCopy w{win.get(), inPlace ? win.get() : wout.get(),
                          floatType(t)};
        checkStatus(cu::sgd_update(dp.get(), dg.get(), db.get(), np.get(),
                                   nb.get(), n, dlr.get(), momentum, 0.01,
                                   momentum != 0, nullptr, w, nullptr),
                    "sgd_update");
        expectBitEqual(np.download(), refP, "param");
        if (momentum != 0)
          expectBitEqual(nb.download(), refB, "buf");
        expectBitEqual((inPlace ? win : wout).download(), refW, "working");
      }
}

TEST_F(Gpu, SgdSkippedKeepsTheWorkingCopy) {
  const int64_t n = 1001;
  std::vector<float> p = randomNormal(n, 1), g = randomNormal(n, 2);
  std::vector<uint16_t> old = stale(DType::F16, n, 5);
  DevBuf<double> dlr(std::vector<double>{0.1});
  DevBuf<uint8_t> skip(std::vector<uint8_t>{1});
  DevBuf<float> dp(p), dg(g), np(n);
  DevBuf<uint16_t> win(old), wout(n);
  // Out of place: the operands' bits are copied; in place: nothing moves.
  checkStatus(cu::sgd_update(dp.get(), dg.get(), nullptr, np.get(), nullptr,
                             n, dlr.get(), 0, 0, false, skip.get(),
                             {win.get(), wout.get(), cu::FloatType::F16},
                             nullptr),
              "sgd_update skipped");
  expectBitEqual(np.download(), p, "param");
  expectBitEqual(wout.download(), old, "working (copied)");
  checkStatus(cu::sgd_update(dp.get(), dg.get(), nullptr, dp.get(), nullptr,
                             n, dlr.get(), 0, 0, false, skip.get(),
                             {win.get(), win.get(), cu::FloatType::F16},
                             nullptr),
              "sgd_update skipped in place");
  expectBitEqual(dp.download(), p, "param in place");
  expectBitEqual(win.download(), old, "working in place");
}

/// AdamW's working copy: bit for bit the GPU's parameter rounded; equal to
/// the CPU's working copy where the parameters agree bit for bit; the
/// parameters themselves within GpuKernelsTest's bound (2 ulp, 1%).
void expectAdamwWorking(DType t, const std::vector<float> &gpuP,
                        const std::vector<uint16_t> &gpuW,
                        const std::vector<float> &cpuP,
                        const std::vector<uint16_t> &cpuW,
                        const std::string &what) {
  ASSERT_EQ(gpuP.size(), cpuP.size()) << what;
  expectBitEqual(gpuW, rounded(t, gpuP), what + " working vs its param");
  size_t differ = 0;
  for (size_t i = 0; i < gpuP.size(); ++i) {
    int32_t a, b;
    std::memcpy(&a, &gpuP[i], 4);
    std::memcpy(&b, &cpuP[i], 4);
    if (a != b) {
      ++differ;
      ASSERT_LE(std::abs(int64_t(a) - int64_t(b)), 2)
          << what << " param " << i << ": " << gpuP[i] << " vs " << cpuP[i];
      continue;
    }
    ASSERT_EQ(gpuW[i], cpuW[i]) << what << " working " << i;
  }
  EXPECT_LE(differ, gpuP.size() / 100) << what << ": too many differ";
}

TEST_F(Gpu, AdamwWorkingCopySingleAndMultiTensor) {
  const double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  const int64_t step = 7;
  // Empty, one, a chunk and a bit, unaligned (the scalar path), a few
  // chunks (the 16-byte path); with bf16, f16 and no working copy mixed.
  const int64_t sizes[] = {0, 1, 16384 + 3, 1001, 3 * 16384 + 17};
  const size_t offsets[] = {0, 0, 0, 1, 0};
  const double wds[] = {0.01, 0.0, 0.1, 0.0, 0.01};
  const int kinds[] = {1, 2, 0, 1, 2}; // 0: none, 1: bf16, 2: f16
  const int count = 5;
  auto typeOf = [&](int k) { return kinds[k] == 1 ? DType::BF16 : DType::F16; };
  AdamwInputs in = adamwInputs(sizes, count);
  std::vector<std::vector<float>> &p = in.p, &g = in.g, &m = in.m, &v = in.v;
  std::vector<std::vector<float>> refP(count), refM(count), refV(count);
  std::vector<std::vector<uint16_t>> refW(count);
  for (int k = 0; k < count; ++k) {
    int64_t n = sizes[k];
    refP[k].resize(n);
    refM[k].resize(n);
    refV[k].resize(n);
    refW[k].resize(n);
    cpu::WorkingCopy w;
    if (kinds[k])
      w = {refW[k].data(), typeOf(k) == DType::BF16};
    ASSERT_TRUE(cpu::adamw_update(p[k].data(), g[k].data(), m[k].data(),
                                  v[k].data(), refP[k].data(), refM[k].data(),
                                  refV[k].data(), n, lr, step, beta1, beta2,
                                  eps, wds[k], w));
    if (kinds[k])
      EXPECT_EQ(refW[k], rounded(typeOf(k), refP[k])) << k;
  }
  DevBuf<double> dlr(std::vector<double>{lr});
  DevBuf<int64_t> dstep(std::vector<int64_t>{step}), err(1);

  // Single tensor, out of place, f16 working copy.
  {
    const int k = 4;
    DevBuf<float> dp(p[k]), dg(g[k]), dm(m[k]), dv(v[k]), np(sizes[k]),
        nm(sizes[k]), nv(sizes[k]);
    DevBuf<uint16_t> win(stale(DType::F16, sizes[k], 6)), wout(sizes[k]);
    checkStatus(cu::adamw_update(dp.get(), dg.get(), dm.get(), dv.get(),
                                 np.get(), nm.get(), nv.get(), sizes[k],
                                 dlr.get(), dstep.get(), beta1, beta2, eps,
                                 wds[k], nullptr,
                                 {win.get(), wout.get(), cu::FloatType::F16},
                                 err.get(), nullptr),
                "adamw_update");
    expectAdamwWorking(DType::F16, np.download(), wout.download(), refP[k],
                       refW[k], "single");
  }

  // All tensors in one launch, in place, working copies in place.
  std::vector<std::unique_ptr<DevBuf<float>>> bufs;
  std::vector<std::unique_ptr<DevBuf<uint16_t>>> works;
  std::vector<cu::AdamwTensor> tensors;
  for (int k = 0; k < count; ++k) {
    bufs.push_back(std::make_unique<DevBuf<float>>(p[k], offsets[k]));
    bufs.push_back(std::make_unique<DevBuf<float>>(g[k], offsets[k]));
    bufs.push_back(std::make_unique<DevBuf<float>>(m[k], offsets[k]));
    bufs.push_back(std::make_unique<DevBuf<float>>(v[k], offsets[k]));
    works.push_back(std::make_unique<DevBuf<uint16_t>>(
        stale(DType::BF16, size_t(sizes[k]), 50 + k), offsets[k]));
    float *bp = bufs[4 * k]->get(), *bm = bufs[4 * k + 2]->get(),
          *bv = bufs[4 * k + 3]->get();
    cu::AdamwTensor t{bp, bufs[4 * k + 1]->get(), bm, bv, bp, bm, bv,
                      sizes[k], wds[k]};
    if (kinds[k])
      t.working = {works[k]->get(), works[k]->get(), floatType(typeOf(k))};
    tensors.push_back(t);
  }
  std::vector<char> table(cu::adamw_table_bytes(count));
  int64_t chunks = cu::adamw_build_table(tensors.data(), count, table.data());
  DevBytes dtable(table.size());
  check(cudaMemcpy(dtable.get(), table.data(), table.size(),
                   cudaMemcpyHostToDevice),
        "cudaMemcpy");
  std::vector<uint16_t> untouched = works[2]->download();
  checkStatus(cu::set_error_word(err.get(), nullptr), "set_error_word");
  checkStatus(cu::adamw_update_multi(dtable.get(), count, chunks, dlr.get(),
                                     dstep.get(), beta1, beta2, eps, nullptr,
                                     err.get(), nullptr),
              "adamw_update_multi");
  EXPECT_EQ(cu::read_error_word(err.get(), nullptr), -1);
  for (int k = 0; k < count; ++k) {
    SCOPED_TRACE("tensor " + std::to_string(k));
    if (kinds[k])
      expectAdamwWorking(typeOf(k), bufs[4 * k]->download(),
                         works[k]->download(), refP[k], refW[k], "multi");
  }
  expectBitEqual(works[2]->download(), untouched, "no working copy");

  // Skipped: nothing changes, working copies included.
  DevBuf<uint8_t> skip(std::vector<uint8_t>{1});
  std::vector<std::vector<uint16_t>> kept;
  for (auto &w : works)
    kept.push_back(w->download());
  checkStatus(cu::adamw_update_multi(dtable.get(), count, chunks, dlr.get(),
                                     dstep.get(), beta1, beta2, eps,
                                     skip.get(), err.get(), nullptr),
              "adamw_update_multi skipped");
  for (int k = 0; k < count; ++k)
    expectBitEqual(works[k]->download(), kept[k], "skipped");
}

//===----------------------------------------------------------------------===//
// AdamW artifacts with working copies: grouping and sessions
//===----------------------------------------------------------------------===//

struct WorkingCall {
  int64_t n;
  const char *working; ///< "bf16", "f16" or "" (none)
  bool arena;          ///< new param and new working into the arena
  double weightDecay;
};

const std::vector<WorkingCall> &workingCalls() {
  static const std::vector<WorkingCall> calls = {
      {5, "bf16", false, 0.01},
      {2 * 16384 + 3, "f16", false, 0.0},
      {7, "", false, 0.1},
      {1000, "bf16", true, 0.02},
  };
  return calls;
}

/// Inputs g0.. (gradients), lr, t, one_bf16 / one_f16 ([1, 1] ones);
/// params p0.. then probe<i> ([1, n], of the params with a working copy);
/// per param an adamw_update writing its working copy, in place but for the
/// last, whose new param and working copy are copied back by results. The
/// probes are each working copy as the step reads it, through a matmul by
/// one (exact), before the updates. The loss is a zero kernel.
TestArtifact adamwWorkingArtifact() {
  const std::vector<WorkingCall> &calls = workingCalls();
  const int64_t k = int64_t(calls.size());
  TestArtifact a;
  a.manifest["files"]["cuda_kernels"] = "kernels/kernels.fatbin";
  a.manifest["train_config"] = "adamw working copies test";
  json inputs = json::array(), params = json::array(), opt = json::array(),
       values = json::array(), steps = json::array(), results = json::array();
  for (int64_t i = 0; i < k; ++i) {
    inputs.push_back(tensor("g" + std::to_string(i), "f32", {calls[i].n}));
    values.push_back(slot("input", "f32", {calls[i].n}, i));
  }
  for (const char *name : {"lr", "t"})
    inputs.push_back(tensor(name, name[0] == 'l' ? "f64" : "i64", {}));
  inputs.push_back(tensor("one_bf16", "bf16", {1, 1}));
  inputs.push_back(tensor("one_f16", "f16", {1, 1}));
  const int64_t lr = values.size(), t = lr + 1, one = lr + 2;
  values.push_back(slot("input", "f64", {}, k));
  values.push_back(slot("input", "i64", {}, k + 1));
  values.push_back(slot("input", "bf16", {1, 1}, k + 2));
  values.push_back(slot("input", "f16", {1, 1}, k + 3));
  int64_t offset = 0;
  auto arenaValue = [&](const char *dtype, std::vector<int64_t> shape,
                        int64_t bytes) {
    values.push_back(arena(dtype, shape, offset));
    offset += (bytes + 63) / 64 * 64;
    return int64_t(values.size()) - 1;
  };
  json probeSteps = json::array(), updateSteps = json::array(),
       probeParams = json::array();
  int64_t probes = 0;
  for (int64_t i = 0; i < k; ++i) {
    const WorkingCall &c = calls[i];
    const int64_t n = c.n;
    bool working = *c.working != 0;
    json param = tensor("p" + std::to_string(i), "f32", {n});
    if (working)
      param["working"] = c.working;
    params.push_back(param);
    opt.push_back(tensor("p" + std::to_string(i) + ".exp_avg", "f32", {n}));
    opt.push_back(tensor("p" + std::to_string(i) + ".exp_avg_sq", "f32", {n}));
    std::vector<float> p = randomUniform(size_t(n), 200 + uint32_t(i), 0.5f,
                                         2.0f);
    for (size_t j = 0; j < p.size(); j += 2)
      p[j] = -p[j];
    a.weights.push_back(named("p" + std::to_string(i), testutil::f32({n}, p)));
    const int64_t p0 = values.size();
    values.push_back(slot("param", "f32", {n}, i));
    values.push_back(slot("opt_state", "f32", {n}, 2 * i));
    values.push_back(slot("opt_state", "f32", {n}, 2 * i + 1));
    int64_t wk = -1, newWk = -1;
    if (working) {
      wk = values.size();
      values.push_back(slot("working", c.working, {n}, i));
      values.push_back(slot("working", c.working, {1, n}, i)); // reshaped
      int64_t probe = arenaValue(c.working, {1, n}, 2 * n);
      bool bf16 = std::string(c.working) == "bf16";
      probeSteps.push_back(call("matmul", {bf16 ? one : one + 1, wk + 1},
                                {probe}));
      std::string name = "probe" + std::to_string(i);
      a.weights.push_back(
          named(name, floats(bf16 ? DType::BF16 : DType::F16, {1, n},
                                 std::vector<float>(size_t(n), 0.0f))));
      results.push_back({{"role", "param"},
                         {"index", k + probes++},
                         {"value", probe}});
      probeParams.push_back(tensor(name, c.working, {1, n}));
    }
    // Results are values of their own, in place or not.
    auto inPlace = [&](const json &v) {
      values.push_back(v);
      return int64_t(values.size()) - 1;
    };
    int64_t newP = c.arena ? arenaValue("f32", {n}, 4 * n)
                           : inPlace(slot("param", "f32", {n}, i));
    int64_t newM = inPlace(slot("opt_state", "f32", {n}, 2 * i));
    int64_t newV = inPlace(slot("opt_state", "f32", {n}, 2 * i + 1));
    if (working)
      newWk = c.arena ? arenaValue(c.working, {n}, 2 * n)
                      : inPlace(slot("working", c.working, {n}, i));
    std::vector<int64_t> ins = {p0, i, p0 + 1, p0 + 2, lr, t};
    std::vector<int64_t> outs = {newP, newM, newV};
    if (working) {
      ins.insert(ins.end(), {-1, wk});
      outs.push_back(newWk);
    }
    updateSteps.push_back(call("adamw_update", ins, outs,
                               {{"beta1", 0.9},
                                {"beta2", 0.999},
                                {"eps", 1e-8},
                                {"weight_decay", c.weightDecay}}));
    results.push_back({{"role", "param"}, {"index", i}, {"value", newP}});
    results.push_back({{"role", "opt_state"}, {"index", 2 * i}, {"value", newM}});
    results.push_back(
        {{"role", "opt_state"}, {"index", 2 * i + 1}, {"value", newV}});
    if (working)
      results.push_back({{"role", "working"}, {"index", i}, {"value", newWk}});
  }
  const int64_t loss = arenaValue("f32", {}, 4);
  for (const json &s : probeSteps)
    steps.push_back(s);
  for (const json &s : updateSteps)
    steps.push_back(s);
  steps.push_back(kernel("zero", {}, loss, 1));
  results.push_back({{"role", "loss"}, {"value", loss}});
  for (const json &probe : probeParams)
    params.push_back(probe);
  a.plan["params"] = params;
  a.plan["opt_state"] = opt;
  a.fn("train_step") = {{"arena_bytes", offset},
                        {"inputs", inputs},
                        {"values", values},
                        {"steps", steps},
                        {"results", results}};
  return a;
}

/// The first adamw_update step of adamwWorkingArtifact (after the probes).
constexpr size_t kFirstUpdate = 3;

void writeAdamwWorking(const TempDir &dir) {
  adamwWorkingArtifact().write(dir.path);
  installTestFatbin(dir);
}

void bindAdamwWorking(tcc_session *s) {
  for (size_t i = 0; i < workingCalls().size(); ++i) {
    std::vector<float> g = randomNormal(size_t(workingCalls()[i].n), 7 + i);
    ASSERT_EQ(tcc_bind_input(s, ("g" + std::to_string(i)).c_str(), g.data(),
                             g.size() * 4),
              TCC_OK)
        << tcc_last_error();
  }
  double lr = 1e-3;
  int64_t step = 1;
  uint16_t oneBf16 = tcc::data::floatToBf16(1.0f),
           oneF16 = tcc::data::floatToF16(1.0f);
  ASSERT_EQ(tcc_bind_input(s, "lr", &lr, 8), TCC_OK) << tcc_last_error();
  ASSERT_EQ(tcc_bind_input(s, "t", &step, 8), TCC_OK) << tcc_last_error();
  ASSERT_EQ(tcc_bind_input(s, "one_bf16", &oneBf16, 2), TCC_OK);
  ASSERT_EQ(tcc_bind_input(s, "one_f16", &oneF16, 2), TCC_OK);
}

/// Per param with a working copy: its master rounded (what the copy must
/// hold) and the probe (what the last step read).
struct WorkingView {
  std::vector<std::vector<uint16_t>> rounded, probes;
  std::vector<std::vector<float>> params;
};

WorkingView viewAdamwWorking(tcc_session *s) {
  WorkingView v;
  for (size_t i = 0; i < workingCalls().size(); ++i) {
    const WorkingCall &c = workingCalls()[i];
    std::vector<float> p =
        readParam<float>(s, ("p" + std::to_string(i)).c_str(), size_t(c.n));
    v.params.push_back(p);
    if (!*c.working)
      continue;
    DType t = std::string(c.working) == "bf16" ? DType::BF16 : DType::F16;
    v.rounded.push_back(rounded(t, p));
    v.probes.push_back(readParam<uint16_t>(
        s, ("probe" + std::to_string(i)).c_str(), size_t(c.n)));
  }
  return v;
}

/// Made-up addresses (adamwGroups compares byte ranges only): each slot
/// 16 MiB apart by storage and index, arena values at their offsets.
std::vector<uint8_t *> fakeAddresses(const tcc::rt::Function &fn) {
  using tcc::rt::Storage;
  std::vector<uint8_t *> ptrs;
  for (const tcc::rt::Value &v : fn.values) {
    uintptr_t base = (uintptr_t(1) + uintptr_t(v.storage)) << 40;
    uintptr_t at = v.storage == Storage::Arena
                       ? uintptr_t(v.offset)
                       : uintptr_t(v.index < 0 ? ptrs.size() : v.index) << 24;
    ptrs.push_back(reinterpret_cast<uint8_t *>(base + at));
  }
  return ptrs;
}

using Groups = std::vector<std::vector<size_t>>;

TEST(CudaWorkingGroups, WorkingCopiesJoinTheMultiTensorGroup) {
  TempDir dir("cuda-working-groups");
  adamwWorkingArtifact().write(dir.path);
  tcc::rt::Artifact art = tcc::rt::loadArtifact(dir.path);
  const tcc::rt::Function base = *art.function("train_step");
  auto groups = [](const tcc::rt::Function &fn) {
    std::vector<uint8_t *> ptrs = fakeAddresses(fn);
    return tcc::rt::adamwGroups(fn, ptrs.data(), {});
  };
  const size_t u = kFirstUpdate;
  // bf16, f16 and no working copy, in place and into the arena: one group.
  EXPECT_EQ(groups(base), (Groups{{u, u + 1, u + 2, u + 3}}));
  // Reading a working copy an earlier update of the run writes ends the
  // run there.
  tcc::rt::Function raw = base;
  raw.steps[u + 3].inputs[7] = raw.steps[u].outputs[3];
  EXPECT_EQ(groups(raw), (Groups{{u, u + 1, u + 2}}));
  // ... and writing one into bytes an earlier update reads.
  tcc::rt::Function war = base;
  war.steps[u + 2].outputs[3] = war.steps[u].inputs[1];
  EXPECT_EQ(groups(war), (Groups{{u, u + 1}, {u + 2, u + 3}}));

  // The table carries each tensor's working copy.
  std::vector<uint8_t *> ptrs = fakeAddresses(base);
  int64_t chunks = -1;
  std::vector<char> table = tcc::rt::adamwGroupTable(
      base, {u, u + 1, u + 2, u + 3}, ptrs.data(), {}, chunks);
  ASSERT_EQ(table.size(), cu::adamw_table_bytes(4));
  cu::AdamwTensor e[4];
  std::memcpy(e, table.data(), sizeof e);
  for (int i = 0; i < 4; ++i) {
    const tcc::rt::Step &st = base.steps[u + i];
    SCOPED_TRACE("tensor " + std::to_string(i));
    if (i == 2) {
      EXPECT_EQ(e[i].working.out, nullptr);
      continue;
    }
    EXPECT_EQ(e[i].working.in, ptrs[st.inputs[7]]);
    EXPECT_EQ(e[i].working.out, ptrs[st.outputs[3]]);
    EXPECT_EQ(e[i].working.type,
              i == 1 ? cu::FloatType::F16 : cu::FloatType::BF16);
  }
  EXPECT_EQ(e[0].working.out, e[0].working.in); // in place
  EXPECT_NE(e[3].working.out, e[3].working.in); // into the arena

  // Under ZeRO-1 each tensor is its slice: the parameter, gradient and
  // working copy from the slice's first element (4 bytes and 2 an
  // element), the moments (which hold just the slice) from their first
  // byte. An empty slice leaves the group.
  std::vector<tcc::rt::FunctionBinding::Shard> shards(base.steps.size());
  shards[u] = {1, 2};
  shards[u + 1] = {0, 0};
  shards[u + 2] = {3, 5};
  shards[u + 3] = {7, 1};
  EXPECT_EQ(tcc::rt::adamwGroups(base, ptrs.data(), shards),
            (Groups{{u, u + 2, u + 3}}));
  table = tcc::rt::adamwGroupTable(base, {u, u + 2, u + 3}, ptrs.data(),
                                   shards, chunks);
  ASSERT_EQ(table.size(), cu::adamw_table_bytes(3));
  std::memcpy(e, table.data(), 3 * sizeof e[0]);
  for (int i = 0; i < 3; ++i) {
    size_t k = u + (i == 0 ? 0 : size_t(i) + 1);
    const tcc::rt::Step &st = base.steps[k];
    int64_t first = shards[k].first;
    SCOPED_TRACE("sharded tensor " + std::to_string(i));
    EXPECT_EQ(e[i].n, shards[k].count);
    EXPECT_EQ(reinterpret_cast<const uint8_t *>(e[i].param),
              ptrs[st.inputs[0]] + 4 * first);
    EXPECT_EQ(reinterpret_cast<const uint8_t *>(e[i].grad),
              ptrs[st.inputs[1]] + 4 * first);
    EXPECT_EQ(reinterpret_cast<const uint8_t *>(e[i].expAvg),
              ptrs[st.inputs[2]]);
    EXPECT_EQ(reinterpret_cast<uint8_t *>(e[i].newParam),
              ptrs[st.outputs[0]] + 4 * first);
    EXPECT_EQ(reinterpret_cast<uint8_t *>(e[i].newExpAvgSq),
              ptrs[st.outputs[2]]);
    if (i != 1) {
      EXPECT_EQ(e[i].working.in, ptrs[st.inputs[7]] + 2 * first);
      EXPECT_EQ(e[i].working.out, ptrs[st.outputs[3]] + 2 * first);
    }
  }

  // The artifact is well formed: on the cpu backend the probes read the
  // masters rounded, at open and after each step.
  tcc_session *s = nullptr;
  ASSERT_EQ(tcc_session_open(dir.path.c_str(), nullptr, &s), TCC_OK)
      << tcc_last_error();
  bindAdamwWorking(s);
  WorkingView before = viewAdamwWorking(s);
  for (int step = 0; step < 2; ++step) {
    ASSERT_EQ(tcc_train_step(s, nullptr), TCC_OK) << tcc_last_error();
    WorkingView after = viewAdamwWorking(s);
    EXPECT_EQ(after.probes, before.rounded) << "step " << step;
    EXPECT_NE(after.params, before.params);
    before = after;
  }
  tcc_memory_info m;
  ASSERT_EQ(tcc_memory(s, &m), TCC_OK);
  EXPECT_EQ(m.working_bytes, 2 * (5 + 2 * 16384 + 3 + 1000));
  tcc_session_close(s);
}

TEST_F(Gpu, CudaSessionsKeepWorkingCopiesLikeCpu) {
  TempDir dir("cuda-working-adamw");
  writeAdamwWorking(dir);
  tcc_session *cpu = nullptr, *gpu = nullptr, *single = nullptr;
  ASSERT_EQ(tcc_session_open(dir.path.c_str(), nullptr, &cpu), TCC_OK)
      << tcc_last_error();
  ASSERT_EQ(openOn(dir.path, "cuda", &gpu), TCC_OK) << tcc_last_error();
  ::setenv("TCC_CUDA_MULTI_TENSOR", "0", 1);
  ASSERT_EQ(openOn(dir.path, "cuda", &single), TCC_OK) << tcc_last_error();
  ::unsetenv("TCC_CUDA_MULTI_TENSOR");
  tcc_memory_info mc, mg;
  ASSERT_EQ(tcc_memory(cpu, &mc), TCC_OK);
  ASSERT_EQ(tcc_memory(gpu, &mg), TCC_OK);
  EXPECT_EQ(mg.working_bytes, mc.working_bytes);
  EXPECT_EQ(mg.total_bytes, mc.total_bytes);
  for (tcc_session *s : {cpu, gpu, single})
    bindAdamwWorking(s);
  WorkingView prevC = viewAdamwWorking(cpu), prevG = viewAdamwWorking(gpu);
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    for (tcc_session *s : {cpu, gpu, single})
      ASSERT_EQ(tcc_train_step(s, nullptr), TCC_OK) << tcc_last_error();
    WorkingView c = viewAdamwWorking(cpu), g = viewAdamwWorking(gpu),
                one = viewAdamwWorking(single);
    // Each backend's probes: its masters before the step, rounded.
    EXPECT_EQ(c.probes, prevC.rounded);
    EXPECT_EQ(g.probes, prevG.rounded);
    // The grouped launch and one launch per call: the same bits.
    EXPECT_EQ(one.params, g.params);
    EXPECT_EQ(one.probes, g.probes);
    // cuda's masters against cpu's (bit for bit but for rare pow ties).
    size_t w = 0;
    for (size_t i = 0; i < workingCalls().size(); ++i) {
      if (!*workingCalls()[i].working)
        continue;
      DType t = std::string(workingCalls()[i].working) == "bf16" ? DType::BF16
                                                                 : DType::F16;
      expectAdamwWorking(t, g.params[i], g.rounded[w], c.params[i],
                         c.rounded[w], "p" + std::to_string(i));
      ++w;
    }
    prevC = c;
    prevG = g;
  }
  tcc_session_close(cpu);
  tcc_session_close(gpu);
  tcc_session_close(single);
}

TEST_F(Gpu, CudaSgdSessionMatchesCpuBitForBit) {
  // WorkingTestArtifact.h's SGD plan: probes, masters and the restore path
  // bit for bit on both backends.
  for (DType t : {DType::BF16, DType::F16}) {
    SCOPED_TRACE(tcc::data::dtypeName(t));
    TempDir dir(std::string("cuda-working-sgd-") + tcc::data::dtypeName(t));
    TestArtifact a = workingArtifact(t);
    a.manifest["files"]["cuda_kernels"] = "kernels/kernels.fatbin";
    a.write(dir.path);
    installTestFatbin(dir);
    tcc_session *cpu = nullptr, *gpu = nullptr;
    ASSERT_EQ(tcc_session_open(dir.path.c_str(), nullptr, &cpu), TCC_OK)
        << tcc_last_error();
    ASSERT_EQ(openOn(dir.path, "cuda", &gpu), TCC_OK) << tcc_last_error();
    bindWorking(cpu, t);
    bindWorking(gpu, t);
    std::vector<uint16_t> w0 = workingW0Bits(t);
    w0.push_back(halfBits(t, workingB0()));
    const char *written = nullptr;
    for (int step = 0; step < 3; ++step) {
      ASSERT_EQ(tcc_train_step(cpu, nullptr), TCC_OK) << tcc_last_error();
      ASSERT_EQ(tcc_train_step(gpu, nullptr), TCC_OK) << tcc_last_error();
      std::vector<uint16_t> probes = readProbes(gpu);
      EXPECT_EQ(probes, readProbes(cpu)) << "step " << step;
      if (step == 0)
        EXPECT_EQ(probes, w0);
      EXPECT_EQ(readParam<float>(gpu, "w", 3), readParam<float>(cpu, "w", 3));
      EXPECT_EQ(readParam<float>(gpu, "b", 1), readParam<float>(cpu, "b", 1));
      if (step == 0)
        ASSERT_EQ(tcc_save_checkpoint(cpu, (dir / "ckpt").c_str(), 0, nullptr,
                                      &written),
                  TCC_OK)
            << tcc_last_error();
    }
    // tcc_write_param and a restore into the cuda session.
    std::vector<float> nw = {0.333333343f, -65519.0f, 3.0e-6f};
    ASSERT_EQ(tcc_write_param(gpu, "w", nw.data(), 12), TCC_OK);
    ASSERT_EQ(tcc_write_param(cpu, "w", nw.data(), 12), TCC_OK);
    ASSERT_EQ(tcc_train_step(cpu, nullptr), TCC_OK) << tcc_last_error();
    ASSERT_EQ(tcc_train_step(gpu, nullptr), TCC_OK) << tcc_last_error();
    EXPECT_EQ(readProbes(gpu), readProbes(cpu));
    EXPECT_EQ(readProbes(gpu)[0], halfBits(t, nw[0]));
    std::string ckpt = written;
    ASSERT_EQ(tcc_restore_checkpoint(gpu, ckpt.c_str(), nullptr, nullptr),
              TCC_OK)
        << tcc_last_error();
    ASSERT_EQ(tcc_restore_checkpoint(cpu, ckpt.c_str(), nullptr, nullptr),
              TCC_OK)
        << tcc_last_error();
    std::vector<uint16_t> restored = roundedMasters(cpu, t);
    ASSERT_EQ(tcc_train_step(cpu, nullptr), TCC_OK) << tcc_last_error();
    ASSERT_EQ(tcc_train_step(gpu, nullptr), TCC_OK) << tcc_last_error();
    EXPECT_EQ(readProbes(gpu), restored);
    EXPECT_EQ(readProbes(cpu), restored);
    tcc_session_close(cpu);
    tcc_session_close(gpu);
  }
}

} // namespace
} // namespace tcc::gputest
