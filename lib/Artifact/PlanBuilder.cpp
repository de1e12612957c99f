// The lowered module as plan data: persistent state from the tcc.param ops
// and the step signatures, then per function every value with its storage
// (from the tcc.* argument attributes and tcc-plan-memory's exec.*
// annotations), the steps in order and the results.
#include "Plan.h"

#include "tcc/Artifact/Artifact.h"
#include "tcc/Codegen/KernelEmitter.h"
#include "exec/MemoryPlan.h"

#include "exec/ExecOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"


#include <cmath>
#include <cstring>
#include <limits>

using namespace mlir;

namespace tcc::artifact {
namespace {

using rt::Storage;

std::string opText(Operation *op) {
  return "'" + op->getName().getStringRef().str() + "' at " +
         describeLoc(op->getLoc());
}

/// A library call's attributes, by its op's schema (library_ops.inc, which
/// tcc-tblgen wrote from the same op definitions): the op's inherent
/// attribute where it has one, else the ODS default.
bool callAttrs(Operation *op, rt::Step &step, std::string &error) {
  step.attrs = rt::defaultAttrs(step.op);
  for (const rt::AttrSpec &spec : rt::opSchema(step.op).attrs) {
    std::optional<Attribute> value = op->getInherentAttr(spec.name);
    if (!value || !*value)
      continue;
    bool ok = false;
    switch (spec.kind) {
    case rt::AttrKind::Bool:
      if (auto b = dyn_cast<BoolAttr>(*value)) {
        spec.asBool(step.attrs) = b.getValue();
        ok = true;
      }
      break;
    case rt::AttrKind::Int:
      if (auto i = dyn_cast<IntegerAttr>(*value)) {
        spec.asInt(step.attrs) = i.getValue().getSExtValue();
        ok = true;
      }
      break;
    case rt::AttrKind::Float:
      if (auto f = dyn_cast<FloatAttr>(*value)) {
        spec.asFloat(step.attrs) = f.getValueAsDouble();
        ok = std::isfinite(spec.asFloat(step.attrs));
      }
      break;
    }
    if (!ok) {
      error = "op " + opText(op) + ": attribute '" + spec.name +
              "' is not a finite value of its kind";
      return false;
    }
  }
  return true;
}

/// A collective op's step fields (exec.all_reduce, reduce_scatter,
/// all_gather).
void collective(Operation *op, rt::Step &step) {
  auto reduction = [](exec::Reduction r) {
    return r == exec::Reduction::mean ? rt::Reduction::Mean
                                      : rt::Reduction::Sum;
  };
  if (auto c = llvm::dyn_cast<exec::AllReduceOp>(op)) {
    step.collective = rt::CollectiveOp::AllReduce;
    step.reduction = reduction(c.getReduction());
    step.bucket = c.getBucketAttr().getInt();
    step.stream = c.getStreamAttr().getInt();
  } else if (auto c = llvm::dyn_cast<exec::ReduceScatterOp>(op)) {
    step.collective = rt::CollectiveOp::ReduceScatter;
    step.reduction = reduction(c.getReduction());
    step.worldSize = c.getWorldSizeAttr().getInt();
    step.bucket = c.getBucketAttr().getInt();
    step.stream = c.getStreamAttr().getInt();
  } else {
    auto g = llvm::cast<exec::AllGatherOp>(op);
    step.collective = rt::CollectiveOp::AllGather;
    step.worldSize = g.getWorldSizeAttr().getInt();
    step.bucket = g.getBucketAttr().getInt();
    step.stream = g.getStreamAttr().getInt();
  }
}

class FunctionBuilder {
public:
  FunctionBuilder(PlanData &data, const llvm::StringMap<int64_t> &paramIndex,
                  llvm::StringMap<int64_t> &stateIndex,
                  DenseMap<std::pair<Attribute, Type>, std::string> &constants,
                  std::string &error)
      : data(data), plan(data.plan), paramIndex(paramIndex),
        stateIndex(stateIndex),
        constantNames(constants), error(error) {}

  /// `isTrain`: @train_step (which introduces the optimizer state);
  /// `inference`: @forward of an inference plan (results are outputs).
  bool build(func::FuncOp func, bool isTrain, bool inference,
             rt::Function &fp);

private:
  bool describe(Value v, rt::Value &desc, const std::string &what);
  int64_t add(Value v, rt::Value desc) {
    ids[v] = values->size();
    values->push_back(std::move(desc));
    return ids[v];
  }
  bool idOf(Value v, Operation *user, int64_t &id);
  bool bindArgument(func::FuncOp func, BlockArgument arg, bool isTrain,
                    rt::Function &fp);
  bool readInit(func::FuncOp func, unsigned i, rt::TensorDesc &state);
  bool bindResults(Operation *op);
  bool constant(ConstantOp op);
  bool step(Operation *op, rt::Function &fp);
  bool results(func::FuncOp func, func::ReturnOp ret, rt::Function &fp);

