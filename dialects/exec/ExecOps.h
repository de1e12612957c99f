#ifndef TCC_DIALECT_EXEC_EXECOPS_H
#define TCC_DIALECT_EXEC_EXECOPS_H

#include "tcc/TccOps.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "exec/ExecDialect.h.inc"
#include "exec/ExecEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "exec/ExecAttrs.h.inc"

#define GET_OP_CLASSES
#include "exec/ExecOps.h.inc"

namespace tcc::exec {

/// Whether `op` is elementwise (tcc::OpClass::Elementwise: computed at any
/// element from its operands' elements at the same numpy-broadcast
/// position). exec.fusion bodies hold these, splat constants (see
/// isSplatConstant) and one isStructuredOp or a chain of isLayoutOps with
/// reshapes between them.
bool isFusibleOp(mlir::Operation *op);

/// Whether `op` is a layout or reduction op that one generated kernel
/// computes (tcc::OpClass::Structured and not, in this form, a library
/// call: one per exec.fusion, or a chain of isLayoutOps; see its
/// description).
bool isStructuredOp(mlir::Operation *op);

/// Whether `op` is a structured op that only moves elements, each output
/// element being one input element (tcc::OpClass::Layout). Several of them,
/// with reshapes between, may form one kernel's layout chain.
bool isLayoutOp(mlir::Operation *op);

/// Whether `op` is a tcc.constant with one value, which a kernel embeds
/// instead of reading it from memory.
bool isSplatConstant(mlir::Operation *op);

/// Whether the runtime executes `op` as a library call (a hand-written
/// kernel per backend: tcc::LibraryCallOpInterface, in a form that is one)
/// rather than a generated kernel. The artifact lists these as "call" steps
/// (docs/artifact.md).
bool isLibraryOp(mlir::Operation *op);

} // namespace tcc::exec

#endif // TCC_DIALECT_EXEC_EXECOPS_H
