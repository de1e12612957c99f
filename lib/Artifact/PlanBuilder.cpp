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

/// A library call's attributes, by its op's schema (library_ops.inc, which
/// tcc-tblgen wrote from the same op definitions): the op's inherent
/// attribute where it has one, else the ODS default.
LogicalResult callAttrs(Operation *op, rt::Step &step) {
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
    if (!ok)
      return op->emitOpError() << "attribute '" << spec.name
                               << "' is not a finite value of its kind";
  }
  return success();
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
    step.gradients = c.getGradientsAttr().getInt();
    step.scatteredOnly = c.getScatteredOnly();
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
                  DenseMap<std::pair<Attribute, Type>, std::string> &constants)
      : data(data), plan(data.plan), paramIndex(paramIndex),
        stateIndex(stateIndex), constantNames(constants) {}

  /// `isTrain`: @train_step (which introduces the optimizer state);
  /// `inference`: @forward of an inference plan (results are outputs).
  LogicalResult build(func::FuncOp func, bool isTrain, bool inference,
                      rt::Function &fp);

private:
  LogicalResult describe(Value v, rt::Value &desc);
  int64_t add(Value v, rt::Value desc) {
    ids[v] = values->size();
    values->push_back(std::move(desc));
    return ids[v];
  }
  LogicalResult idOf(Value v, Operation *user, int64_t &id);
  LogicalResult bindArgument(func::FuncOp func, BlockArgument arg, bool isTrain,
                             rt::Function &fp);
  LogicalResult readInit(func::FuncOp func, unsigned i, rt::TensorDesc &state);
  LogicalResult bindResults(Operation *op);
  LogicalResult constant(ConstantOp op);
  LogicalResult step(Operation *op, rt::Function &fp);
  LogicalResult results(func::FuncOp func, func::ReturnOp ret,
                        rt::Function &fp);
  /// An error about the function being built, named in the message.
  InFlightDiagnostic fail(func::FuncOp func) {
    return func.emitError() << "@" << fn;
  }

  PlanData &data;
  rt::Plan &plan;
  const llvm::StringMap<int64_t> &paramIndex;
  llvm::StringMap<int64_t> &stateIndex;
  DenseMap<std::pair<Attribute, Type>, std::string> &constantNames;

  std::string fn;
  bool inference = false;
  std::vector<rt::Value> *values = nullptr;
  DenseMap<Value, int64_t> ids;
};

/// The dtype and shape of `v`; a type the runtime does not support is an
/// error at the op that makes `v` (or the function that takes it).
LogicalResult FunctionBuilder::describe(Value v, rt::Value &desc) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(v.getType());
  std::optional<data::DType> dtype =
      tensor && tensor.hasStaticShape() ? toDType(tensor.getElementType())
                                        : std::nullopt;
  if (!dtype) {
    if (auto arg = llvm::dyn_cast<BlockArgument>(v))
      return emitError(arg.getLoc())
             << "@" << fn << ": argument #" << arg.getArgNumber()
             << " has type " << v.getType()
             << ", which the runtime does not support";
    return v.getDefiningOp()->emitOpError()
           << "result #" << llvm::cast<OpResult>(v).getResultNumber()
           << " has type " << v.getType()
           << ", which the runtime does not support";
  }
  // Only the type: a reshape alias keeps its operand's storage.
  rt::Value typed = rt::Value::make(
      *dtype, std::vector<int64_t>(tensor.getShape().begin(),
                                   tensor.getShape().end()));
  desc.dtype = typed.dtype;
  desc.shape = std::move(typed.shape);
  desc.elements = typed.elements;
  desc.bytes = typed.bytes;
  return success();
}

LogicalResult FunctionBuilder::idOf(Value v, Operation *user, int64_t &id) {
  if (!v) {
    id = -1;
    return success();
  }
  auto it = ids.find(v);
  if (it == ids.end())
    return user->emitOpError("reads a value the plan does not hold");
  id = it->second;
  return success();
}

/// The optional initial value of optimizer state argument `i`
/// (`tcc.init = <float>`, e.g. a loss scale of 65536) into `state.init`.
LogicalResult FunctionBuilder::readInit(func::FuncOp func, unsigned i,
                                        rt::TensorDesc &state) {
  Attribute attr = func.getArgAttr(i, kInitAttr);
  if (!attr)
    return success();
  double v;
  if (auto f = dyn_cast<FloatAttr>(attr))
    v = f.getValueAsDouble();
  else if (auto n = dyn_cast<IntegerAttr>(attr))
    v = double(n.getValue().getSExtValue());
  else
    return fail(func) << ": " << kInitAttr << " of optimizer state '"
                      << state.name << "' is not a number";
  std::string why = rt::initUnfit(v, state.dtype);
  if (!why.empty())
    return fail(func) << ": optimizer state '" << state.name << "' ("
                      << data::dtypeName(state.dtype) << "): " << kInitAttr
                      << " = " << rt::formatNumber(v) << " " << why;
  state.init = v;
  return success();
}