  PlanData &data;
  rt::Plan &plan;
  const llvm::StringMap<int64_t> &paramIndex;
  llvm::StringMap<int64_t> &stateIndex;
  DenseMap<std::pair<Attribute, Type>, std::string> &constantNames;
  std::string &error;

  std::string fn;
  bool inference = false;
  std::vector<rt::Value> *values = nullptr;
  DenseMap<Value, int64_t> ids;
};

bool FunctionBuilder::describe(Value v, rt::Value &desc,
                               const std::string &what) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(v.getType());
  std::optional<data::DType> dtype =
      tensor && tensor.hasStaticShape() ? toDType(tensor.getElementType())
                                        : std::nullopt;
  if (!dtype) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << v.getType();
    error = "@" + fn + ": " + what + " has type " + s +
            ", which the runtime does not support";
    return false;
  }
  // Only the type: a reshape alias keeps its operand's storage.
  rt::Value typed = rt::Value::make(
      *dtype, std::vector<int64_t>(tensor.getShape().begin(),
                                   tensor.getShape().end()));
  desc.dtype = typed.dtype;
  desc.shape = std::move(typed.shape);
  desc.elements = typed.elements;
  desc.bytes = typed.bytes;
  return true;
}

bool FunctionBuilder::idOf(Value v, Operation *user, int64_t &id) {
  if (!v) {
    id = -1;
    return true;
  }
  auto it = ids.find(v);
  if (it == ids.end()) {
    error = "@" + fn + ": op " + opText(user) +
            " reads a value the plan does not hold";
    return false;
  }
  id = it->second;
  return true;
}

/// The optional initial value of optimizer state argument `i`
/// (`tcc.init = <float>`, e.g. a loss scale of 65536) into `state.init`.
bool FunctionBuilder::readInit(func::FuncOp func, unsigned i,
                               rt::TensorDesc &state) {
  Attribute attr = func.getArgAttr(i, kInitAttr);
  if (!attr)
    return true;
  double v;
  if (auto f = dyn_cast<FloatAttr>(attr))
    v = f.getValueAsDouble();
  else if (auto n = dyn_cast<IntegerAttr>(attr))
    v = double(n.getValue().getSExtValue());
  else {
    error = "@" + fn + ": " + kInitAttr.str() + " of optimizer state '" +
            state.name + "' is not a number";
    return false;
  }
  std::string why = rt::initUnfit(v, state.dtype);
  if (!why.empty()) {
    error = "@" + fn + ": optimizer state '" + state.name + "' (" +
            data::dtypeName(state.dtype) + "): " + kInitAttr.str() + " = " +
            rt::formatNumber(v) + " " + why;
    return false;
  }
  state.init = v;
  return true;
}

bool FunctionBuilder::bindArgument(func::FuncOp func, BlockArgument arg,
                                   bool isTrain, rt::Function &fp) {
  unsigned i = arg.getArgNumber();
  rt::Value desc;
  std::string what = "argument #" + std::to_string(i);
  if (!describe(arg, desc, what))
    return false;
  if (auto name = func.getArgAttrOfType<StringAttr>(i, kParamAttr)) {
    auto it = paramIndex.find(name.getValue());
    if (it == paramIndex.end()) {
      error = "@" + fn + " takes an unknown parameter '" + name.str() + "'";
      return false;
    }
    desc.storage = Storage::Param;
    desc.index = it->second;
  } else if (auto name = func.getArgAttrOfType<StringAttr>(i, kOptStateAttr)) {
    auto it = stateIndex.find(name.getValue());
    if (it == stateIndex.end()) {
      if (!isTrain) {
        error = "@" + fn + " takes optimizer state '" + name.str() +
                "' that @train_step does not have";
        return false;
      }
      it = stateIndex.insert({name.getValue(), plan.optState.size()}).first;
      plan.optState.push_back(
          rt::TensorDesc::make(name.str(), desc.dtype, desc.shape));
      if (!readInit(func, i, plan.optState.back()))
        return false;
    }
    desc.storage = Storage::OptState;
    desc.index = it->second;
  } else if (auto name = func.getArgAttrOfType<StringAttr>(i, kWorkingAttr)) {
    auto it = paramIndex.find(name.getValue());
    if (it == paramIndex.end()) {
      error = "@" + fn + " takes a working copy of an unknown parameter '" +
              name.str() + "'";
      return false;
    }
    rt::TensorDesc &param = plan.params[it->second];
    if (param.dtype != data::DType::F32 || desc.shape != param.shape ||
        (desc.dtype != data::DType::BF16 && desc.dtype != data::DType::F16) ||
        (param.working && *param.working != desc.dtype)) {
      error = "@" + fn + ": the working copy of parameter '" + name.str() +
              "' must be one bf16/f16 tensor of its f32 shape";
      return false;
    }
    param.working = desc.dtype;
    desc.storage = Storage::Working;
    desc.index = it->second;
  } else if (func.getArgAttr(i, kStepAttr)) {
    if (desc.dtype != data::DType::I64 || !desc.shape.empty()) {
      error = "@" + fn + ": the step argument must be tensor<i64>";
      return false;
    }
    desc.storage = Storage::Step;
  } else if (auto name = func.getArgAttrOfType<StringAttr>(i, kNameAttr)) {
    desc.storage = Storage::Input;
    desc.index = fp.inputs.size();
    fp.inputs.push_back(rt::TensorDesc::make(name.str(), desc.dtype, desc.shape));
  } else {
    error = "@" + fn + ": " + what + " has no tcc.* attribute to bind by";
    return false;
  }
  add(arg, std::move(desc));
  return true;
}

