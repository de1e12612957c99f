// The interpreter's driver: binds arguments, walks the function body in
// order dispatching each op to its kernel, and collects func.return's values.
#include "Kernel.h"

#include "tcc/Interp/Interpreter.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;
using tcc::data::Array;

namespace tcc::interp {

const KernelTable &kernelTable() {
  static const KernelTable table = [] {
    KernelTable t;
    registerSourceKernels(t);
    registerElementwiseKernels(t);
    registerShapeKernels(t);
    registerReduceKernels(t);
    registerContractKernels(t);
    registerTrainKernels(t);
    registerGradKernels(t);
    registerWindowKernels(t);
    registerFusionKernels(t);
    registerPackKernels(t);
    return t;
  }();
  return table;
}

std::vector<std::string> supportedOps() {
  std::vector<std::string> names;
  for (const auto &entry : kernelTable())
    names.push_back(entry.getKey().str());
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> resultNames(func::FuncOp func) {
  std::vector<std::string> names;
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    auto name = func.getResultAttrOfType<StringAttr>(i, "tcc.name");
    names.push_back(name ? name.str() : "output" + std::to_string(i));
  }
  return names;
}

static std::string argName(func::FuncOp func, unsigned i) {
  if (auto name = func.getArgAttrOfType<StringAttr>(i, "tcc.name"))
    return "'" + name.str() + "'";
  return "#" + std::to_string(i);
}

/// Checks that `a` may be bound to argument `i`; with `promote`, f64 data is
/// also accepted for f32 arguments.
static bool checkArgument(func::FuncOp func, unsigned i, const Array &a,
                          bool promote, std::string &error) {
  Type type = func.getArgument(i).getType();
  auto tensor = llvm::dyn_cast<RankedTensorType>(type);
  std::optional<data::DType> want =
      tensor ? toDType(tensor.getElementType(), false) : std::nullopt;
  std::string where =
      "argument " + argName(func, i) + " of @" + func.getSymName().str();
  if (!want || !tensor.hasStaticShape()) {
    error = where + " has unsupported type " + typeStr(type);
    return false;
  }
  if (a.dtype != *want &&
      !(promote && *want == data::DType::F32 && a.dtype == data::DType::F64)) {
    error = where + " is " + typeStr(type) + " but its input is " +
            data::dtypeName(a.dtype);
    return false;
  }
  if (llvm::ArrayRef<int64_t>(a.shape) != tensor.getShape()) {
    error = where + " has shape " + shapeStr(tensor.getShape()) +
            " but its input has shape " + shapeStr(a.shape);
    return false;
  }
  return true;
}

bool bindByName(func::FuncOp func, const std::vector<Array> &named,
                std::vector<Array> &ordered, std::string &error,
                const Options &options) {
  ordered.clear();
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto name = func.getArgAttrOfType<StringAttr>(i, "tcc.name");
    if (!name) {
      error = "argument #" + std::to_string(i) + " of @" +
              func.getSymName().str() + " has no tcc.name to bind by";
      return false;
    }
    const Array *a = data::findArray(named, name.str());
    if (!a) {
      error = "no array named '" + name.str() + "' for argument #" +
              std::to_string(i) + " of @" + func.getSymName().str();
      return false;
    }
    if (!checkArgument(func, i, *a, options.promoteToF64, error))
      return false;
    ordered.push_back(*a);
  }
  return true;
}

/// "'tcc.add' at loc(...)": how errors name an op.
static std::string describe(Operation *op) {
  std::string s = "'" + op->getName().getStringRef().str() + "' at ";
  llvm::raw_string_ostream os(s);
  os << op->getLoc();
  return s;
}

bool run(func::FuncOp func, const std::vector<Array> &inputs,
         std::vector<Array> &results, std::string &error,
         const Options &options) {
  results.clear();
  if (func.isExternal()) {
    error = "@" + func.getSymName().str() + " has no body";
    return false;
  }
  if (inputs.size() != func.getNumArguments()) {
    error = "@" + func.getSymName().str() + " takes " +
            std::to_string(func.getNumArguments()) + " arguments, got " +
            std::to_string(inputs.size()) + " inputs";
    return false;
  }
  bool promote = options.promoteToF64;
  llvm::DenseMap<Value, Array> values;
  for (unsigned i = 0; i < inputs.size(); ++i) {
    if (!checkArgument(func, i, inputs[i], promote, error))
      return false;
    Array &a = values[func.getArgument(i)];
    if (promote && inputs[i].dtype == data::DType::F32)
      convertArray(inputs[i], data::DType::F64, a);
    else
      a = inputs[i];
  }

  std::vector<Array> returned;
  if (!runBlock(func.getBody().front(), values, options, returned, error))
    return false;
  std::vector<std::string> names = resultNames(func);
  for (auto [i, a] : llvm::enumerate(returned)) {
    results.push_back(std::move(a));
    results.back().name = names[i];
  }
  return true;
}

