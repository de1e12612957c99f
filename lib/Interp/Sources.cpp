// Ops that produce values from attributes: tcc.constant and tcc.get_param.
#include "Kernel.h"

#include "tcc/TccOps.h"

#include "mlir/IR/SymbolTable.h"

using namespace mlir;

namespace tcc::interp {
namespace {

bool constantKernel(KernelContext &ctx) {
  auto op = llvm::cast<ConstantOp>(ctx.op);
  return elementsToArray(op.getValue(), ctx.opts().promoteToF64, ctx.out(),
                         ctx.error);
}

bool getParamKernel(KernelContext &ctx) {
  auto op = llvm::cast<GetParamOp>(ctx.op);
  auto param =
      SymbolTable::lookupNearestSymbolFrom<ParamOp>(op, op.getNameAttr());
  if (!param)
    return ctx.fail("no tcc.param named '" + op.getName().str() + "'");
  return elementsToArray(param.getInitialValue(), ctx.opts().promoteToF64,
                         ctx.out(), ctx.error);
}

} // namespace

void registerSourceKernels(KernelTable &t) {
  t[ConstantOp::getOperationName()] = constantKernel;
  t[GetParamOp::getOperationName()] = getParamKernel;
}

} // namespace tcc::interp
