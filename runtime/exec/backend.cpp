//===- backend.cpp - choosing a session's backend --------------------------===//

#include "exec/backend.h"

#include "exec/cpu_backend.h"
#ifdef TCC_HAVE_CUDA_BACKEND
#include "exec/cuda_backend.h"
#endif

namespace tcc::rt {

bool haveCudaBackend() {
#ifdef TCC_HAVE_CUDA_BACKEND
  return true;
#else
  return false;
#endif
}

void checkBackendOptions(const SessionOptions &options) {
  const std::string &name = options.backend;
  if (name == "cuda" && !haveCudaBackend())
    fail(TCC_ERROR_BACKEND, "backend 'cuda' is not available: this runtime "
                            "was built without CUDA");
  if (name != "cpu" && name != "cuda")
    fail(TCC_ERROR_BACKEND, "backend '" + name +
                                "' is not available; this runtime has: cpu" +
                                (haveCudaBackend() ? ", cuda" : ""));
  if (name != "cpu")
    return;
  // Host memory is one device; a stream or NCCL here is a caller's mistake.
  if (options.device != 0)
    fail(TCC_ERROR_ARGUMENT, "backend 'cpu' has one device, 0: device " +
                                 std::to_string(options.device) +
                                 " does not exist");
  if (options.stream)
    fail(TCC_ERROR_ARGUMENT,
         "backend 'cpu' takes no stream (tcc_session_options.stream is a "
         "CUDA stream)");
  if (options.communicatorKind == TCC_COMMUNICATOR_NCCL)
    fail(TCC_ERROR_ARGUMENT,
         "backend 'cpu' cannot use an NCCL communicator (its collectives "
         "go through MPI)");
}

/// A session is one rank until the data-parallel runtime fills the
/// communicator slot: collectives planned for more ranks cannot run.
static void checkRanks(const Artifact &art) {
  for (const Function &fn : art.functions)
    for (size_t s = 0; s < fn.steps.size(); ++s) {
      const Step &step = fn.steps[s];
      if (step.kind == Step::Collective && step.worldSize != 1)
        fail(TCC_ERROR_BACKEND,
             art.file("plan") + ": " + fn.name + " step " + std::to_string(s) +
                 " (" + collectiveName(step.collective) + ") was planned for " +
                 std::to_string(step.worldSize) +
                 " ranks; this session runs one");
    }
}

void runOneRank(
    const Step &step, const Function &fn, uint8_t *const *ptrs,
    const std::function<void(uint8_t *, const uint8_t *, size_t)> &copy) {
  for (size_t i = 0; i < step.inputs.size(); ++i) {
    uint8_t *out = ptrs[step.outputs[i]];
    const uint8_t *in = ptrs[step.inputs[i]];
    if (out != in)
      copy(out, in, size_t(fn.values[step.outputs[i]].bytes));
  }
}

std::unique_ptr<Backend> makeBackend(const SessionOptions &options,
                                     const Artifact &artifact) {
  checkBackendOptions(options);
  checkRanks(artifact);
  if (options.backend == "cuda" &&
      options.communicatorKind == TCC_COMMUNICATOR_MPI)
    fail(TCC_ERROR_BACKEND, "backend 'cuda' runs collectives over NCCL "
                            "(TCC_COMMUNICATOR_NCCL), not MPI");
#ifdef TCC_HAVE_CUDA_BACKEND
  if (options.backend == "cuda")
    return makeCudaBackend(options, artifact);
#endif
  return std::make_unique<CpuBackend>(options, artifact);
}

} // namespace tcc::rt
