// Elementwise ONNX ops: arithmetic, comparisons, logic, Where, Cast, Clip.
// Each emits the matching tcc op (numpy broadcasting); a node of constants is
// then folded by the interpreter like any other (FoldNode.cpp). Integer Mod,
// which has no tcc op, is evaluated here.
#include "ConstFold.h"
#include "Importer.h"

using namespace mlir;

namespace tcc::onnx_import {

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

static bool isFloat(Value v) {
  return llvm::isa<FloatType>(
      llvm::cast<RankedTensorType>(v.getType()).getElementType());
}

static FailureOr<Value> emitBinary(NodeImporter &n, BinaryFn fn, Value lhs,
                                   Value rhs) {
  auto cmp = [&](CmpPredicate p) -> FailureOr<Value> {
    auto op = n.create<CmpOp>(p, lhs, rhs);
    return failed(op) ? FailureOr<Value>(failure()) : FailureOr<Value>(*op);
  };
  auto make = [&](auto op) -> FailureOr<Value> {
    if (failed(op))
      return failure();
    return op->getResult();
  };
  switch (fn) {
  case BinaryFn::Add:
    return make(n.create<AddOp>(lhs, rhs));
  case BinaryFn::Sub:
    return make(n.create<SubOp>(lhs, rhs));
  case BinaryFn::Mul:
    return make(n.create<MulOp>(lhs, rhs));
  case BinaryFn::Div:
    return make(n.create<DivOp>(lhs, rhs));
  case BinaryFn::Max:
    return make(n.create<MaxOp>(lhs, rhs));
  case BinaryFn::Min:
    return make(n.create<MinOp>(lhs, rhs));
  case BinaryFn::And:
    return make(n.create<AndOp>(lhs, rhs));
  case BinaryFn::Or:
    return make(n.create<OrOp>(lhs, rhs));
  case BinaryFn::Xor:
    return cmp(CmpPredicate::ne);
  case BinaryFn::Eq:
    return cmp(CmpPredicate::eq);
  case BinaryFn::Lt:
    return cmp(CmpPredicate::lt);
  case BinaryFn::Le:
    return cmp(CmpPredicate::le);
  case BinaryFn::Gt:
    return cmp(CmpPredicate::gt);
  case BinaryFn::Ge:
    return cmp(CmpPredicate::ge);
  case BinaryFn::Pow:
    if (!isFloat(lhs))
      return n.unsupported("Pow of integer tensors computed at run time");
    // ONNX lets the exponent have its own type (e.g. an int64 constant).
    rhs = n.cast(rhs,
                 llvm::cast<RankedTensorType>(lhs.getType()).getElementType());
    return make(n.create<PowOp>(lhs, rhs));
  case BinaryFn::Mod:
    return n.unsupported("Mod of tensors computed at run time");
  }
  llvm_unreachable("unknown binary fn");
}

template <BinaryFn Fn> static LogicalResult convertBinary(NodeImporter &n) {
  if (failed(n.expectInputs(2, 2)) ||
      failed(n.expectAttrs(Fn == BinaryFn::Mod
                               ? std::initializer_list<llvm::StringRef>{"fmod"}
                               : std::initializer_list<llvm::StringRef>{})))
    return failure();
  if (Fn == BinaryFn::Mod && n.intAttr("fmod", 0) != 0)
    return n.unsupported("Mod with fmod=1");
  // Integer Mod has no tcc op: only a Mod of constants is evaluated.
  if (Fn == BinaryFn::Mod)
    if (DenseElementsAttr a = n.constantInput(0), b = n.constantInput(1);
        a && b)
      if (auto la = toLit(a), lb = toLit(b); la && lb)
        if (auto r = foldMod(*la, *lb))
          return n.setConstant(0, fromLit(*r));
  Value rhs;
  // PyTorch's x ** 2 carries an int64 exponent: convert it here, not at run
  // time.
  DenseElementsAttr exponent = n.constantInput(1);
  if (Fn == BinaryFn::Pow && exponent &&
      llvm::isa<FloatType>(n.inputElementType(0)))
    if (auto lit = toLit(exponent))
      if (auto cast = foldCast(*lit, n.inputElementType(0)))
        rhs = n.constant(fromLit(*cast));
  auto r = emitBinary(n, Fn, n.input(0), rhs ? rhs : n.input(1));
  return failed(r) ? failure() : n.setOutput(0, *r);
}

/// Max, Min, Sum, Mean: variadic, combined left to right.
template <BinaryFn Fn, bool Mean = false>
static LogicalResult convertVariadic(NodeImporter &n) {
  if (failed(n.expectInputs(1, n.numInputs())) || failed(n.expectAttrs({})))
    return failure();
  Value value = n.input(0);
  for (int k = 1; k < n.numInputs(); ++k) {
    auto r = emitBinary(n, Fn, value, n.input(k));
    if (failed(r))
      return failure();
    value = *r;
  }
  if (Mean) {
    if (!isFloat(value))
      return n.unsupported("Mean of integer tensors");
    Type elem = llvm::cast<RankedTensorType>(value.getType()).getElementType();
    auto r = n.create<DivOp>(value, n.scalar(elem, n.numInputs()));
    if (failed(r))
      return failure();
    value = *r;
  }
  return n.setOutput(0, value);
}

enum class Unary {
  Neg,
  Abs,
  Exp,
  Log,
  Sqrt,
  Reciprocal,
  Tanh,
  Erf,
  Relu,
  Sigmoid,
  Cos,
  Sin,
  Not
};

template <Unary U> static LogicalResult convertUnary(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)) || failed(n.expectAttrs({})))
    return failure();
  Value x = n.input(0);
  Type elem = n.inputElementType(0);
  bool floatOnly =
      U != Unary::Neg && U != Unary::Abs && U != Unary::Relu && U != Unary::Not;
  if (floatOnly && !isFloat(x))
    return n.unsupported("not defined for " +
                         std::string(elem.isInteger(1) ? "bool" : "integer") +
                         " tensors in tcc");
  if (U == Unary::Not && !elem.isInteger(1))
    return n.fail("expects a bool tensor");
  FailureOr<Value> r = failure();
  auto make = [&](auto op) -> FailureOr<Value> {
    if (failed(op))
      return failure();
    return op->getResult();
  };
  switch (U) {
  case Unary::Neg:
    r = make(n.create<NegOp>(x));
    break;
  case Unary::Abs:
    r = make(n.create<AbsOp>(x));
    break;
  case Unary::Exp:
    r = make(n.create<ExpOp>(x));
    break;
  case Unary::Log:
    r = make(n.create<LogOp>(x));
    break;
  case Unary::Sqrt:
    r = make(n.create<SqrtOp>(x));
    break;
  case Unary::Reciprocal:
    r = make(n.create<DivOp>(n.scalar(elem, 1.0), x));
    break;
  case Unary::Tanh:
    r = make(n.create<TanhOp>(x));
    break;
  case Unary::Erf:
    r = make(n.create<ErfOp>(x));
    break;
  case Unary::Relu:
    r = make(n.create<ReluOp>(x));
    break;
  case Unary::Sigmoid:
    r = make(n.create<SigmoidOp>(x));
    break;
  case Unary::Cos:
    r = make(n.create<CosOp>(x));
    break;
  case Unary::Sin:
    r = make(n.create<SinOp>(x));
    break;
  case Unary::Not:
    r = make(n.create<NotOp>(x));
    break;
  }
  return failed(r) ? failure() : n.setOutput(0, *r);
}

