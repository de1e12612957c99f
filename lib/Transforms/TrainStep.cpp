// The training-step builder: clones @forward once per micro-batch with its
// parameters turned into arguments, builds the loss over all micro-batches,
// differentiates it once, clips, schedules the learning rate and applies the
// optimizer, all as IR. Optimizer state is plain arguments and results so
// later passes can shard it or keep it in another precision. Batch norms run
// as in PyTorch's train() in @train_step (their running statistics and step
// counters are parameters it returns updated, never trained) and as in its
// eval() in @eval_step.
#include "TrainInternal.h"

#include "tcc/TccBatchNorm.h"
#include "tcc/TccOps.h"
#include "tcc/Transforms/Autodiff.h"

#include "exec/ExecOps.h"
#include "plan/plan.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace tcc {
namespace {

struct ParamInfo {
  std::string name;
  RankedTensorType type;
  bool trainable = false;
  /// A batch norm's running statistic or step counter: @train_step returns
  /// it updated by the forward pass, not by the optimizer.
  bool batchState = false;
  /// Under bf16/f16: the type @forward reads the parameter in (its
  /// persistent working copy); null when it reads it in fp32 only.
  RankedTensorType working;
};

/// Names of the parameters the forward result `output` depends on.
llvm::StringSet<> paramsReachingOutput(func::FuncOp forward, unsigned output) {
  Block &body = forward.getBody().front();
  llvm::DenseSet<Value> needed;
  needed.insert(body.getTerminator()->getOperand(output));
  llvm::StringSet<> names;
  for (Operation &op : llvm::reverse(body)) {
    if (llvm::none_of(op.getResults(),
                      [&](Value r) { return needed.contains(r); }))
      continue;
    needed.insert(op.operand_begin(), op.operand_end());
    if (auto get = llvm::dyn_cast<GetParamOp>(op))
      names.insert(get.getName());
  }
  return names;
}

/// The parameter `v` reads (through a cast), or none.
static std::optional<StringRef> paramRead(Value v) {
  if (auto cast = v.getDefiningOp<CastOp>())
    v = cast.getInput();
  if (auto get = v.getDefiningOp<GetParamOp>())
    return get.getName();
  return std::nullopt;
}

/// The 16-bit type each parameter is cast to in (lowered) @forward, by name.
llvm::StringMap<RankedTensorType> lowParamReads(func::FuncOp forward) {
  llvm::StringMap<RankedTensorType> reads;
  forward.walk([&](CastOp cast) {
    auto get = cast.getInput().getDefiningOp<GetParamOp>();
    auto type = llvm::cast<RankedTensorType>(cast.getType());
    Type element = type.getElementType();
    if (get && get.getType().getElementType().isF32() &&
        (element.isBF16() || element.isF16()))
      reads[get.getName()] = type;
  });
  return reads;
}

/// Makes the casts of parameter arguments to their working type read the
/// working-copy arguments instead: the optimizer keeps each copy equal to
/// its parameter rounded to nearest even, which is what the cast computes.
/// The casts' gradient rules have been applied already (they never read the
/// cast's result), so gradients still reach the fp32 parameters.
void readWorkingCopies(func::FuncOp f, ValueRange paramArgs,
                       ValueRange workingArgs) {
  llvm::DenseMap<Value, Value> copyOf;
  for (auto [p, w] : llvm::zip(paramArgs, workingArgs))
    if (w)
      copyOf[p] = w;
  f.walk([&](CastOp cast) {
    Value w = copyOf.lookup(cast.getInput());
    if (w && w.getType() == cast.getType()) {
      cast.getResult().replaceAllUsesWith(w);
      cast.erase();
    }
  });
}

/// Erases the forward ops whose results nothing reads (outputs the loss
/// does not use, and their inputs).
void eraseDeadOps(func::FuncOp f) {
  Block &body = f.getBody().front();
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (isOpTriviallyDead(&op))
      op.erase();
}

class StepBuilder {
public:
  StepBuilder(ModuleOp module, func::FuncOp forward, const TrainConfig &config)
      : module(module), forward(forward), config(config),
        loc(forward.getLoc()) {}

