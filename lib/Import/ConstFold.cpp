// Import-time arithmetic on constants: packing DenseElementsAttrs into Lits
// and back, and the evaluations that have no tcc op (see ConstFold.h).
#include "ConstFold.h"

#include "tcc/TccShapes.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace tcc::onnx_import {

static bool isBool(Type t) { return t.isInteger(1); }

std::optional<Lit> toLit(DenseElementsAttr attr) {
  Lit lit;
  lit.type = llvm::cast<RankedTensorType>(attr.getType());
  lit.splat = attr.isSplat() && attr.getNumElements() > 1;
  if (!lit.splat && attr.getNumElements() > kMaxFoldElements)
    return std::nullopt;
  Type elem = lit.type.getElementType();
  if (llvm::isa<FloatType>(elem)) {
    if (lit.splat)
      lit.floats.push_back(attr.getSplatValue<APFloat>().convertToDouble());
    else
      for (APFloat v : attr.getValues<APFloat>())
        lit.floats.push_back(v.convertToDouble());
  } else if (isBool(elem)) {
    if (lit.splat)
      lit.ints.push_back(attr.getSplatValue<bool>());
    else
      for (bool v : attr.getValues<bool>())
        lit.ints.push_back(v);
  } else if (llvm::isa<IntegerType>(elem)) {
    if (lit.splat)
      lit.ints.push_back(attr.getSplatValue<APInt>().getSExtValue());
    else
      for (APInt v : attr.getValues<APInt>())
        lit.ints.push_back(v.getSExtValue());
  } else {
    return std::nullopt;
  }
  return lit;
}

DenseElementsAttr fromLit(const Lit &lit) {
  Type elem = lit.type.getElementType();
  size_t n = lit.splat ? 1 : size_t(lit.numElements());
  if (elem.isF32()) {
    llvm::SmallVector<float> v(n);
    for (size_t k = 0; k < n; ++k)
      v[k] = float(lit.floats[k]);
    return DenseElementsAttr::get(lit.type, llvm::ArrayRef(v));
  }
  if (elem.isF64())
    return DenseElementsAttr::get(lit.type,
                                  llvm::ArrayRef(lit.floats.data(), n));
  if (isBool(elem)) {
    llvm::SmallVector<bool> v(n);
    for (size_t k = 0; k < n; ++k)
      v[k] = lit.ints[k] != 0;
    return DenseElementsAttr::get(lit.type, llvm::ArrayRef(v));
  }
  if (elem.isInteger(32)) {
    llvm::SmallVector<int32_t> v(n);
    for (size_t k = 0; k < n; ++k)
      v[k] = int32_t(uint32_t(uint64_t(lit.ints[k])));
    return DenseElementsAttr::get(lit.type, llvm::ArrayRef(v));
  }
  return DenseElementsAttr::get(lit.type, llvm::ArrayRef(lit.ints.data(), n));
}

std::optional<Lit> foldMod(const Lit &a, const Lit &b) {
  if (a.type.getElementType() != b.type.getElementType() || a.isFloat() ||
      isBool(a.type.getElementType()))
    return std::nullopt;
  auto shape = broadcastShapes(a.shape(), b.shape());
  if (!shape || numElements(*shape) > kMaxFoldElements)
    return std::nullopt;
  std::vector<int64_t> ia = broadcastIndex(a.shape(), *shape),
                       ib = broadcastIndex(b.shape(), *shape);
  Lit out;
  out.type = RankedTensorType::get(*shape, a.type.getElementType());
  for (size_t k = 0; k < ia.size(); ++k) {
    int64_t x = a.i(ia[k]), y = b.i(ib[k]);
    if (y == 0 || (x == std::numeric_limits<int64_t>::min() && y == -1))
      return std::nullopt;
    // ONNX Mod (fmod=0) takes the divisor's sign.
    int64_t r = x % y;
    if (r != 0 && ((r < 0) != (y < 0)))
      r += y;
    out.ints.push_back(r);
  }
  return out;
}

std::optional<Lit> foldCast(const Lit &a, Type elementType) {
  Lit out;
  out.type = RankedTensorType::get(a.shape(), elementType);
  out.splat = a.splat;
  size_t n = a.splat ? 1 : size_t(a.numElements());
  bool toFloat = llvm::isa<FloatType>(elementType);
  for (size_t k = 0; k < n; ++k) {
    if (toFloat) {
      out.floats.push_back(a.asDouble(int64_t(k)));
      continue;
    }
    if (isBool(elementType)) {
      out.ints.push_back(a.asDouble(int64_t(k)) != 0);
      continue;
    }
    if (!a.isFloat()) {
      out.ints.push_back(a.i(int64_t(k)));
      continue;
    }
    double x = std::trunc(a.f(int64_t(k)));
    // Out of range (or NaN): the result is target-specific, so do not guess.
    if (!(x >= -9.2e18 && x <= 9.2e18))
      return std::nullopt;
    out.ints.push_back(int64_t(x));
  }
  if (elementType.isInteger(32))
    for (int64_t &x : out.ints)
      x = int32_t(uint32_t(uint64_t(x)));
  return out;
}

llvm::SmallVector<int64_t> intValues(DenseElementsAttr attr) {
  llvm::SmallVector<int64_t> out;
  bool boolean = isBool(attr.getElementType());
  for (APInt v : attr.getValues<APInt>())
    out.push_back(boolean ? int64_t(v.getZExtValue()) : v.getSExtValue());
  return out;
}

DenseElementsAttr splatOf(RankedTensorType type, double value) {
  Lit lit;
  lit.type = type;
  lit.splat = type.getNumElements() != 1;
  if (lit.isFloat())
    lit.floats.push_back(value);
  else
    lit.ints.push_back(int64_t(value));
  return fromLit(lit);
}

} // namespace tcc::onnx_import
