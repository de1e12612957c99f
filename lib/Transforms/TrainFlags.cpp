// Parsers of the training flags (--loss, --optimizer, --lr-schedule, ...),
// shared by the tcc driver, tcc-build-train-step and tcc-train-pipeline.
// Every error is a diagnostic of one line naming the flag and the offending
// text, because that is what the user typed and has to fix.
#include "tcc/Transforms/Passes.h"
#include "tcc/Transforms/TrainStep.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Regex.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace mlir;
using llvm::StringRef;

namespace tcc {

/// Starts an error about `--flag` given as `text`: the message names what
/// the user typed, and the caller streams why it is wrong.
static InFlightDiagnostic flagError(Location loc, StringRef flag,
                                    StringRef text) {
  return emitError(loc) << "--" << flag << " '" << text << "': ";
}

using ErrorFn = llvm::function_ref<InFlightDiagnostic()>;

/// `key=value,key=value` into `out`; keys must be unique and in `known`.
static LogicalResult parseKeyValues(ErrorFn fail, StringRef list,
                                    llvm::ArrayRef<StringRef> known,
                                    llvm::StringMap<StringRef> &out) {
  if (list.trim().empty())
    return success();
  llvm::SmallVector<StringRef> items;
  list.split(items, ',');
  for (StringRef item : items) {
    auto [key, value] = item.split('=');
    key = key.trim();
    value = value.trim();
    if (!item.contains('=') || key.empty() || value.empty())
      return fail() << "expected KEY=VALUE, got '" << item.trim() << "'";
    if (!llvm::is_contained(known, key))
      return fail() << "unknown key '" << key << "' (expected "
                    << llvm::join(known, ", ") << ")";
    if (!out.try_emplace(key, value).second)
      return fail() << "'" << key << "' is given twice";
  }
  return success();
}

/// A finite double.
static LogicalResult toDouble(ErrorFn fail, StringRef key, StringRef value,
                              double &out) {
  if (value.getAsDouble(out) || !std::isfinite(out))
    return fail() << key << "='" << value << "' is not a number";
  return success();
}

static LogicalResult toInt(ErrorFn fail, StringRef key, StringRef value,
                           int64_t &out) {
  if (value.getAsInteger(10, out) || out < 0)
    return fail() << key << "='" << value << "' is not a non-negative integer";
  return success();
}

FailureOr<LossSpec> parseLoss(Location loc, StringRef text) {
  auto fail = [&] { return flagError(loc, "loss", text); };
  static const char *usage =
      "expected cross_entropy(LOGITS,LABELS[,ignore_index=N]), "
      "mse(OUTPUT,TARGET) or the name of a scalar output";
  StringRef t = text.trim();
  if (t.empty())
    return fail() << usage;
  size_t open = t.find('(');
  if (open == StringRef::npos) {
    if (t.contains(')') || t.contains(','))
      return fail() << usage;
    LossSpec spec;
    spec.kind = LossSpec::Output;
    spec.output = t.str();
    return spec;
  }
  StringRef fn = t.take_front(open).trim();
  if (!t.ends_with(")"))
    return fail() << "missing ')'; " << usage;
  llvm::SmallVector<StringRef> args;
  t.drop_front(open + 1).drop_back().split(args, ',');
  for (StringRef &a : args)
    a = a.trim();
  LossSpec s;
  if (fn == "cross_entropy") {
    s.kind = LossSpec::CrossEntropy;
    if (args.size() == 3) {
      auto [key, value] = args[2].split('=');
      if (key.trim() != "ignore_index" ||
          value.trim().getAsInteger(10, s.ignoreIndex))
        return fail() << "third argument must be ignore_index=N, got '"
                      << args[2] << "'";
      args.pop_back();
    }
  } else if (fn == "mse") {
    s.kind = LossSpec::Mse;
  } else {
    return fail() << "unknown loss '" << fn << "'; " << usage;
  }
  if (args.size() != 2 || args[0].empty() || args[1].empty())
    return fail() << fn << " takes an output and a new input name, e.g. "
                  << (s.kind == LossSpec::Mse ? "mse(y,target)"
                                              : "cross_entropy(logits,labels)");
  if (args[0] == args[1])
    return fail() << "the output and the input must have different names";
  s.output = args[0].str();
  s.label = args[1].str();
  return s;
}

FailureOr<OptimizerSpec> parseOptimizer(Location loc, StringRef text) {
  auto fail = [&] { return flagError(loc, "optimizer", text); };
  auto [kind, list] = text.trim().split(':');
  kind = kind.trim();
  OptimizerSpec s;
  llvm::StringMap<StringRef> kv;
  if (kind == "sgd") {
    s.kind = OptimizerSpec::Sgd;
    if (failed(parseKeyValues(
            fail, list, {"lr", "momentum", "weight_decay", "nesterov"}, kv)))
      return failure();
  } else if (kind == "adamw") {
    s.kind = OptimizerSpec::AdamW;
    s.weightDecay = 0.01; // torch.optim.AdamW's default
    if (failed(parseKeyValues(
            fail, list, {"lr", "beta1", "beta2", "eps", "weight_decay"}, kv)))
      return failure();
  } else {
    return fail() << "unknown optimizer '" << kind
                  << "' (expected sgd:KEY=VALUE,... or adamw:KEY=VALUE,...)";
  }
  struct Field {
    StringRef key;
    double *value;
  } fields[] = {{"lr", &s.lr},
                {"momentum", &s.momentum},
                {"weight_decay", &s.weightDecay},
                {"beta1", &s.beta1},
                {"beta2", &s.beta2},
                {"eps", &s.eps}};
  for (Field f : fields)
    if (auto it = kv.find(f.key);
        it != kv.end() && failed(toDouble(fail, f.key, it->second, *f.value)))
      return failure();
  if (auto it = kv.find("nesterov"); it != kv.end()) {
    StringRef v = it->second;
    if (v != "0" && v != "1" && v != "true" && v != "false")
      return fail() << "nesterov='" << v << "' must be 0 or 1";
    s.nesterov = v == "1" || v == "true";
  }
  // The checks torch.optim makes in its constructors.
  if (s.lr < 0)
    return fail() << "lr must be >= 0";
  if (s.momentum < 0)
    return fail() << "momentum must be >= 0";
  if (s.weightDecay < 0)
    return fail() << "weight_decay must be >= 0";
  if (s.eps < 0)
    return fail() << "eps must be >= 0";
  if (!(s.beta1 >= 0 && s.beta1 < 1) || !(s.beta2 >= 0 && s.beta2 < 1))
    return fail() << "beta1 and beta2 must be in [0, 1)";
  if (s.nesterov && s.momentum <= 0)
    return fail() << "nesterov needs momentum > 0";
  return s;
}

FailureOr<ScheduleSpec> parseSchedule(Location loc, StringRef text) {
  auto fail = [&] { return flagError(loc, "lr-schedule", text); };
  auto [kind, list] = text.trim().split(':');
  kind = kind.trim();
  ScheduleSpec s;
  llvm::StringMap<StringRef> kv;
  if (kind == "constant") {
    if (!list.trim().empty())
      return fail() << "constant takes no parameters";
    return s;
  }
  if (kind == "cosine") {
    s.kind = ScheduleSpec::Cosine;
    if (failed(parseKeyValues(fail, list, {"warmup", "total", "min"}, kv)))
      return failure();
  } else if (kind == "linear") {
    s.kind = ScheduleSpec::Linear;
    if (failed(parseKeyValues(fail, list, {"warmup", "total"}, kv)))
      return failure();
  } else {
    return fail() << "unknown schedule '" << kind
                  << "' (expected constant, cosine:warmup=W,total=N,min=M or "
                     "linear:warmup=W,total=N)";
  }
  if (auto it = kv.find("warmup");
      it != kv.end() && failed(toInt(fail, "warmup", it->second, s.warmup)))
    return failure();
  if (auto it = kv.find("min"); it != kv.end()) {
    if (failed(toDouble(fail, "min", it->second, s.minLr)))
      return failure();
    if (s.minLr < 0)
      return fail() << "min must be >= 0";
  }
  auto total = kv.find("total");
  if (total == kv.end())
    return fail() << "total=N (the step the decay ends at) is required";
  if (failed(toInt(fail, "total", total->second, s.total)))
    return failure();
  // The decay divides by total - warmup.
  if (s.total <= s.warmup)
    return fail() << "total must be greater than warmup";
  return s;
}

LogicalResult parseLossScale(Location loc, StringRef text,
                             LossScaleSpec &spec) {
  StringRef t = text.trim();
  if (t == "none") {
    spec.kind = LossScaleSpec::None;
    return success();
  }
  if (t == "dynamic") {
    spec.kind = LossScaleSpec::Dynamic;
    return success();
  }
  double v;
  if (t.getAsDouble(v) || !(v > 0 && std::isfinite(v)))
    return flagError(loc, "loss-scale", text)
           << "expected none, dynamic or a positive number (a static scale)";
  spec.kind = LossScaleSpec::Static;
  spec.scale = v;
  return success();
}

/// `v` as the flag's text in a message ("1e+39").
static std::string numberText(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", v);
  return text;
}

LogicalResult checkConfig(Location loc, const TrainConfig &config) {
  if (config.accum < 1)
    return flagError(loc, "accum", std::to_string(config.accum))
           << "must be at least 1";
  if (config.gradClip &&
      !(*config.gradClip > 0 && std::isfinite(*config.gradClip)))
    return flagError(loc, "grad-clip", numberText(*config.gradClip))
           << "must be a positive number";
  const LossScaleSpec &ls = config.lossScale;
  if (!(ls.scale > 0 && std::isfinite(ls.scale) && ls.scale <= 3.4e38))
    return flagError(loc, "loss-scale-init", numberText(ls.scale))
           << "must be a positive float32 number";
  if (ls.growthInterval < 1)
    return flagError(loc, "loss-scale-growth-interval",
                     std::to_string(ls.growthInterval))
           << "must be at least 1";
  for (auto [flag, regex] :
       {std::pair<StringRef, StringRef>{"freeze", config.freeze},
        {"no-decay", config.noDecay}}) {
    std::string why;
    if (!regex.empty() && !llvm::Regex(regex).isValid(why))
      return flagError(loc, flag, regex) << "invalid regex: " << why;
  }
  return success();
}

bool matchesParamRegex(StringRef regex, StringRef name) {
  return !regex.empty() && llvm::Regex(regex).match(name);
}

FailureOr<TrainConfig>
parseTrainStepOptions(Location loc, const BuildTrainStepOptions &options,
                      const PrecisionPolicy &precision) {
  TrainConfig c;
  FailureOr<LossSpec> loss = parseLoss(loc, options.loss);
  if (failed(loss))
    return failure();
  c.loss = *loss;
  FailureOr<OptimizerSpec> optimizer = parseOptimizer(loc, options.optimizer);
  if (failed(optimizer))
    return failure();
  c.optimizer = *optimizer;
  FailureOr<ScheduleSpec> schedule = parseSchedule(loc, options.lrSchedule);
  if (failed(schedule))
    return failure();
  c.schedule = *schedule;
  if (options.gradClip != 0)
    c.gradClip = options.gradClip;
  c.gradNorm = options.gradNorm;
  c.accum = options.accum;
  c.freeze = options.freeze;
  c.noDecay = options.noDecay;
  c.dataParallel = options.dataParallel;
  if (!(options.bucketSize > 0 && options.bucketSize <= 1 << 20))
    return flagError(loc, "bucket-size", numberText(options.bucketSize))
           << "must be a positive number of MiB";
  c.bucketBytes = std::max<int64_t>(1, int64_t(options.bucketSize * (1 << 20)));
  c.precision = precision;
  LossScaleSpec &scaling = c.lossScale;
  scaling.scale = options.lossScaleInit;
  scaling.growthInterval = options.lossScaleGrowthInterval;
  // fp16's range needs scaling far more often than bf16's.
  if (precision.precision == Precision::FP16)
    scaling.kind = LossScaleSpec::Dynamic;
  if (!options.lossScale.empty() &&
      failed(parseLossScale(loc, options.lossScale, scaling)))
    return failure();
  // A value that would be silently ignored is a mistake in the command.
  BuildTrainStepOptions defaults;
  bool initSet = options.lossScaleInit != defaults.lossScaleInit;
  if (scaling.kind != LossScaleSpec::Dynamic &&
      (initSet ||
       options.lossScaleGrowthInterval != defaults.lossScaleGrowthInterval))
    return emitError(loc)
           << (initSet ? "--loss-scale-init" : "--loss-scale-growth-interval")
           << " needs dynamic loss scaling (--loss-scale dynamic, the default "
              "with --precision fp16)";
  if (failed(checkConfig(loc, c)))
    return failure();
  return c;
}

/// The shortest of %.15g..%.17g that reads back as `v`.
static std::string roundTrip(double v) {
  char buf[32];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v)
      break;
  }
  return buf;
}

