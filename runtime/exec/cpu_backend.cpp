//===- cpu_backend.cpp - running plan steps on the host -------------------===//

#include "exec/cpu_backend.h"
#include "exec/cpu_calls.h"
#include "exec/zero.h"
#include "plan/calls.h"

#include "data/half.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel.h"

#include <dlfcn.h>
#include <link.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>

namespace tcc::rt {

using data::DType;

namespace {

/// fn over [0, n), split into contiguous chunks on the persistent worker
/// threads (kernels/cpu/parallel.h) when n is large. Every element is
/// computed by itself, so the split cannot change a result.
void runKernel(KernelFn fn, const void *const *inputs, void *output,
               int64_t n) {
  constexpr int64_t MinChunk = int64_t(1) << 15;
  cpu::parallel_for(n, MinChunk, [&](int64_t begin, int64_t end) {
    fn(inputs, output, begin, end);
  });
}




bool isHalf(DType t) { return t == DType::BF16 || t == DType::F16; }

/// f32 bytes a widened value takes in the scratch (64-byte aligned).
int64_t wideBytes(const Value &v) {
  return (std::max<int64_t>(v.elements, 1) * 4 + 63) / 64 * 64;
}

/// The positions of an optimizer update's working copy (operand working,
/// result new_working), or {-1, -1}: the kernel reads and writes those
/// 16-bit values itself, they are never widened.
std::pair<int, int> workingPositions(const Step &step) {
  if (step.kind == Step::Call && step.op == Op::SgdUpdate)
    return {5, 2};
  if (step.kind == Step::Call && step.op == Op::AdamwUpdate)
    return {7, 3};
  return {-1, -1};
}

/// Whether operand (`output` false) or result `i` of `step` is a bf16/f16
/// value the CPU backend widens for the call.
bool widened(const Function &fn, const Step &step, bool output, size_t i) {
  int64_t id = output ? step.outputs[i] : step.inputs[i];
  if (id < 0 || !isHalf(fn.values[id].dtype))
    return false;
  if (step.op == Op::Pack || step.op == Op::Unpack)
    return false; // they move rows of any dtype as bytes
  std::pair<int, int> w = workingPositions(step);
  return int(i) != (output ? w.second : w.first);
}

/// The f32 scratch bytes call `step` needs: one widened copy per distinct
/// bf16/f16 operand and one f32 result per bf16/f16 output; 0 when it has
/// none.
int64_t wideScratchBytes(const Function &fn, const Step &step) {
  int64_t bytes = 0;
  std::vector<int64_t> seen;
  for (bool output : {false, true}) {
    const std::vector<int64_t> &ids = output ? step.outputs : step.inputs;
    for (size_t i = 0; i < ids.size(); ++i)
      if (widened(fn, step, output, i) &&
          std::find(seen.begin(), seen.end(), ids[i]) == seen.end()) {
        seen.push_back(ids[i]);
        bytes += wideBytes(fn.values[ids[i]]);
      }
  }
  return bytes;
}

/// 16-bit values -> f32, exactly.
void widen(DType t, const uint8_t *src, float *dst, int64_t n) {
  const uint16_t *h = reinterpret_cast<const uint16_t *>(src);
  if (t == DType::BF16)
    for (int64_t i = 0; i < n; ++i)
      dst[i] = data::bf16ToFloat(h[i]);
  else
    for (int64_t i = 0; i < n; ++i)
      dst[i] = data::f16ToFloat(h[i]);
}

/// f32 -> 16-bit values, rounded once to nearest even.
void narrow(DType t, const float *src, uint8_t *dst, int64_t n) {
  uint16_t *h = reinterpret_cast<uint16_t *>(dst);
  if (t == DType::BF16)
    for (int64_t i = 0; i < n; ++i)
      h[i] = data::floatToBf16(src[i]);
  else
    for (int64_t i = 0; i < n; ++i)
      h[i] = data::floatToF16(src[i]);
}

} // namespace

std::string cpuUnsupported(const Function &fn, const Step &step) {
  auto dtypeOf = [&](size_t i) { return fn.values[step.inputs[i]].dtype; };
  std::string op = opName(step.op);
  // The float type the op stores: gather_grad's first operand is the
  // indices; everything else leads with a float tensor. bf16/f16 operands
  // and results are widened to f32 for the call and its results rounded
  // once (runStep), as the interpreter does.
  if (step.op == Op::Pack || step.op == Op::Unpack || step.op == Op::PackIndex)
    return "";
  if (step.op == Op::SegmentIndex)
    return dtypeOf(0) == DType::I64 || dtypeOf(0) == DType::I32
               ? ""
               : "the cpu backend takes i64 or i32 position_ids";
  DType main = dtypeOf(step.op == Op::GatherGrad ? 1 : 0);
  bool f64Ok = step.op == Op::Dropout;
  if (main != DType::F32 && !isHalf(main) && !(f64Ok && main == DType::F64))
    return "the cpu backend runs " + op + " on f32, bf16" +
           (f64Ok ? std::string(", f16 and f64") : std::string(" and f16")) +
           " only, not " + data::dtypeName(main);
  auto fitsInt = [](int64_t v) { return v <= INT_MAX; };
  switch (step.op) {
  case Op::GatherGrad:
    if (step.attrs.axis != 0)
      return "the cpu backend runs gather_grad on axis 0 only (the embedding "
             "gradient), not axis " +
             std::to_string(step.attrs.axis);
    break;
  case Op::Matmul:
  case Op::Gemm: {
    const Value &out = fn.values[step.outputs[0]];
    for (size_t i = 0; i < 2; ++i)
      for (int64_t d : fn.values[step.inputs[i]].shape)
        if (!fitsInt(d))
          return "a dim of " + std::to_string(d) +
                 " exceeds what the BLAS takes";
    for (int64_t d : out.shape)
      if (!fitsInt(d))
        return "a dim of " + std::to_string(d) + " exceeds what the BLAS takes";
    break;
  }
  default:
    break;
  }
  return "";
}

const std::string &CpuBackend::notes() const {
  return cpu::selectBlasKernels();
}

CpuBackend::CpuBackend(const SessionOptions &options, const Artifact &art)
    : artifact(art), memory(options.allocator, callocAllocator(),
                            TCC_MEMORY_HOST, kHostAlignment) {
  cpu::selectBlasKernels(); // before the first GEMM

  for (const Function &fn : art.functions)
    for (size_t s = 0; s < fn.steps.size(); ++s) {
      const Step &step = fn.steps[s];
      if (step.kind != Step::Call)
        continue;
      std::string why = cpuUnsupported(fn, step);
      if (!why.empty())
        fail(TCC_ERROR_BACKEND, art.file("plan") + ": " + fn.name + " step " +
                                    std::to_string(s) + " (" +
                                    opName(step.op) + "): " + why);
    }
  if (options.communicatorKind == TCC_COMMUNICATOR_MPI) {
    group = dp::openGroup(options.communicator, options.collectiveTimeout);
    // Without collectives the ranks would each train a model of their own.
    for (const Function &fn : art.functions)
      if (fn.name == "train_step" && group->size() > 1 &&
          std::none_of(fn.steps.begin(), fn.steps.end(), [](const Step &s) {
            return s.kind == Step::Collective;
          }))
        fail(TCC_ERROR_BACKEND, art.file("plan") +
                                    ": train_step has no all_reduce, so it "
                                    "cannot train on " +
                                    std::to_string(group->size()) +
                                    " ranks (compile with --data-parallel)");
    readsCollective.resize(art.functions.size());
    for (size_t f = 0; f < art.functions.size(); ++f) {
      const Function &fn = art.functions[f];
      std::vector<bool> reduced(fn.values.size(), false);
      readsCollective[f].assign(fn.steps.size(), false);
      for (size_t s = 0; s < fn.steps.size(); ++s) {
        const Step &step = fn.steps[s];
        for (int64_t id : step.inputs)
          if (id >= 0 && reduced[id])
            readsCollective[f][s] = true;
        if (step.kind != Step::Collective)
          continue;
        for (int64_t id : step.outputs) {
          reduced[id] = true;
          if (!dp::reducible(fn.values[id].dtype))
            fail(TCC_ERROR_BACKEND, art.file("plan") + ": " + fn.name +
                                        " step " + std::to_string(s) + " (" +
                                        collectiveName(step.collective) +
                                        "): cannot reduce " +
                                        data::dtypeName(fn.values[id].dtype) +
                                        " over MPI (f32, f64, i32, i64)");
        }
      }
    }
  }
  kernels.resize(art.functions.size());
  for (size_t f = 0; f < art.functions.size(); ++f)
    kernels[f].assign(art.functions[f].steps.size(), nullptr);
  // The f32 scratch of the calls with bf16/f16 operands: the most one needs.
  wideCalls.resize(art.functions.size());
  int64_t scratch = 0;
  for (size_t f = 0; f < art.functions.size(); ++f) {
    const Function &fn = art.functions[f];
    wideCalls[f].assign(fn.steps.size(), false);
    for (size_t s = 0; s < fn.steps.size(); ++s) {
      if (fn.steps[s].kind != Step::Call)
        continue;
      int64_t bytes = wideScratchBytes(fn, fn.steps[s]);
      wideCalls[f][s] = bytes > 0;
      scratch = std::max(scratch, bytes);
    }
  }
  wide = allocate(size_t(scratch), "the f32 scratch of the bf16/f16 calls");
  if (!art.hasKernelSteps())
    return;
  std::string path = art.file("host_kernels");
  if (::access(path.c_str(), R_OK) != 0)
    fail(TCC_ERROR_IO, path + ": cannot read the host kernels: " +
                           std::strerror(errno));
  handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *err = ::dlerror();
    fail(TCC_ERROR_FORMAT, path + ": cannot load the host kernels: " +
                               (err ? err : "unknown dlopen error"));
  }
  // Only the plan's kernel table is resolved, and only to code inside
  // host.so itself: a name that dlsym would find in a library host.so
  // depends on (libc's abort, free) is no kernel.
  struct link_map *self = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &self) != 0 || !self)
    fail(TCC_ERROR_FORMAT, path + ": cannot inspect the loaded host kernels");
  std::map<std::string, KernelFn> table;
  for (const KernelSignature &k : art.kernels) {
    ::dlerror();
    void *sym = ::dlsym(handle, k.symbol.c_str());
    Dl_info info{};
    if (!sym || !::dladdr(sym, &info) || !info.dli_fname ||
        std::strcmp(info.dli_fname, self->l_name) != 0) {
      ::dlclose(handle);
      handle = nullptr;
      fail(TCC_ERROR_FORMAT, path + ": no kernel '" + k.symbol + "'");
    }
    table[k.symbol] = reinterpret_cast<KernelFn>(sym);
  }
  for (size_t f = 0; f < art.functions.size(); ++f) {
    const Function &fn = art.functions[f];
    for (size_t s = 0; s < fn.steps.size(); ++s)
      if (fn.steps[s].kind == Step::Kernel)
        kernels[f][s] = table.at(fn.steps[s].symbol);
  }
}