LogicalResult FunctionBuilder::bindArgument(func::FuncOp func,
                                            BlockArgument arg, bool isTrain,
                                            rt::Function &fp) {
  unsigned i = arg.getArgNumber();
  rt::Value desc;
  if (failed(describe(arg, desc)))
    return failure();
  if (auto name = func.getArgAttrOfType<StringAttr>(i, kParamAttr)) {
    auto it = paramIndex.find(name.getValue());
    if (it == paramIndex.end())
      return fail(func) << " takes an unknown parameter '" << name.getValue()
                        << "'";
    desc.storage = Storage::Param;
    desc.index = it->second;
  } else if (auto name = func.getArgAttrOfType<StringAttr>(i, kOptStateAttr)) {
    auto it = stateIndex.find(name.getValue());
    if (it == stateIndex.end()) {
      if (!isTrain)
        return fail(func) << " takes optimizer state '" << name.getValue()
                          << "' that @train_step does not have";
      it = stateIndex.insert({name.getValue(), plan.optState.size()}).first;
      plan.optState.push_back(
          rt::TensorDesc::make(name.str(), desc.dtype, desc.shape));
      if (failed(readInit(func, i, plan.optState.back())))
        return failure();
    }
    desc.storage = Storage::OptState;
    desc.index = it->second;
  } else if (auto name = func.getArgAttrOfType<StringAttr>(i, kWorkingAttr)) {
    auto it = paramIndex.find(name.getValue());
    if (it == paramIndex.end())
      return fail(func) << " takes a working copy of an unknown parameter '"
                        << name.getValue() << "'";
    rt::TensorDesc &param = plan.params[it->second];
    if (param.dtype != data::DType::F32 || desc.shape != param.shape ||
        (desc.dtype != data::DType::BF16 && desc.dtype != data::DType::F16) ||
        (param.working && *param.working != desc.dtype))
      return fail(func) << ": the working copy of parameter '"
                        << name.getValue()
                        << "' must be one bf16/f16 tensor of its f32 shape";
    param.working = desc.dtype;
    desc.storage = Storage::Working;
    desc.index = it->second;
  } else if (func.getArgAttr(i, kStepAttr)) {
    if (desc.dtype != data::DType::I64 || !desc.shape.empty())
      return fail(func) << ": the step argument must be tensor<i64>";
    desc.storage = Storage::Step;
  } else if (auto name = func.getArgAttrOfType<StringAttr>(i, kNameAttr)) {
    desc.storage = Storage::Input;
    desc.index = fp.inputs.size();
    fp.inputs.push_back(rt::TensorDesc::make(name.str(), desc.dtype, desc.shape));
  } else {
    return fail(func) << ": argument #" << i
                      << " has no tcc.* attribute to bind by";
  }
  add(arg, std::move(desc));
  return success();
}

/// The storage of `op`'s results from tcc-plan-memory's annotations.
LogicalResult FunctionBuilder::bindResults(Operation *op) {
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
    if (failed(describe(result, desc)))
      return failure();
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
      return op->emitOpError()
             << "result #" << r << " has no memory plan (run tcc-plan-memory)";
    }
    add(result, std::move(desc));
  }
  return success();
}

LogicalResult FunctionBuilder::constant(ConstantOp op) {
  rt::Value desc;
  if (failed(describe(op.getResult(), desc)))
    return failure();
  desc.storage = Storage::Constant;
  auto key = std::make_pair(Attribute(op.getValue()), op.getType());
  auto it = constantNames.find(key);
  if (it == constantNames.end()) {
    std::string name = "const_" + std::to_string(data.constants.size());
    FailureOr<data::TensorSource> array =
        elementsSource(op.getValue(), op.getType(), name,
                       [&] { return op.emitOpError() << "value "; });
    if (failed(array))
      return failure();
    data.constants.push_back(std::move(*array));
    it = constantNames.insert({key, name}).first;
  }
  desc.name = it->second;
  add(op.getResult(), std::move(desc));
  return success();
}

