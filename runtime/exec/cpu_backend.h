//===- cpu_backend.h - running plan steps on the host -----------*- C++ -*-===//
//
// Kernel steps call the generated kernels of kernels/host.so (ABI in
// runtime/kernels/tcc_kernel.h), splitting large ones over a few threads;
// call steps run runtime/kernels/cpu (f32; bf16/f16 operands widened to f32
// and results rounded once) and the dropout hash of
// runtime/kernels/dropout_hash.h. Memory is host memory. What the backend
// cannot run is refused when the session opens, never when a step runs.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_EXEC_CPU_BACKEND_H
#define TCC_RUNTIME_EXEC_CPU_BACKEND_H

#include "exec/allocator.h"
#include "exec/backend.h"
#include "exec/dp.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tcc::rt {

/// Why the CPU backend cannot run call `step` of `fn`, or "" when it can.
std::string cpuUnsupported(const Function &fn, const Step &step);

using KernelFn = void (*)(const void *const *inputs, void *output,
                          int64_t begin, int64_t end);

/// Host memory (kHostAlignment-aligned; from calloc, where large blocks
/// stay untouched zero pages until used, or from the caller's allocator)
/// and the steps run on the calling thread.
class CpuBackend final : public Backend {
public:
  /// Refuses (TCC_ERROR_BACKEND) a call the backend cannot run, naming the
  /// function, step and op; dlopens host.so when there are kernel steps and
  /// resolves every symbol (TCC_ERROR_FORMAT naming a missing one).
  /// `options` passed checkBackendOptions.
  CpuBackend(const SessionOptions &options, const Artifact &artifact);
  ~CpuBackend() override;

  const char *name() const override { return "cpu"; }
  /// The OpenBLAS kernels chosen for this CPU, when tcc chose them
  /// (cpu::selectBlasKernels).
  const std::string &notes() const override;
  uint8_t *allocate(size_t bytes, const std::string &what) override;
  void upload(uint8_t *dst, const void *src, size_t bytes) override;
  void download(void *dst, const uint8_t *src, size_t bytes) override;
  void prepare(const Bindings &bindings) override;
  void run(size_t f, int64_t step) override;
  void runProfiled(size_t f, int64_t step, std::vector<double> &ms) override;
  int rank() const override { return group ? group->rank() : 0; }
  int ranks() const override { return group ? group->size() : 1; }
  void startGather(uint8_t *buf, const std::vector<int64_t> &offsets,
                   const std::vector<int64_t> &counts,
                   const std::string &what) override;
  void startGatherToRoot(const uint8_t *mine, uint8_t *all,
                         const std::vector<int64_t> &offsets,
                         const std::vector<int64_t> &counts,
                         const std::string &what) override;
  void finishExchange() override;

private:
  /// run(f, step); with `ms` non-null, ms[s] receives step s's wall time.
  void runSteps(size_t f, int64_t step, double *ms);
  /// Runs step `s` of `artifact.functions[fnIndex]`; `ptrs[v]` is the
  /// address of value v.
  void runStep(size_t fnIndex, size_t s, uint8_t *const *ptrs) const;

  /// Collective step `s` over the group: starts its reductions in place in
  /// the outputs (each input copied there first); `scatter`:
  /// FunctionBinding::scatterGradients.
  void startCollective(const Function &fn, size_t s, uint8_t *const *ptrs,
                       bool scatter);

  const Artifact &artifact;
  Allocator memory; // allocate()'s
  /// The data-parallel group (TCC_COMMUNICATOR_MPI), or null: one rank.
  std::unique_ptr<dp::Group> group;
  /// Per function and step: whether the step reads a collective's result,
  /// so a started reduction must finish first.
  std::vector<std::vector<bool>> readsCollective;
  const Bindings *bindings = nullptr;
  void *handle = nullptr;
  std::vector<std::vector<KernelFn>> kernels; // [function][step]
  /// Calls with bf16/f16 operands or results [function][step]: they run on
  /// f32 copies in `wide` (the most any one needs), addressed through
  /// `widePtrs` (the function's value addresses with those redirected).
  std::vector<std::vector<bool>> wideCalls;
  uint8_t *wide = nullptr;
  mutable std::vector<uint8_t *> widePtrs;
  /// The valid tokens the running function's pack_index step found: what
  /// its calls over packed token rows (Step::tokenRows) run over.
  mutable int64_t tokenCount = 0;
};

} // namespace tcc::rt

#endif // TCC_RUNTIME_EXEC_CPU_BACKEND_H