CpuBackend::~CpuBackend() {
  if (handle)
    ::dlclose(handle);
}

uint8_t *CpuBackend::allocate(size_t size, const std::string &what) {
  uint8_t *p = memory.allocate(size, what);
  if (p && memory.hooked()) // calloc's blocks are clear already
    std::memset(p, 0, size);
  return p;
}

void CpuBackend::upload(uint8_t *dst, const void *src, size_t bytes) {
  if (bytes)
    std::memcpy(dst, src, bytes);
}

void CpuBackend::download(void *dst, const uint8_t *src, size_t bytes) {
  if (bytes)
    std::memcpy(dst, src, bytes);
}

void CpuBackend::prepare(const Bindings &b) { bindings = &b; }

void CpuBackend::run(size_t f, int64_t step) { runSteps(f, step, nullptr); }

void CpuBackend::runProfiled(size_t f, int64_t step, std::vector<double> &ms) {
  ms.assign(artifact.functions[f].steps.size(), 0.0);
  runSteps(f, step, ms.data());
}

void CpuBackend::runSteps(size_t f, int64_t step, double *ms) {
  using Clock = std::chrono::steady_clock;
  const FunctionBinding &fb = bindings->functions[f];
  const Function &fn = artifact.functions[f];
  std::memcpy(bindings->step, &step, sizeof(int64_t));
  auto poison = [&](size_t i) {
    if (!fb.poison.empty())
      for (const ByteRange &r : fb.poison[i])
        std::memset(bindings->arena + r.begin, 0xFF, size_t(r.end - r.begin));
  };
  for (size_t i = 0; i < fn.steps.size(); ++i) {
    poison(i);
    if (group) {
      // A bucket's reduction runs while the rest of backward does; a step
      // that reads a result waits for it.
      if (readsCollective[f][i])
        group->waitAll();
      else
        group->progress();
      if (fn.steps[i].kind == Step::Collective) {
        Clock::time_point start = Clock::now();
        startCollective(fn, i, fb.ptrs.data(), fb.scatterGradients);
        if (ms)
          ms[i] =
              std::chrono::duration<double, std::milli>(Clock::now() - start)
                  .count();
        continue;
      }
    }
    if (!ms) {
      runStep(f, i, fb.ptrs.data());
      continue;
    }
    // Steps run on this thread and wait for the pool threads they use (kernel
    // chunks, OpenBLAS), so the wall time around one is its whole cost.
    Clock::time_point start = Clock::now();
    runStep(f, i, fb.ptrs.data());
    ms[i] = std::chrono::duration<double, std::milli>(Clock::now() - start)
                .count();
  }
  if (group)
    group->waitAll();
  poison(fn.steps.size());
  for (const FunctionBinding::Copy &c : fb.resultCopies)
    std::memmove(c.dst, c.src, c.bytes);
}

