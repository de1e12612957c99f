// Kernel source for exec.fusion: one loop iteration (GPU thread) per output
// element. Each body value becomes a scalar C++ variable holding the value
// at one flat index of its own shape, computed on demand from the yielded
// value at the output index: elementwise ops read their operands at the
// numpy-broadcast index, layout ops (transpose, slice, concat, gather, ...)
// at the index their semantics give (a chain of them composes the index
// maps; a reshape keeps the flat index), and a reduction loops over the
// elements it reduces. Only block arguments touch memory.
#include "tcc/Codegen/KernelEmitter.h"

#include "IndexExpr.h"

#include "exec/ExecOps.h"
#include "tcc/TccOps.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cstdio>
#include <optional>
#include <map>

using namespace mlir;

namespace tcc::codegen {
namespace {

/// The C++ type a kernel computes an element type in (bf16 and f16: float).
std::optional<StringRef> cppType(Type elem) {
  if (elem.isF32() || elem.isBF16() || elem.isF16())
    return StringRef("float");
  if (elem.isF64())
    return StringRef("double");
  if (elem.isInteger(1))
    return StringRef("uint8_t");
  if (elem.isInteger(32))
    return StringRef("int32_t");
  if (elem.isInteger(64))
    return StringRef("int64_t");
  return std::nullopt;
}

/// "bf16" / "f16" for the 16-bit storage types, else "".
StringRef halfName(Type elem) {
  return elem.isBF16() ? "bf16" : elem.isF16() ? "f16" : "";
}

/// The C++ type a kernel's buffers hold `elem` in: uint16_t bit patterns for
/// bf16 and f16, else cppType.
std::optional<StringRef> storageType(Type elem) {
  if (!halfName(elem).empty())
    return StringRef("uint16_t");
  return cppType(elem);
}

Type elementType(Value v) {
  return llvm::cast<ShapedType>(v.getType()).getElementType();
}

/// A literal of `elem` with exactly the splat's value.
std::optional<std::string> splatLiteral(DenseElementsAttr dense) {
  Type elem = dense.getElementType();
  char buf[64];
  if (elem.isF32() || elem.isF64() || !halfName(elem).empty()) {
    APFloat value = dense.getSplatValue<APFloat>();
    bool f32 = !elem.isF64();
    if (f32 && !elem.isF32()) { // bf16 / f16: exact in float
      bool losesInfo = false;
      value.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven,
                    &losesInfo);
    }
    if (!value.isFinite()) {
      // No literal spells NaN or infinity portably; go through the bits.
      uint64_t bits = value.bitcastToAPInt().getZExtValue();
      std::snprintf(buf, sizeof buf,
                    f32 ? "tcc_k::f32_bits(0x%llxu)"
                        : "tcc_k::f64_bits(0x%llxull)",
                    static_cast<unsigned long long>(bits));
      return std::string(buf);
    }
    // Hex floats are exact (and C++17); a float's value is exact in double.
    std::snprintf(buf, sizeof buf, f32 ? "%af" : "%a",
                  value.convertToDouble());
    return std::string(buf);
  }
  if (!elem.isInteger(1) && !elem.isInteger(32) && !elem.isInteger(64))
    return std::nullopt;
  APInt value = dense.getSplatValue<APInt>();
  if (elem.isInteger(1))
    return std::string(value.isZero() ? "uint8_t(0)" : "uint8_t(1)");
  if (value.isMinSignedValue()) // -MIN has no literal of the type
    return std::string(elem.isInteger(32) ? "INT32_MIN" : "INT64_MIN");
  std::snprintf(buf, sizeof buf, elem.isInteger(32) ? "int32_t(%lld)"
                                                    : "int64_t(%lldLL)",
                static_cast<long long>(value.getSExtValue()));
  return std::string(buf);
}

const char *cmpOperator(CmpPredicate pred) {
  switch (pred) {
  case CmpPredicate::eq:
    return "==";
  case CmpPredicate::ne:
    return "!=";
  case CmpPredicate::lt:
    return "<";
  case CmpPredicate::le:
    return "<=";
  case CmpPredicate::gt:
    return ">";
  case CmpPredicate::ge:
    return ">=";
  }
  llvm_unreachable("unknown predicate");
}

ArrayRef<int64_t> shapeOf(Value v) {
  return llvm::cast<RankedTensorType>(v.getType()).getShape();
}

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
  /// (value, index expression) -> C++ name, one map per open C++ block.
  SmallVector<std::map<std::pair<void *, std::string>, std::string>> scopes;
};

