// Import-time evaluation of ONNX ops on constants. This is what folds the
// shape arithmetic PyTorch exports (Shape, Gather, Unsqueeze, Concat, Range,
// Equal/Where on shapes, ...) into the literal shapes tcc ops need.
//
// Arithmetic runs in int64 (integers and bool) or double (floats, rounded to
// the element type afterwards, which gives the correctly rounded f32 result
// for + - * / and sqrt). Folds give up, returning nullopt, rather than guess:
// on division by zero, on casts out of range, and above kMaxFoldElements so
// that a huge constant computation stays in the IR instead of in memory.
#ifndef TCC_LIB_IMPORT_CONSTFOLD_H
#define TCC_LIB_IMPORT_CONSTFOLD_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/ArrayRef.h"

#include <optional>
#include <vector>

namespace tcc::onnx_import {

constexpr int64_t kMaxFoldElements = int64_t(1) << 22;

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

enum class BinaryFn {
  Add,
  Sub,
  Mul,
  Div,
  Pow,
  Max,
  Min,
  Mod,
  Eq,
  Lt,
  Le,
  Gt,
  Ge,
  And,
  Or,
  Xor
};
enum class UnaryFn { Neg, Abs, Sqrt, Reciprocal, Relu, Not };

/// Numpy-broadcasting binary op; comparisons produce i1.
std::optional<Lit> foldBinary(BinaryFn fn, const Lit &a, const Lit &b);
std::optional<Lit> foldUnary(UnaryFn fn, const Lit &a);
std::optional<Lit> foldCast(const Lit &a, mlir::Type elementType);
std::optional<Lit> foldWhere(const Lit &cond, const Lit &a, const Lit &b);

// Data movement; the caller has validated the parameters.
mlir::DenseElementsAttr foldTranspose(mlir::DenseElementsAttr a,
                                      llvm::ArrayRef<int64_t> perm);
mlir::DenseElementsAttr foldSlice(mlir::DenseElementsAttr a,
                                  llvm::ArrayRef<int64_t> starts,
                                  llvm::ArrayRef<int64_t> limits,
                                  llvm::ArrayRef<int64_t> strides);
mlir::DenseElementsAttr foldBroadcast(mlir::DenseElementsAttr a,
                                      llvm::ArrayRef<int64_t> shape);
mlir::DenseElementsAttr
foldConcat(llvm::ArrayRef<mlir::DenseElementsAttr> parts, int64_t axis);
/// ONNX Gather with (already range-checked, possibly negative) indices.
mlir::DenseElementsAttr foldGather(mlir::DenseElementsAttr data,
                                   mlir::DenseElementsAttr indices,
                                   int64_t axis);

// Index helpers shared by the folds (ConstFoldLayout.cpp).

/// Row-major strides of `shape`.
std::vector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape);
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