/// The storage of `op`'s results from tcc-plan-memory's annotations.
bool FunctionBuilder::bindResults(Operation *op) {
  unsigned n = op->getNumResults();
  auto offset = op->getAttrOfType<IntegerAttr>(kOffsetAttr);
  auto offsets = op->getAttrOfType<DenseI64ArrayAttr>(kOffsetsAttr);
  auto region = op->getAttrOfType<StringAttr>(kRegionAttr);
  auto regions = op->getAttrOfType<ArrayAttr>(kRegionAttr);
  auto inplace = op->getAttrOfType<IntegerAttr>(kInplaceOfAttr);
  auto inplaces = op->getAttrOfType<DenseI64ArrayAttr>(kInplaceOfAttr);
  for (unsigned r = 0; r < n; ++r) {
    Value result = op->getResult(r);
    rt::Value desc;
    if (!describe(result, desc, "result #" + std::to_string(r) + " of op " +
                                    opText(op)))
      return false;
    int64_t off = -1, inplaceOf = -1;
    StringRef where;
    if (n == 1) {
      off = offset ? offset.getInt() : -1;
      where = region ? region.getValue() : "";
      inplaceOf = inplace ? inplace.getInt() : -1;
    } else {
      if (offsets && offsets.size() == n)
        off = offsets[r];
      if (regions && regions.size() == n)
        if (auto s = llvm::dyn_cast<StringAttr>(regions[r]))
          where = s.getValue();
      if (inplaces && inplaces.size() == n)
        inplaceOf = inplaces[r];
    }
    if (off >= 0) {
      desc.storage = Storage::Arena;
      desc.offset = off;
    } else if (where == "inplace" && inplaceOf >= 0 &&
               inplaceOf < static_cast<int64_t>(values->size())) {
      // Arguments come first, so argument k is value k.
      const rt::Value &arg = (*values)[inplaceOf];
      desc.storage = arg.storage;
      desc.index = arg.index;
      desc.offset = arg.offset;
    } else {
      error = "@" + fn + ": result #" + std::to_string(r) + " of op " +
              opText(op) + " has no memory plan (run tcc-plan-memory)";
      return false;
    }
    add(result, std::move(desc));
  }
  return true;
}

bool FunctionBuilder::constant(ConstantOp op) {
  rt::Value desc;
  if (!describe(op.getResult(), desc, "constant " + opText(op)))
    return false;
  desc.storage = Storage::Constant;
  auto key = std::make_pair(Attribute(op.getValue()), op.getType());
  auto it = constantNames.find(key);
  if (it == constantNames.end()) {
    std::string name = "const_" + std::to_string(data.constants.size());
    data::TensorSource array;
    if (!elementsSource(op.getValue(), op.getType(), name, array, error)) {
      error = "@" + fn + ": constant " + opText(op) + ": " + error;
      return false;
    }
    data.constants.push_back(std::move(array));
    it = constantNames.insert({key, name}).first;
  }
  desc.name = it->second;
  add(op.getResult(), std::move(desc));
  return true;
}