  LogicalResult plan();
  /// The parameters @forward reads in 16 bits (precision lowering cast
  /// them) get working copies.
  void findWorkingCopies() {
    llvm::StringMap<RankedTensorType> reads = lowParamReads(forward);
    for (ParamInfo &p : params)
      p.working = reads.lookup(p.name);
  }
  LogicalResult buildTrainStep(OpBuilder &b);
  LogicalResult buildEvalStep(OpBuilder &b);

private:
  /// The mean loss of the whole batch, with @forward's body cloned per
  /// micro-batch at b's insertion point.
  /// `step` is the train step's counter; null for eval_step, where dropout
  /// is the identity as in PyTorch's eval mode.
  /// Batch norms run in `mode`; in Train mode `state` maps each batch-norm
  /// state parameter to its value after the step's forward passes. With
  /// `accuracy` (a cross-entropy loss only), also the labels predicted right
  /// and those counted, summed over the micro-batches.
  FailureOr<Value> buildLoss(OpBuilder &b, ValueRange params, ValueRange batch,
                             Value step, BatchNormMode mode,
                             llvm::StringMap<Value> &state,
                             std::pair<Value, Value> *accuracy = nullptr);
  /// Clones `bn` expanded in `mode` (see buildLoss).
  void mapBatchNorm(OpBuilder &b, BatchNormOp bn, IRMapping &map,
                    ValueRange paramArgs, BatchNormMode mode,
                    llvm::StringMap<Value> &state);
  LogicalResult mapDropout(OpBuilder &b, DropoutOp drop, IRMapping &map, Value step,
                           int64_t k);
  Value microBatch(OpBuilder &b, Value arg, int64_t k);
  /// Data-parallel training: replaces every gradient by its mean over the
  /// ranks. Gradients are grouped into buckets of about config.bucketBytes
  /// in the order backward produces them, and each bucket's exec.all_reduce
  /// is placed right after its last gradient, so it overlaps the rest of
  /// backward. The first bucket also carries `loss`; returns its mean.
  Value allReduceGradients(OpBuilder &b, MutableArrayRef<Value> grads,
                           Value loss);
  void addBatchArgs(SmallVectorImpl<Type> &types,
                    SmallVectorImpl<DictionaryAttr> &attrs);
  /// The working-copy arguments (after the parameters), one per parameter
  /// with a working type, in parameter order.
  void addWorkingArgs(SmallVectorImpl<Type> &types,
                      SmallVectorImpl<DictionaryAttr> &attrs);
  /// Per parameter: its working-copy argument of `f` (starting at `first`),
  /// or null.
  SmallVector<Value> workingArgs(func::FuncOp f, unsigned first);
  func::FuncOp createFunc(OpBuilder &b, StringRef name, ArrayRef<Type> args,
                          ArrayRef<DictionaryAttr> argAttrs,
                          ArrayRef<Type> results,
                          ArrayRef<DictionaryAttr> resultAttrs);
  DictionaryAttr attr(StringRef key, Attribute value) {
    return DictionaryAttr::get(module.getContext(),
                               {NamedAttribute(key, value)});
  }
  DictionaryAttr strAttr(StringRef key, const Twine &value) {
    return attr(key, StringAttr::get(module.getContext(), value));
  }

  ModuleOp module;
  func::FuncOp forward;
  const TrainConfig &config;
  Location loc;
  train::LossPlan lossPlan;
  SmallVector<ParamInfo> params;
  llvm::StringMap<unsigned> paramIndex;
  /// Per micro-batch: the batch inputs' types and names.
  SmallVector<RankedTensorType> batchTypes;
  SmallVector<std::string> batchNames;
};

LogicalResult StepBuilder::plan() {
  if (failed(train::planLoss(forward, config.loss, lossPlan)))
    return failure();
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    auto type =
        llvm::dyn_cast<RankedTensorType>(forward.getArgument(i).getType());
    if (!type)
      return forward.emitError()
             << "argument #" << i << " is not a ranked tensor";
    auto name = forward.getArgAttrOfType<StringAttr>(i, kNameAttr);
    batchTypes.push_back(type);
    batchNames.push_back(name ? name.str() : "input" + std::to_string(i));
  }
  if (lossPlan.labelType && !lossPlan.labelArg) {
    batchTypes.push_back(lossPlan.labelType);
    batchNames.push_back(lossPlan.spec.label);
  }

