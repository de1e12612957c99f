// Kernel source for exec.fusion: one loop iteration (GPU thread) per output
// element. Each body value becomes a scalar C++ variable holding the value
// at one flat index of its own shape, computed on demand from the yielded
// value at the output index: elementwise ops read their operands at the
// numpy-broadcast index, layout ops (transpose, slice, concat, gather, ...)
// at the index their semantics give (a chain of them composes the index
// maps; a reshape keeps the flat index), and a reduction loops over the
// elements it reduces. Only block arguments touch memory.
#include "tcc/Codegen/KernelEmitter.h"

#include "KernelWriter.h"

#include "IndexExpr.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cstdio>
#include <optional>
#include <map>

using namespace mlir;

namespace tcc::codegen {
namespace detail {

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
  if (failed)
    return "";
  scopes.back()[key] = name;
  // A store: written where it is computed (once per element a launch).
  if (auto it = stores.find(v); it != stores.end()) {
    std::string half = halfName(elementType(v)).str();
    line(it->second + "[" + idx.str() + "] = " +
         (half.empty() ? name : "tcc_k::f32_to_" + half + "(" + name + ")") +
         ";");
  }
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
  // The stores' buffers follow the inputs in the argument array.
  auto yield = llvm::cast<exec::YieldOp>(body.getTerminator());
  for (auto [k, value] : llvm::enumerate(yield.getValues().drop_front())) {
    std::string type = storageType(elementType(value))->str();
    std::string name = "s" + std::to_string(k + 1);
    os << "  " << type << " *" << name << " = static_cast<" << type
       << " *>(const_cast<void *>(inputs["
       << body.getNumArguments() + k << "]));\n";
    stores[value] = name;
  }
  if (outType.getNumElements() == 0) {
    // Nothing to compute (and no index arithmetic to divide by zero).
    os << "  (void)inputs;\n  (void)out;\n  (void)begin;\n  (void)end;\n";
    for (const auto &store : stores)
      os << "  (void)" << store.second << ";\n";
    os << "}\n";
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
  // Siblings (several results at each output index) keep the scalar loop.
  if (!loops && fusion.getNumResults() == 1) {
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
  if (writeRowReduction() && failed)
    return failure();
  depth = 1;
  open("TCC_FOR_EACH(i)");
  std::string result = outputElement();
  if (failed)
    return failure();
  line("out[i] = " + result + ";");
  // A kernel of siblings: its other results at the same index (valueAt
  // writes them); a reduction's stores were written where computed.
  if (!loops)
    for (Value v : yield.getValues().drop_front()) {
      valueAt(v, "i");
      if (failed)
        return failure();
    }
  close();
  os << "}\n";
  return success();
}

bool KernelWriter::writeConcatPieces() {
  Block &body = fusion.getBody().front();
  auto yield = llvm::cast<exec::YieldOp>(body.getTerminator());
  auto concat = yield.getValues()[0].getDefiningOp<ConcatOp>();
  if (!concat || shapeOf(concat.getResult()).size() != 1 ||
      fusion.getNumResults() > 1)
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

} // namespace detail

using namespace detail;

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
  if (std::optional<RowReduction> rr = rowReduction(fusion))
    return rowLaunchShape(*rr);
  if (std::optional<ColumnReduction> cr = columnReduction(fusion))
    return columnLaunchShape(*cr);
  return {};
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