bool FunctionBuilder::step(Operation *op, rt::Function &fp) {
  rt::Step s;
  SmallVector<Value> ins, outs;
  if (auto fusion = llvm::dyn_cast<exec::FusionOp>(op)) {
    s.kind = rt::Step::Kernel;
    s.symbol = codegen::kernelSymbol(fusion);
    s.elements = fusion.getResult().getType().getNumElements();
    ins.assign(fusion.getInputs().begin(), fusion.getInputs().end());
    outs.push_back(fusion.getResult());
  } else if (!llvm::isa<exec::CallOp>(op)) {
    s.kind = rt::Step::Collective;
    ins.assign(op->getOperands().begin(), op->getOperands().end());
    outs.assign(op->getResults().begin(), op->getResults().end());
    collective(op, s);
  } else {
    // exec.call: the callee's operands are the body's arguments, in order,
    // and its results are the call's.
    auto wrapper = llvm::cast<exec::CallOp>(op);
    LibraryCallOpInterface call = wrapper.getCallee();
    Operation *callee = call;
    s.kind = rt::Step::Call;
    std::string name =
        callee->getName().getStringRef().drop_front(strlen("tcc.")).str();
    if (!rt::parseOp(name, s.op)) {
      error = "op " + opText(callee) + " is not in the runtime's op table "
              "(runtime/plan/library_ops.inc is stale)";
      return false;
    }
    if (!callAttrs(callee, s, error))
      return false;
    for (Value v : call.getCallOperands())
      ins.push_back(v ? wrapper.getInputs()[cast<BlockArgument>(v)
                                                .getArgNumber()]
                      : Value());
    for (Value v : call.getCallResults())
      outs.push_back(v ? wrapper.getResult(cast<OpResult>(v).getResultNumber())
                       : Value());
  }
  for (Value in : ins)
    if (!idOf(in, op, s.inputs.emplace_back()))
      return false;
  if (!bindResults(op))
    return false;
  for (Value out : outs)
    if (!idOf(out, op, s.outputs.emplace_back()))
      return false;
  fp.steps.push_back(std::move(s));
  return true;
}

bool FunctionBuilder::results(func::FuncOp func, func::ReturnOp ret,
                              rt::Function &fp) {
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    rt::Result r;
    if (!idOf(v, ret, r.value))
      return false;
    if (inference) {
      // Every result is an output, by its name.
      auto name = func.getResultAttrOfType<StringAttr>(i, kNameAttr);
      if (!name || name.getValue().empty()) {
        error = "@" + fn + ": result #" + std::to_string(i) +
                " has no tcc.name to read it by";
        return false;
      }
      for (const rt::Result &other : fp.results)
        if (other.name == name.getValue()) {
          error = "@" + fn + ": two results are named '" + name.str() + "'";
          return false;
        }
      r.role = rt::Role::Output;
      r.name = name.str();
      fp.results.push_back(r);
      continue;
    }
    if (auto name = func.getResultAttrOfType<StringAttr>(i, kParamAttr)) {
      auto it = paramIndex.find(name.getValue());
      if (it == paramIndex.end()) {
        error = "@" + fn + " returns an unknown parameter '" + name.str() + "'";
        return false;
      }
      r.role = rt::Role::Param;
      r.index = it->second;
    } else if (auto name =
                   func.getResultAttrOfType<StringAttr>(i, kOptStateAttr)) {
      auto it = stateIndex.find(name.getValue());
      if (it == stateIndex.end()) {
        error = "@" + fn + " returns an unknown optimizer state '" +
                name.str() + "'";
        return false;
      }
      r.role = rt::Role::OptState;
      r.index = it->second;
    } else if (auto name =
                   func.getResultAttrOfType<StringAttr>(i, kWorkingAttr)) {
      auto it = paramIndex.find(name.getValue());
      if (it == paramIndex.end() || !plan.params[it->second].working) {
        error = "@" + fn + " returns a working copy of parameter '" +
                name.str() + "' that it does not take";
        return false;
      }
      r.role = rt::Role::Working;
      r.index = it->second;
    } else if (auto name = func.getResultAttrOfType<StringAttr>(i, kNameAttr);
               name && name.getValue() == "loss") {
      r.role = rt::Role::Loss;
    } else {
      error = "@" + fn + ": result #" + std::to_string(i) +
              " has no tcc.* attribute to bind by";
      return false;
    }
    fp.results.push_back(r);
  }
  return true;
}

