// Folds of tcc ops: identities that let later passes see through no-op
// reshapes, casts and transposes, and the constant fold.
#include "tcc/TccOps.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace tcc;

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

/// True when `attr` is a splat (or dense) constant whose every element is `v`.
static bool isSplatOf(Attribute attr, double v) {
  auto splat = llvm::dyn_cast_if_present<SplatElementsAttr>(attr);
  if (!splat)
    return false;
  Type elem = splat.getElementType();
  if (llvm::isa<FloatType>(elem))
    return splat.getSplatValue<APFloat>().convertToDouble() == v;
  if (llvm::isa<IntegerType>(elem) && elem.getIntOrFloatBitWidth() > 1)
    return splat.getSplatValue<APInt>().getSExtValue() == static_cast<int64_t>(v);
  return false;
}

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  if (isSplatOf(adaptor.getRhs(), 0.0) && getLhs().getType() == getType())
    return getLhs();
  if (isSplatOf(adaptor.getLhs(), 0.0) && getRhs().getType() == getType())
    return getRhs();
  return {};
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  if (isSplatOf(adaptor.getRhs(), 1.0) && getLhs().getType() == getType())
    return getLhs();
  if (isSplatOf(adaptor.getLhs(), 1.0) && getRhs().getType() == getType())
    return getRhs();
  return {};
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

OpFoldResult BroadcastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // reshape(reshape(x)) only depends on x's element order.
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  if (auto dense = llvm::dyn_cast_if_present<DenseElementsAttr>(adaptor.getInput()))
    return dense.reshape(llvm::cast<ShapedType>(getType()));
  return {};
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  for (auto [i, p] : llvm::enumerate(getPerm()))
    if (static_cast<int64_t>(i) != p)
      return {};
  return getInput();
}
