// How library ops execute: the accessors tcc-tblgen writes from their ODS
// operands and results, and the forms and in-place pairs that need code.
#include "tcc/TccOps.h"

using namespace mlir;

#include "tcc/TccLibraryCalls.cpp.inc"

namespace tcc {

bool GatherGradOp::isLibraryCall() {
  // Along axis 0 it is the embedding gradient, a scatter-add with its own
  // kernel; along other axes a generated kernel loops over the indices.
  return getAxis() == 0;
}

Value SgdUpdateOp::getInPlaceOperand(unsigned result) {
  Value r = getResult(result);
  if (r == getNewParam())
    return getParam();
  return r == getNewMomentumBuffer() ? getMomentumBuffer() : getWorking();
}

Value AdamwUpdateOp::getInPlaceOperand(unsigned result) {
  Value operands[] = {getParam(), getExpAvg(), getExpAvgSq(), getWorking()};
  return operands[result];
}

} // namespace tcc