/// The flags' text of each spec, which its parser reads back exactly.
static std::string lossText(const LossSpec &l) {
  if (l.kind == LossSpec::CrossEntropy)
    return "cross_entropy(" + l.output + "," + l.label +
           ",ignore_index=" + std::to_string(l.ignoreIndex) + ")";
  return l.kind == LossSpec::Mse ? "mse(" + l.output + "," + l.label + ")"
                                 : l.output;
}

static std::string optimizerText(const OptimizerSpec &o) {
  if (o.kind == OptimizerSpec::Sgd)
    return "sgd:lr=" + roundTrip(o.lr) + ",momentum=" + roundTrip(o.momentum) +
           ",weight_decay=" + roundTrip(o.weightDecay) +
           ",nesterov=" + (o.nesterov ? "1" : "0");
  return "adamw:lr=" + roundTrip(o.lr) + ",beta1=" + roundTrip(o.beta1) +
         ",beta2=" + roundTrip(o.beta2) + ",eps=" + roundTrip(o.eps) +
         ",weight_decay=" + roundTrip(o.weightDecay);
}

static std::string scheduleText(const ScheduleSpec &sc) {
  if (sc.kind == ScheduleSpec::Constant)
    return "constant";
  return std::string(sc.kind == ScheduleSpec::Cosine ? "cosine" : "linear") +
         ":warmup=" + std::to_string(sc.warmup) +
         ",total=" + std::to_string(sc.total) +
         (sc.kind == ScheduleSpec::Cosine ? ",min=" + roundTrip(sc.minLr) : "");
}

