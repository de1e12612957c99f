// Parsers of the training flags (--loss, --optimizer, --lr-schedule, ...),
// shared by the tcc driver, tcc-build-train-step and tcc-train-pipeline.
// Every error is one line naming the flag and the offending text, because
// that is what the user typed and has to fix.
#include "tcc/Transforms/Passes.h"
#include "tcc/Transforms/TrainStep.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Regex.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

using llvm::StringRef;

namespace tcc {

static bool fail(std::string &error, StringRef flag, StringRef text,
                 const llvm::Twine &why) {
  error = ("--" + flag + " '" + text + "': " + why).str();
  return false;
}

/// `key=value,key=value` into `out`; keys must be unique and in `known`.
static bool parseKeyValues(StringRef list, llvm::ArrayRef<StringRef> known,
                           llvm::StringMap<StringRef> &out, std::string &why) {
  if (list.trim().empty())
    return true;
  llvm::SmallVector<StringRef> items;
  list.split(items, ',');
  for (StringRef item : items) {
    auto [key, value] = item.split('=');
    key = key.trim();
    value = value.trim();
    if (!item.contains('=') || key.empty() || value.empty()) {
      why = "expected KEY=VALUE, got '" + item.trim().str() + "'";
      return false;
    }
    if (!llvm::is_contained(known, key)) {
      why = "unknown key '" + key.str() + "' (expected ";
      for (auto [i, k] : llvm::enumerate(known))
        why += (i ? ", " : "") + k.str();
      why += ")";
      return false;
    }
    if (!out.try_emplace(key, value).second) {
      why = "'" + key.str() + "' is given twice";
      return false;
    }
  }
  return true;
}

/// A finite double; `why` explains a failure.
static bool toDouble(StringRef key, StringRef value, double &out,
                     std::string &why) {
  if (value.getAsDouble(out) || !std::isfinite(out)) {
    why = key.str() + "='" + value.str() + "' is not a number";
    return false;
  }
  return true;
}

static bool toInt(StringRef key, StringRef value, int64_t &out,
                  std::string &why) {
  if (value.getAsInteger(10, out) || out < 0) {
    why = key.str() + "='" + value.str() + "' is not a non-negative integer";
    return false;
  }
  return true;
}

bool parseLoss(StringRef text, LossSpec &spec, std::string &error) {
  static const char *usage =
      "expected cross_entropy(LOGITS,LABELS[,ignore_index=N]), "
      "mse(OUTPUT,TARGET) or the name of a scalar output";
  StringRef t = text.trim();
  if (t.empty())
    return fail(error, "loss", text, usage);
  size_t open = t.find('(');
  if (open == StringRef::npos) {
    if (t.contains(')') || t.contains(','))
      return fail(error, "loss", text, usage);
    spec = LossSpec();
    spec.kind = LossSpec::Output;
    spec.output = t.str();
    return true;
  }
  StringRef fn = t.take_front(open).trim();
  if (!t.ends_with(")"))
    return fail(error, "loss", text, "missing ')'; " + llvm::Twine(usage));
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
        return fail(error, "loss", text,
                    "third argument must be ignore_index=N, got '" + args[2] +
                        "'");
      args.pop_back();
    }
  } else if (fn == "mse") {
    s.kind = LossSpec::Mse;
  } else {
    return fail(error, "loss", text, "unknown loss '" + fn + "'; " + usage);
  }
  if (args.size() != 2 || args[0].empty() || args[1].empty())
    return fail(error, "loss", text,
                fn + " takes an output and a new input name, e.g. " +
                    (s.kind == LossSpec::Mse ? "mse(y,target)"
                                             : "cross_entropy(logits,labels)"));
  if (args[0] == args[1])
    return fail(error, "loss", text,
                "the output and the input must have different names");
  s.output = args[0].str();
  s.label = args[1].str();
  spec = s;
  return true;
}