/// Runs one op whose operands are in `values`, putting one array per result
/// in `outs`: the kernel dispatch `runBlock` and `evaluate` share.
static bool runOp(Operation &op, llvm::DenseMap<Value, Array> &values,
                  const Options &options, std::vector<Array> &outs,
                  std::string &error) {
  bool promote = options.promoteToF64;
  const KernelTable &table = kernelTable();
  auto kernel = table.find(op.getName().getStringRef());
  if (kernel == table.end()) {
    error = "unsupported op " + describe(&op);
    return false;
  }
  outs.assign(op.getNumResults(), Array());
  llvm::SmallVector<data::DType> storage(op.getNumResults());
  for (unsigned r = 0; r < op.getNumResults(); ++r) {
    if (!allocate(op.getResult(r).getType(), promote, outs[r])) {
      error = describe(&op) + ": unsupported result type " +
              typeStr(op.getResult(r).getType());
      return false;
    }
    // Half results are computed in float, rounded below.
    storage[r] = outs[r].dtype;
    if (isHalf(storage[r]))
      outs[r].bytes.assign(
          outs[r].numElements() *
              data::dtypeSize(outs[r].dtype = computeDType(storage[r], promote)),
          0);
  }
  // Half operands are widened (exactly) for the kernel, put back after.
  llvm::SmallVector<std::pair<Value, Array>> halves;
  for (Value v : op.getOperands()) {
    auto it = values.find(v);
    if (it == values.end() || !isHalf(it->second.dtype))
      continue;
    Array wide;
    convertArray(it->second, computeDType(it->second.dtype, promote), wide);
    halves.push_back({v, std::move(it->second)});
    it->second = std::move(wide);
  }
  KernelContext ctx(&op, values, outs, options);
  bool ok = kernel->second(ctx);
  for (auto &[v, a] : halves)
    values[v] = std::move(a);
  if (!ok) {
    error = describe(&op) + ": " + ctx.error;
    return false;
  }
  for (unsigned r = 0; r < op.getNumResults(); ++r)
    if (isHalf(storage[r]) && outs[r].dtype != storage[r]) {
      Array narrow;
      convertArray(outs[r], storage[r], narrow);
      outs[r] = std::move(narrow);
    }
  return true;
}

bool evaluate(Operation *op, llvm::ArrayRef<Array> operands,
              std::vector<Array> &results, std::string &error,
              const Options &options) {
  results.clear();
  if (operands.size() != op->getNumOperands()) {
    error = describe(op) + " has " + std::to_string(op->getNumOperands()) +
            " operands, got " + std::to_string(operands.size()) + " arrays";
    return false;
  }
  if (op->getNumRegions() != 0) {
    // Its body may read values from outside, which only a block run has.
    error = describe(op) + " holds a region; run its function instead";
    return false;
  }
  llvm::DenseMap<Value, Array> values;
  for (auto [i, a] : llvm::enumerate(operands)) {
    Value v = op->getOperand(i);
    auto type = llvm::dyn_cast<RankedTensorType>(v.getType());
    std::optional<data::DType> want =
        type ? toDType(type.getElementType(), options.promoteToF64)
             : std::nullopt;
    if (!want || a.dtype != *want ||
        llvm::ArrayRef<int64_t>(a.shape) != type.getShape()) {
      error = describe(op) + ": operand #" + std::to_string(i) + " is " +
              typeStr(v.getType()) + " but its array is " +
              data::dtypeName(a.dtype) + " " + shapeStr(a.shape);
      return false;
    }
    values[v] = a;
  }
  return runOp(*op, values, options, results, error);
}

bool runBlock(Block &block, llvm::DenseMap<Value, Array> &values,
              const Options &options, std::vector<Array> &returned,
              std::string &error) {
  // Values are dropped after their last use, so peak memory is that of the
  // live set rather than of every intermediate.
  llvm::DenseMap<Value, Operation *> lastUse;
  for (Operation &op : block)
    for (Value v : op.getOperands())
      lastUse[v] = &op;

  for (Operation &op : block) {
    if (op.hasTrait<OpTrait::IsTerminator>()) {
      for (Value v : op.getOperands())
        returned.push_back(values.find(v)->second);
      return true;
    }
    std::vector<Array> outs;
    if (!runOp(op, values, options, outs, error))
      return false;
    for (Value v : op.getOperands())
      if (lastUse.lookup(v) == &op)
        values.erase(v);
    for (unsigned r = 0; r < op.getNumResults(); ++r)
      values[op.getResult(r)] = std::move(outs[r]);
  }
  error = "block does not end in a terminator";
  return false;
}

} // namespace tcc::interp
