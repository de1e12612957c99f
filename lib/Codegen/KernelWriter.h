// The kernel writer of exec.fusion (KernelEmitter.cpp: the elementwise
// ops, the kernel's frame and its vector and concat paths;
// KernelIndexing.cpp: layout ops at their index maps and reductions;
// ColumnReduction.cpp: the column-reduction paths; RowReduction.cpp: the
// row reductions' device path), and the element-type helpers they use.
// Internal to lib/Codegen.
#ifndef TCC_LIB_CODEGEN_KERNELWRITER_H
#define TCC_LIB_CODEGEN_KERNELWRITER_H

#include "exec/ExecOps.h"
#include "tcc/Codegen/KernelEmitter.h"
#include "tcc/TccOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <optional>
#include <string>

namespace tcc::codegen::detail {

using mlir::ArrayRef;
using mlir::LogicalResult;
using mlir::Operation;
using mlir::SmallVector;
using mlir::StringRef;
using mlir::Twine;
using mlir::Type;
using mlir::Value;
using llvm::raw_ostream;

/// The C++ type a kernel computes an element type in (bf16 and f16: float).
std::optional<StringRef> cppType(Type elem);
/// "bf16" / "f16" for the 16-bit storage types, else "".
StringRef halfName(Type elem);
/// The C++ type a kernel's buffers hold `elem` in: uint16_t bit patterns for
/// bf16 and f16, else cppType.
std::optional<StringRef> storageType(Type elem);
Type elementType(Value v);
/// A literal of `elem` with exactly the splat's value.
std::optional<std::string> splatLiteral(mlir::DenseElementsAttr dense);
const char *cmpOperator(CmpPredicate pred);
ArrayRef<int64_t> shapeOf(Value v);

/// A fusion that yields a float sum or mean over leading dims: its op, the
/// reduced count (rows) and the kept count (columns, the outputs).
struct ColumnReduction {
  Operation *op = nullptr;
  int64_t count = 0, inner = 0;
  /// The output's 16-bit storage type ("bf16", "f16"), where the f32 sum is
  /// rounded to it as it leaves (the cast widenHalfInterior puts last);
  /// empty for an f32 or f64 output.
  StringRef half;
};

/// The fusion's column reduction (a float sum or mean over leading dims,
/// alone or rounded to 16 bits), or nullopt when it yields none.
std::optional<ColumnReduction> columnReduction(exec::FusionOp fusion);
/// The launch of a column reduction's kernel (launchShape): none below
/// kBlockReduceRows rows, else a block per kBlockReduceColumns outputs, the
/// rows split into slices where that fills more of the device.
LaunchShape columnLaunchShape(const ColumnReduction &cr);

/// Column reductions of at least this many rows get the CUDA block path;
/// a slice of the rows (row_slices > 1) has at least this many too.
constexpr int64_t kBlockReduceRows = 256;
/// The outputs one block of that path sums (a warp's width) and its threads.
constexpr int64_t kBlockReduceColumns = 32, kBlockReduceThreads = 1024;
/// The most rows one warp of that path sums one after another (more rows
/// split into slices, one block each).
constexpr int64_t kBlockReduceWarpRows = 64;
/// The threads the slices aim to launch: one wave of an H100 (132
/// multiprocessors of 2,048 threads; runtime/exec/gpu_cost.cpp's spec).
constexpr int64_t kBlockReduceWave = 132 * 2048;

/// How the interpreter accumulates a reduction of `count` elements: sums
/// and means in double (int64 for integers, wrapping) and rounded once,
/// max/min in the element type propagating NaN.
struct Accumulation {
  Operation *op = nullptr;
  int64_t count = 0;
  bool sum = false, isMax = false, isFloat = false;
  /// The C++ element type, the accumulator's and its initial value.
  std::string type, accType, init;
  /// The accumulator after adding (or taking the max/min with) `x`.
  std::string step(StringRef acc, StringRef x) const;
  /// The reduction's value (element type) from the final accumulator.
  std::string result(StringRef acc) const;
};

/// The accumulation of reduction `op` over `count` elements, or nullopt for
/// an element type it does not handle (i1).
std::optional<Accumulation> accumulation(Operation *op, int64_t count);

/// A fusion whose reduction covers the innermost dims (reduce_sum / mean /
/// max / min; all dims included) and whose output has one element per
/// reduced row: the op, the row length and the rows (outputs).
struct RowReduction {
  Operation *op = nullptr;
  int64_t count = 0, rows = 0;
};

/// The fusion's row reduction, or nullopt when it has none (or it is a
/// column reduction, which columnReduction's path takes).
std::optional<RowReduction> rowReduction(exec::FusionOp fusion);

/// The launch of a row reduction's kernel (launchShape): none below
/// kRowGroupMin elements a row, else its group's rows and threads a block.
LaunchShape rowLaunchShape(const RowReduction &rr);

/// Row reductions of at least this many elements a row get the CUDA group
/// path; a thread loops over shorter ones alone.
constexpr int64_t kRowGroupMin = 32;
/// The group of threads a row gets: a warp (8 rows a block of 256) below
/// kRowWarpMax elements, a block of 256 below kRowBlockMax, else a block of
/// 1024 (a serial loop of at most 64 elements a thread up to 65,536).
constexpr int64_t kRowWarpMax = 2048, kRowBlockMax = 16384;

/// Writes one kernel. Each body value is computed on demand, starting from
/// the yielded value at the output index `i`: valueAt(v, idx) emits the
/// statements computing `v`'s element at flat index `idx` of `v`'s own
/// shape and returns the C++ name (or literal) holding it. Elementwise ops
/// read their operands at the numpy-broadcast index, structured ops at the
/// index their semantics give (a reduction in a loop). A value is computed
/// once per (index, scope): the cache is scoped like the C++ blocks emitted
/// for loops and branches.
class KernelWriter {
public:
  KernelWriter(exec::FusionOp fusion, raw_ostream &os)
      : fusion(fusion), os(os), sink(&os) {}