bool parseOptimizer(StringRef text, OptimizerSpec &spec, std::string &error) {
  auto [kind, list] = text.trim().split(':');
  kind = kind.trim();
  OptimizerSpec s;
  llvm::StringMap<StringRef> kv;
  std::string why;
  if (kind == "sgd") {
    s.kind = OptimizerSpec::Sgd;
    if (!parseKeyValues(list, {"lr", "momentum", "weight_decay", "nesterov"},
                        kv, why))
      return fail(error, "optimizer", text, why);
  } else if (kind == "adamw") {
    s.kind = OptimizerSpec::AdamW;
    s.weightDecay = 0.01; // torch.optim.AdamW's default
    if (!parseKeyValues(list, {"lr", "beta1", "beta2", "eps", "weight_decay"},
                        kv, why))
      return fail(error, "optimizer", text, why);
  } else {
    return fail(error, "optimizer", text,
                "unknown optimizer '" + kind +
                    "' (expected sgd:KEY=VALUE,... or adamw:KEY=VALUE,...)");
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
        it != kv.end() && !toDouble(f.key, it->second, *f.value, why))
      return fail(error, "optimizer", text, why);
  if (auto it = kv.find("nesterov"); it != kv.end()) {
    StringRef v = it->second;
    if (v != "0" && v != "1" && v != "true" && v != "false")
      return fail(error, "optimizer", text,
                  "nesterov='" + v + "' must be 0 or 1");
    s.nesterov = v == "1" || v == "true";
  }
  // The checks torch.optim makes in its constructors.
  if (s.lr < 0)
    return fail(error, "optimizer", text, "lr must be >= 0");
  if (s.momentum < 0)
    return fail(error, "optimizer", text, "momentum must be >= 0");
  if (s.weightDecay < 0)
    return fail(error, "optimizer", text, "weight_decay must be >= 0");
  if (s.eps < 0)
    return fail(error, "optimizer", text, "eps must be >= 0");
  if (!(s.beta1 >= 0 && s.beta1 < 1) || !(s.beta2 >= 0 && s.beta2 < 1))
    return fail(error, "optimizer", text, "beta1 and beta2 must be in [0, 1)");
  if (s.nesterov && s.momentum <= 0)
    return fail(error, "optimizer", text, "nesterov needs momentum > 0");
  spec = s;
  return true;
}

bool parseSchedule(StringRef text, ScheduleSpec &spec, std::string &error) {
  auto [kind, list] = text.trim().split(':');
  kind = kind.trim();
  ScheduleSpec s;
  llvm::StringMap<StringRef> kv;
  std::string why;
  if (kind == "constant") {
    if (!list.trim().empty())
      return fail(error, "lr-schedule", text, "constant takes no parameters");
    spec = s;
    return true;
  }
  if (kind == "cosine") {
    s.kind = ScheduleSpec::Cosine;
    if (!parseKeyValues(list, {"warmup", "total", "min"}, kv, why))
      return fail(error, "lr-schedule", text, why);
  } else if (kind == "linear") {
    s.kind = ScheduleSpec::Linear;
    if (!parseKeyValues(list, {"warmup", "total"}, kv, why))
      return fail(error, "lr-schedule", text, why);
  } else {
    return fail(error, "lr-schedule", text,
                "unknown schedule '" + kind +
                    "' (expected constant, cosine:warmup=W,total=N,min=M or "
                    "linear:warmup=W,total=N)");
  }
  if (auto it = kv.find("warmup");
      it != kv.end() && !toInt("warmup", it->second, s.warmup, why))
    return fail(error, "lr-schedule", text, why);
  if (auto it = kv.find("min"); it != kv.end()) {
    if (!toDouble("min", it->second, s.minLr, why))
      return fail(error, "lr-schedule", text, why);
    if (s.minLr < 0)
      return fail(error, "lr-schedule", text, "min must be >= 0");
  }
  auto total = kv.find("total");
  if (total == kv.end())
    return fail(error, "lr-schedule", text,
                "total=N (the step the decay ends at) is required");
  if (!toInt("total", total->second, s.total, why))
    return fail(error, "lr-schedule", text, why);
  // The decay divides by total - warmup.
  if (s.total <= s.warmup)
    return fail(error, "lr-schedule", text,
                "total must be greater than warmup");
  spec = s;
  return true;
}

bool parseLossScale(StringRef text, LossScaleSpec &spec, std::string &error) {
  StringRef t = text.trim();
  if (t == "none") {
    spec.kind = LossScaleSpec::None;
    return true;
  }
  if (t == "dynamic") {
    spec.kind = LossScaleSpec::Dynamic;
    return true;
  }
  double v;
  if (t.getAsDouble(v) || !(v > 0 && std::isfinite(v)))
    return fail(error, "loss-scale", text,
                "expected none, dynamic or a positive number (a static scale)");
  spec.kind = LossScaleSpec::Static;
  spec.scale = v;
  return true;
}

