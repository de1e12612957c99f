//===- cpu_backend.h - running plan steps on the host -----------*- C++ -*-===//
//
// Kernel steps call the generated kernels of kernels/host.so (ABI in
// runtime/kernels/tcc_kernel.h), splitting large ones over a few threads;
// call steps run runtime/kernels/cpu (f32) and the dropout hash of
// include/tcc/Interp/DropoutHash.h. What the backend cannot run is refused
// when the session opens, never when a step runs.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_EXEC_CPU_BACKEND_H
#define TCC_RUNTIME_EXEC_CPU_BACKEND_H

#include "exec/artifact.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tcc::rt {

/// Why the CPU backend cannot run call `step` of `fn`, or "" when it can.
std::string cpuUnsupported(const Function &fn, const Step &step);

using KernelFn = void (*)(const void *const *inputs, void *output,
                          int64_t begin, int64_t end);

class CpuBackend {
public:
  /// Refuses (TCC_ERROR_BACKEND) a call the backend cannot run, naming the
  /// function, step and op; dlopens host.so when there are kernel steps and
  /// resolves every symbol (TCC_ERROR_FORMAT naming a missing one).
  explicit CpuBackend(const Artifact &artifact);
  ~CpuBackend();
  CpuBackend(const CpuBackend &) = delete;
  CpuBackend &operator=(const CpuBackend &) = delete;

  /// Runs step `s` of `artifact.functions[fnIndex]`; `ptrs[v]` is the
  /// address of value v. Throws TCC_ERROR_DATA for a label or id out of
  /// range, naming the input and the row.
  void run(size_t fnIndex, size_t s, uint8_t *const *ptrs) const;

private:
  const Artifact &artifact;
  void *handle = nullptr;
  std::vector<std::vector<KernelFn>> kernels; // [function][step]
};

} // namespace tcc::rt

#endif // TCC_RUNTIME_EXEC_CPU_BACKEND_H