namespace {

/// While a step runs, subnormal floats are flushed to zero (FTZ) and read
/// as zero (DAZ), as GPUs' fast paths do: arithmetic on them is ~100x
/// slower on x86, and GELU tails, softmax tails and their gradients make
/// them common (the tiny GPT of test/bench/gpt_bench.py: 0.45 s -> 0.23 s a
/// step). Results change only below FLT_MIN (1.2e-38). The caller's
/// floating-point environment is restored after the step. Threads the step
/// runs on (kernels/cpu/parallel.h) take the mode; OpenBLAS's pool threads keep
/// their own.
class FlushSubnormals {
#if defined(__x86_64__) || defined(__i386__)
  unsigned saved = _mm_getcsr();

public:
  FlushSubnormals() { _mm_setcsr(saved | 0x8040); } // FTZ | DAZ
  ~FlushSubnormals() { _mm_setcsr(saved); }
#endif
};

/// ZeRO-1: optimizer update step `s` on the parameter's elements
/// [shard.first, shard.first + shard.count) (FunctionBinding::shards). The
/// parameter, gradient and working copy are read and written at that
/// offset, the optimizer-state slices from their first byte; the rest of
/// the parameter is gathered from the other ranks after the step.
void runShardedUpdate(const Function &fn, size_t s, uint8_t *const *ptrs,
                      FunctionBinding::Shard shard) {
  const Step &step = fn.steps[s];
  const Attrs &a = step.attrs;
  bool adamw = step.op == Op::AdamwUpdate;
  // The operands as zero.h's updateState and runCall's keep() count them.
  size_t skipIn = adamw ? 6 : 4, workingIn = adamw ? 7 : 5,
         workingOut = adamw ? 3 : 2;
  auto sliced = [&](int64_t id, bool state) -> uint8_t * {
    if (id < 0)
      return nullptr;
    size_t elem = data::dtypeSize(fn.values[id].dtype);
    return ptrs[id] + (state ? 0 : size_t(shard.first) * elem);
  };
  auto in = [&](size_t i, bool state = false) {
    return reinterpret_cast<float *>(
        i < step.inputs.size() ? sliced(step.inputs[i], state) : nullptr);
  };
  auto out = [&](size_t o, bool state = false) {
    return reinterpret_cast<float *>(
        o < step.outputs.size() ? sliced(step.outputs[o], state) : nullptr);
  };
  cpu::WorkingCopy working;
  if (workingOut < step.outputs.size() && step.outputs[workingOut] >= 0) {
    working.data = reinterpret_cast<uint16_t *>(out(workingOut));
    working.bf16 = fn.values[step.outputs[workingOut]].dtype == DType::BF16;
  }
  int64_t skip = skipIn < step.inputs.size() ? step.inputs[skipIn] : -1;
  if (skip >= 0 && *ptrs[skip] != 0) {
    // Dynamic loss scaling skipped the step: the results are the operands.
    std::vector<std::pair<size_t, size_t>> pairs = updateState(step);
    pairs.push_back({0, 0});
    pairs.push_back({workingIn, workingOut});
    for (auto [i, o] : pairs) {
      bool state = i != 0 && i != workingIn;
      if (i >= step.inputs.size() || o >= step.outputs.size() ||
          step.inputs[i] < 0 || step.outputs[o] < 0)
        continue;
      auto *src = reinterpret_cast<uint8_t *>(in(i, state));
      auto *dst = reinterpret_cast<uint8_t *>(out(o, state));
      if (src != dst)
        std::memmove(dst, src,
                     size_t(shard.count) *
                         data::dtypeSize(fn.values[step.outputs[o]].dtype));
    }
    return;
  }
  if (!adamw) {
    double lr = *reinterpret_cast<const double *>(ptrs[step.inputs[2]]);
    cpu::sgd_update(in(0), in(1), in(3, true), out(0), out(1, true),
                    shard.count, lr, a.momentum, a.weightDecay, a.nesterov,
                    working);
    return;
  }
  double lr = *reinterpret_cast<const double *>(ptrs[step.inputs[4]]);
  int64_t t = *reinterpret_cast<const int64_t *>(ptrs[step.inputs[5]]);
  if (!cpu::adamw_update(in(0), in(1), in(2, true), in(3, true), out(0),
                         out(1, true), out(2, true), shard.count, lr, t,
                         a.beta1, a.beta2, a.eps, a.weightDecay, working))
    fail(TCC_ERROR_FORMAT, fn.name + " step " + std::to_string(s) +
                               " (adamw_update): step " + std::to_string(t) +
                               " is not a valid AdamW step (the first update "
                               "is step 1): the plan computes the step "
                               "operand wrongly");
}

} // namespace