std::string KernelWriter::expression(Operation *op, ArrayRef<std::string> args) {
  auto arg = [&](unsigned i) { return args[i]; };
  Type elem = op->getNumOperands() ? elementType(op->getOperand(0)) : Type();
  bool isFloat = elem && llvm::isa<FloatType>(elem);
  bool isBool = elem && elem.isInteger(1);
  std::string type = elem ? cppType(elem).value_or("").str() : "";
  auto binary = [&](StringRef floatOp, StringRef intFn) -> std::string {
    if (isBool)
      return "";
    if (isFloat)
      return "(" + arg(0) + " " + floatOp.str() + " " + arg(1) + ")";
    return "tcc_k::" + intFn.str() + "(" + arg(0) + ", " + arg(1) + ")";
  };
  auto call = [&](StringRef fn, bool floatOnly = true) -> std::string {
    if (floatOnly && !isFloat)
      return "";
    std::string s = "tcc_k::" + fn.str() + "(" + arg(0);
    for (unsigned i = 1; i < op->getNumOperands(); ++i)
      s += ", " + arg(i);
    return s + ")";
  };
  auto boolOp = [&](StringRef fmt) -> std::string {
    if (!isBool)
      return "";
    return "uint8_t(" + arg(0) + " " + fmt.str() + " " + arg(1) + ")";
  };
  return llvm::TypeSwitch<Operation *, std::string>(op)
      .Case<AddOp>([&](auto) { return binary("+", "wrap_add"); })
      .Case<SubOp>([&](auto) { return binary("-", "wrap_sub"); })
      .Case<MulOp>([&](auto) { return binary("*", "wrap_mul"); })
      .Case<DivOp>([&](auto) { return binary("/", "int_div"); })
      .Case<MaxOp>([&](auto) {
        return isFloat ? call("nan_max") : binary("", "int_max");
      })
      .Case<MinOp>([&](auto) {
        return isFloat ? call("nan_min") : binary("", "int_min");
      })
      .Case<PowOp>([&](auto) { return call("pow"); })
      .Case<AndOp>([&](auto) { return boolOp("&"); })
      .Case<OrOp>([&](auto) { return boolOp("|"); })
      .Case<CmpOp>([&](CmpOp cmp) {
        return "uint8_t(" + arg(0) + " " + cmpOperator(cmp.getPredicate()) +
               " " + arg(1) + ")";
      })
      .Case<WhereOp>([&](auto) {
        return "(" + arg(0) + " ? " + arg(1) + " : " + arg(2) + ")";
      })
      .Case<NegOp>([&](auto) -> std::string {
        if (isBool)
          return "";
        // Not 0 - x, which loses the sign of zero.
        return isFloat ? "(-" + arg(0) + ")"
                       : "tcc_k::wrap_sub(" + type + "(0), " + arg(0) + ")";
      })
      .Case<AbsOp>([&](auto) -> std::string {
        if (isBool)
          return "";
        return isFloat ? call("fabs")
                       : "(" + arg(0) + " < 0 ? tcc_k::wrap_sub(" + type +
                             "(0), " + arg(0) + ") : " + arg(0) + ")";
      })
      .Case<ReluOp>([&](auto) -> std::string {
        if (isBool)
          return "";
        // `x < 0 ? 0 : x` keeps NaN, as torch.relu does.
        return "(" + arg(0) + " < 0 ? " + type + "(0) : " + arg(0) + ")";
      })
      .Case<ExpOp>([&](auto) { return call("exp"); })
      .Case<LogOp>([&](auto) { return call("log"); })
      .Case<SqrtOp>([&](auto) { return call("sqrt"); })
      .Case<RsqrtOp>([&](auto) { return call("rsqrt"); })
      .Case<TanhOp>([&](auto) { return call("tanh"); })
      .Case<ErfOp>([&](auto) { return call("erf"); })
      .Case<SigmoidOp>([&](auto) { return call("sigmoid"); })
      .Case<CosOp>([&](auto) { return call("cos"); })
      .Case<SinOp>([&](auto) { return call("sin"); })
      .Case<NotOp>([&](auto) -> std::string {
        return isBool ? "uint8_t(" + arg(0) + " ? 0 : 1)" : "";
      })
      .Case<GeluOp>([&](GeluOp gelu) {
        return call(gelu.getApproximate() == GeluApprox::tanh ? "gelu_tanh"
                                                              : "gelu");
      })
      .Case<GeluGradOp>([&](GeluGradOp grad) {
        return call(grad.getApproximate() == GeluApprox::tanh
                        ? "gelu_grad_tanh"
                        : "gelu_grad");
      })
      .Case<CastOp>([&](CastOp cast) -> std::string {
        auto to = cppType(elementType(cast.getResult()));
        return "tcc_k::cast<" + to->str() + ">(" + arg(0) + ")";
      })
      .Case<BroadcastOp>([&](auto) { return arg(0); })
      .Default([](Operation *) { return std::string(); });
}

