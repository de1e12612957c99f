//===- gpu_cost.h - `tcc inspect --gpu`: a per-step GPU cost model -*- C++ -*-===//
//
// An estimate, from the plan alone (no GPU), of what each step of a
// function costs on a named GPU: its launch (grid, threads), the bytes it
// moves (every operand read once, every result written once), its FLOPs
// (library calls by their op's arithmetic; a generated kernel one per input
// element it reads), and a time
//
//   max(max(bytes / bandwidth, FLOPs / rate) / efficiency,
//       serial loop * iteration) + launch
//
// (efficiency: the fraction of that roofline each family of steps reached
// in the first measured run, gpu_cost.cpp),
// with the rate of the unit the step runs on (bf16/f16 GEMMs and attention
// on tensor cores; f32 GEMMs on TF32 tensor cores when TCC_CUDA_TF32 is
// set, else the FMA units; f32 attention on the FMA units), `serial loop`
// the elements one thread of a generated kernel sums one after another (a
// reduction or gather_grad), and `iteration` what one such iteration costs
// (a memory latency over the loads in flight). It flags the generated
// kernels that cannot fill the device: fewer threads than one wave (every
// multiprocessor's 2048) where they read or write at least a wave of
// elements, or a serial loop longer than 64. A kernel with less work than
// a wave (a scalar, a 768-element vector) cannot fill one however it is
// launched: it is marked launch-bound and counted apart. The device
// numbers are in gpu_cost.cpp with where each comes from; docs/benchmarks.md
// puts the prediction beside the measured profile.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_EXEC_GPU_COST_H
#define TCC_RUNTIME_EXEC_GPU_COST_H

#include "exec/artifact.h"

#include <ostream>
#include <string>
#include <vector>

namespace tcc::rt {

struct GpuSpec {
  const char *name;        ///< "h200"
  const char *description; ///< where the numbers come from
  int sms;                 ///< streaming multiprocessors
  double bandwidth;        ///< achievable device memory bytes/s
  double bf16;             ///< dense bf16/f16 tensor-core FLOP/s
  double tf32;             ///< dense TF32 tensor-core FLOP/s
  double fp32;             ///< FP32 FMA FLOP/s
  double launchGraph;      ///< seconds per kernel launched in a CUDA graph
  double launchEager;      ///< seconds per kernel launched one by one
  double iteration;        ///< seconds per serial-loop iteration of a thread
};

/// The spec called `name` (h100, h200, a100), or null.
const GpuSpec *findGpuSpec(const std::string &name);
/// "h100, h200, a100".
std::string gpuSpecNames();

/// Prints the cost model of every function of `art` on `gpu`: the
/// predicted time per family, tokens/s, the flagged kernels, then every
/// step. `tf32`: f32 GEMMs on TF32 (TCC_CUDA_TF32=1).
void printGpuCost(const Artifact &art, const GpuSpec &gpu, bool tf32,
                  std::ostream &out);

/// The predicted seconds of each step of `fn` with CUDA graphs (its time
/// and a graph launch; a collective step 0), as printGpuCost sums them.
std::vector<double> gpuStepSeconds(const Artifact &art, const Function &fn,
                                   const GpuSpec &gpu, bool tf32);

} // namespace tcc::rt

#endif // TCC_RUNTIME_EXEC_GPU_COST_H