void CpuBackend::runStep(size_t fnIndex, size_t s,
                         uint8_t *const *ptrs) const {
  FlushSubnormals flush;
  const Function &fn = artifact.functions[fnIndex];
  const Step &step = fn.steps[s];
  if (step.kind == Step::Collective) {
    runOneRank(step, fn, ptrs, [](uint8_t *dst, const uint8_t *src,
                                  size_t bytes) {
      std::memmove(dst, src, bytes);
    });
    return;
  }
  if (step.kind == Step::Kernel) {
    // The inputs, then the stores' buffers (outputs 1..).
    const size_t args = step.inputs.size() + step.outputs.size() - 1;
    const void *stackInputs[16];
    std::vector<const void *> heapInputs;
    const void **inputs = stackInputs;
    if (args > 16) {
      heapInputs.resize(args);
      inputs = heapInputs.data();
    }
    for (size_t i = 0; i < step.inputs.size(); ++i)
      inputs[i] = ptrs[step.inputs[i]];
    for (size_t o = 1; o < step.outputs.size(); ++o)
      inputs[step.inputs.size() + o - 1] = ptrs[step.outputs[o]];
    // Over packed token rows: the valid ones, the rest written as zero.
    int64_t elements = step.elements;
    if (step.tokenRows > 0)
      elements = step.elements / step.tokenRows *
                 std::min(tokenCount, step.tokenRows);
    runKernel(kernels[fnIndex][s], inputs, ptrs[step.outputs[0]], elements);
    if (elements < step.elements) {
      size_t size = data::dtypeSize(fn.values[step.outputs[0]].dtype);
      std::memset(ptrs[step.outputs[0]] + size_t(elements) * size, 0,
                  size_t(step.elements - elements) * size);
    }
    return;
  }
  const std::vector<FunctionBinding::Shard> &shards =
      bindings->functions[fnIndex].shards;
  if (!shards.empty() && shards[s].count >= 0) {
    runShardedUpdate(fn, s, ptrs, shards[s]);
    return;
  }
  if (!wideCalls[fnIndex][s]) {
    runCall(artifact, fn, s, ptrs, tokenCount);
    return;
  }

  // bf16/f16 operands and results (the interpreter's rule): the call runs
  // its f32 code on inputs widened exactly into the scratch, and each f32
  // result is rounded once, to nearest even, into its 16-bit value.
  // (An optimizer's working copy is not widened: its kernel writes it.)
  widePtrs.assign(ptrs, ptrs + fn.values.size());
  uint8_t *next = wide;
  auto redirect = [&](bool output, size_t i) {
    int64_t id = output ? step.outputs[i] : step.inputs[i];
    if (!widened(fn, step, output, i) || widePtrs[id] != ptrs[id])
      return false; // not widened, or already redirected
    widePtrs[id] = next;
    next += wideBytes(fn.values[id]);
    return true;
  };
  for (size_t i = 0; i < step.inputs.size(); ++i)
    if (redirect(false, i)) {
      int64_t id = step.inputs[i];
      widen(fn.values[id].dtype, ptrs[id],
            reinterpret_cast<float *>(widePtrs[id]), fn.values[id].elements);
    }
  for (size_t i = 0; i < step.outputs.size(); ++i)
    redirect(true, i);
  runCall(artifact, fn, s, widePtrs.data(), tokenCount);
  for (size_t i = 0; i < step.outputs.size(); ++i)
    if (widened(fn, step, true, i)) {
      int64_t id = step.outputs[i];
      narrow(fn.values[id].dtype, reinterpret_cast<const float *>(widePtrs[id]),
             ptrs[id], fn.values[id].elements);
    }
}


} // namespace tcc::rt