std::string KernelWriter::valueAt(Value v, StringRef idx) {
  if (failed)
    return "";
  Operation *def = v.getDefiningOp();
  if (def && exec::isSplatConstant(def)) {
    auto dense = llvm::cast<DenseElementsAttr>(
        llvm::cast<ConstantOp>(def).getValue());
    std::optional<std::string> literal = splatLiteral(dense);
    return literal ? *literal : fail(def, "unsupported constant");
  }
  std::pair<void *, std::string> key(v.getAsOpaquePointer(), idx.str());
  for (auto &scope : llvm::reverse(scopes))
    if (auto it = scope.find(key); it != scope.end())
      return it->second;

  std::string name;
  if (auto arg = llvm::dyn_cast<BlockArgument>(v)) {
    std::string half = halfName(elementType(v)).str();
    std::string n = std::to_string(arg.getArgNumber());
    std::string read = "in" + n + "[" + idx.str() + "]";
    bool lane = laneMode && idx == "i" && product(shapeOf(v)) >= outElements;
    if (lane) {
      // Element i of a buffer read at the output index: a lane of its
      // vector load on the device (the same bits as in<arg>[i]).
      if (!llvm::is_contained(laneArgs, arg.getArgNumber()))
        laneArgs.push_back(arg.getArgNumber());
      read = "x" + n;
    }
    if (lane && half.empty()) {
      name = read; // the parameter itself
    } else {
      name = fresh("a");
      if (!half.empty())
        read = "tcc_k::" + half + "_to_f32(" + read + ")";
      line("const " + ctype(v) + " " + name + " = " + read + ";");
    }
  } else {
    std::string at = materialize(idx);
    name = llvm::TypeSwitch<Operation *, std::string>(def)
               .Case<ReshapeOp>([&](ReshapeOp op) {
                 // Same elements in the same row-major order: the flat index
                 // carries over.
                 return valueAt(op.getInput(), at);
               })
               .Case<TransposeOp>([&](auto op) { return transposeAt(op, at); })
               .Case<SliceOp>([&](auto op) { return sliceAt(op, at); })
               .Case<SliceGradOp>([&](auto op) { return sliceGradAt(op, at); })
               .Case<ConcatOp>([&](auto op) { return concatAt(op, at); })
               .Case<GatherOp>([&](auto op) { return gatherAt(op, at); })
               .Case<GatherGradOp>([&](auto op) { return gatherGradAt(op, at); })
               .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp>(
                   [&](auto op) { return reduceAt(op, op.getAxes(), at); })
               .Default([&](Operation *op) { return elementwiseAt(op, at); });
    // A bf16 / f16 result is rounded to its storage type once (copies
    // through layout ops are already rounded; rounding is idempotent).
    std::string half = halfName(elementType(v)).str();
    if (!half.empty() && !failed &&
        !llvm::isa<ReshapeOp, TransposeOp, SliceOp>(def)) {
      std::string r = fresh("v");
      line("const float " + r + " = tcc_k::round_" + half + "(" + name + ");");
      name = r;
    }
  }
  if (!failed)
    scopes.back()[key] = name;
  return name;
}

std::string KernelWriter::elementwiseAt(Operation *op, StringRef idx) {
  if (!exec::isFusibleOp(op) || op->getNumResults() != 1)
    return fail(op, "unsupported op");
  ArrayRef<int64_t> shape = shapeOf(op->getResult(0));
  SmallVector<std::string> args;
  for (Value operand : op->getOperands()) {
    std::string index = broadcastIndexExpr(shapeOf(operand), shape, idx);
    if (index.empty())
      return fail(op, "operand does not broadcast to the result");
    args.push_back(valueAt(operand, index));
    if (failed)
      return "";
  }
  std::string expr = expression(op, args);
  if (expr.empty())
    return fail(op, "unsupported op or operand type");
  std::string name = fresh("v");
  line("const " + ctype(op->getResult(0)) + " " + name + " = " + expr + ";");
  return name;
}

std::string KernelWriter::transposeAt(TransposeOp op, StringRef idx) {
  SmallVector<int64_t> inStrides = rowMajorStrides(shapeOf(op.getInput()));
  SmallVector<int64_t> strides;
  for (int64_t p : op.getPerm())
    strides.push_back(inStrides[p]);
  return valueAt(op.getInput(),
                 stridedIndexExpr(shapeOf(op.getResult()), strides, 0, idx));
}

std::string KernelWriter::sliceAt(SliceOp op, StringRef idx) {
  SmallVector<int64_t> inStrides = rowMajorStrides(shapeOf(op.getInput()));
  SmallVector<int64_t> strides;
  int64_t base = 0;
  for (size_t d = 0; d < inStrides.size(); ++d) {
    // A negative stride walks down from `start`.
    base += op.getStarts()[d] * inStrides[d];
    strides.push_back(op.getStrides()[d] * inStrides[d]);
  }
  return valueAt(op.getInput(),
                 stridedIndexExpr(shapeOf(op.getResult()), strides, base, idx));
}