BuildTrainStepOptions trainStepOptions(const TrainConfig &c) {
  BuildTrainStepOptions o;
  o.loss = lossText(c.loss);
  o.optimizer = optimizerText(c.optimizer);
  o.gradClip = c.gradClip.value_or(0.0);
  o.gradNorm = c.gradNorm;
  o.lrSchedule = scheduleText(c.schedule);
  o.accum = c.accum;
  o.freeze = c.freeze;
  o.noDecay = c.noDecay;
  o.dataParallel = c.dataParallel;
  o.bucketSize = double(c.bucketBytes) / (1 << 20);
  const LossScaleSpec &ls = c.lossScale;
  if (ls.kind == LossScaleSpec::Dynamic) {
    o.lossScale = "dynamic";
    o.lossScaleInit = ls.scale;
    o.lossScaleGrowthInterval = ls.growthInterval;
  } else {
    o.lossScale = ls.kind == LossScaleSpec::None ? "none" : roundTrip(ls.scale);
  }
  return o;
}

std::string describeTrainConfig(const TrainConfig &c) {
  std::string s = "loss=" + lossText(c.loss);
  s += " optimizer=" + optimizerText(c.optimizer);
  s += " grad_clip=" +
       (c.gradClip ? roundTrip(*c.gradClip) : std::string("off"));
  if (c.gradNorm)
    s += " grad_norm";
  s += " lr_schedule=" + scheduleText(c.schedule);
  s += " accum=" + std::to_string(c.accum) + " freeze='" + c.freeze +
       "' no_decay='" + c.noDecay + "'";
  s += " precision=" + describePrecision(c.precision);
  if (c.dataParallel)
    s += " data_parallel=bucket:" +
         roundTrip(double(c.bucketBytes) / (1 << 20)) + "MiB";
  const LossScaleSpec &ls = c.lossScale;
  if (ls.kind == LossScaleSpec::None)
    s += " loss_scale=none";
  else if (ls.kind == LossScaleSpec::Static)
    s += " loss_scale=" + roundTrip(ls.scale);
  else
    s += " loss_scale=dynamic:init=" + roundTrip(ls.scale) +
         ",growth_interval=" + std::to_string(ls.growthInterval);
  if (c.packDocuments)
    s += " pack_documents";
  return s;
}

} // namespace tcc
