#include "exec/ExecOps.h"

using namespace mlir;
using namespace tcc::exec;

#include "exec/ExecDialect.cpp.inc"

void ExecDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "exec/ExecOps.cpp.inc"
      >();
}