std::string KernelWriter::sliceGradAt(SliceGradOp op, StringRef idx) {
  // Zero unless, in every dim, the coordinate is start + k * stride with k
  // below the gradient's size; then the gradient's element at the k's.
  ArrayRef<int64_t> out = shapeOf(op.getResult());
  ArrayRef<int64_t> grad = shapeOf(op.getResultGrad());
  SmallVector<int64_t> gradStrides = rowMajorStrides(grad);
  std::string type = ctype(op.getResult());
  std::string name = fresh("v");
  line(type + " " + name + " = " + type + "(0);");
  open("");
  SmallVector<std::string> conditions;
  std::string gradIndex;
  for (size_t d = 0; d < out.size(); ++d) {
    int64_t start = op.getStarts()[d], stride = op.getStrides()[d];
    if (grad[d] == 1 && out[d] == 1)
      continue; // both coordinates are 0 (start is 0 then)
    std::string k;
    if (start == 0 && stride == 1 && grad[d] == out[d]) {
      k = coordExpr(out, d, idx); // the whole dim
    } else {
      std::string t = fresh("t");
      line("const int64_t " + t + " = " + coordExpr(out, d, idx) + " - " +
           std::to_string(start) + ";");
      if (stride == 1) {
        k = t;
        conditions.push_back(t + " >= 0 && " + t + " < " +
                             std::to_string(grad[d]));
      } else {
        k = t + " / " + std::to_string(stride);
        conditions.push_back(t + " % " + std::to_string(stride) + " == 0 && " +
                             k + " >= 0 && " + k + " < " +
                             std::to_string(grad[d]));
      }
    }
    std::string term = gradStrides[d] == 1
                           ? "(" + k + ")"
                           : "(" + k + ") * " + std::to_string(gradStrides[d]);
    gradIndex = gradIndex.empty() ? term : gradIndex + " + " + term;
  }
  std::string cond = conditions.empty() ? "true" : conditions[0];
  for (size_t c = 1; c < conditions.size(); ++c)
    cond += " && " + conditions[c];
  open("if (" + cond + ")");
  std::string value =
      valueAt(op.getResultGrad(), gradIndex.empty() ? "0" : gradIndex);
  line(name + " = " + value + ";");
  close();
  close();
  return name;
}

std::string KernelWriter::concatAt(ConcatOp op, StringRef idx) {
  ArrayRef<int64_t> out = shapeOf(op.getResult());
  int64_t axis = op.getAxis();
  int64_t inner = product(out.drop_front(axis + 1));
  int64_t outer = product(out.take_front(axis));
  std::string type = ctype(op.getResult());
  std::string name = fresh("v");
  line(type + " " + name + " = " + type + "(0);");
  open("");
  std::string c = fresh("c");
  line("const int64_t " + c + " = " + coordExpr(out, axis, idx) + ";");
  std::string o = outer == 1 ? "0" : fresh("o");
  if (outer != 1)
    line("const int64_t " + o + " = " + idx.str() + " / " +
         std::to_string(out[axis] * inner) + ";");
  std::string e = inner == 1 ? "" : " + " + idx.str() + " % " + std::to_string(inner);
  SmallVector<std::pair<Value, int64_t>> pieces; // non-empty inputs, offsets
  int64_t offset = 0;
  for (Value input : op.getInputs()) {
    if (product(shapeOf(input)) != 0)
      pieces.push_back({input, offset});
    offset += shapeOf(input)[axis];
  }
  for (auto [k, piece] : llvm::enumerate(pieces)) {
    auto [input, start] = piece;
    int64_t size = shapeOf(input)[axis];
    std::string cond = "if (" + c + " < " + std::to_string(start + size) + ")";
    if (pieces.size() == 1)
      open("");
    else if (k == 0)
      open(cond);
    else
      reopen(k + 1 < pieces.size() ? "else " + cond : "else");
    std::string index;
    if (outer != 1)
      index = o + " * " + std::to_string(size * inner) + " + ";
    std::string col =
        start == 0 ? c : "(" + c + " - " + std::to_string(start) + ")";
    index += inner == 1 ? col : col + " * " + std::to_string(inner);
    index += e;
    std::string value = valueAt(input, index);
    line(name + " = " + value + ";");
  }
  if (!pieces.empty())
    close();
  close();
  return name;
}

std::string KernelWriter::gatherAt(GatherOp op, StringRef idx) {
  ArrayRef<int64_t> data = shapeOf(op.getData());
  int64_t axis = op.getAxis(), dim = data[axis];
  int64_t inner = product(data.drop_front(axis + 1));
  int64_t count = product(shapeOf(op.getIndices()));
  std::string type = ctype(op.getResult());
  std::string name = fresh("v");
  // An index outside [-dim, dim) reads 0 (the interpreter reports it).
  line(type + " " + name + " = " + type + "(0);");
  open("");
  std::string j = count == 1 ? "0" : fresh("g");
  if (count != 1)
    line("const int64_t " + j + " = " +
         (inner == 1 ? idx.str() : idx.str() + " / " + std::to_string(inner)) +
         " % " + std::to_string(count) + ";");
  std::string index = fresh("k");
  line("int64_t " + index + " = int64_t(" + valueAt(op.getIndices(), j) + ");");
  line("if (" + index + " < 0) " + index + " += " + std::to_string(dim) + ";");
  open("if (" + index + " >= 0 && " + index + " < " + std::to_string(dim) + ")");
  std::string at;
  if (product(data.take_front(axis)) != 1)
    at = "(" + idx.str() + " / " + std::to_string(count * inner) + ") * " +
         std::to_string(dim * inner) + " + ";
  at += inner == 1 ? index : index + " * " + std::to_string(inner);
  if (inner != 1)
    at += " + " + idx.str() + " % " + std::to_string(inner);
  line(name + " = " + valueAt(op.getData(), at) + ";");
  close();
  close();
  return name;
}