  LogicalResult write();

  /// After write(): the elements per thread of the CUDA variant's vector
  /// path (TCC_VECTOR_LOOP), or 1 for a kernel without one.
  int64_t vectorWidth() const { return width; }

private:
  /// The C++ expression computing elementwise `op` from its operands'
  /// expressions `args`, or "" when it is not supported.
  std::string expression(Operation *op, ArrayRef<std::string> args);

  std::string valueAt(Value v, StringRef idx);
  /// Writes the statements computing the output element at `i` (from the
  /// yielded value; converted to the storage type) and returns it.
  std::string outputElement();
  std::string elementwiseAt(Operation *op, StringRef idx);
  std::string transposeAt(TransposeOp op, StringRef idx);
  std::string sliceAt(SliceOp op, StringRef idx);
  std::string sliceGradAt(SliceGradOp op, StringRef idx);
  std::string concatAt(ConcatOp op, StringRef idx);
  std::string gatherAt(GatherOp op, StringRef idx);
  std::string gatherGradAt(GatherGradOp op, StringRef idx);
  std::string reduceAt(Operation *op, ArrayRef<int64_t> axes, StringRef idx);
  /// Writes the host's blocked loop of a kernel that yields a float sum or
  /// mean over leading dims (a column reduction) and returns true, or
  /// writes nothing and returns false for any other kernel.
  bool writeColumnReduction();
  /// Writes the CUDA group path of a row reduction (rowReduction; the host
  /// keeps the scalar loop) and returns true, or writes nothing and returns
  /// false for any other kernel.
  bool writeRowReduction();
  /// Writes the host's loops of a kernel that yields a 1-D f32/f64 concat
  /// (one loop per piece, no per-element search for the piece) and returns
  /// true, or writes nothing and returns false for any other kernel.
  bool writeConcatPieces();

  /// Fails the kernel with an error on `op`; returns "".
  std::string fail(Operation *op, const Twine &message) {
    if (!failed)
      op->emitOpError("kernel codegen: ") << message.str();
    failed = true;
    return "";
  }
  std::string fresh(StringRef prefix) {
    return prefix.str() + std::to_string(next++);
  }
  /// `expr` as something usable as an index variable: itself when it is a
  /// name or a literal, else a new `const int64_t` holding it.
  std::string materialize(StringRef expr) {
    if (llvm::all_of(expr, [](char c) { return llvm::isAlnum(c) || c == '_'; }))
      return expr.str();
    std::string var = fresh("j");
    line("const int64_t " + var + " = " + expr + ";");
    return var;
  }
  /// The C++ element type of `v`.
  std::string ctype(Value v) {
    return cppType(elementType(v)).value_or("").str();
  }
  void line(const Twine &text) {
    sink->indent(2 * depth) << text << "\n";
  }
  /// Opens a C++ block (`text {`, or a bare `{`) and its cache scope.
  void open(const std::string &text) {
    line(text.empty() ? "{" : text + " {");
    ++depth;
    scopes.emplace_back();
  }
  /// `} text {`: closes the block and opens the next (an else branch).
  void reopen(const std::string &text) {
    scopes.pop_back();
    --depth;
    line("} " + text + " {");
    ++depth;
    scopes.emplace_back();
  }
  void close(StringRef tail = "}") {
    scopes.pop_back();
    --depth;
    line(tail);
  }

  exec::FusionOp fusion;
  raw_ostream &os;
  raw_ostream *sink; ///< where line() writes: os, or a kernel part
  unsigned depth = 0, next = 0;
  bool failed = false;
  /// Lane mode (the element function of a vectorised kernel): a block
  /// argument with at least the output's elements read at the output index
  /// `i` is the element function's parameter x<arg> instead of in<arg>[i].
  bool laneMode = false;
  int64_t outElements = 0;
  SmallVector<unsigned> laneArgs; ///< in order of first read
  int64_t width = 1;
  /// The stores (exec.fusion's results 1..): the yielded body value ->
  /// its buffer's name in the kernel (s1, s2, ...).
  llvm::MapVector<Value, std::string> stores;
  /// (value, index expression) -> C++ name, one map per open C++ block.
  SmallVector<std::map<std::pair<void *, std::string>, std::string>> scopes;
};

} // namespace tcc::codegen::detail

#endif // TCC_LIB_CODEGEN_KERNELWRITER_H