  // Trainable: float, not frozen, and read by the loss. PyTorch's optimizers
  // skip parameters whose .grad is None (the loss does not reach them), so
  // they get no update and, importantly, no weight decay.
  llvm::StringSet<> reaching = paramsReachingOutput(forward, lossPlan.output);
  llvm::StringSet<> batchState;
  forward.walk([&](BatchNormOp bn) {
    for (Value v : {bn.getMean(), bn.getVar()})
      if (std::optional<StringRef> name = paramRead(v)) {
        batchState.insert(*name);
        if (std::optional<std::string> counter = batchCounterName(*name))
          batchState.insert(*counter);
      }
  });
  for (ParamOp p : module.getOps<ParamOp>()) {
    ParamInfo info{p.getSymName().str(), p.getType()};
    info.batchState = batchState.contains(info.name);
    info.trainable = llvm::isa<FloatType>(info.type.getElementType()) &&
                     !p.getFrozen() && !info.batchState &&
                     !matchesParamRegex(config.freeze, info.name) &&
                     reaching.contains(info.name);
    paramIndex[info.name] = params.size();
    params.push_back(info);
  }
  return success();
}

void StepBuilder::addWorkingArgs(SmallVectorImpl<Type> &types,
                                 SmallVectorImpl<DictionaryAttr> &attrs) {
  for (const ParamInfo &p : params)
    if (p.working) {
      types.push_back(p.working);
      attrs.push_back(strAttr(kWorkingAttr, p.name));
    }
}

SmallVector<Value> StepBuilder::workingArgs(func::FuncOp f, unsigned first) {
  SmallVector<Value> out;
  for (const ParamInfo &p : params)
    out.push_back(p.working ? f.getArgument(first++) : Value());
  return out;
}

Value StepBuilder::microBatch(OpBuilder &b, Value arg, int64_t k) {
  if (config.accum == 1)
    return arg;
  auto type = llvm::cast<RankedTensorType>(arg.getType());
  int64_t rank = type.getRank();
  SmallVector<int64_t> starts(rank, 0), limits(type.getShape()),
      strides(rank, 1);
  starts[0] = k;
  limits[0] = k + 1;
  Value slice = SliceOp::create(b, loc, arg, b.getDenseI64ArrayAttr(starts),
                                b.getDenseI64ArrayAttr(limits),
                                b.getDenseI64ArrayAttr(strides));
  return ReshapeOp::create(b, loc,
                           RankedTensorType::get(type.getShape().drop_front(),
                                                 type.getElementType()),
                           slice);
}

/// Clones a dropout of @forward for micro-batch k. Training draws a fresh
/// mask per optimizer step and micro-batch (offset = step * accum + k), so
/// resuming from a checkpoint redraws exactly the masks it would have drawn.
LogicalResult StepBuilder::mapDropout(OpBuilder &b, DropoutOp drop, IRMapping &map,
                                      Value step, int64_t k) {
  if (drop.getOffset())
    return drop.emitOpError("already has an offset; @forward must not set one");
  Value input = map.lookupOrDefault(drop.getInput());
  if (!step) {
    map.map(drop.getResult(), input);
    auto maskType = llvm::cast<RankedTensorType>(drop.getMask().getType());
    map.map(drop.getMask(), ConstantOp::create(b, loc, DenseElementsAttr::get(
                                                           maskType, true)));
    return success();
  }
  auto i64 = RankedTensorType::get({}, b.getI64Type());
  auto constant = [&](int64_t v) {
    return ConstantOp::create(b, loc, DenseElementsAttr::get(i64, b.getI64IntegerAttr(v).getValue()));
  };
  Value offset = AddOp::create(b, loc, MulOp::create(b, loc, step, constant(config.accum)),
                               constant(k));
  auto cloned = DropoutOp::create(b, drop.getLoc(), input, offset, drop.getRows(),
                                  drop.getRatioAttr(), drop.getSeedAttr());
  map.map(drop.getResult(), cloned.getResult());
  map.map(drop.getMask(), cloned.getMask());
  return success();
}

