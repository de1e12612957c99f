// The training state on the reference interpreter. Arguments and results of
// the step functions are bound by their tcc.* attributes, never by position,
// so the builder may order them as it likes.
#include "tcc/Interp/ReferenceTrainer.h"

#include "tcc/Interp/Interpreter.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/compat.h"
#include "checkpoint/fingerprint.h"
#include "data/finite.h"
#include "data/half.h"
#include "plan/schedule.h"
#include "tcc/TccOps.h"
#include "tcc/Transforms/TrainStep.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

using namespace mlir;
using tcc::data::Array;
using tcc::data::DType;

namespace tcc::interp {

static bool toDType(Type element, DType &out) {
  if (element.isF32())
    out = DType::F32;
  else if (element.isF64())
    out = DType::F64;
  else if (element.isSignlessInteger(64))
    out = DType::I64;
  else if (element.isSignlessInteger(32))
    out = DType::I32;
  else if (element.isSignlessInteger(1))
    out = DType::Bool;
  else if (element.isBF16())
    out = DType::BF16;
  else if (element.isF16())
    out = DType::F16;
  else
    return false;
  return true;
}

static std::string typeText(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type;
  return s;
}

/// A zero array of `type`, which must be a static tensor the interpreter
/// supports.
static bool zeros(Type type, const std::string &name, Array &out,
                  std::string &error) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape() ||
      !toDType(tensor.getElementType(), out.dtype)) {
    error = "'" + name + "' has unsupported type " + typeText(type);
    return false;
  }
  out.name = name;
  out.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
  out.bytes.assign(out.numElements() * data::dtypeSize(out.dtype), 0);
  return true;
}

/// Every element of `out` set to `value` (an optimizer state's tcc.init).
static void fill(Array &out, double value) {
  int64_t n = out.numElements();
  auto each = [&](auto *p, auto v) { std::fill(p, p + n, v); };
  switch (out.dtype) {
  case data::DType::F32:
    return each(out.data<float>(), float(value));
  case data::DType::F64:
    return each(out.data<double>(), value);
  case data::DType::I32:
    return each(out.data<int32_t>(), int32_t(value));
  case data::DType::I64:
    return each(out.data<int64_t>(), int64_t(value));
  case data::DType::BF16:
    return each(out.data<uint16_t>(), data::floatToBf16(float(value)));
  case data::DType::F16:
    return each(out.data<uint16_t>(), data::floatToF16(float(value)));
  default:
    return;
  }
}

template <class T> static void copyValues(DenseElementsAttr dense, Array &out) {
  T *dst = out.data<T>();
  for (T v : dense.getValues<T>())
    *dst++ = v;
}

/// f32 -> f64 in place, for --f64 runs.
static void widen(Array &a) {
  if (a.dtype != DType::F32)
    return;
  std::vector<uint8_t> bytes(a.numElements() * sizeof(double));
  auto *dst = reinterpret_cast<double *>(bytes.data());
  for (int64_t i = 0, n = a.numElements(); i < n; ++i)
    dst[i] = a.data<float>()[i];
  a.dtype = DType::F64;
  a.bytes = std::move(bytes);
}

/// The initial value of a parameter as an array.
static bool initialValue(ParamOp param, Array &out, std::string &error) {
  std::string name = param.getSymName().str();
  if (!zeros(param.getType(), name, out, error))
    return false;
  Attribute value = param.getInitialValue();
  if (auto dense = llvm::dyn_cast<DenseElementsAttr>(value)) {
    switch (out.dtype) {
    case DType::F32:
      copyValues<float>(dense, out);
      break;
    case DType::F64:
      copyValues<double>(dense, out);
      break;
    case DType::I64:
      copyValues<int64_t>(dense, out);
      break;
    case DType::I32:
      copyValues<int32_t>(dense, out);
      break;
    default: // Bool
      for (auto [i, v] : llvm::enumerate(dense.getValues<bool>()))
        out.bytes[i] = v;
    }
    return true;
  }
  if (auto resource = llvm::dyn_cast<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (blob && blob->getData().size() == out.bytes.size()) {
      llvm::copy(blob->getData(), out.bytes.begin());
      return true;
    }
  }
  error = "parameter '" + name + "': unsupported initial value";
  return false;
}

