// Import-time evaluation of what has no tcc op, on constants: integer Mod,
// Range, CumSum and the gathers of ConstOnly.cpp, the int64 exponent of a
// Pow. Every other node whose inputs are all constants is folded by the
// reference interpreter after its converter (FoldNode.cpp); this header's
// Lit is also how converters build the small constants they emit (masks,
// interpolation weights).
//
// Arithmetic runs in int64 (integers and bool) or double (floats, rounded to
// the element type afterwards). Evaluations give up, returning nullopt,
// rather than guess: on division by zero, on casts out of range, and above
// kMaxFoldElements, the cap the interpreter's fold shares, so that a huge
// constant computation stays in the IR instead of in memory.
#ifndef TCC_LIB_IMPORT_CONSTFOLD_H
#define TCC_LIB_IMPORT_CONSTFOLD_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/ArrayRef.h"

#include <optional>
#include <vector>

namespace tcc::onnx_import {

constexpr int64_t kMaxFoldElements = int64_t(1) << 22;
/// The most floating-point operations (tcc::opFlops) the folder spends on
/// one node: about a second of the reference interpreter. A node over
/// constants that costs more (a large constant MatMul) stays in the graph
/// and runs with the step.
constexpr int64_t kMaxFoldFlops = int64_t(1) << 28;

/// A constant unpacked for evaluation. A splat holds one value for all
/// elements.
struct Lit {
  mlir::RankedTensorType type;
  std::vector<int64_t> ints;  ///< integer and i1 elements
  std::vector<double> floats; ///< float elements
  bool splat = false;

  bool isFloat() const {
    return llvm::isa<mlir::FloatType>(type.getElementType());
  }
  int64_t numElements() const { return type.getNumElements(); }
  llvm::ArrayRef<int64_t> shape() const { return type.getShape(); }
  double f(int64_t i) const { return floats[splat ? 0 : i]; }
  int64_t i(int64_t i) const { return ints[splat ? 0 : i]; }
  double asDouble(int64_t k) const { return isFloat() ? f(k) : double(i(k)); }
};

/// Unpacks `attr`; nullopt when it is too large to evaluate.
std::optional<Lit> toLit(mlir::DenseElementsAttr attr);
/// Packs `lit`, rounding/wrapping to its element type.
mlir::DenseElementsAttr fromLit(const Lit &lit);

/// Integer Mod (fmod=0, the divisor's sign) with numpy broadcasting: ONNX
/// Mod has no tcc op, so only a Mod of constants imports. Nullopt on a zero
/// divisor.
std::optional<Lit> foldMod(const Lit &a, const Lit &b);
/// Converts `a` to `elementType` (float -> integer truncates; out of range or
/// NaN gives nullopt). Used for Pow's int64 exponent, cast when the Pow is
/// built: the Pow itself is not constant, so no node fold sees the cast.
std::optional<Lit> foldCast(const Lit &a, mlir::Type elementType);

// Index helpers (ConstFoldLayout.cpp).

/// Row-major strides of `shape`.
std::vector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape);
/// The flat index of `index` (a multi-index over the leading dims of
/// `shape`, negatives counting from the end) under `strides`, or -1 when
/// out of range.
int64_t flatIndex(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> index,
                  llvm::ArrayRef<int64_t> strides);
/// The flat position in `shape` (row-major) of each innermost row of
/// `indices` (GatherND / ScatterND index rows of length shape.size(),
/// negatives counting from the end), or the number of the first row out of
/// range as `bad` (>= 0; -1 when every row is in range).
std::vector<int64_t> indexRowsFlat(const Lit &indices,
                                   llvm::ArrayRef<int64_t> shape,
                                   int64_t &bad);
/// GatherElements / ScatterElements: the flat position in `shape` of each
/// element e of `indices` (same rank), e's own multi-index with its `axis`
/// coordinate replaced by indices[e] (negative counting from the end); or
/// the number of the first element out of range as `bad` (-1: none).
std::vector<int64_t> elementTargetsFlat(const Lit &indices,
                                        llvm::ArrayRef<int64_t> shape,
                                        int64_t axis, int64_t &bad);
/// Flat source index of every element of a `shape`-shaped view whose element
/// at multi-index i is source element base + sum(i[d] * srcStrides[d]).
std::vector<int64_t> stridedView(llvm::ArrayRef<int64_t> shape, int64_t base,
                                 llvm::ArrayRef<int64_t> srcStrides);
/// For broadcasting `from` to `to`: the source index of every element of `to`.
std::vector<int64_t> broadcastIndex(llvm::ArrayRef<int64_t> from,
                                    llvm::ArrayRef<int64_t> to);
/// The elements of `in` at flat indices `src`, as a tensor of `type`.
Lit selectElements(const Lit &in, mlir::RankedTensorType type,
                   const std::vector<int64_t> &src);

/// The integer contents of an integer constant.
llvm::SmallVector<int64_t> intValues(mlir::DenseElementsAttr attr);
/// A splat of `value` with the given type.
mlir::DenseElementsAttr splatOf(mlir::RankedTensorType type, double value);

} // namespace tcc::onnx_import

#endif // TCC_LIB_IMPORT_CONSTFOLD_H