LogicalResult FunctionBuilder::step(Operation *op, rt::Function &fp) {
  rt::Step s;
  SmallVector<Value> ins, outs;
  if (auto fusion = llvm::dyn_cast<exec::FusionOp>(op)) {
    s.kind = rt::Step::Kernel;
    s.symbol = codegen::kernelSymbol(fusion);
    s.elements = llvm::cast<RankedTensorType>(fusion.getResult().getType())
                     .getNumElements();
    // A kernel whose root op's result is in packed row order
    // (tcc-pack-tokens) runs over the valid rows.
    if (Operation *root = fusion.getBody().front().getTerminator()
                              ->getOperand(0)
                              .getDefiningOp())
      if (auto rows = root->getAttrOfType<IntegerAttr>(kTokenRowsAttr))
        s.tokenRows = rows.getInt();
    ins.assign(fusion.getInputs().begin(), fusion.getInputs().end());
    // The result, then the stores (the kernel's inputs[N + k - 1]).
    outs.assign(fusion.getResults().begin(), fusion.getResults().end());
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
    if (!rt::parseOp(name, s.op))
      return callee->emitOpError("is not in the runtime's op table "
                                 "(runtime/plan/library_ops.inc is stale)");
    if (failed(callAttrs(callee, s)))
      return failure();
    if (auto rows = callee->getAttrOfType<IntegerAttr>(kTokenRowsAttr))
      s.tokenRows = rows.getInt();
    for (Value v : call.getCallOperands())
      ins.push_back(v ? wrapper.getInputs()[cast<BlockArgument>(v)
                                                .getArgNumber()]
                      : Value());
    for (Value v : call.getCallResults())
      outs.push_back(v ? wrapper.getResult(cast<OpResult>(v).getResultNumber())
                       : Value());
  }
  for (Value in : ins)
    if (failed(idOf(in, op, s.inputs.emplace_back())))
      return failure();
  if (failed(bindResults(op)))
    return failure();
  for (Value out : outs)
    if (failed(idOf(out, op, s.outputs.emplace_back())))
      return failure();
  fp.steps.push_back(std::move(s));
  return success();
}

LogicalResult FunctionBuilder::results(func::FuncOp func, func::ReturnOp ret,
                                       rt::Function &fp) {
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    rt::Result r;
    if (failed(idOf(v, ret, r.value)))
      return failure();
    if (inference) {
      // Every result is an output, by its name.
      auto name = func.getResultAttrOfType<StringAttr>(i, kNameAttr);
      if (!name || name.getValue().empty())
        return fail(func) << ": result #" << i
                          << " has no tcc.name to read it by";
      for (const rt::Result &other : fp.results)
        if (other.name == name.getValue())
          return fail(func)
                 << ": two results are named '" << name.getValue() << "'";
      r.role = rt::Role::Output;
      r.name = name.str();
      fp.results.push_back(r);
      continue;
    }
    if (auto name = func.getResultAttrOfType<StringAttr>(i, kParamAttr)) {
      auto it = paramIndex.find(name.getValue());
      if (it == paramIndex.end())
        return fail(func) << " returns an unknown parameter '"
                          << name.getValue() << "'";
      r.role = rt::Role::Param;
      r.index = it->second;
    } else if (auto name =
                   func.getResultAttrOfType<StringAttr>(i, kOptStateAttr)) {
      auto it = stateIndex.find(name.getValue());
      if (it == stateIndex.end())
        return fail(func) << " returns an unknown optimizer state '"
                          << name.getValue() << "'";
      r.role = rt::Role::OptState;
      r.index = it->second;
    } else if (auto name =
                   func.getResultAttrOfType<StringAttr>(i, kWorkingAttr)) {
      auto it = paramIndex.find(name.getValue());
      if (it == paramIndex.end() || !plan.params[it->second].working)
        return fail(func) << " returns a working copy of parameter '"
                          << name.getValue() << "' that it does not take";
      r.role = rt::Role::Working;
      r.index = it->second;
    } else if (auto name = func.getResultAttrOfType<StringAttr>(i, kNameAttr);
               name && name.getValue() == "loss") {
      r.role = rt::Role::Loss;
    } else if (auto name = func.getResultAttrOfType<StringAttr>(i, kNameAttr);
               name && !name.getValue().empty()) {
      r.role = rt::Role::Metric;
      r.name = name.str();
    } else {
      return fail(func) << ": result #" << i
                        << " has no tcc.* attribute to bind by";
    }
    fp.results.push_back(r);
  }
  return success();
}

