// Array helpers of the interpreter: MLIR type <-> dtype, allocation, index
// arithmetic for broadcasting and strided access, conversions.
#ifndef TCC_LIB_INTERP_TENSOR_H
#define TCC_LIB_INTERP_TENSOR_H

#include "data/npz.h"

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace tcc::interp {

/// The dtype holding values of `elementType`: f32, f64, i32, i64, i1 (one
/// byte, 0 or 1), and the 16-bit storage types bf16 and f16 (raw bits). With
/// `promote`, f32 maps to f64 (bf16 and f16 stay). Nullopt for others.
std::optional<data::DType> toDType(mlir::Type elementType, bool promote);

/// bf16 or f16: stored as 16-bit patterns, never seen by a kernel. The driver
/// widens such operands to computeDType (exactly) before an op and rounds its
/// results back to the storage type once, to nearest even, after it: every op
/// computes in float and stores in low precision, as the GPU does.
inline bool isHalf(data::DType dtype) {
  return dtype == data::DType::BF16 || dtype == data::DType::F16;
}
/// The dtype kernels compute a half `storage` type in: f32 (f64 with
/// `promote`); other dtypes are their own.
inline data::DType computeDType(data::DType storage, bool promote) {
  if (!isHalf(storage))
    return storage;
  return promote ? data::DType::F64 : data::DType::F32;
}

/// A zero-filled array of the ranked tensor `type`; false if its element
/// type is unsupported.
bool allocate(mlir::Type type, bool promote, data::Array &out);

std::string shapeStr(llvm::ArrayRef<int64_t> shape);
std::string typeStr(mlir::Type type);

/// The number of elements of `dims`.
inline int64_t product(llvm::ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

/// Calls fn(base, stride) for every 1-d row along `axis`.
template <class Fn>
void forEachRow(llvm::ArrayRef<int64_t> shape, int64_t axis, Fn fn) {
  int64_t outer = product(shape.take_front(axis));
  int64_t inner = product(shape.drop_front(axis + 1));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      fn(o * shape[axis] * inner + i, inner);
}

/// Row-major strides of `shape`.
llvm::SmallVector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape);

/// Advances `index` over `shape` in row-major order; false after the last.
bool nextIndex(llvm::MutableArrayRef<int64_t> index,
               llvm::ArrayRef<int64_t> shape);

/// For every element of an output, the offset of the input element it reads.
/// Identity maps store nothing.
class IndexMap {
public:
  static IndexMap identity() { return IndexMap(); }
  /// Input elements at `strides` (one per output dim, 0 where broadcast) from
  /// `base`, visited in the output's row-major order.
  static IndexMap strided(llvm::ArrayRef<int64_t> outShape,
                          llvm::ArrayRef<int64_t> strides, int64_t base = 0);
  /// Numpy broadcast of `inShape` to `outShape` (already checked).
  static IndexMap broadcast(llvm::ArrayRef<int64_t> inShape,
                            llvm::ArrayRef<int64_t> outShape);

  int64_t operator()(int64_t i) const { return isIdentity ? i : offsets[i]; }

private:
  bool isIdentity = true;
  std::vector<int64_t> offsets;
};

/// Element `i` of an integer array (i32, i64 or i1) widened to int64.
int64_t readInt(const data::Array &a, int64_t i);

/// Converts one element the way tcc.cast does: float -> integer truncates
/// toward zero, saturating at the integer's range with NaN -> 0 (what CUDA's
/// cvt.rzi does, and never undefined behaviour); anything -> i1 is `x != 0`;
/// integer -> integer wraps modulo 2^bits.
template <class To, class From> To convertElement(From x) {
  if constexpr (std::is_same_v<To, uint8_t>) // i1
    return x != From(0) ? 1 : 0;
  else if constexpr (std::is_floating_point_v<To>)
    return static_cast<To>(x);
  else if constexpr (std::is_floating_point_v<From>) {
    if (std::isnan(x))
      return 0;
    // Compare in long double: the limits of int64 are not exact in double.
    long double t = std::trunc(static_cast<long double>(x));
    if (t <= static_cast<long double>(std::numeric_limits<To>::min()))
      return std::numeric_limits<To>::min();
    if (t >= static_cast<long double>(std::numeric_limits<To>::max()))
      return std::numeric_limits<To>::max();
    return static_cast<To>(t);
  } else {
    return static_cast<To>(static_cast<std::make_unsigned_t<To>>(
        static_cast<uint64_t>(static_cast<int64_t>(x))));
  }
}

/// A copy of `a` with elements converted to `dtype` (as tcc.cast does).
/// bf16 and f16 go through float: widening is exact, narrowing rounds to
/// nearest even (f64 rounds to float first). False when either dtype is
/// unsupported.
bool convertArray(const data::Array &a, data::DType dtype, data::Array &out);

/// The values of a constant or parameter attribute: dense (including splat)
/// or dense resource elements. False with `error` set otherwise.
bool elementsToArray(mlir::ElementsAttr attr, bool promote, data::Array &out,
                     std::string &error);

} // namespace tcc::interp

#endif // TCC_LIB_INTERP_TENSOR_H