std::string KernelWriter::gatherGradAt(GatherGradOp op, StringRef idx) {
  // Sum, in index order, of the gradient slices whose index is this
  // element's coordinate along the axis (accumulated in the element type,
  // from +0, as the interpreter's scatter-add).
  ArrayRef<int64_t> out = shapeOf(op.getResult());
  int64_t axis = op.getAxis(), dim = out[axis];
  int64_t inner = product(out.drop_front(axis + 1));
  int64_t outer = product(out.take_front(axis));
  int64_t count = product(shapeOf(op.getIndices()));
  std::string type = ctype(op.getResult());
  std::string name = fresh("v");
  line(type + " " + name + " = " + type + "(0);");
  open("");
  std::string c = fresh("c");
  line("const int64_t " + c + " = " + coordExpr(out, axis, idx) + ";");
  std::string j = fresh("r");
  open("for (int64_t " + j + " = 0; " + j + " < " + std::to_string(count) +
       "; ++" + j + ")");
  std::string index = fresh("k");
  line("int64_t " + index + " = int64_t(" + valueAt(op.getIndices(), j) + ");");
  line("if (" + index + " < 0) " + index + " += " + std::to_string(dim) + ";");
  open("if (" + index + " == " + c + ")");
  std::string at;
  if (outer != 1)
    at = "(" + idx.str() + " / " + std::to_string(dim * inner) + ") * " +
         std::to_string(count * inner) + " + ";
  at += inner == 1 ? j : j + " * " + std::to_string(inner);
  if (inner != 1)
    at += " + " + idx.str() + " % " + std::to_string(inner);
  std::string g = valueAt(op.getResultGrad(), at);
  line(name + " = " + name + " + " + g + ";");
  close();
  close();
  close();
  return name;
}

std::string KernelWriter::reduceAt(Operation *op, ArrayRef<int64_t> axes,
                                   StringRef idx) {
  // The interpreter's reduction: for each output element, the input
  // elements it covers in row-major order; sums and means accumulate in
  // double (int64 for integers, wrapping) and round once, max/min stay in
  // the element type and propagate NaN.
  Value input = op->getOperand(0);
  Type elem = elementType(input);
  if (!cppType(elem) || elem.isInteger(1))
    return fail(op, "unsupported element type for a reduction");
  bool isFloat = llvm::isa<FloatType>(elem);
  std::string type = cppType(elem)->str();
  ArrayRef<int64_t> in = shapeOf(input);
  SmallVector<int64_t> inStrides = rowMajorStrides(in);
  SmallVector<int64_t> keptShape, keptStrides, redShape, redStrides;
  for (size_t d = 0; d < in.size(); ++d) {
    bool reduced = llvm::is_contained(axes, static_cast<int64_t>(d));
    (reduced ? redShape : keptShape).push_back(in[d]);
    (reduced ? redStrides : keptStrides).push_back(inStrides[d]);
  }
  int64_t count = product(redShape);
  bool sum = llvm::isa<ReduceSumOp, ReduceMeanOp>(op);
  bool isMax = llvm::isa<ReduceMaxOp>(op);
  std::string accType = sum ? (isFloat ? "double" : "int64_t") : type;
  std::string init;
  if (sum)
    init = accType + "(0)";
  else if (elem.isF32() || !halfName(elem).empty())
    init = isMax ? "tcc_k::f32_bits(0xff800000u)" : "tcc_k::f32_bits(0x7f800000u)";
  else if (elem.isF64())
    init = isMax ? "tcc_k::f64_bits(0xfff0000000000000ull)"
                 : "tcc_k::f64_bits(0x7ff0000000000000ull)";
  else if (elem.isInteger(32))
    init = isMax ? "INT32_MIN" : "INT32_MAX";
  else
    init = isMax ? "INT64_MIN" : "INT64_MAX";

  std::string base = materialize(stridedIndexExpr(keptShape, keptStrides, 0, idx));
  std::string acc = fresh("acc");
  line(accType + " " + acc + " = " + init + ";");
  if (count != 0) { // else the empty reduction's value, with no loop
    std::string r = fresh("r");
    open("for (int64_t " + r + " = 0; " + r + " < " + std::to_string(count) +
         "; ++" + r + ")");
    std::string offset = stridedIndexExpr(redShape, redStrides, 0, r);
    std::string at = base == "0"     ? offset
                     : offset == "0" ? base
                                     : base + " + " + offset;
    std::string x = valueAt(input, at);
    if (sum)
      line(acc + " = " +
           (isFloat ? acc + " + static_cast<double>(" + x + ")"
                    : "tcc_k::wrap_add(" + acc + ", int64_t(" + x + "))") +
           ";");
    else
      line(acc + " = tcc_k::" + (isFloat ? "nan_" : "int_") +
           (isMax ? "max" : "min") + "(" + acc + ", " + x + ");");
    close();
  }
  std::string result;
  if (!llvm::isa<ReduceMeanOp>(op))
    result = "static_cast<" + type + ">(" + acc + ")";
  else if (isFloat)
    result = "static_cast<" + type + ">(" + acc + " / static_cast<double>(" +
             std::to_string(count) + "))";
  else // integer mean truncates; an empty one is 0
    result = count == 0 ? type + "(0)"
                        : "static_cast<" + type + ">(" + acc + " / int64_t(" +
                              std::to_string(count) + "))";
  std::string name = fresh("v");
  line("const " + type + " " + name + " = " + result + ";");
  return name;
}