bool ReferenceTrainer::bindFunction(func::FuncOp f, std::vector<Slot> &args,
                                 std::vector<Slot> &results,
                                 std::string &error) {
  llvm::StringMap<unsigned> paramIndex, stateIndex, batchIndex;
  for (auto [i, p] : llvm::enumerate(paramValues))
    paramIndex[p.name] = i;
  for (auto [i, s] : llvm::enumerate(stateValues))
    stateIndex[s.name] = i;
  for (auto [i, s] : llvm::enumerate(specs))
    batchIndex[s.name] = i;
  bool isTrain = f == trainFn;
  std::string where = "@" + f.getSymName().str() + " ";

  for (unsigned i = 0; i < f.getNumArguments(); ++i) {
    Type type = f.getArgument(i).getType();
    if (auto name = f.getArgAttrOfType<StringAttr>(i, kParamAttr)) {
      auto it = paramIndex.find(name);
      if (it == paramIndex.end()) {
        error = where + "takes an unknown parameter '" + name.str() + "'";
        return false;
      }
      args.push_back({Kind::Param, it->second});
    } else if (auto name = f.getArgAttrOfType<StringAttr>(i, kOptStateAttr)) {
      if (!isTrain || stateIndex.count(name)) {
        error =
            where + "has an unexpected optimizer state '" + name.str() + "'";
        return false;
      }
      // Zeros are the state of a fresh run (AdamW's moments; SGD's momentum
      // buffer is built from the first gradient, as torch does).
      stateIndex[name] = stateValues.size();
      args.push_back({Kind::OptState, unsigned(stateValues.size())});
      if (!zeros(type, name.str(), stateValues.emplace_back(), error))
        return false;
      if (auto init = f.getArgAttrOfType<FloatAttr>(i, kInitAttr))
        fill(stateValues.back(), init.getValueAsDouble());
      if (options.promoteToF64)
        widen(stateValues.back());
    } else if (auto name = f.getArgAttrOfType<StringAttr>(i, kWorkingAttr)) {
      auto it = paramIndex.find(name);
      if (it == paramIndex.end()) {
        error = where + "takes a working copy of an unknown parameter '" +
                name.str() + "'";
        return false;
      }
      Array proto;
      if (!zeros(type, name.str(), proto, error))
        return false;
      args.push_back({Kind::Working, it->second, proto.dtype});
    } else if (f.getArgAttr(i, kStepAttr)) {
      args.push_back({Kind::Step, 0});
    } else if (auto name = f.getArgAttrOfType<StringAttr>(i, kNameAttr)) {
      Array proto;
      if (!zeros(type, name.str(), proto, error))
        return false;
      if (isTrain) {
        batchIndex[name] = specs.size();
        data::InputSpec spec{name.str(), proto.dtype, proto.shape};
        // [N, b, ...] -> [N*b, ...]: the feed yields N*b consecutive samples.
        if (accum > 1) {
          if (spec.shape.size() < 2 || spec.shape[0] != accum) {
            error = where + "batch input '" + name.str() +
                    "' has no leading --accum dim";
            return false;
          }
          spec.shape[1] *= spec.shape[0];
          spec.shape.erase(spec.shape.begin());
        }
        args.push_back({Kind::Batch, unsigned(specs.size())});
        specs.push_back(spec);
        argShapes.push_back(proto.shape);
      } else {
        auto it = batchIndex.find(name);
        if (it == batchIndex.end() || argShapes[it->second] != proto.shape ||
            specs[it->second].dtype != proto.dtype) {
          error = where + "batch input '" + name.str() +
                  "' does not match @train_step's";
          return false;
        }
        args.push_back({Kind::Batch, it->second});
      }
    } else {
      error = where + "argument #" + std::to_string(i) +
              " has no tcc.* attribute to bind by";
      return false;
    }
  }

  for (unsigned i = 0; i < f.getNumResults(); ++i) {
    if (auto name = f.getResultAttrOfType<StringAttr>(i, kParamAttr)) {
      if (!paramIndex.count(name)) {
        error = where + "returns an unknown parameter '" + name.str() + "'";
        return false;
      }
      results.push_back({Kind::Param, paramIndex[name]});
    } else if (auto name =
                   f.getResultAttrOfType<StringAttr>(i, kOptStateAttr)) {
      if (!stateIndex.count(name)) {
        error =
            where + "returns an unknown optimizer state '" + name.str() + "'";
        return false;
      }
      results.push_back({Kind::OptState, stateIndex[name]});
    } else if (auto name =
                   f.getResultAttrOfType<StringAttr>(i, kWorkingAttr)) {
      if (!paramIndex.count(name)) {
        error = where + "returns a working copy of an unknown parameter '" +
                name.str() + "'";
        return false;
      }
      results.push_back({Kind::Working, paramIndex[name]});
    } else if (auto name = f.getResultAttrOfType<StringAttr>(i, kNameAttr);
               name && name.getValue() == "loss") {
      results.push_back({Kind::Loss, 0});
    } else if (auto name = f.getResultAttrOfType<StringAttr>(i, kNameAttr);
               name && !name.getValue().empty()) {
      auto it = llvm::find(metricNames, name.getValue());
      if (it == metricNames.end()) {
        metricNames.push_back(name.str());
        metricValues.push_back(std::nan(""));
        it = std::prev(metricNames.end());
      }
      results.push_back({Kind::Metric, unsigned(it - metricNames.begin())});
    } else {
      error = where + "result #" + std::to_string(i) +
              " has no tcc.* attribute to bind by";
      return false;
    }
  }
  return true;
}