void StepBuilder::mapBatchNorm(OpBuilder &b, BatchNormOp bn, IRMapping &map,
                               ValueRange paramArgs, BatchNormMode mode,
                               llvm::StringMap<Value> &state) {
  auto clone = llvm::cast<BatchNormOp>(b.clone(*bn, map));
  BatchNormValues v = expandBatchNorm(b, clone, mode);
  map.map(bn.getResult(), v.result);
  map.map(bn.getNewMean(), v.newMean);
  map.map(bn.getNewVar(), v.newVar);
  clone.erase();
  if (mode != BatchNormMode::Train)
    return;
  // The new running statistics, in the parameters' own types.
  std::optional<StringRef> meanName = paramRead(bn.getMean());
  for (auto [operand, value] :
       {std::pair(bn.getVar(), v.newVar), std::pair(bn.getMean(), v.newMean)})
    if (std::optional<StringRef> name = paramRead(operand)) {
      Type type = params[paramIndex.lookup(*name)].type;
      state[*name] = value.getType() == type
                         ? value
                         : CastOp::create(b, loc, type, value).getResult();
    }
  if (!meanName)
    return;
  std::optional<std::string> counter = batchCounterName(*meanName);
  if (!counter || !paramIndex.count(*counter))
    return;
  unsigned index = paramIndex.lookup(*counter);
  const ParamInfo &p = params[index];
  Value count = state.lookup(*counter);
  if (!count)
    count = paramArgs[index];
  state[*counter] = AddOp::create(
      b, loc, count,
      train::scalarConstant(b, loc, p.type.getElementType(), 1.0));
}

FailureOr<Value> StepBuilder::buildLoss(OpBuilder &b, ValueRange paramArgs,
                                        ValueRange batch, Value step,
                                        BatchNormMode mode,
                                        llvm::StringMap<Value> &state,
                                        std::pair<Value, Value> *accuracy) {
  Block &body = forward.getBody().front();
  bool allReduce = step && config.dataParallel;
  // Several micro-batches weigh by the labels of all of them: counted from
  // the labels up front, so no micro-batch's backward pass needs another's
  // logits (and the micro-batches can run one after the other).
  Value count;
  if (config.accum > 1 && lossPlan.spec.kind == LossSpec::CrossEntropy) {
    Value labels = lossPlan.labelArg ? batch[*lossPlan.labelArg] : batch.back();
    auto output =
        llvm::cast<RankedTensorType>(forward.getResultTypes()[lossPlan.output]);
    Type type = output.getElementType().isF64() ? output.getElementType()
                                                : b.getF32Type();
    count = train::countLabels(b, loc, lossPlan, labels, type);
    if (allReduce)
      count = train::allReduceCount(b, loc, count);
  }
  SmallVector<train::MicroLoss> parts;
  for (int64_t k = 0; k < config.accum; ++k) {
    SmallVector<Value> micro;
    for (Value arg : batch)
      micro.push_back(microBatch(b, arg, k));
    IRMapping map;
    for (BlockArgument a : body.getArguments())
      map.map(a, micro[a.getArgNumber()]);
    SmallVector<Value> outputs;
    for (Operation &op : body) {
      if (auto get = llvm::dyn_cast<GetParamOp>(op)) {
        // A running statistic a previous micro-batch updated reads as
        // updated, as PyTorch's buffer does.
        Value param = state.lookup(get.getName());
        if (!param)
          param = paramArgs[paramIndex.lookup(get.getName())];
        if (param.getType() != get.getType())
          return get.emitOpError() << "reads the parameter as " << get.getType()
                                   << " but it is " << param.getType();
        map.map(get.getResult(), param);
      } else if (auto drop = llvm::dyn_cast<DropoutOp>(op)) {
        if (failed(mapDropout(b, drop, map, step, k)))
          return failure();
      } else if (auto bn = llvm::dyn_cast<BatchNormOp>(op)) {
        mapBatchNorm(b, bn, map, paramArgs, mode, state);
      } else if (op.hasTrait<OpTrait::IsTerminator>()) {
        for (Value v : op.getOperands())
          outputs.push_back(map.lookupOrDefault(v));
      } else {
        b.clone(op, map);
      }
    }
    Value label;
    if (lossPlan.labelArg)
      label = micro[*lossPlan.labelArg];
    else if (lossPlan.labelType)
      label = micro.back();
    parts.push_back(train::buildMicroLoss(b, loc, lossPlan,
                                          outputs[lossPlan.output], label));
    if (accuracy) {
      Value right = train::buildCorrectCount(b, loc, lossPlan,
                                             outputs[lossPlan.output], label);
      Value counted = parts.back().denominator;
      if (k > 0) {
        right = AddOp::create(b, loc, accuracy->first, right);
        counted = AddOp::create(b, loc, accuracy->second, counted);
      }
      *accuracy = {right, counted};
    }
  }
  // A train step of several ranks weighs the label counts of all of them.
  return train::combineLosses(b, loc, parts, allReduce, count);
}