LogicalResult FunctionBuilder::build(func::FuncOp func, bool isTrain,
                                     bool inference, rt::Function &fp) {
  fn = func.getSymName().str();
  this->inference = inference;
  fp.name = fn;
  values = &fp.values;
  ids.clear();
  auto arena = func->getAttrOfType<IntegerAttr>(kArenaBytesAttr);
  if (!arena || !func.getBody().hasOneBlock())
    return fail(func) << " has no memory plan (run tcc-plan-memory)";
  fp.arenaBytes = arena.getInt();
  if (fp.arenaBytes > rt::kMaxArenaBytes)
    return fail(func) << " needs an arena of " << fp.arenaBytes
                      << " bytes, more than a process can address ("
                      << rt::kMaxArenaBytes << "); are the input shapes right?";
  Block &block = func.getBody().front();
  for (BlockArgument arg : block.getArguments())
    if (failed(bindArgument(func, arg, isTrain, fp)))
      return failure();

  for (Operation &op : block) {
    if (auto ret = llvm::dyn_cast<func::ReturnOp>(op)) {
      if (failed(results(func, ret, fp)))
        return failure();
    } else if (auto reshape = llvm::dyn_cast<ReshapeOp>(op)) {
      // An alias: the operand's storage under the result's shape.
      int64_t src;
      if (failed(idOf(reshape.getInput(), &op, src)))
        return failure();
      rt::Value desc = (*values)[src];
      if (failed(describe(reshape.getResult(), desc)))
        return failure();
      add(reshape.getResult(), std::move(desc));
    } else if (auto view = llvm::dyn_cast<exec::ViewOp>(op)) {
      // A piece of the source's arena bytes (tcc-fuse only makes views of
      // arena values), at the offset the memory plan gives it.
      int64_t src;
      if (failed(idOf(view.getSource(), &op, src)))
        return failure();
      rt::Value desc = (*values)[src];
      auto offset = op.getAttrOfType<IntegerAttr>(kOffsetAttr);
      if (desc.storage != Storage::Arena || !offset)
        return op.emitOpError("is a view of a value outside the arena");
      if (failed(describe(view.getResult(), desc)))
        return failure();
      desc.offset = offset.getInt();
      add(view.getResult(), std::move(desc));
    } else if (auto c = llvm::dyn_cast<ConstantOp>(op)) {
      if (failed(constant(c)))
        return failure();
    } else if (auto get = llvm::dyn_cast<GetParamOp>(op)) {
      rt::Value desc;
      if (failed(describe(get.getResult(), desc)))
        return failure();
      auto it = paramIndex.find(get.getName());
      if (it == paramIndex.end())
        return get.emitOpError()
               << "reads unknown parameter '" << get.getName() << "'";
      desc.storage = Storage::Param;
      desc.index = it->second;
      add(get.getResult(), std::move(desc));
    } else if (llvm::isa<exec::FusionOp, exec::CallOp, exec::AllReduceOp,
                         exec::ReduceScatterOp, exec::AllGatherOp>(op)) {
      if (failed(step(&op, fp)))
        return failure();
    } else {
      return op.emitOpError("has no kernel or library call in the runtime");
    }
  }
  return success();
}

} // namespace

FailureOr<PlanData> buildPlan(ModuleOp lowered, rt::Kind kind) {
  PlanData data;
  rt::Plan &plan = data.plan;
  llvm::StringMap<int64_t> paramIndex, stateIndex;
  for (ParamOp p : lowered.getOps<ParamOp>()) {
    std::string name = p.getSymName().str();
    FailureOr<data::TensorSource> weight =
        elementsSource(p.getInitialValue(), p.getType(), name,
                       [&] { return p.emitError() << "parameter "; });
    if (failed(weight))
      return failure();
    paramIndex[name] = plan.params.size();
    plan.params.push_back(
        rt::TensorDesc::make(name, weight->dtype, weight->shape));
    data.weights.push_back(std::move(*weight));
  }

  DenseMap<std::pair<Attribute, Type>, std::string> constants;
  FunctionBuilder builder(data, paramIndex, stateIndex, constants);
  if (kind == rt::Kind::Inference) {
    auto forward = lowered.lookupSymbol<func::FuncOp>("forward");
    if (!forward || forward.isExternal())
      return lowered.emitError("the module has no @forward");
    if (failed(builder.build(forward, /*isTrain=*/false, /*inference=*/true,
                             plan.functions.emplace_back())))
      return failure();
    if (!plan.optState.empty())
      return forward.emitError()
             << "@forward takes optimizer state '" << plan.optState[0].name
             << "'; an inference artifact has none";
    return data;
  }
  auto train = lowered.lookupSymbol<func::FuncOp>("train_step");
  if (!train || train.isExternal())
    return lowered.emitError("the module has no @train_step");
  if (failed(builder.build(train, /*isTrain=*/true, /*inference=*/false,
                           plan.functions.emplace_back())))
    return failure();
  if (auto eval = lowered.lookupSymbol<func::FuncOp>("eval_step")) {
    if (failed(builder.build(eval, /*isTrain=*/false, /*inference=*/false,
                             plan.functions.emplace_back())))
      return failure();
    // The runtime binds inputs by name, once for both functions.
    for (const rt::TensorDesc &in : plan.functions.back().inputs) {
      const std::vector<rt::TensorDesc> &trainInputs = plan.functions[0].inputs;
      auto it = llvm::find_if(trainInputs, [&](const rt::TensorDesc &t) {
        return t.name == in.name;
      });
      if (it == trainInputs.end() || it->dtype != in.dtype ||
          it->shape != in.shape)
        return eval.emitError() << "@eval_step's batch input '" << in.name
                                << "' does not match @train_step's";
    }
  }
  return data;
}

} // namespace tcc::artifact