namespace {
/// A fusion that yields a float sum or mean over leading dims: its op, the
/// reduced count (rows) and the kept count (columns, the outputs).
struct ColumnReduction {
  Operation *op = nullptr;
  int64_t count = 0, inner = 0;
};

std::optional<ColumnReduction> columnReduction(exec::FusionOp fusion) {
  Block &body = fusion.getBody().front();
  auto yield = llvm::cast<exec::YieldOp>(body.getTerminator());
  Operation *op = yield.getValues()[0].getDefiningOp();
  if (!op || !llvm::isa<ReduceSumOp, ReduceMeanOp>(op))
    return std::nullopt;
  Value input = op->getOperand(0);
  Type elem = elementType(input);
  if (!elem.isF32() && !elem.isF64())
    return std::nullopt;
  ArrayRef<int64_t> in = shapeOf(input);
  SmallVector<int64_t> axes(llvm::isa<ReduceSumOp>(op)
                                ? llvm::cast<ReduceSumOp>(op).getAxes()
                                : llvm::cast<ReduceMeanOp>(op).getAxes());
  llvm::sort(axes);
  for (size_t a = 0; a < axes.size(); ++a)
    if (axes[a] != int64_t(a))
      return std::nullopt; // not the leading dims
  int64_t count = product(in.take_front(axes.size()));
  int64_t inner = product(in.drop_front(axes.size()));
  if (axes.empty() || count < 2 || inner < 2)
    return std::nullopt;
  return ColumnReduction{op, count, inner};
}

/// Column reductions of at least this many rows get the CUDA block path.
constexpr int64_t kBlockReduceRows = 256;
/// The outputs one block of that path sums (a warp's width) and its threads.
constexpr int64_t kBlockReduceColumns = 32, kBlockReduceThreads = 1024;
} // namespace

bool KernelWriter::writeColumnReduction() {
  std::optional<ColumnReduction> cr = columnReduction(fusion);
  if (!cr)
    return false;
  Operation *op = cr->op;
  Value input = op->getOperand(0);
  const int64_t count = cr->count, inner = cr->inner;
  const std::string countText = std::to_string(count);
  // Output element i sums in[i + r * inner] over r in order, as the scalar
  // loop does; the host computes Block consecutive outputs at once, with the
  // loop over them innermost, so the compiler vectorises across outputs and
  // each output's sum keeps its order (the same bits).
  std::string type = ctype(input);
  auto resultOf = [&](const std::string &acc) {
    return llvm::isa<ReduceMeanOp>(op) ? "static_cast<" + type + ">(" + acc +
                                             " / static_cast<double>(" +
                                             countText + "))"
                                       : "static_cast<" + type + ">(" + acc +
                                             ")";
  };
  constexpr int64_t Block = 64;
  os << "#if !TCC_KERNEL_GRID\n";
  os << "  // A column reduction: " << Block
     << " outputs at a time, each summed in order.\n";
  depth = 1;
  open("for (int64_t i0 = begin; i0 < end; i0 += " + std::to_string(Block) +
       ")");
  line("const int64_t n0 = end - i0 < " + std::to_string(Block) +
       " ? end - i0 : " + std::to_string(Block) + ";");
  line("double acc[" + std::to_string(Block) + "];");
  line("for (int64_t l = 0; l < n0; ++l) acc[l] = 0.0;");
  open("for (int64_t r = 0; r < " + countText + "; ++r)");
  open("for (int64_t l = 0; l < n0; ++l)");
  line("const int64_t i = i0 + l;");
  std::string x = valueAt(input, "i + r * " + std::to_string(inner));
  if (failed)
    return true;
  line("acc[l] = acc[l] + static_cast<double>(" + x + ");");
  close();
  close();
  line("for (int64_t l = 0; l < n0; ++l) out[i0 + l] = " + resultOf("acc[l]") +
       ";");
  close();
  line("return;");
  os << "#endif\n";
  if (launchShape(fusion).outputsPerBlock == 0) {
    next = 0;
    return true;
  }
  // On the device: one block per 32 consecutive outputs (the launch has
  // ceil(n / 32) blocks of 1024 threads, plan "outputs_per_block"), its
  // warps taking every (warps)-th row, so each warp reads 32 adjacent
  // columns of a row; the warps' double partial sums are added in warp
  // order. Sums in double are
  // exact for all but widely ranged data, so this gives the host's bits in
  // practice, not by construction. Other block shapes (not whole warps)
  // take the one-thread-per-output loop below. The CUDA thread emulation
  // runs it too (a block's threads as host threads, tcc_kernel.h).
  os << "#if TCC_KERNEL_GRID\n";
  os << "  // A column reduction of " << countText
     << " rows: a block per 32 outputs, its warps splitting the rows.\n";
  open("if (blockDim.x % 32 == 0 && blockDim.x <= 1024)");
  line("__shared__ double part[32][33];");
  line("const int lane = int(threadIdx.x % 32), w = int(threadIdx.x / 32);");
  line("const int warps = int(blockDim.x / 32);");
  open("for (int64_t i0 = begin + int64_t(blockIdx.x) * 32; i0 < end; "
       "i0 += int64_t(gridDim.x) * 32)");
  line("const int64_t i = i0 + lane;");
  line("double acc = 0.0;");
  open("if (i < end)");
  // Eight rows per round, their loads issued before the adds (a warp's
  // rows are latency-bound otherwise: one load in flight); the adds keep
  // the row order.
  line("int64_t r = w;");
  open("for (; r + 7 * warps < " + countText + "; r += 8 * warps)");
  std::vector<std::string> xs;
  for (int k = 0; k < 8; ++k) {
    std::string rk = "r" + std::to_string(k);
    line("const int64_t " + rk + " = r + " + std::to_string(k) + " * warps;");
    xs.push_back(valueAt(input, "i + " + rk + " * " + std::to_string(inner)));
    if (failed)
      return true;
  }
  for (const std::string &xk : xs)
    line("acc = acc + static_cast<double>(" + xk + ");");
  close();
  open("for (; r < " + countText + "; r += warps)");
  x = valueAt(input, "i + r * " + std::to_string(inner));
  if (failed)
    return true;
  line("acc = acc + static_cast<double>(" + x + ");");
  close();
  close();
  line("part[w][lane] = acc;");
  line("__syncthreads();");
  open("if (w == 0 && i < end)");
  line("double total = 0.0;");
  line("for (int k = 0; k < warps; ++k) total = total + part[k][lane];");
  line("out[i] = " + resultOf("total") + ";");
  close();
  line("__syncthreads();");
  close();
  line("return;");
  close();
  os << "#endif\n";
  next = 0;
  return true;
}