bool ReferenceTrainer::init(ModuleOp module, const TrainConfig &trainConfig,
                         const interp::Options &opts, std::string &error) {
  options = opts;
  config = trainConfig;
  configText = describeTrainConfig(config);
  trainFn = module.lookupSymbol<func::FuncOp>("train_step");
  evalFn = module.lookupSymbol<func::FuncOp>("eval_step");
  if (!trainFn || !evalFn) {
    error = "the module has no @train_step and @eval_step";
    return false;
  }
  if (auto a = trainFn->getAttrOfType<IntegerAttr>(kAccumAttr))
    accum = a.getInt();
  for (ParamOp p : module.getOps<ParamOp>()) {
    if (!initialValue(p, paramValues.emplace_back(), error))
      return false;
    if (options.promoteToF64)
      widen(paramValues.back());
  }
  return bindFunction(trainFn, trainArgs, trainResults, error) &&
         bindFunction(evalFn, evalArgs, evalResults, error);
}

/// `param` rounded to nearest even in `dtype` (bf16 or f16), as the
/// runtime derives a working copy; through f32 when the run is in f64.
static Array rounded(const Array &param, DType dtype) {
  Array out;
  out.name = param.name;
  out.dtype = dtype;
  out.shape = param.shape;
  int64_t n = param.numElements();
  out.bytes.resize(size_t(n) * 2);
  auto *dst = reinterpret_cast<uint16_t *>(out.bytes.data());
  for (int64_t i = 0; i < n; ++i) {
    float x = param.dtype == DType::F64 ? float(param.data<double>()[i])
                                        : param.data<float>()[i];
    dst[i] = dtype == DType::BF16 ? data::floatToBf16(x) : data::floatToF16(x);
  }
  return out;
}