static int64_t byteSize(Type type) {
  auto t = llvm::cast<RankedTensorType>(type);
  return t.getNumElements() *
         int64_t(llvm::divideCeil(t.getElementTypeBitWidth(), 8));
}

Value StepBuilder::allReduceGradients(OpBuilder &b,
                                      MutableArrayRef<Value> grads,
                                      Value loss) {
  SmallVector<unsigned> order =
      llvm::to_vector(llvm::seq<unsigned>(0, grads.size()));
  // Program order of the defining ops (every gradient is computed in the
  // step's one block; a constant zero gradient may come first).
  auto before = [&](unsigned x, unsigned y) {
    Operation *a = grads[x].getDefiningOp(), *c = grads[y].getDefiningOp();
    if (!a || !c)
      return !a && c;
    return a != c && a->isBeforeInBlock(c);
  };
  llvm::stable_sort(order, before);
  SmallVector<SmallVector<unsigned>> buckets(1);
  int64_t bytes = 0;
  for (unsigned i : order) {
    if (bytes >= config.bucketBytes) {
      buckets.emplace_back();
      bytes = 0;
    }
    buckets.back().push_back(i);
    bytes += byteSize(grads[i].getType());
  }
  OpBuilder::InsertionGuard guard(b);
  Block *body = b.getInsertionBlock();
  auto mean = exec::ReductionAttr::get(b.getContext(), exec::Reduction::mean);
  Value reducedLoss = loss;
  for (auto [k, bucket] : llvm::enumerate(buckets)) {
    SmallVector<Value> inputs;
    for (unsigned i : bucket)
      inputs.push_back(grads[i]);
    if (k == 0)
      inputs.push_back(loss);
    Operation *last = grads[bucket.back()].getDefiningOp();
    if (last)
      b.setInsertionPointAfter(last);
    else
      b.setInsertionPointToStart(body);
    auto reduce = exec::AllReduceOp::create(
        b, loc, ValueRange(inputs).getTypes(), inputs, mean,
        b.getI64IntegerAttr(int64_t(k) + 1), b.getI64IntegerAttr(1),
        b.getI64IntegerAttr(int64_t(bucket.size())), UnitAttr());
    for (auto [j, i] : llvm::enumerate(bucket))
      grads[i] = reduce.getResult(j);
    if (k == 0)
      reducedLoss = reduce.getResults().back();
  }
  return reducedLoss;
}

void StepBuilder::addBatchArgs(SmallVectorImpl<Type> &types,
                               SmallVectorImpl<DictionaryAttr> &attrs) {
  for (auto [type, name] : llvm::zip(batchTypes, batchNames)) {
    RankedTensorType t = type;
    if (config.accum > 1) {
      SmallVector<int64_t> shape{config.accum};
      llvm::append_range(shape, type.getShape());
      t = RankedTensorType::get(shape, type.getElementType());
    }
    types.push_back(t);
    attrs.push_back(strAttr(kNameAttr, name));
  }
}

