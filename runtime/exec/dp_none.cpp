//===- dp_none.cpp - the data-parallel module of a runtime without MPI ----===//

#include "exec/dp.h"

#include "plan/plan.h"

#include <cstdlib>

namespace tcc::rt::dp {

bool haveMpi() { return false; }

std::unique_ptr<Group> openGroup(void *, double) {
  fail(TCC_ERROR_BACKEND, "TCC_COMMUNICATOR_MPI: this runtime was built "
                          "without MPI (install libopenmpi-dev and rebuild)");
}

World joinWorld() {
  for (const char *var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char *v = std::getenv(var); v && std::atoi(v) > 1)
      throw data::Error(std::string("launched as one of ") + v +
                        " ranks, but this runtime was built without MPI "
                        "(install libopenmpi-dev and rebuild)");
  return {};
}

void leaveWorld() {}
void abortWorld(int status) { std::exit(status); }
bool sameOnAllRanks(const std::string &) { return true; }
void broadcastFromRank0(void *, size_t) {}

} // namespace tcc::rt::dp