std::vector<Array> ReferenceTrainer::gather(const std::vector<Slot> &slots,
                                         std::vector<Array> &batch) const {
  std::vector<Array> inputs;
  inputs.reserve(slots.size());
  for (const Slot &s : slots) {
    switch (s.kind) {
    case Kind::Param:
      inputs.push_back(paramValues[s.index]);
      break;
    case Kind::OptState:
      inputs.push_back(stateValues[s.index]);
      break;
    case Kind::Working:
      inputs.push_back(rounded(paramValues[s.index], s.dtype));
      break;
    case Kind::Step: {
      Array &a = inputs.emplace_back();
      a.dtype = DType::I64;
      a.bytes.resize(sizeof(int64_t));
      *a.data<int64_t>() = steps;
      break;
    }
    default: { // Batch: the feed's [N*b, ...] is the argument's [N, b, ...].
      // By name: a feed need not hand the inputs in the step's order (a
      // token file's packed documents come as tokens, targets, positions).
      Array *a = &batch[s.index];
      for (Array &b : batch)
        if (b.name == specs[s.index].name)
          a = &b;
      inputs.push_back(std::move(*a));
      inputs.back().shape = argShapes[s.index];
    }
    }
  }
  return inputs;
}

/// The loss (or a metric) a step function returned (f64 in --f64 runs).
static bool readLoss(const Array &a, double &loss, std::string &error) {
  if (a.numElements() != 1 ||
      (a.dtype != DType::F32 && a.dtype != DType::F64)) {
    error = "the loss is not a float scalar";
    return false;
  }
  loss = a.dtype == DType::F32 ? *a.data<float>() : *a.data<double>();
  return true;
}

bool ReferenceTrainer::step(std::vector<Array> batch, double &loss,
                         std::string &error) {
  std::vector<Array> results;
  if (!interp::run(trainFn, gather(trainArgs, batch), results, error,
                   options)) {
    error = "@train_step: " + error;
    return false;
  }
  for (auto [slot, value] : llvm::zip(trainResults, results)) {
    if (slot.kind == Kind::Loss && !readLoss(value, loss, error))
      return false;
    if (slot.kind == Kind::Metric &&
        !readLoss(value, metricValues[slot.index], error))
      return false;
    // Only the bytes change: names, dtypes and shapes are the arguments'.
    if (slot.kind == Kind::Param)
      paramValues[slot.index].bytes = std::move(value.bytes);
    if (slot.kind == Kind::OptState)
      stateValues[slot.index].bytes = std::move(value.bytes);
  }
  // The working copies the updates wrote must be the new parameters
  // rounded: the next call derives them from the parameters again.
  for (auto [slot, value] : llvm::zip(trainResults, results)) {
    if (slot.kind != Kind::Working ||
        paramValues[slot.index].dtype != DType::F32)
      continue;
    if (rounded(paramValues[slot.index], value.dtype).bytes != value.bytes) {
      error = "@train_step: the working copy of parameter '" +
              paramValues[slot.index].name +
              "' is not the updated parameter rounded";
      return false;
    }
  }
  ++steps;
  return true;
}

bool ReferenceTrainer::evalLoss(std::vector<Array> batch, double &loss,
                             std::string &error) {
  std::vector<Array> results;
  if (!interp::run(evalFn, gather(evalArgs, batch), results, error, options)) {
    error = "@eval_step: " + error;
    return false;
  }
  for (auto [slot, value] : llvm::zip(evalResults, results))
    if (slot.kind == Kind::Metric &&
        !readLoss(value, metricValues[slot.index], error))
      return false;
  return readLoss(results.front(), loss, error);
}

bool ReferenceTrainer::metric(const std::string &name, double &value) const {
  auto it = llvm::find(metricNames, name);
  if (it == metricNames.end())
    return false;
  value = metricValues[size_t(it - metricNames.begin())];
  return true;
}

static std::string describe(const Array &a) {
  return checkpoint::describeSignature(a.dtype, a.shape);
}

/// Replaces each of `into`'s arrays by the same-named one of `from`.
static bool restoreArrays(std::vector<Array> &into,
                          const std::vector<Array> &from, const char *what,
                          std::string &error) {
  for (Array &a : into) {
    const Array *got = data::findArray(from, a.name);
    if (!got) {
      error = std::string(what) + " has no '" + a.name + "'";
      return false;
    }
    if (got->dtype != a.dtype || got->shape != a.shape) {
      error = std::string(what) + ": '" + a.name + "' is " + describe(*got) +
              ", expected " + describe(a);
      return false;
    }
  }
  for (const Array &a : from)
    if (!data::findArray(into, a.name)) {
      error = std::string(what) + " has '" + a.name +
              "', which this run does not have";
      return false;
    }
  for (Array &a : into)
    a.bytes = data::findArray(from, a.name)->bytes;
  return true;
}