func::FuncOp StepBuilder::createFunc(OpBuilder &b, StringRef name,
                                     ArrayRef<Type> args,
                                     ArrayRef<DictionaryAttr> argAttrs,
                                     ArrayRef<Type> results,
                                     ArrayRef<DictionaryAttr> resultAttrs) {
  auto f = func::FuncOp::create(b, loc, name, b.getFunctionType(args, results));
  f.setAllArgAttrs(argAttrs);
  f.setAllResultAttrs(resultAttrs);
  f->setAttr(kAccumAttr, b.getI64IntegerAttr(config.accum));
  f.addEntryBlock();
  return f;
}

/// The loss as the step functions return it: f32, or f64 when the model
/// computes in f64 (rounding an f64 loss to f32 would hide what the f64
/// model is for).
static RankedTensorType lossResultType(func::FuncOp forward,
                                       const train::LossPlan &plan) {
  Type elem =
      llvm::cast<RankedTensorType>(forward.getResultTypes()[plan.output])
          .getElementType();
  Builder b(forward.getContext());
  return RankedTensorType::get({}, elem.isF64() ? elem : b.getF32Type());
}

static Value lossResult(OpBuilder &b, Location loc, Value loss,
                        RankedTensorType type) {
  return loss.getType() == type
             ? loss
             : CastOp::create(b, loc, type, loss).getResult();
}

LogicalResult StepBuilder::buildEvalStep(OpBuilder &b) {
  SmallVector<Type> args;
  SmallVector<DictionaryAttr> argAttrs;
  for (const ParamInfo &p : params) {
    args.push_back(p.type);
    argAttrs.push_back(strAttr(kParamAttr, p.name));
  }
  addWorkingArgs(args, argAttrs);
  unsigned batchIndex = args.size();
  addBatchArgs(args, argAttrs);
  RankedTensorType lossType = lossResultType(forward, lossPlan);
  SmallVector<Type> results{lossType};
  SmallVector<DictionaryAttr> resultAttrs{strAttr(kNameAttr, "loss")};
  // A classification loss also counts the labels predicted right.
  bool classify = lossPlan.spec.kind == LossSpec::CrossEntropy;
  if (classify)
    for (StringRef name : {rt::kCorrectMetric, rt::kCountedMetric}) {
      results.push_back(RankedTensorType::get({}, b.getF32Type()));
      resultAttrs.push_back(strAttr(kNameAttr, name));
    }
  func::FuncOp f =
      createFunc(b, "eval_step", args, argAttrs, results, resultAttrs);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&f.getBody().front());
  ValueRange all = f.getArguments();
  ValueRange paramArgs = all.take_front(params.size());
  llvm::StringMap<Value> state;
  std::pair<Value, Value> accuracy;
  FailureOr<Value> loss =
      buildLoss(b, paramArgs, all.drop_front(batchIndex), Value(),
                BatchNormMode::Eval, state, classify ? &accuracy : nullptr);
  if (failed(loss))
    return failure();
  SmallVector<Value> outs{lossResult(b, loc, *loss, lossType)};
  if (classify)
    outs.append({accuracy.first, accuracy.second});
  func::ReturnOp::create(b, loc, outs);
  readWorkingCopies(f, paramArgs, workingArgs(f, params.size()));
  eraseDeadOps(f);
  return success();
}