static LogicalResult convertWhere(NodeImporter &n) {
  if (failed(n.expectInputs(3, 3)) || failed(n.expectAttrs({})))
    return failure();
  if (!n.inputElementType(0).isInteger(1))
    return n.fail("the condition must be a bool tensor");
  auto op = n.create<WhereOp>(n.input(0), n.input(1), n.input(2));
  return failed(op) ? failure() : n.setOutput(0, *op);
}

/// Trilu: x where element (i, j) of the last two dimensions lies in the kept
/// triangle (upper: j - i >= k, lower: j - i <= k), else 0. The triangle is
/// an import-time bool mask [N, M] in a tcc.where, whose gradient masks the
/// same way; the Trilu of a constant (a causal mask built in forward as
/// tril(ones(T, T))) folds like any node of constants.
static LogicalResult convertTrilu(NodeImporter &n) {
  if (failed(n.expectInputs(1, 2)) || failed(n.expectAttrs({"upper"})))
    return failure();
  int64_t k = 0;
  if (n.hasInput(1)) {
    FailureOr<llvm::SmallVector<int64_t>> ks = n.intsInput(1, "k");
    if (failed(ks))
      return failure();
    if (ks->size() != 1)
      return n.fail("k must hold one value");
    k = (*ks)[0];
  }
  bool upper = n.intAttr("upper", 1) != 0;
  RankedTensorType type = n.inputType(0);
  if (type.getRank() < 2)
    return n.fail("the input must have rank 2 or more, not " +
                  std::to_string(type.getRank()));
  int64_t rows = type.getDimSize(type.getRank() - 2),
          cols = type.getDimSize(type.getRank() - 1);
  llvm::SmallVector<bool> keep;
  keep.reserve(rows * cols);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      keep.push_back(upper ? j - i >= k : j - i <= k);
  auto mask = DenseElementsAttr::get(
      RankedTensorType::get({rows, cols}, IntegerType::get(n.context(), 1)),
      llvm::ArrayRef<bool>(keep));
  Type elem = type.getElementType();
  DenseElementsAttr zero =
      splatOf(RankedTensorType::get({}, elem), 0.0);
  auto op = n.create<WhereOp>(n.constant(mask), n.input(0), n.constant(zero));
  return failed(op) ? failure() : n.setOutput(0, *op);
}