bool checkConfig(const TrainConfig &config, std::string &error) {
  if (config.accum < 1) {
    error =
        "--accum '" + std::to_string(config.accum) + "': must be at least 1";
    return false;
  }
  if (config.gradClip &&
      !(*config.gradClip > 0 && std::isfinite(*config.gradClip))) {
    char text[32];
    std::snprintf(text, sizeof(text), "%g", *config.gradClip);
    error =
        "--grad-clip '" + std::string(text) + "': must be a positive number";
    return false;
  }
  const LossScaleSpec &ls = config.lossScale;
  if (!(ls.scale > 0 && std::isfinite(ls.scale) && ls.scale <= 3.4e38)) {
    char text[32];
    std::snprintf(text, sizeof(text), "%g", ls.scale);
    error = "--loss-scale-init '" + std::string(text) +
            "': must be a positive float32 number";
    return false;
  }
  if (ls.growthInterval < 1) {
    error = "--loss-scale-growth-interval '" +
            std::to_string(ls.growthInterval) + "': must be at least 1";
    return false;
  }
  for (auto [flag, regex] :
       {std::pair<StringRef, StringRef>{"freeze", config.freeze},
        {"no-decay", config.noDecay}}) {
    std::string why;
    if (!regex.empty() && !llvm::Regex(regex).isValid(why))
      return fail(error, flag, regex, "invalid regex: " + why);
  }
  return true;
}

bool matchesParamRegex(StringRef regex, StringRef name) {
  return !regex.empty() && llvm::Regex(regex).match(name);
}

bool parseTrainStepOptions(const BuildTrainStepOptions &options,
                           const PrecisionPolicy &precision,
                           TrainConfig &config, std::string &error) {
  TrainConfig c;
  if (!parseLoss(options.loss, c.loss, error) ||
      !parseOptimizer(options.optimizer, c.optimizer, error) ||
      !parseSchedule(options.lrSchedule, c.schedule, error))
    return false;
  if (options.gradClip != 0)
    c.gradClip = options.gradClip;
  c.accum = options.accum;
  c.freeze = options.freeze;
  c.noDecay = options.noDecay;
  c.precision = precision;
  LossScaleSpec &scaling = c.lossScale;
  scaling.scale = options.lossScaleInit;
  scaling.growthInterval = options.lossScaleGrowthInterval;
  // fp16's range needs scaling far more often than bf16's.
  if (precision.precision == Precision::FP16)
    scaling.kind = LossScaleSpec::Dynamic;
  if (!options.lossScale.empty() &&
      !parseLossScale(options.lossScale, scaling, error))
    return false;
  // A value that would be silently ignored is a mistake in the command.
  BuildTrainStepOptions defaults;
  bool initSet = options.lossScaleInit != defaults.lossScaleInit;
  if (scaling.kind != LossScaleSpec::Dynamic &&
      (initSet ||
       options.lossScaleGrowthInterval != defaults.lossScaleGrowthInterval)) {
    error = std::string(initSet ? "--loss-scale-init"
                                : "--loss-scale-growth-interval") +
            " needs dynamic loss scaling (--loss-scale dynamic, the default "
            "with --precision fp16)";
    return false;
  }
  if (!checkConfig(c, error))
    return false;
  config = std::move(c);
  return true;
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
  o.lrSchedule = scheduleText(c.schedule);
  o.accum = c.accum;
  o.freeze = c.freeze;
  o.noDecay = c.noDecay;
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
  s += " lr_schedule=" + scheduleText(c.schedule);
  s += " accum=" + std::to_string(c.accum) + " freeze='" + c.freeze +
       "' no_decay='" + c.noDecay + "'";
  s += " precision=" + describePrecision(c.precision);
  const LossScaleSpec &ls = c.lossScale;
  if (ls.kind == LossScaleSpec::None)
    return s + " loss_scale=none";
  if (ls.kind == LossScaleSpec::Static)
    return s + " loss_scale=" + roundTrip(ls.scale);
  return s + " loss_scale=dynamic:init=" + roundTrip(ls.scale) +
         ",growth_interval=" + std::to_string(ls.growthInterval);
}

} // namespace tcc