LogicalResult KernelWriter::write() {
  Block &body = fusion.getBody().front();
  auto outType = llvm::cast<RankedTensorType>(fusion.getResult().getType());
  for (Operation &op : body)
    for (Value v : op.getResults())
      if (!cppType(elementType(v)))
        return op.emitOpError("kernel codegen: unsupported element type ")
               << elementType(v);
  for (BlockArgument a : body.getArguments())
    if (!cppType(elementType(a)))
      return fusion.emitOpError("kernel codegen: unsupported element type ")
             << elementType(a);

  os << "// exec.fusion \"" << fusion.getName() << "\": "
     << fusion.getResult().getType();
  if (fusion.getStructuredOp()) {
    // The structured op, or a layout chain's ops in order.
    llvm::ListSeparator sep(", ");
    os << " (";
    for (Operation &op : body)
      if (exec::isStructuredOp(&op) || llvm::isa<ReshapeOp>(op))
        os << sep << op.getName();
    os << ")";
  }
  os << "\n";
  // A kernel with a launch shape declares its block size (registers).
  LaunchShape shape = launchShape(fusion);
  if (shape.blockThreads > 0)
    os << "TCC_KERNEL_BLOCK(" << StringRef(kernelSymbol(fusion)).drop_front(4)
       << ", " << shape.blockThreads << ") {\n";
  else
    os << "TCC_KERNEL(" << StringRef(kernelSymbol(fusion)).drop_front(4)
       << ") {\n";
  for (BlockArgument a : body.getArguments()) {
    std::string type = storageType(elementType(a))->str();
    os << "  const " << type << " *in" << a.getArgNumber()
       << " = static_cast<const " << type << " *>(inputs["
       << a.getArgNumber() << "]);\n";
  }
  std::string outCType = storageType(outType.getElementType())->str();
  os << "  " << outCType << " *out = static_cast<" << outCType
     << " *>(output);\n";
  if (outType.getNumElements() == 0) {
    // Nothing to compute (and no index arithmetic to divide by zero).
    os << "  (void)inputs;\n  (void)out;\n  (void)begin;\n  (void)end;\n}\n";
    return success();
  }
  // The CUDA variant reads and writes 16 bytes per access (TCC_VECTOR_LOOP)
  // when the kernel loops over nothing per element (no reduction or
  // gather_grad: those keep one output element per thread) and reads at
  // least one input at the output index or is purely elementwise (its
  // stores alone are worth it); layout kernels that read no input
  // contiguously stay scalar.
  bool loops = llvm::any_of(body, [](Operation &op) {
    return llvm::isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp,
                     GatherGradOp>(op);
  });
  outElements = outType.getNumElements();
  if (!loops) {
    std::string text;
    llvm::raw_string_ostream part(text);
    sink = &part;
    laneMode = true;
    depth = 2;
    scopes.emplace_back();
    std::string result = outputElement();
    line("return " + result + ";");
    scopes.pop_back();
    sink = &os;
    laneMode = false;
    if (failed)
      return failure();
    // W: 16 bytes of the widest vectorised buffer. A kernel with fewer
    // elements than W (a scalar) has no whole chunk: it stays scalar.
    int64_t widest = llvm::divideCeil(outType.getElementTypeBitWidth(), 8);
    for (unsigned a : laneArgs)
      widest = std::max<int64_t>(
          widest,
          llvm::divideCeil(
              elementType(body.getArgument(a)).getIntOrFloatBitWidth(), 8));
    if ((!laneArgs.empty() || !fusion.getStructuredOp()) &&
        outElements >= 16 / widest) {
      width = 16 / widest;
      std::string params = "int64_t i", lanes = "out", scalar;
      for (unsigned a : laneArgs) {
        std::string type = storageType(elementType(body.getArgument(a)))->str();
        std::string n = std::to_string(a);
        params += ", " + type + " x" + n;
        lanes += ", in" + n;
        scalar += ", in" + n + "[i]";
      }
      if (laneArgs.empty())
        os << "  // Output element i (vector stores on the device).\n";
      else
        os << "  // Output element i from the elements x<k> = in<k>[i] of the "
              "inputs read\n  // contiguously (vector loads and stores on the "
              "device).\n";
      os << "  auto element = [&](" << params << ") -> " << outCType << " {\n"
         << text << "  };\n";
      os << "  TCC_VECTOR_LOOP(" << width << ", element, " << lanes << ");\n";
      os << "  TCC_FOR_EACH(i) out[i] = element(i" << scalar << ");\n";
      os << "}\n";
      return success();
    }
    // Scalar after all: start again.
    laneArgs.clear();
    next = 0;
  }
  if (writeColumnReduction() && failed)
    return failure();
  if (writeConcatPieces() && failed)
    return failure();
  depth = 1;
  open("TCC_FOR_EACH(i)");
  std::string result = outputElement();
  if (failed)
    return failure();
  line("out[i] = " + result + ";");
  close();
  os << "}\n";
  return success();
}