static LogicalResult castTo(NodeImporter &n, Type elem) {
  if (DenseElementsAttr c = n.constantInput(0); c && c.getElementType() == elem)
    return n.setConstant(0, c);
  return n.setOutput(0, n.cast(n.input(0), elem));
}

static LogicalResult convertCast(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)) || failed(n.expectAttrs({"to"})))
    return failure();
  if (!n.attr("to"))
    return n.fail("attribute 'to' is required");
  auto elem = n.elementType(n.intAttr("to", 0));
  return failed(elem) ? failure() : castTo(n, *elem);
}

static LogicalResult convertCastLike(NodeImporter &n) {
  if (failed(n.expectInputs(2, 2)) || failed(n.expectAttrs({})))
    return failure();
  return castTo(n, n.inputElementType(1));
}

/// Clip(x, min?, max?) = min(max(x, lo), hi), the bounds being scalars.
static LogicalResult convertClip(NodeImporter &n) {
  if (failed(n.expectInputs(1, 3)) || failed(n.expectAttrs({})))
    return failure();
  Value x = n.input(0);
  for (int i : {1, 2}) {
    if (!n.hasInput(i))
      continue;
    if (n.inputType(i).getRank() != 0)
      return n.fail("min and max must be scalars");
    auto r =
        emitBinary(n, i == 1 ? BinaryFn::Max : BinaryFn::Min, x, n.input(i));
    if (failed(r))
      return failure();
    x = *r;
  }
  return n.setOutput(0, x);
}

/// IsNaN(x) = x != x (only NaN differs from itself); no float attributes
/// (detect_*) exist on it, unlike IsInf.
static LogicalResult convertIsNaN(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)) || failed(n.expectAttrs({})))
    return failure();
  if (!llvm::isa<FloatType>(n.inputElementType(0)))
    return n.fail("input must be a float tensor");
  auto op = n.create<CmpOp>(CmpPredicate::ne, n.input(0), n.input(0));
  return failed(op) ? failure() : n.setOutput(0, *op);
}

void registerElementwiseConverters(ConverterTable &table) {
  table["IsNaN"] = convertIsNaN;
  table["Add"] = convertBinary<BinaryFn::Add>;
  table["Sub"] = convertBinary<BinaryFn::Sub>;
  table["Mul"] = convertBinary<BinaryFn::Mul>;
  table["Div"] = convertBinary<BinaryFn::Div>;
  table["Pow"] = convertBinary<BinaryFn::Pow>;
  table["Mod"] = convertBinary<BinaryFn::Mod>;
  table["Equal"] = convertBinary<BinaryFn::Eq>;
  table["Less"] = convertBinary<BinaryFn::Lt>;
  table["LessOrEqual"] = convertBinary<BinaryFn::Le>;
  table["Greater"] = convertBinary<BinaryFn::Gt>;
  table["GreaterOrEqual"] = convertBinary<BinaryFn::Ge>;
  table["And"] = convertBinary<BinaryFn::And>;
  table["Or"] = convertBinary<BinaryFn::Or>;
  table["Xor"] = convertBinary<BinaryFn::Xor>;
  table["Max"] = convertVariadic<BinaryFn::Max>;
  table["Min"] = convertVariadic<BinaryFn::Min>;
  table["Sum"] = convertVariadic<BinaryFn::Add>;
  table["Mean"] = convertVariadic<BinaryFn::Add, true>;
  table["Neg"] = convertUnary<Unary::Neg>;
  table["Abs"] = convertUnary<Unary::Abs>;
  table["Exp"] = convertUnary<Unary::Exp>;
  table["Log"] = convertUnary<Unary::Log>;
  table["Sqrt"] = convertUnary<Unary::Sqrt>;
  table["Reciprocal"] = convertUnary<Unary::Reciprocal>;
  table["Tanh"] = convertUnary<Unary::Tanh>;
  table["Erf"] = convertUnary<Unary::Erf>;
  table["Relu"] = convertUnary<Unary::Relu>;
  table["Sigmoid"] = convertUnary<Unary::Sigmoid>;
  table["Cos"] = convertUnary<Unary::Cos>;
  table["Sin"] = convertUnary<Unary::Sin>;
  table["Not"] = convertUnary<Unary::Not>;
  table["Where"] = convertWhere;
  table["Trilu"] = convertTrilu;
  table["Cast"] = convertCast;
  table["CastLike"] = convertCastLike;
  table["Clip"] = convertClip;
}

} // namespace tcc::onnx_import
