#include "exec/ExecOps.h"
#include "exec/MemoryPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace tcc::exec;

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include "exec/ExecDialect.cpp.inc"
#include "exec/ExecEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "exec/ExecAttrs.cpp.inc"

void ExecDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "exec/ExecOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "exec/ExecAttrs.cpp.inc"
      >();
}

/// The memory plan's attributes (docs/artifact.md): each well-formed where it
/// stands, and exec.arena_bytes on a function vouches for the whole plan,
/// checked against liveness recomputed from the IR.
LogicalResult ExecDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  if (name == kArenaBytesAttr) {
    auto func = llvm::dyn_cast<func::FuncOp>(op);
    auto bytes = llvm::dyn_cast<IntegerAttr>(value);
    if (!func || !bytes || bytes.getInt() < 0)
      return op->emitError()
             << "'" << name << "' is a non-negative integer on a func.func";
    return verifyMemoryPlan(func);
  }
  if (name == kReuseOperandsAttr) {
    if (!llvm::isa<func::FuncOp>(op) || !llvm::isa<UnitAttr>(value))
      return op->emitError()
             << "'" << name << "' is a unit attribute on a func.func";
    return success();
  }
  if (name == kReusesAttr) {
    auto operand = llvm::dyn_cast<IntegerAttr>(value);
    if (!operand || !llvm::isa<FusionOp>(op) || operand.getInt() < 0 ||
        operand.getInt() >= int64_t(op->getNumOperands()))
      return op->emitError() << "'" << name << "' is an operand number, on "
                             << "an exec.fusion";
  }
  if (name == kOffsetAttr) {
    auto offset = llvm::dyn_cast<IntegerAttr>(value);
    if (!offset || op->getNumResults() != 1)
      return op->emitError() << "'" << name << "' is an arena offset, on an "
                             << "op with one result";
  }
  if (name == kOffsetsAttr) {
    auto offsets = llvm::dyn_cast<DenseI64ArrayAttr>(value);
    if (!offsets || offsets.size() != int64_t(op->getNumResults()))
      return op->emitError()
             << "'" << name << "' has one arena offset or -1 per result";
  }
  if (name != kOffsetAttr && name != kOffsetsAttr && name != kRegionAttr &&
      name != kInplaceOfAttr && name != kReusesAttr)
    return op->emitError() << "unknown exec attribute '" << name << "'";
  // The rest is checked with the whole plan, by the function's verifier.
  auto func = op->getParentOfType<func::FuncOp>();
  if (!func || !func->hasAttr(kArenaBytesAttr))
    return op->emitError() << "'" << name << "' is in a function without "
                           << kArenaBytesAttr;
  return success();
}