bool KernelWriter::writeConcatPieces() {
  Block &body = fusion.getBody().front();
  auto yield = llvm::cast<exec::YieldOp>(body.getTerminator());
  auto concat = yield.getValues()[0].getDefiningOp<ConcatOp>();
  if (!concat || shapeOf(concat.getResult()).size() != 1)
    return false;
  Type elem = elementType(concat.getResult());
  if (!elem.isF32() && !elem.isF64())
    return false;
  // Output element i of piece k (elements [start, start + size)) is the
  // piece's element i - start, as concatAt computes it after finding k.
  os << "#if !TCC_KERNEL_GRID\n";
  os << "  // A concatenation: a loop over each piece's part of [begin, end).\n";
  depth = 1;
  int64_t start = 0;
  for (Value input : concat.getInputs()) {
    int64_t size = shapeOf(input)[0];
    if (size != 0) {
      std::string lo = std::to_string(start), hi = std::to_string(start + size);
      open("for (int64_t i = begin > " + lo + " ? begin : " + lo + "; i < (end < " +
           hi + " ? end : " + hi + "); ++i)");
      std::string x = valueAt(input, start == 0 ? "i" : "i - " + lo);
      if (failed)
        return true;
      line("out[i] = " + x + ";");
      close();
    }
    start += size;
  }
  line("return;");
  os << "#endif\n";
  return true;
}

std::string KernelWriter::outputElement() {
  Block &body = fusion.getBody().front();
  auto outType = llvm::cast<RankedTensorType>(fusion.getResult().getType());
  auto yield = llvm::cast<exec::YieldOp>(body.getTerminator());
  std::string result = valueAt(yield.getValues()[0], "i");
  if (failed)
    return "";
  std::string half = halfName(outType.getElementType()).str();
  if (!half.empty())
    result = "tcc_k::f32_to_" + half + "(" + result + ")";
  return result;
}

} // namespace

std::string kernelSymbol(exec::FusionOp fusion) {
  std::string s = "tcc_" + fusion.getName().str();
  for (char &c : s)
    if (!llvm::isAlnum(c) && c != '_')
      c = '_';
  return s;
}

LogicalResult emitKernel(exec::FusionOp fusion, raw_ostream &os) {
  return KernelWriter(fusion, os).write();
}

LaunchShape launchShape(exec::FusionOp fusion) {
  std::optional<ColumnReduction> cr = columnReduction(fusion);
  if (!cr || cr->count < kBlockReduceRows)
    return {};
  return {kBlockReduceColumns, kBlockReduceThreads};
}

int64_t vectorWidth(exec::FusionOp fusion) {
  std::string text;
  llvm::raw_string_ostream os(text);
  KernelWriter writer(fusion, os);
  if (failed(writer.write()))
    return 1;
  return writer.vectorWidth();
}

} // namespace tcc::codegen
