//===- KernelEmitter.h - C++/CUDA source for exec.fusion kernels -*- C++ -*-===//
//
// Turns every `exec.fusion` into one kernel of a single C++ source text that
// compiles both as host C++ (CPU backend shared object) and with nvcc (CUDA
// fatbin): the body is written once against the prelude
// runtime/kernels/tcc_kernel.h, which also documents the kernel ABI:
//
//   void tcc_<name>(const void *const *inputs, void *output,
//                   int64_t begin, int64_t end);
//
// computing flattened output elements [begin, end) (a grid-stride loop on
// CUDA), one output element per iteration/thread; on CUDA a kernel whose
// inputs are read at the output index computes 16 bytes of them per access
// (vectorWidth). Inputs are read through
// index arithmetic with the static shapes baked in as constants: the
// numpy-broadcast index for elementwise ops, the permuted / strided / offset
// index of a transpose, slice, concat or gather (composed along a layout
// chain; a reshape keeps the flat index), and a loop over the reduced
// elements for a reduction or gather_grad.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_CODEGEN_KERNELEMITTER_H
#define TCC_CODEGEN_KERNELEMITTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace tcc::exec {
class FusionOp;
} // namespace tcc::exec

namespace tcc::codegen {

/// The exported symbol of `fusion`'s kernel: "tcc_" + its name, with every
/// character that cannot appear in an identifier replaced by '_'.
std::string kernelSymbol(exec::FusionOp fusion);

/// Appends `fusion`'s kernel to `os`. Fails (with an error on the op) on an
/// element type or body op the generator does not handle (e.g. a reduction
/// over i1, which the interpreter does not run either).
mlir::LogicalResult emitKernel(exec::FusionOp fusion, llvm::raw_ostream &os);

/// The elements one thread computes per work item in the CUDA variant of
/// `fusion`'s kernel: W > 1 when it has a 16-byte vector path
/// (TCC_VECTOR_LOOP in runtime/kernels/tcc_kernel.h: W = 16 / the widest
/// element size among the output and the inputs read at the output index),
/// 1 for a kernel that stays one element per thread (reductions,
/// gather_grad, layout kernels reading no input contiguously) or cannot be
/// emitted. The kernel is correct under any launch (grid-stride loop); a
/// launch of about elements / W threads keeps none idle.
int64_t vectorWidth(exec::FusionOp fusion);

/// The CUDA launch `fusion`'s kernel text expects (the plan's kernel
/// "outputs_per_block", "block_threads", "row_slices" and
/// "workspace_bytes": a grid of ceil(elements / outputsPerBlock) x
/// rowSlices blocks of blockThreads threads, with a device workspace of
/// workspaceBytes, zeroed once, as the pointer after the inputs), or all 0
/// when any launch fits. Set ({32, 1024, S, W}) for a column reduction (a
/// float sum or mean over leading dims, e.g. a bias gradient over the
/// tokens) of at least 256 rows: a block's 32 warps split the rows of 32
/// outputs, so the reduction spreads over many multiprocessors instead of
/// one thread per output summing every row; the kernel is declared with
/// __launch_bounds__(blockThreads). S > 1 splits the rows into slices (at
/// most 64 rows per warp, and about one H100 wave of threads where slices
/// of 256 rows or more allow it): each block writes its partial sums to the
/// workspace and the last block of a column tile adds them in slice order.
/// S = 1 (W = 0) for fewer rows or enough columns. Set for a row reduction
/// (a reduction over the innermost dims, a full one included) of at least 32
/// elements a row: a warp a row ({8, 256}) below 2048 elements, a block a
/// row beyond ({1, 256}, from 16,384 elements {1, 1024}), the row's
/// elements strided over its threads.
struct LaunchShape {
  int64_t outputsPerBlock = 0, blockThreads = 0;
  int64_t rowSlices = 0, workspaceBytes = 0;
};
LaunchShape launchShape(exec::FusionOp fusion);

/// The generated kernels of a module: one text per distinct kernel symbol.
struct KernelSource {
  /// What every translation unit starts with: a comment and the prelude
  /// include (include-guarded, so units concatenate into one).
  std::string header;
  /// One kernel each, in walk order of the first fusion with its symbol.
  std::vector<std::string> kernels;

  /// All kernels as one translation unit (the artifact's kernels.cc).
  std::string text() const;
  /// The kernels as at most `count` translation units of similar size (in
  /// order, none empty; one unit for a module without kernels), to be
  /// compiled concurrently.
  std::vector<std::string> units(unsigned count) const;
};

/// The prelude include and one kernel per symbol of the exec.fusions in
/// `module`. Fusions may share a symbol (shareIdenticalKernels) when their
/// kernels are the same text; fails (errors on the ops) if any kernel
/// cannot be emitted or two fusions with different kernels map to the same
/// symbol.
mlir::FailureOr<KernelSource> emitKernels(mlir::ModuleOp module);

/// emitKernels(module) as one source text.
mlir::FailureOr<std::string> emitKernelSource(mlir::ModuleOp module);

/// Renames every exec.fusion whose kernel is the same text as an earlier
/// fusion's (up to the name) to that fusion's name, so the two share one
/// symbol and the kernel is compiled once: a transformer's layers repeat
/// the same dozen kernels. Fails (errors on the op) where a kernel cannot
/// be emitted.
mlir::LogicalResult shareIdenticalKernels(mlir::ModuleOp module);

/// The flattened index into a dense row-major input of shape `input` read at
/// flattened output index `index` (a C variable name, `i` by default) of
/// shape `output` (numpy broadcasting: `input` is right-aligned; its size-1
/// dims stay at 0), as a C expression in `index`.
/// Runs of dims that are all broadcast or all kept are merged, so a row bias
/// of a [4, 8] output reads `i % 8` and a [4, 1] column `i / 8`. Returns ""
/// when `input` does not broadcast to `output`.
std::string broadcastIndexExpr(llvm::ArrayRef<int64_t> input,
                               llvm::ArrayRef<int64_t> output,
                               llvm::StringRef index = "i");

} // namespace tcc::codegen

#endif // TCC_CODEGEN_KERNELEMITTER_H
