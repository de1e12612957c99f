//===- dp_nccl_none.cpp - the data-parallel module without NCCL -----------===//

#include "exec/dp_nccl.h"

#include "plan/plan.h"

namespace tcc::rt::dp {

bool haveNccl() { return false; }

std::unique_ptr<NcclGroup> openNcclGroup(void *, double) {
  fail(TCC_ERROR_BACKEND, "TCC_COMMUNICATOR_NCCL: this runtime was built "
                          "without NCCL (nccl.h and libnccl beside the CUDA "
                          "toolkit; rebuild)");
}

void *createNcclComm(int, int, int,
                     const std::function<void(void *, size_t)> &) {
  throw data::Error("--backend cuda on several ranks needs NCCL, and this "
                    "runtime was built without it (nccl.h and libnccl "
                    "beside the CUDA toolkit; rebuild)");
}

void destroyNcclComm(void *) {}

} // namespace tcc::rt::dp