bool FunctionBuilder::build(func::FuncOp func, bool isTrain, bool inference,
                            rt::Function &fp) {
  fn = func.getSymName().str();
  this->inference = inference;
  fp.name = fn;
  values = &fp.values;
  ids.clear();
  auto arena = func->getAttrOfType<IntegerAttr>(kArenaBytesAttr);
  if (!arena || !func.getBody().hasOneBlock()) {
    error = "@" + fn + " has no memory plan (run tcc-plan-memory)";
    return false;
  }
  fp.arenaBytes = arena.getInt();
  Block &block = func.getBody().front();
  for (BlockArgument arg : block.getArguments())
    if (!bindArgument(func, arg, isTrain, fp))
      return false;

  for (Operation &op : block) {
    if (auto ret = llvm::dyn_cast<func::ReturnOp>(op)) {
      if (!results(func, ret, fp))
        return false;
    } else if (auto reshape = llvm::dyn_cast<ReshapeOp>(op)) {
      // An alias: the operand's storage under the result's shape.
      int64_t src;
      if (!idOf(reshape.getInput(), &op, src))
        return false;
      rt::Value desc = (*values)[src];
      if (!describe(reshape.getResult(), desc, "reshape " + opText(&op)))
        return false;
      add(reshape.getResult(), std::move(desc));
    } else if (auto c = llvm::dyn_cast<ConstantOp>(op)) {
      if (!constant(c))
        return false;
    } else if (auto get = llvm::dyn_cast<GetParamOp>(op)) {
      rt::Value desc;
      if (!describe(get.getResult(), desc, "op " + opText(&op)))
        return false;
      auto it = paramIndex.find(get.getName());
      if (it == paramIndex.end()) {
        error = "@" + fn + ": op " + opText(&op) + " reads unknown parameter '" +
                get.getName().str() + "'";
        return false;
      }
      desc.storage = Storage::Param;
      desc.index = it->second;
      add(get.getResult(), std::move(desc));
    } else if (llvm::isa<exec::FusionOp, exec::CallOp, exec::AllReduceOp,
                         exec::ReduceScatterOp, exec::AllGatherOp>(op)) {
      if (!step(&op, fp))
        return false;
    } else {
      error = "op " + opText(&op) +
              " has no kernel or library call in the runtime";
      return false;
    }
  }
  return true;
}

} // namespace

bool buildPlan(ModuleOp lowered, rt::Kind kind, PlanData &data,
               std::string &error) {
  rt::Plan &plan = data.plan;
  llvm::StringMap<int64_t> paramIndex, stateIndex;
  for (ParamOp p : lowered.getOps<ParamOp>()) {
    std::string name = p.getSymName().str();
    data::TensorSource &weight = data.weights.emplace_back();
    if (!elementsSource(p.getInitialValue(), p.getType(), name, weight,
                        error)) {
      error = "parameter " + error;
      return false;
    }
    paramIndex[name] = plan.params.size();
    plan.params.push_back(rt::TensorDesc::make(name, weight.dtype, weight.shape));
  }

  DenseMap<std::pair<Attribute, Type>, std::string> constants;
  FunctionBuilder builder(data, paramIndex, stateIndex, constants, error);
  if (kind == rt::Kind::Inference) {
    auto forward = lowered.lookupSymbol<func::FuncOp>("forward");
    if (!forward || forward.isExternal()) {
      error = "the module has no @forward";
      return false;
    }
    if (!builder.build(forward, /*isTrain=*/false, /*inference=*/true,
                       plan.functions.emplace_back()))
      return false;
    if (!plan.optState.empty()) {
      error = "@forward takes optimizer state '" + plan.optState[0].name +
              "'; an inference artifact has none";
      return false;
    }
    return true;
  }
  auto train = lowered.lookupSymbol<func::FuncOp>("train_step");
  if (!train || train.isExternal()) {
    error = "the module has no @train_step";
    return false;
  }
  if (!builder.build(train, /*isTrain=*/true, /*inference=*/false,
                     plan.functions.emplace_back()))
    return false;
  if (auto eval = lowered.lookupSymbol<func::FuncOp>("eval_step")) {
    if (!builder.build(eval, /*isTrain=*/false, /*inference=*/false,
                       plan.functions.emplace_back()))
      return false;
    // The runtime binds inputs by name, once for both functions.
    for (const rt::TensorDesc &in : plan.functions.back().inputs) {
      const std::vector<rt::TensorDesc> &trainInputs = plan.functions[0].inputs;
      auto it = llvm::find_if(trainInputs, [&](const rt::TensorDesc &t) {
        return t.name == in.name;
      });
      if (it == trainInputs.end() || it->dtype != in.dtype ||
          it->shape != in.shape) {
        error = "@eval_step's batch input '" + in.name +
                "' does not match @train_step's";
        return false;
      }
    }
  }
  return true;
}

} // namespace tcc::artifact
