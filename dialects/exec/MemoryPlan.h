//===- MemoryPlan.h - Buffer liveness and arena offsets -------*- C++ -*-===//
//
// The memory plan of a step function, written as `exec.*` attributes by
// tcc-plan-memory: which op results need arena storage, how long each
// lives, and whether the plan keeps live buffers apart. The exec dialect
// verifies every function carrying exec.arena_bytes with verifyMemoryPlan,
// which recomputes everything from the IR instead of trusting the
// planner's bookkeeping; the planner uses the same liveness.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_DIALECT_EXEC_MEMORYPLAN_H
#define TCC_DIALECT_EXEC_MEMORYPLAN_H

#include "plan/plan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace tcc {

/// Arena offsets and sizes are multiples of the artifact format's alignment.
using rt::kArenaAlignment;

// Attribute names of the plan.
constexpr llvm::StringLiteral kArenaBytesAttr = "exec.arena_bytes";
constexpr llvm::StringLiteral kOffsetAttr = "exec.offset";
constexpr llvm::StringLiteral kOffsetsAttr = "exec.offsets";
constexpr llvm::StringLiteral kRegionAttr = "exec.region";
constexpr llvm::StringLiteral kInplaceOfAttr = "exec.inplace_of";
/// On an exec.fusion whose result takes the storage of operand #N, which
/// dies at the fusion (readsElementwise), under --memory-budget.
constexpr llvm::StringLiteral kReusesAttr = "exec.reuses";
/// On a function (a unit attribute): plan such reuse in it
/// (tcc-rematerialize sets it on @train_step under a tight budget).
constexpr llvm::StringLiteral kReuseOperandsAttr = "exec.reuse_operands";

/// Where a value's bytes live.
enum class BufferRegion { Arena, InPlace, Input, Constant, Param };
llvm::StringRef stringifyRegion(BufferRegion region);

/// One storage-owning value: a function argument or an op result that is
/// not a reshape alias.
struct Buffer {
  mlir::Value value;
  mlir::Operation *def = nullptr; // null for function arguments
  unsigned resultNumber = 0;
  BufferRegion region = BufferRegion::Arena;
  int64_t bytes = 0;      // rounded up to kArenaAlignment
  int64_t start = 0;      // index of the defining op (-1 for arguments)
  int64_t end = 0;        // index of the last use, through aliases
  int64_t offset = -1;    // arena offset once planned
  int64_t inplaceOf = -1; // argument number for BufferRegion::InPlace
};

/// Liveness of every buffer of a one-block function. Op indices count the
/// block's top-level ops; a use inside a nested region counts at its
/// top-level ancestor, and a returned value lives to the terminator.
struct BufferLiveness {
  llvm::SmallVector<Buffer> buffers;
  /// Every tensor value, reshape aliases included, to its buffer.
  llvm::DenseMap<mlir::Value, unsigned> bufferOf;
  /// Per alias at a byte offset into its buffer (an exec.view, or a view of
  /// one): that offset. Absent: 0.
  llvm::DenseMap<mlir::Value, int64_t> viewOffset;
  int64_t numOps = 0;

  const Buffer *lookup(mlir::Value v) const {
    auto it = bufferOf.find(v);
    return it == bufferOf.end() ? nullptr : &buffers[it->second];
  }
};

/// Bytes of a statically shaped tensor (i1 takes a byte), aligned; none for
/// other types.
std::optional<int64_t> alignedBufferBytes(mlir::Type type);

/// Computes buffers and liveness. Regions are Arena/Input/Constant/Param;
/// in-place reuse is the planner's decision. Fails with an error on the
/// function if it has several blocks or a result cannot be sized.
mlir::FailureOr<BufferLiveness> computeBufferLiveness(mlir::func::FuncOp func);

/// Whether `fusion` (an exec.fusion) may write its result over operand
/// #`operand`'s bytes: an elementwise kernel (elementwise ops, broadcasts
/// and splat constants only) whose result has the operand's shape and
/// element width, reading the operand through ops of the result's shape
/// only, so output element i is computed from operand element i alone.
bool readsElementwise(mlir::Operation *fusion, unsigned operand);

/// Checks the `exec.*` plan on `func` against liveness recomputed from the
/// IR; emits an error naming both ops on the first violation.
mlir::LogicalResult verifyMemoryPlan(mlir::func::FuncOp func);

} // namespace tcc

#endif // TCC_DIALECT_EXEC_MEMORYPLAN_H
