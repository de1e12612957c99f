#include "Compile.h"
#include "StageLog.h"

#include "tcc/Codegen/Toolchain.h"
#include "tcc/Report/Report.h"
#include "tcc/TccOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <optional>

namespace cl = llvm::cl;
using namespace mlir;

namespace tcc::driver {

BuildFlags::BuildFlags(cl::SubCommand &sub)
    : noCuda("no-cuda",
             cl::desc("Do not build kernels/kernels.fatbin even when nvcc is "
                      "available (the artifact then runs on the CPU only)"),
             cl::sub(sub), cl::cat(flagCategory())),
      cudaArch(
          "cuda-arch", cl::value_desc("sm_XY,..."),
          cl::desc("CUDA architectures kernels/kernels.fatbin holds: sm_XY "
                   "for that GPU's machine code, compute_XY for PTX that "
                   "newer GPUs compile when they load it, comma-separated "
                   "(default sm_80,sm_90,compute_90; an H100 needs sm_90)"),
          cl::sub(sub), cl::cat(flagCategory())),
      jobs("jobs", cl::value_desc("N"),
           cl::desc("Compiler processes building the kernels at once "
                    "(default 0: one per hardware thread)"),
           cl::init(0), cl::sub(sub), cl::cat(flagCategory())),
      jobsShort("j", cl::desc("Alias for --jobs"), cl::aliasopt(jobs),
                cl::cat(flagCategory())),
      noKernelCache(
          "no-kernel-cache",
          cl::desc("Compile every kernel instead of taking compiled kernels "
                   "from the cache ($TCC_CACHE_DIR, else $XDG_CACHE_HOME/tcc "
                   "or ~/.cache/tcc), and do not add to it"),
          cl::sub(sub), cl::cat(flagCategory())),
      time("time",
           cl::desc("Print to stderr how long each stage took (import, "
                    "training step, each lowering pass, kernel source, each "
                    "compiler run, plan and weight files) and what the "
                    "kernel build took from its cache"),
           cl::sub(sub), cl::cat(flagCategory())),
      report("report", cl::value_desc("file.html"),
             cl::desc("Also write a self-contained HTML report: pipeline "
                      "stages, kernels and memory by model layer, fusion "
                      "groups, memory timeline, FLOPs"),
             cl::sub(sub), cl::cat(flagCategory())),
      dumpDir("dump-dir", cl::value_desc("dir"),
              cl::desc("Also write the IR after every stage into this "
                       "directory: 00-import.mlir, 01-lower-precision.mlir, "
                       "02-build-train-step.mlir, ..., NN-plan-memory.mlir "
                       "(created; earlier NN-*.mlir files in it are "
                       "removed)"),
              cl::sub(sub), cl::cat(flagCategory())),
      memoryBudget(
          "memory-budget", cl::value_desc("SIZE"),
          cl::desc("Bytes the training session may allocate (parameters, "
                   "working copies, optimizer state, arena, inputs): a number "
                   "of bytes or with a unit, 512MiB, 20GiB, 1.5GB; "
                   "activations are recomputed in the backward pass until "
                   "the planned total fits (--remat)"),
          cl::sub(sub), cl::cat(flagCategory())),
      remat("remat", cl::value_desc("auto|off"),
            cl::desc("Activation rematerialisation under --memory-budget: "
                     "auto (the default with a budget) recomputes the "
                     "cheapest saved values until the plan fits; off only "
                     "checks the budget"),
            cl::sub(sub), cl::cat(flagCategory())),
      padSkip("pad-skip", cl::value_desc("auto|off"),
              cl::desc("Pad-skipping: auto (the default) packs the valid "
                       "tokens of a batch whose attention takes a "
                       "key-padding mask, so GEMMs, norms and attention skip "
                       "the padded ones (docs/pad-skipping.md); off computes "
                       "every position"),
              cl::sub(sub), cl::cat(flagCategory())) {}

const cl::Option *BuildFlags::firstGiven() const {
  for (const cl::Option *o : std::initializer_list<const cl::Option *>{
           &noCuda, &cudaArch, &jobs, &noKernelCache, &time, &report, &dumpDir,
           &memoryBudget, &remat, &padSkip})
    if (o->getNumOccurrences())
      return o;
  return nullptr;
}

/// --memory-budget's SIZE in bytes: digits (a decimal fraction with a
/// unit), then nothing or B, KB, MB, GB, TB (powers of 1000) or KiB, MiB,
/// GiB, TiB (powers of 1024).
static std::optional<int64_t> parseSize(llvm::StringRef text) {
  llvm::StringRef number =
      text.take_while([](char c) { return llvm::isDigit(c) || c == '.'; });
  llvm::StringRef unit = text.drop_front(number.size());
  static const std::pair<llvm::StringRef, double> units[] = {
      {"", 1},
      {"B", 1},
      {"KB", 1e3},
      {"MB", 1e6},
      {"GB", 1e9},
      {"TB", 1e12},
      {"KiB", 1024.0},
      {"MiB", 1048576.0},
      {"GiB", 1073741824.0},
      {"TiB", 1099511627776.0}};
  double value;
  if (number.empty() || number.getAsDouble(value) || !(value > 0))
    return std::nullopt;
  for (auto [name, scale] : units)
    if (unit == name) {
      double bytes = value * scale;
      if (bytes >= 9.2e18 || bytes != std::floor(bytes))
        return std::nullopt;
      return int64_t(bytes);
    }
  return std::nullopt;
}

/// The line the compile prints under a budget: what the plan takes and
/// what recomputation costs (the pass's tcc.remat on @train_step).
static std::string budgetLine(ModuleOp module, int64_t budget,
                              const artifact::SessionBytes &unbudgeted) {
  std::string text = "memory budget " + std::to_string(budget) + " bytes: ";
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  auto remat = step ? step->getAttrOfType<DictionaryAttr>("tcc.remat")
                    : DictionaryAttr();
  auto get = [&](llvm::StringRef key) {
    auto a = remat ? remat.getAs<IntegerAttr>(key) : IntegerAttr();
    return a ? a.getInt() : int64_t(0);
  };
  int64_t arena = remat ? get("arena_after") : unbudgeted.arena;
  text += "planned session " +
          std::to_string(unbudgeted.outsideArena() + arena) + " bytes (arena " +
          std::to_string(arena) + ", unbudgeted " +
          std::to_string(unbudgeted.arena) + "; outside the arena " +
          std::to_string(unbudgeted.outsideArena()) + ")";
  if (!remat)
    return text + ", nothing recomputed";
  auto values = remat.getAs<ArrayAttr>("recomputed");
  int64_t extra = get("extra_flops"), total = get("step_flops");
  char percent[32];
  std::snprintf(percent, sizeof percent, "%.2f",
                total ? 100.0 * double(extra) / double(total) : 0.0);
  text += ", " + std::to_string(values ? values.size() : 0) +
          " ops recomputed, +" + std::to_string(extra) + " FLOPs per step (+" +
          percent + "%)";
  if (get("interleaved_ops"))
    text += ", the micro-batches' backward passes interleaved";
  if (int64_t blocked = get("blocked_gradients"))
    text += ", " + std::to_string(blocked) +
            (blocked == 1 ? " weight gradient" : " weight gradients") +
            " made in " + std::to_string(get("gradient_blocks")) +
            " row blocks";
  if (int64_t segments = get("segments"))
    text += ", sqrt(N) segments: checkpoints at 1 in " +
            std::to_string(segments) + " cuts of the forward";
  return text;
}

int compileModel(MLIRContext &context, const CommandErrors &errors,
                 const ModelFlags &modelFlags, const BuildFlags &build,
                 const CompileJob &job, Progress &progress) {
  const std::string &kind = job.kind;
  const std::string &report = build.report;
  // The command line's problems are named in their messages.
  Location flagLoc = UnknownLoc::get(&context);
  // Before the (possibly long) compile: a bad -o fails at once.
  if (kind == "artifact" &&
      failed(artifact::checkArtifactPath(flagLoc, job.output)))
    return errors.report(job.prefix);
  std::optional<int64_t> budget;
  if (build.memoryBudget.getNumOccurrences()) {
    budget = parseSize(build.memoryBudget);
    if (!budget)
      return fail(job.prefix + "--memory-budget '" + build.memoryBudget +
                  "' is not a size (bytes, or with a unit: 512MiB, 20GiB)");
    if (job.inference)
      return fail(job.prefix + "--memory-budget applies to a training step; "
                               "give the training flags (--loss ...)");
  }
  const std::string &rematMode = build.remat;
  if (build.remat.getNumOccurrences() && rematMode != "auto" &&
      rematMode != "off")
    return fail(job.prefix + "--remat '" + rematMode +
                "' is not supported (expected auto or off)");
  if (build.padSkip.getNumOccurrences() && build.padSkip != "auto" &&
      build.padSkip != "off")
    return fail(job.prefix + "--pad-skip '" + build.padSkip +
                "' is not supported (expected auto or off)");
  artifact::ArtifactOptions options;
  options.source = modelFlags.model;
  options.cudaKernels = job.cuda && !build.noCuda;
  options.kernelBuild.jobs = build.jobs;
  options.kernelBuild.cacheDir =
      build.noKernelCache ? "" : codegen::defaultKernelCacheDir();
  if (build.cudaArch.getNumOccurrences()) {
    if (build.noCuda)
      return fail(job.prefix + "--cuda-arch has no effect with --no-cuda");
    FailureOr<std::vector<std::string>> archs =
        codegen::parseCudaArchs(flagLoc, build.cudaArch);
    if (failed(archs))
      return errors.report(job.prefix);
    options.kernelBuild.cudaArchs = *archs;
  }
  StageLog log;
  if (failed(log.open(flagLoc, build.dumpDir)))
    return errors.report(job.prefix);
  // --time: MLIR's timing report (stderr), with each pass manager's passes
  // nested in their stage.
  DefaultTimingManager timingManager;
  timingManager.setEnabled(build.time);
  // Only a compile that succeeded is reported: a failure stays one line.
  struct ReportOnSuccess {
    DefaultTimingManager &manager;
    bool succeeded = false;
    ~ReportOnSuccess() {
      if (!succeeded)
        manager.setEnabled(false);
    }
  } timingReport{timingManager};
  auto done = [&](int rc) {
    timingReport.succeeded = rc == 0;
    return rc;
  };
  TimingScope rootScope = timingManager.getRootScope();
  TimingScope *timing = build.time ? &rootScope : nullptr;
  auto stage = [&](StringRef name) {
    return timing ? timing->nest(name) : TimingScope();
  };
  OwningOpRef<ModuleOp> module;
  {
    TimingScope scope = stage("import");
    module = loadModel(context, modelFlags, timing ? &scope : nullptr);
  }
  if (!module)
    return errors.report();
  progress.stage("import " + modelFlags.model);
  // From here on the failures are the compile's own.
  if (failed(log.record("import", modelFlags.model, *module)))
    return errors.report(job.prefix);
  if (!report.empty()) {
    bool isMlir = llvm::StringRef(modelFlags.model).ends_with(".mlir");
    unsigned attentions = 0;
    module->walk([&](tcc::AttentionOp) { ++attentions; });
    log.note({"raise-attention", "@forward",
              report::countFunctionOps(*module, "forward"),
              isMlir || modelFlags.noRaiseAttention
                  ? std::string("not run")
                  : "in the importer; " + std::to_string(attentions) +
                        " tcc.attention"});
  }

  // The stages of tcc-train-pipeline (for inference: the forward model's
  // only), each logged as it completes.
  auto trained = [&](const PipelineStage &stage) {
    progress.stage(stage.name);
    return log.record(stage.name, stage.pass, *module);
  };
  {
    TimingScope scope = stage("training step");
    if (failed(runStages(*module,
                         job.inference ? forwardStages(job.config.precision)
                                       : trainStages(job.config),
                         trained, timing ? &scope : nullptr)))
      return errors.report(job.prefix);
  }
  if (build.padSkip == "off")
    (*module)->setAttr(kPadSkipAttr, StringAttr::get(&context, "off"));
  // Under a budget: the unbudgeted plan first, then (unless --remat=off)
  // tcc-rematerialize for what the arena may take beside the rest.
  std::optional<artifact::SessionBytes> unbudgeted;
  OwningOpRef<ModuleOp> unbudgetedLowered;
  if (budget) {
    TimingScope scope = stage("rematerialize");
    FailureOr<artifact::SessionBytes> planned = artifact::planSession(*module);
    if (failed(planned))
      return errors.report(job.prefix);
    unbudgeted = *planned;
    options.unbudgetedTimeline = planned->timeline;
    // --report charts the step without the budget beside the one with it.
    if (!report.empty()) {
      unbudgetedLowered = module->clone();
      if (failed(artifact::lowerTrainModule(*unbudgetedLowered)))
        return errors.report(job.prefix);
    }
    if (rematMode == "off" && planned->total() > *budget)
      return fail(job.prefix + "memory budget " + std::to_string(*budget) +
                  " bytes cannot be met with --remat=off: the planned session "
                  "is " +
                  std::to_string(planned->total()) + " bytes (arena " +
                  std::to_string(planned->arena) + ")");
    if (rematMode != "off" &&
        failed(runStages(
            *module, {rematerializeStage({*budget, planned->outsideArena()})},
            trained, timing ? &scope : nullptr)))
      return errors.report(job.prefix);
  }
  // Then tcc-lower-pipeline's, on a copy: the output of --emit=lowered, and
  // what --report and --dump-dir show of an artifact (the writer lowers its
  // own copy the same way, and shows its stages as progress).
  OwningOpRef<ModuleOp> lowered;
  if (kind == "lowered" || !report.empty() ||
      (log.dumping() && kind == "artifact")) {
    TimingScope scope = stage("lowering");
    lowered = module->clone();
    auto lowering = [&](const PipelineStage &stage) {
      if (kind == "lowered")
        progress.stage(stage.name);
      return log.record(stage.name, stage.pass, *lowered);
    };
    TimingScope *passes = timing ? &scope : nullptr;
    if (failed(job.inference
                   ? artifact::lowerInferenceModule(*lowered, lowering, passes)
                   : artifact::lowerTrainModule(*lowered, lowering, passes)))
      return errors.report(job.prefix);
    if (!report.empty() &&
        failed(report::writeReport(
            *module, *lowered, log.reportRows(), job.config.precision, report,
            unbudgetedLowered ? *unbudgetedLowered : ModuleOp())))
      return errors.report(job.prefix);
  }
  if (kind == "mlir")
    return done(writeModule(*module, job.output));
  if (kind == "lowered")
    return done(writeModule(*lowered, job.output));
  TimingScope artifactScope = stage("artifact");
  options.timing = timing ? &artifactScope : nullptr;
  options.afterStage = [&](const PipelineStage &stage) {
    progress.stage(stage.name);
    return success();
  };
  artifact::ArtifactSummary summary;
  options.kernelBuild.progress = [&](const codegen::KernelBuildProgress &p) {
    progress.kernels(p);
  };
  if (failed(job.inference
                 ? artifact::writeInferenceArtifact(*module, options,
                                                    job.output, &summary)
                 : artifact::writeArtifact(*module, job.config, options,
                                           job.output, &summary)))
    return errors.report(job.prefix);
  artifactScope.stop();
  if (job.printSummary)
    llvm::outs() << artifact::formatSummary(summary) << "\n";
  if (budget)
    llvm::outs() << budgetLine(*module, *budget, *unbudgeted) << "\n";
  if (build.time) {
    const codegen::KernelBuildReport &k = summary.kernelBuild;
    llvm::errs() << "kernels: " << summary.kernels << " generated, "
                 << summary.distinctKernels << " distinct, " << k.units
                 << " units, " << k.jobs << " jobs; cache "
                 << (options.kernelBuild.cacheDir.empty()
                         ? std::string("off")
                         : options.kernelBuild.cacheDir)
                 << ": " << k.cached << " files reused, " << k.compiled
                 << " compiler runs, " << k.corrupt
                 << " corrupt entries rebuilt\n";
  }
  return done(0);
}

} // namespace tcc::driver