LogicalResult StepBuilder::buildTrainStep(OpBuilder &b) {
  MLIRContext *ctx = module.getContext();
  const OptimizerSpec &opt = config.optimizer;
  SmallVector<StringRef> slots = train::stateSlots(opt);
  SmallVector<Type> args, results;
  SmallVector<DictionaryAttr> argAttrs, resultAttrs;
  RankedTensorType lossType = lossResultType(forward, lossPlan);
  results.push_back(lossType);
  resultAttrs.push_back(strAttr(kNameAttr, "loss"));
  for (const ParamInfo &p : params) {
    args.push_back(p.type);
    argAttrs.push_back(strAttr(kParamAttr, p.name));
    if (p.trainable) {
      results.push_back(p.type);
      resultAttrs.push_back(strAttr(kParamAttr, p.name));
    }
  }
  for (const ParamInfo &p : params)
    if (p.batchState) {
      results.push_back(p.type);
      resultAttrs.push_back(strAttr(kParamAttr, p.name));
    }
  // A trained parameter's working copy is rewritten by its update; a
  // frozen one's is only read.
  addWorkingArgs(args, argAttrs);
  for (const ParamInfo &p : params)
    if (p.trainable && p.working) {
      results.push_back(p.working);
      resultAttrs.push_back(strAttr(kWorkingAttr, p.name));
    }
  for (const ParamInfo &p : params) {
    if (!p.trainable)
      continue;
    for (StringRef slot : slots) {
      for (auto *list : {&args, &results})
        list->push_back(p.type);
      argAttrs.push_back(strAttr(kOptStateAttr, p.name + "." + slot));
      resultAttrs.push_back(argAttrs.back());
    }
  }
  const LossScaleSpec &scaling = config.lossScale;
  bool dynamic = scaling.kind == LossScaleSpec::Dynamic;
  unsigned scaleIndex = args.size();
  if (dynamic) {
    auto f32 = RankedTensorType::get({}, b.getF32Type());
    auto i64 = RankedTensorType::get({}, b.getI64Type());
    args.push_back(f32);
    argAttrs.push_back(DictionaryAttr::get(
        ctx, {NamedAttribute(kOptStateAttr, b.getStringAttr(kLossScaleState)),
              NamedAttribute(kInitAttr, b.getF64FloatAttr(scaling.scale))}));
    results.push_back(f32);
    resultAttrs.push_back(strAttr(kOptStateAttr, kLossScaleState));
    for (StringRef name : {kGoodStepsState, kSkippedState}) {
      args.push_back(i64);
      argAttrs.push_back(strAttr(kOptStateAttr, name));
      results.push_back(i64);
      resultAttrs.push_back(argAttrs.back());
    }
  }
  // The global gradient norm before clipping, as clip_grad_norm_ returns
  // it, when the step computes it: for clipping or dynamic loss scaling
  // (no extra kernel then), or asked for (--grad-norm, three kernels).
  bool reportNorm = config.gradClip || dynamic || config.gradNorm;
  if (reportNorm) {
    results.push_back(RankedTensorType::get({}, b.getF32Type()));
    resultAttrs.push_back(strAttr(kNameAttr, rt::kGradNormMetric));
  }
  unsigned stepIndex = args.size();
  args.push_back(RankedTensorType::get({}, b.getI64Type()));
  argAttrs.push_back(attr(kStepAttr, UnitAttr::get(ctx)));
  addBatchArgs(args, argAttrs);
  func::FuncOp f =
      createFunc(b, "train_step", args, argAttrs, results, resultAttrs);

  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&f.getBody().front());
  ValueRange all = f.getArguments();
  ValueRange paramArgs = all.take_front(params.size());
  Value step = all[stepIndex];
  llvm::StringMap<Value> batchState;
  FailureOr<Value> loss =
      buildLoss(b, paramArgs, all.drop_front(stepIndex + 1), step,
                BatchNormMode::Train, batchState);
  if (failed(loss))
    return failure();

  SmallVector<Value> wrt;
  SmallVector<unsigned> trained;
  for (auto [i, p] : llvm::enumerate(params))
    if (p.trainable) {
      wrt.push_back(paramArgs[i]);
      trained.push_back(i);
    }
  // Loss scaling seeds the backward pass with the scale (the loss value
  // stays unscaled) and divides it out of the fp32 gradients.
  auto seedType = llvm::cast<RankedTensorType>(loss->getType());
  Type f32 = b.getF32Type();
  Value scale;
  if (scaling.kind == LossScaleSpec::Static)
    scale = train::scalarConstant(b, loc, f32, scaling.scale);
  else if (dynamic)
    scale = all[scaleIndex];
  Value seed =
      scale ? lossResult(b, loc, scale, seedType)
            : train::scalarConstant(b, loc, seedType.getElementType(), 1.0);
  FailureOr<SmallVector<Value>> grads =
      buildGradients(b, *loss, seed, wrt, /*wrtInUseOrder=*/config.accum > 1);
  if (failed(grads))
    return failure();
  // Micro-batches one after another (before the gradients' collectives are
  // placed, so that they follow the last micro-batch's backward pass).
  if (config.accum > 1)
    train::runMicroBatchesInOrder(f, all.drop_front(stepIndex + 1));
  // Clipping, the overflow check and the optimizer see reduced gradients.
  Value reportedLoss = *loss;
  if (config.dataParallel && !grads->empty())
    reportedLoss = allReduceGradients(b, *grads, *loss);
  if (scale)
    train::scaleGradients(
        b, loc,
        DivOp::create(b, loc, train::scalarConstant(b, loc, f32, 1.0), scale),
        *grads);
  Value norm;
  if (reportNorm)
    norm = train::globalGradNorm(b, loc, *grads, config.dataParallel);
  if (config.gradClip)
    train::clipGradients(b, loc, *config.gradClip, norm, *grads);

  Value lr = train::buildLearningRate(b, loc, opt, config.schedule, step);
  // AdamW's t counts this update too; the schedule's `it` does not.
  Value t = step;
  if (opt.kind == OptimizerSpec::AdamW)
    t = AddOp::create(b, loc, step,
                      train::scalarConstant(b, loc, b.getI64Type(), 1));

  // A step with an inf/NaN gradient changes nothing but the scale: the
  // updates take the overflow flag and leave their operands as they are.
  Value ok, skip;
  if (dynamic) {
    ok = train::isFinite(b, loc, norm);
    skip = NotOp::create(b, loc, ok);
  }
  SmallVector<Value> working = workingArgs(f, params.size());
  SmallVector<Value> newParams, newState, newWorking;
  unsigned stateArg = params.size() + llvm::count_if(working, [](Value w) {
                        return static_cast<bool>(w);
                      });
  for (auto [g, i] : llvm::zip(*grads, trained)) {
    const ParamInfo &p = params[i];
    double wd =
        matchesParamRegex(config.noDecay, p.name) ? 0.0 : opt.weightDecay;
    ValueRange state = all.slice(stateArg, slots.size());
    stateArg += slots.size();
    SmallVector<Value> updated = train::buildUpdate(
        b, loc, opt, wd, paramArgs[i], g, state, lr, t, skip, working[i]);
    if (working[i])
      newWorking.push_back(updated.pop_back_val());
    newParams.push_back(updated.front());
    llvm::append_range(newState, llvm::drop_begin(updated));
  }
  SmallVector<Value> outs{lossResult(b, loc, reportedLoss, lossType)};
  if (dynamic) {
    train::ScaleState next = train::updateLossScale(
        b, loc, ok,
        {all[scaleIndex], all[scaleIndex + 1], all[scaleIndex + 2]},
        scaling.growthInterval);
    llvm::append_range(newState,
                       ValueRange{next.scale, next.goodSteps, next.skipped});
  }
  llvm::append_range(outs, newParams);
  for (auto [i, p] : llvm::enumerate(params))
    if (p.batchState) {
      // A counter without its batch norm's running mean stays as it is.
      Value v = batchState.lookup(p.name);
      outs.push_back(v ? v : paramArgs[i]);
    }
  llvm::append_range(outs, newWorking);
  llvm::append_range(outs, newState);
  if (reportNorm)
    outs.push_back(norm);
  func::ReturnOp::create(b, loc, outs);
  readWorkingCopies(f, paramArgs, working);
  eraseDeadOps(f);
  return success();
}

} // namespace

LogicalResult buildTrainStep(ModuleOp module, const TrainConfig &config) {
  if (failed(checkConfig(module.getLoc(), config)))
    return failure();
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return module.emitError(
        "building the training step needs a @forward function");
  if (forward.isExternal() || !forward.getBody().hasOneBlock())
    return forward.emitError(
        "building the training step needs @forward to have one block");
  for (StringRef name : {"train_step", "eval_step"})
    if (module.lookupSymbol(name))
      return module.emitError() << "the module already has a @" << name;

  StepBuilder builder(module, forward, config);
  if (failed(builder.plan()))
    return failure();
  builder.findWorkingCopies();
  OpBuilder b(module.getContext());
  b.setInsertionPointAfter(forward);
  if (failed(builder.buildTrainStep(b)) || failed(builder.buildEvalStep(b)))
    return failure();
  return success();
}

} // namespace tcc
