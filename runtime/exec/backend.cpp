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

void checkBackendName(const std::string &name) {
  if (name == "cpu" || (name == "cuda" && haveCudaBackend()))
    return;
  if (name == "cuda")
    fail(TCC_ERROR_BACKEND, "backend 'cuda' is not available: this runtime "
                            "was built without CUDA");
  fail(TCC_ERROR_BACKEND,
       "backend '" + name + "' is not available; this runtime has: cpu" +
           (haveCudaBackend() ? ", cuda" : ""));
}

std::unique_ptr<Backend> makeBackend(const std::string &name,
                                     const Artifact &artifact) {
  checkBackendName(name);
#ifdef TCC_HAVE_CUDA_BACKEND
  if (name == "cuda")
    return makeCudaBackend(artifact);
#endif
  return std::make_unique<CpuBackend>(artifact);
}

} // namespace tcc::rt
