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

namespace {
int64_t elementsOf(Value v) {
  return llvm::cast<RankedTensorType>(v.getType()).getNumElements();
}
int64_t dimFromEnd(Value v, int64_t fromEnd) {
  ArrayRef<int64_t> shape =
      llvm::cast<RankedTensorType>(v.getType()).getShape();
  return shape[shape.size() - fromEnd];
}
} // namespace

// A multiply and an add per result element and contracted index.
int64_t MatmulOp::getFlops() {
  int64_t k = dimFromEnd(getLhs(), getTransposeLhs() ? 2 : 1);
  return 2 * elementsOf(getResult()) * k;
}

int64_t GemmOp::getFlops() {
  int64_t k = dimFromEnd(getA(), getTransposeA() ? 2 : 1);
  int64_t mn = elementsOf(getResult());
  int64_t m = dimFromEnd(getResult(), 2);
  return 2 * mn * k + (getC() ? 2 * mn : 0) + (getBias() ? mn : 0) +
         (getWithBiasGrad() ? m * k : 0);
}

// q @ k^T and p @ v over every (query, key) pair, half of them when causal.
int64_t AttentionOp::getFlops() {
  AttentionDims a = getDims();
  int64_t flops = a.batch * a.heads * a.tq * a.tk * 2 * (a.d + a.dv);
  return getCausal() ? flops / 2 : flops;
}

// The forward's products again for the softmax gradient, then dq, dk, dv.
static int64_t attentionGradFlops(const AttentionDims &a, bool causal) {
  // s = q k^T, dp = dO v^T, dv = p^T dO, dq = ds k, dk = ds^T q.
  int64_t flops = a.batch * a.heads * a.tq * a.tk * 2 * (3 * a.d + 2 * a.dv);
  return causal ? flops / 2 : flops;
}
int64_t AttentionGradOp::getFlops() {
  return attentionGradFlops(getDims(), getCausal());
}

// attention_grad's products, written into one tensor.
int64_t AttentionQkvGradOp::getFlops() {
  return attentionGradFlops(getDims(), getCausal());
}

// A few operations per updated element and result: a block update counts
// its block (the default would count the whole parameter).
int64_t SgdUpdateOp::getFlops() {
  return 5 * elementsOf(getGrad()) * int64_t(getNumResults());
}

int64_t AdamwUpdateOp::getFlops() {
  return 5 * elementsOf(getGrad()) * int64_t(getNumResults());
}

int64_t opFlops(Operation *op) {
  if (op->hasTrait<OpClass::View>())
    return 0;
  if (auto call = llvm::dyn_cast<LibraryCallOpInterface>(op))
    return call.getFlops();
  if (op->hasTrait<OpClass::Layout>())
    return 0;
  int64_t flops = 0;
  auto elements = [](Type type) {
    auto t = llvm::dyn_cast<RankedTensorType>(type);
    return t && t.hasStaticShape() ? t.getNumElements() : int64_t(0);
  };
  if (op->hasTrait<OpClass::Structured>()) {
    for (Type t : op->getOperandTypes())
      flops += elements(t);
  } else {
    for (Type t : op->getResultTypes())
      flops += elements(t);
  }
  return flops;
}

} // namespace tcc
