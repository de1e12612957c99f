// Import-time arithmetic on constants: packing DenseElementsAttrs into Lits
// and back, and the elementwise folds (see ConstFold.h for the rules).
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

/// The comparisons, one definition for the float and the integer path;
/// nullopt for every other function.
template <class T>
static std::optional<bool> compareValues(BinaryFn fn, T x, T y) {
  switch (fn) {
  case BinaryFn::Eq:
    return x == y;
  case BinaryFn::Lt:
    return x < y;
  case BinaryFn::Le:
    return x <= y;
  case BinaryFn::Gt:
    return x > y;
  case BinaryFn::Ge:
    return x >= y;
  default:
    return std::nullopt;
  }
}

std::optional<Lit> foldBinary(BinaryFn fn, const Lit &a, const Lit &b) {
  if (a.type.getElementType() != b.type.getElementType())
    return std::nullopt;
  auto shape = broadcastShapes(a.shape(), b.shape());
  if (!shape)
    return std::nullopt;
  bool compare = fn >= BinaryFn::Eq && fn <= BinaryFn::Ge;
  bool logical = fn >= BinaryFn::And;
  if (logical != isBool(a.type.getElementType()))
    return std::nullopt;
  if (fn == BinaryFn::Pow && !a.isFloat())
    return std::nullopt;
  Type elem = compare ? IntegerType::get(a.type.getContext(), 1)
                      : a.type.getElementType();
  Lit out;
  out.type = RankedTensorType::get(*shape, elem);
  out.splat = a.splat && b.splat && out.numElements() != 1;
  int64_t n = out.splat ? 1 : out.numElements();
  if (n > kMaxFoldElements)
    return std::nullopt;
  std::vector<int64_t> ia, ib;
  if (!out.splat) {
    ia = broadcastIndex(a.shape(), *shape);
    ib = broadcastIndex(b.shape(), *shape);
  }
  for (int64_t k = 0; k < n; ++k) {
    int64_t ka = out.splat ? 0 : ia[k], kb = out.splat ? 0 : ib[k];
    if (a.isFloat()) {
      double x = a.f(ka), y = b.f(kb), r = 0;
      if (std::optional<bool> c = compareValues(fn, x, y))
        r = *c;
      else
        switch (fn) {
        case BinaryFn::Add:
          r = x + y;
          break;
        case BinaryFn::Sub:
          r = x - y;
          break;
        case BinaryFn::Mul:
          r = x * y;
          break;
        case BinaryFn::Div:
          r = x / y;
          break;
        case BinaryFn::Pow:
          r = std::pow(x, y);
          break;
        case BinaryFn::Max:
          r = std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y);
          break;
        case BinaryFn::Min:
          r = std::isnan(x) || std::isnan(y) ? NAN : std::min(x, y);
          break;
        case BinaryFn::Mod:
          return std::nullopt;
        default:
          return std::nullopt;
        }
      if (compare)
        out.ints.push_back(r != 0);
      else
        out.floats.push_back(r);
      continue;
    }
    int64_t x = a.i(ka), y = b.i(kb), r = 0;
    // Unsigned arithmetic wraps instead of overflowing (UB for int64_t).
    uint64_t ux = uint64_t(x), uy = uint64_t(y);
    if (std::optional<bool> c = compareValues(fn, x, y))
      r = *c;
    else
      switch (fn) {
      case BinaryFn::Add:
        r = int64_t(ux + uy);
        break;
      case BinaryFn::Sub:
        r = int64_t(ux - uy);
        break;
      case BinaryFn::Mul:
        r = int64_t(ux * uy);
        break;
      case BinaryFn::Div:
      case BinaryFn::Mod:
        if (y == 0 || (x == std::numeric_limits<int64_t>::min() && y == -1))
          return std::nullopt;
        // ONNX Div truncates like C; Mod (fmod=0) takes the divisor's sign.
        if (fn == BinaryFn::Div) {
          r = x / y;
        } else {
          r = x % y;
          if (r != 0 && ((r < 0) != (y < 0)))
            r += y;
        }
        break;
      case BinaryFn::Max:
        r = std::max(x, y);
        break;
      case BinaryFn::Min:
        r = std::min(x, y);
        break;
      case BinaryFn::And:
        r = x && y;
        break;
      case BinaryFn::Or:
        r = x || y;
        break;
      case BinaryFn::Xor:
        r = (x != 0) != (y != 0);
        break;
      case BinaryFn::Pow:
        return std::nullopt;
      }
    out.ints.push_back(r);
  }
  return out;
}

std::optional<Lit> foldUnary(UnaryFn fn, const Lit &a) {
  bool boolean = isBool(a.type.getElementType());
  if ((fn == UnaryFn::Not) != boolean)
    return std::nullopt;
  if ((fn == UnaryFn::Sqrt || fn == UnaryFn::Reciprocal) && !a.isFloat())
    return std::nullopt;
  Lit out = a;
  for (double &x : out.floats) {
    switch (fn) {
    case UnaryFn::Neg:
      x = -x;
      break;
    case UnaryFn::Abs:
      x = std::fabs(x);
      break;
    case UnaryFn::Sqrt:
      x = std::sqrt(x);
      break;
    case UnaryFn::Reciprocal:
      x = 1.0 / x;
      break;
    case UnaryFn::Relu:
      x = x < 0 ? 0.0 : x;
      break;
    case UnaryFn::Not:
      break;
    }
  }
  for (int64_t &x : out.ints) {
    switch (fn) {
    case UnaryFn::Neg:
      x = int64_t(0 - uint64_t(x));
      break;
    case UnaryFn::Abs:
      x = x < 0 ? int64_t(0 - uint64_t(x)) : x;
      break;
    case UnaryFn::Relu:
      x = x < 0 ? 0 : x;
      break;
    case UnaryFn::Not:
      x = !x;
      break;
    default:
      return std::nullopt;
    }
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

std::optional<Lit> foldWhere(const Lit &cond, const Lit &a, const Lit &b) {
  if (a.type.getElementType() != b.type.getElementType() ||
      !isBool(cond.type.getElementType()))
    return std::nullopt;
  auto ab = broadcastShapes(a.shape(), b.shape());
  auto shape = ab ? broadcastShapes(cond.shape(), *ab) : std::nullopt;
  if (!shape || numElements(*shape) > kMaxFoldElements)
    return std::nullopt;
  std::vector<int64_t> ic = broadcastIndex(cond.shape(), *shape),
                       ia = broadcastIndex(a.shape(), *shape),
                       ib = broadcastIndex(b.shape(), *shape);
  Lit out;
  out.type = RankedTensorType::get(*shape, a.type.getElementType());
  for (size_t k = 0; k < ic.size(); ++k) {
    const Lit &src = cond.i(ic[k]) ? a : b;
    int64_t s = cond.i(ic[k]) ? ia[k] : ib[k];
    if (src.isFloat())
      out.floats.push_back(src.f(s));
    else
      out.ints.push_back(src.i(s));
  }
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
