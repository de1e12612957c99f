#ifndef TCC_DIALECT_TCC_TCCOPS_H
#define TCC_DIALECT_TCC_TCCOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "tcc/TccShapes.h"
#include "tcc/TccTraits.h"

#include "tcc/TccDialect.h.inc"
#include "tcc/TccInterfaces.h.inc"
#include "tcc/TccEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "tcc/TccAttrs.h.inc"

#define GET_OP_CLASSES
#include "tcc/TccOps.h.inc"

namespace tcc {
/// On a library call over packed token rows (tcc-pack-tokens): i64, the
/// rows' capacity B*T. The plan's "token_rows" (runtime/plan/plan.h says
/// what a backend may do with it).
inline constexpr llvm::StringLiteral kTokenRowsAttr = "tcc.token_rows";
/// On the module: "off" when tcc-pack-tokens must leave it alone
/// (`--pad-skip=off`).
inline constexpr llvm::StringLiteral kPadSkipAttr = "tcc.pad_skip";

/// Floating-point operations of one execution of a tcc op, the compute half
/// of the cost model (docs/architecture.md) that rematerialisation ranks by
/// and the compile report counts: none for a View op, a library call's
/// getFlops(), none for the other Layout ops, one per input element for the
/// other Structured ops (reductions), one per result element otherwise.
int64_t opFlops(mlir::Operation *op);

/// The ranked tensor type of `v` (every tcc value is one).
inline mlir::RankedTensorType tensorTypeOf(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType());
}
} // namespace tcc

#endif // TCC_DIALECT_TCC_TCCOPS_H
