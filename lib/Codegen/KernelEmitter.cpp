// Kernel source for exec.fusion: each body value becomes one scalar C++
// variable evaluated at the output index. Every value in a fusion broadcasts
// to the output shape, and numpy broadcast projections compose, so a value
// of a smaller shape (a splat constant, a tcc.broadcast operand) read at the
// output index is the same scalar; only block arguments touch memory.
#include "tcc/Codegen/KernelEmitter.h"

#include "exec/ExecOps.h"
#include "tcc/TccOps.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cstdio>

using namespace mlir;

namespace tcc::codegen {
namespace {

/// The C++ type a kernel stores and computes an element type in.
std::optional<StringRef> cppType(Type elem) {
  if (elem.isF32())
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

Type elementType(Value v) {
  return llvm::cast<ShapedType>(v.getType()).getElementType();
}

/// A literal of `elem` with exactly the splat's value.
std::optional<std::string> splatLiteral(DenseElementsAttr dense) {
  Type elem = dense.getElementType();
  char buf[64];
  if (elem.isF32() || elem.isF64()) {
    APFloat value = dense.getSplatValue<APFloat>();
    bool f32 = elem.isF32();
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

/// Writes one kernel; `names` maps body values to their C++ variables.
class KernelWriter {
public:
  KernelWriter(exec::FusionOp fusion, raw_ostream &os)
      : fusion(fusion), os(os) {}

  LogicalResult write();

private:
  std::string name(Value v) { return names.lookup(v); }
  /// The C++ expression computing `op`'s result from its operands' names,
  /// or "" (with an error on `op`) when it is not supported.
  std::string expression(Operation *op);

  exec::FusionOp fusion;
  raw_ostream &os;
  llvm::DenseMap<Value, std::string> names;
};

std::string KernelWriter::expression(Operation *op) {
  auto arg = [&](unsigned i) { return name(op->getOperand(i)); };
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
      .Case<ConstantOp>([&](ConstantOp constant) -> std::string {
        auto dense = llvm::dyn_cast<DenseElementsAttr>(constant.getValue());
        if (!dense || !dense.isSplat())
          return "";
        return splatLiteral(dense).value_or("");
      })
      .Default([](Operation *) { return std::string(); });
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
     << fusion.getResult().getType() << "\n";
  os << "TCC_KERNEL(" << StringRef(kernelSymbol(fusion)).drop_front(4)
     << ") {\n";
  for (BlockArgument a : body.getArguments()) {
    std::string type = cppType(elementType(a))->str();
    os << "  const " << type << " *in" << a.getArgNumber() << " = static_cast<const "
       << type << " *>(inputs[" << a.getArgNumber() << "]);\n";
  }
  std::string outCType = cppType(outType.getElementType())->str();
  os << "  " << outCType << " *out = static_cast<" << outCType
     << " *>(output);\n";
  os << "  TCC_FOR_EACH(i) {\n";
  for (BlockArgument a : body.getArguments()) {
    auto type = llvm::cast<RankedTensorType>(a.getType());
    std::string index =
        broadcastIndexExpr(type.getShape(), outType.getShape());
    if (index.empty())
      return fusion.emitOpError("kernel codegen: operand #")
             << a.getArgNumber() << " of type " << type
             << " does not broadcast to the result";
    std::string var = "a" + std::to_string(a.getArgNumber());
    names[a] = var;
    os << "    const " << cppType(type.getElementType()) << " " << var
       << " = in" << a.getArgNumber() << "[" << index << "];\n";
  }
  unsigned next = 0;
  for (Operation &op : body) {
    if (auto yield = llvm::dyn_cast<exec::YieldOp>(op)) {
      os << "    out[i] = " << name(yield.getValue()) << ";\n";
      continue;
    }
    if (op.getNumResults() != 1)
      return op.emitOpError("kernel codegen: expected one result");
    std::string expr = expression(&op);
    if (expr.empty())
      return op.emitOpError("kernel codegen: unsupported op or operand type");
    std::string var = "v" + std::to_string(next++);
    names[op.getResult(0)] = var;
    os << "    const " << cppType(elementType(op.getResult(0))) << " " << var
       << " = " << expr << ";\n";
  }
  os << "  }\n}\n";
  return success();
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

FailureOr<std::string> emitKernelSource(ModuleOp module) {
  std::string source;
  llvm::raw_string_ostream os(source);
  os << "// Generated by tcc: one kernel per exec.fusion. The ABI is in\n"
        "// kernels/tcc_kernel.h.\n"
        "#include \"kernels/tcc_kernel.h\"\n";
  llvm::StringSet<> symbols;
  WalkResult result = module.walk([&](exec::FusionOp fusion) {
    if (!symbols.insert(kernelSymbol(fusion)).second) {
      fusion.emitOpError("kernel codegen: duplicate kernel symbol ")
          << kernelSymbol(fusion);
      return WalkResult::interrupt();
    }
    os << "\n";
    return failed(emitKernel(fusion, os)) ? WalkResult::interrupt()
                                          : WalkResult::advance();
  });
  if (result.wasInterrupted())
    return failure();
  return source;
}

std::string broadcastIndexExpr(ArrayRef<int64_t> input,
                               ArrayRef<int64_t> output) {
  if (input.size() > output.size())
    return "";
  // Merge consecutive output dims that are all kept or all broadcast; kept
  // runs are contiguous in the input because its skipped dims have size 1.
  struct Run {
    int64_t size;
    bool kept;
  };
  SmallVector<Run> runs;
  size_t lead = output.size() - input.size();
  for (size_t k = 0; k < output.size(); ++k) {
    int64_t in = k < lead ? 1 : input[k - lead];
    if (output[k] == 1)
      continue; // coordinate 0 whatever the input does
    if (in != 1 && in != output[k])
      return "";
    bool kept = in != 1;
    if (!runs.empty() && runs.back().kept == kept)
      runs.back().size *= output[k];
    else
      runs.push_back({output[k], kept});
  }
  std::string expr;
  int64_t inner = 1, stride = 1;
  for (size_t r = runs.size(); r-- > 0;) {
    if (runs[r].kept) {
      std::string coord = inner == 1 ? "i" : "i / " + std::to_string(inner);
      if (r > 0) // the outermost run's coordinate is below its size already
        coord += " % " + std::to_string(runs[r].size);
      std::string term =
          stride == 1 ? coord : "(" + coord + ") * " + std::to_string(stride);
      expr = expr.empty() ? term : term + " + " + expr;
      stride *= runs[r].size;
    }
    inner *= runs[r].size;
  }
  return expr.empty() ? "0" : expr;
}

} // namespace tcc::codegen