bool ReferenceTrainer::restore(const std::vector<Array> &params,
                            const std::vector<Array> &optState, int64_t step,
                            std::string &error) {
  if (!restoreArrays(paramValues, params, "params.safetensors", error) ||
      !restoreArrays(stateValues, optState, "optimizer.safetensors", error))
    return false;
  steps = step;
  return true;
}

std::string ReferenceTrainer::fingerprint() const {
  std::vector<checkpoint::TensorSignature> params, batch;
  for (const Array &p : paramValues)
    params.push_back({p.name, p.dtype, p.shape});
  for (auto [spec, shape] : llvm::zip(specs, argShapes))
    batch.push_back({spec.name, spec.dtype, shape});
  return checkpoint::modelFingerprint(params, batch, configText);
}

bool ReferenceTrainer::optStateScalar(const std::string &name,
                                   double &value) const {
  for (const Array &s : stateValues) {
    if (s.name != name || s.numElements() != 1)
      continue;
    switch (s.dtype) {
    case data::DType::F32:
      value = s.data<float>()[0];
      return true;
    case data::DType::F64:
      value = s.data<double>()[0];
      return true;
    case data::DType::I64:
      value = double(s.data<int64_t>()[0]);
      return true;
    default:
      return false;
    }
  }
  return false;
}

double ReferenceTrainer::learningRate(int64_t it) const {
  const ScheduleSpec &s = config.schedule;
  rt::Schedule schedule;
  schedule.kind = s.kind == ScheduleSpec::Constant ? rt::Schedule::Constant
                  : s.kind == ScheduleSpec::Cosine ? rt::Schedule::Cosine
                                                   : rt::Schedule::Linear;
  schedule.lr = config.optimizer.lr;
  schedule.warmup = s.warmup;
  schedule.total = s.total;
  schedule.minLr = s.minLr;
  return rt::learningRate(schedule, it);
}

bool ReferenceTrainer::findNonFinite(std::string &name, std::string &) const {
  name.clear();
  for (const std::vector<data::Array> *arrays : {&paramValues, &stateValues})
    for (const data::Array &a : *arrays)
      if (!data::allFinite(a)) {
        name = a.name;
        return true;
      }
  return true;
}

bool ReferenceTrainer::saveCheckpoint(const std::string &dir,
                                      int64_t dataPosition,
                                      const nlohmann::json &extra,
                                      std::string &written,
                                      std::string &error) {
  checkpoint::CheckpointState state;
  state.step = steps;
  state.dataPosition = dataPosition;
  state.modelFingerprint = fingerprint();
  state.rng = nlohmann::json::object(); // dropout masks derive from the step
  state.extra = extra;
  state.extra["train_config"] = configText;
  try {
    written = checkpoint::saveCheckpoint(dir, paramValues, stateValues, state);
  } catch (const data::Error &e) {
    error = e.what();
    return false;
  }
  return true;
}

bool ReferenceTrainer::restoreCheckpoint(const std::string &dir,
                                      int64_t &dataPosition, std::string &from,
                                      std::string &error) {
  checkpoint::Checkpoint ck;
  try {
    from = checkpoint::resolveCheckpoint(dir);
    ck = checkpoint::loadCheckpoint(from);
  } catch (const data::Error &e) {
    error = e.what();
    return false;
  }
  error = checkpoint::incompatibility(ck, fingerprint(), configText);
  if (!error.empty())
    return false;
  if (!restore(ck.params, ck.optState, ck.state.step, error)) {
    error = "'" + from + "': " + error;
    return false;
  }
  dataPosition = ck.state.dataPosition;
  return true;
}

} // namespace tcc::interp
