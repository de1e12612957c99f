// Putting the artifact on disk. Every file goes into a temporary sibling
// directory, is fsynced, and the directory is renamed into place (swapped
// atomically with an earlier artifact) only when it is complete; any error
// removes the temporary directory, so no half-written artifact survives.
//
// A file that cannot be written has no place in the IR: its error is at an
// unknown location and names the file.
#include "tcc/Artifact/Artifact.h"

#include "Plan.h"
#include "tcc/Codegen/Toolchain.h"

#include "checkpoint/fingerprint.h"
#include "data/safetensors.h"
#include "plan/liveness.h"
#include "plan/plan_json.h"
#include "exec/ExecOps.h"
#include "tcc/Codegen/KernelEmitter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <filesystem>
#include <signal.h>
#include <thread>
#include <unistd.h>

using namespace mlir;
namespace fs = std::filesystem;

namespace tcc::artifact {
namespace {

/// Starts an error diagnostic; one that starts none keeps a failure quiet.
using ErrorFn = llvm::function_ref<InFlightDiagnostic()>;

std::string errnoText() { return std::strerror(errno); }

LogicalResult fsyncPath(ErrorFn fail, const fs::path &path, bool isDir) {
  int fd = ::open(path.c_str(), O_RDONLY | (isDir ? O_DIRECTORY : 0));
  if (fd < 0)
    return fail() << "cannot open '" << path.string()
                  << "' to sync: " << errnoText();
  // Some filesystems cannot sync a directory; the rename is still atomic.
  if (::fsync(fd) != 0 && errno != EINVAL) {
    std::string err = errnoText();
    ::close(fd);
    return fail() << "cannot sync '" << path.string() << "': " << err;
  }
  ::close(fd);
  return success();
}

LogicalResult writeSynced(ErrorFn fail, const fs::path &path,
                          const std::string &text, bool sync) {
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return fail() << "cannot write '" << path.string() << "': " << errnoText();
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size() &&
            std::fflush(f) == 0 && (!sync || ::fsync(fileno(f)) == 0);
  std::string err = errnoText();
  ok = std::fclose(f) == 0 && ok;
  if (!ok)
    return fail() << "cannot write '" << path.string() << "': " << err;
  return success();
}

LogicalResult writeTensors(ErrorFn fail, const fs::path &path,
                           const std::vector<data::TensorSource> &t) {
  try {
    data::streamSafetensors(path.string(), t);
  } catch (const data::Error &e) {
    // runtime/data reports by exception; the message names the file.
    return fail() << e.what();
  }
  return success();
}

/// Whether `dir` holds a manifest.json of format "tcc-artifact".
bool isArtifactDir(const fs::path &dir) {
  auto buffer = llvm::MemoryBuffer::getFile((dir / "manifest.json").string());
  if (!buffer)
    return false;
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*buffer)->getBuffer());
  if (!json) {
    llvm::consumeError(json.takeError());
    return false;
  }
  const llvm::json::Object *object = json->getAsObject();
  std::optional<llvm::StringRef> format =
      object ? object->getString("format") : std::nullopt;
  return format && *format == "tcc-artifact";
}

/// Removes the `.NAME.tmp-PID` directories in `parent` of compiles of NAME
/// whose process no longer exists (killed before it could clean up); those
/// of running compiles stay.
void removeStaleTemporaries(const fs::path &parent, const std::string &name) {
  std::string prefix = "." + name + ".tmp-";
  std::error_code ec;
  for (fs::directory_iterator it(parent, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::string file = it->path().filename().string();
    if (file.compare(0, prefix.size(), prefix) != 0)
      continue;
    std::string digits = file.substr(prefix.size());
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      continue;
    pid_t pid = pid_t(std::stol(digits));
    if (pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH) {
      std::error_code ignored;
      fs::remove_all(it->path(), ignored);
    }
  }
}

/// `path` without trailing slashes ("out.tcc/" names out.tcc).
fs::path normalized(llvm::StringRef path) {
  while (path.size() > 1 && path.ends_with("/"))
    path = path.drop_back();
  return fs::path(path.str());
}

fs::path parentOf(const fs::path &path) {
  fs::path parent = path.parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

/// Removes the temporary directory unless it was renamed into place.
struct TempDir {
  fs::path path;
  bool keep = false;
  ~TempDir() {
    if (!keep && !path.empty()) {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  }
};

/// Moves the complete `tmp` to `final`, replacing an earlier artifact.
LogicalResult moveIntoPlace(ErrorFn fail, const fs::path &tmp,
                            const fs::path &final) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(final, ec))) {
    if (std::rename(tmp.c_str(), final.c_str()) != 0)
      return fail() << "cannot rename the artifact into place at '"
                    << final.string() << "': " << errnoText();
    return success();
  }
  // Checked again now: something may have appeared since the start.
  if (fs::is_symlink(final, ec) || !fs::is_directory(final, ec) ||
      !isArtifactDir(final))
    return fail() << "'" << final.string()
                  << "' exists and is not a tcc artifact; not replacing it";
#if defined(__linux__) && defined(RENAME_EXCHANGE)
  // One atomic swap: at no instant is there no artifact at `final`.
  if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, final.c_str(),
                  RENAME_EXCHANGE) == 0) {
    fs::remove_all(tmp, ec); // now the old artifact
    return success();
  }
  if (errno != EINVAL && errno != ENOSYS)
    return fail() << "cannot replace '" << final.string()
                  << "': " << errnoText();
#endif
  fs::path old = tmp;
  old += ".old";
  if (std::rename(final.c_str(), old.c_str()) != 0)
    return fail() << "cannot move the old artifact '" << final.string()
                  << "' away: " << errnoText();
  if (std::rename(tmp.c_str(), final.c_str()) != 0) {
    std::string err = errnoText();
    std::rename(old.c_str(), final.c_str());
    return fail() << "cannot rename the artifact into place at '"
                  << final.string() << "': " << err;
  }
  fs::remove_all(old, ec);
  return success();
}

std::string fingerprintOf(const rt::Plan &plan, const TrainConfig &config) {
  std::vector<checkpoint::TensorSignature> params, batch;
  for (const rt::TensorDesc &p : plan.params)
    params.push_back({p.name, p.dtype, p.shape});
  for (const rt::TensorDesc &in : plan.functions.front().inputs)
    batch.push_back({in.name, in.dtype, in.shape});
  return checkpoint::modelFingerprint(params, batch,
                                      describeTrainConfig(config));
}

void summarize(ModuleOp lowered, const PlanData &data, ArtifactSummary &s) {
  s.kernels = 0;
  lowered.walk([&](exec::FusionOp) { ++s.kernels; });
  for (const rt::Function &fp : data.plan.functions) {
    FunctionSummary &f = s.functions.emplace_back();
    f.name = fp.name;
    f.arenaBytes = fp.arenaBytes;
    for (const rt::Step &step : fp.steps)
      ++(step.kind == rt::Step::Kernel ? f.kernels
         : step.kind == rt::Step::Call ? f.calls
                                       : f.collectives);
    s.arenaBytes = std::max(s.arenaBytes, fp.arenaBytes);
  }
  for (const rt::TensorDesc &p : data.plan.params) {
    s.paramBytes += p.bytes;
    if (p.working)
      s.workingBytes += p.elements * int64_t(data::dtypeSize(*p.working));
  }
  for (const rt::TensorDesc &t : data.plan.optState)
    s.optStateBytes += t.bytes;
  for (const data::TensorSource &c : data.constants)
    s.constantBytes += c.numElements() * data::dtypeSize(c.dtype);
}

/// tcc-rematerialize's decisions (`tcc.remat` on @train_step), when it ran.
std::optional<rt::MemoryBudget>
memoryBudgetOf(ModuleOp module, const ArtifactOptions &options) {
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  auto remat =
      step ? step->getAttrOfType<DictionaryAttr>("tcc.remat") : nullptr;
  if (!remat)
    return std::nullopt;
  auto get = [&](StringRef key) {
    auto value = remat.getAs<IntegerAttr>(key);
    return value ? value.getInt() : int64_t(0);
  };
  rt::MemoryBudget b;
  b.budget = get("budget");
  b.arenaUnbudgeted = get("arena_before");
  b.stepFlops = get("step_flops");
  b.extraFlops = get("extra_flops");
  b.blockedGradients = get("blocked_gradients");
  b.gradientBlocks = get("gradient_blocks");
  if (auto names = remat.getAs<ArrayAttr>("recomputed"))
    for (auto name : names.getAsRange<StringAttr>())
      b.recomputed.push_back(name.str());
  b.arenaTimelineUnbudgeted = options.unbudgetedTimeline;
  return b;
}

/// The manifest: the artifact's kind, its files and, for training, the
/// configuration the runtime prints, logs and stores in checkpoints.
rt::Manifest manifestOf(ModuleOp module, const ArtifactOptions &options,
                        const TrainConfig *config,
                        const std::string &fingerprint, bool constants,
                        bool cuda) {
  rt::Manifest m;
  m.kind = config ? rt::Kind::Training : rt::Kind::Inference;
  m.producer = "tcc " TCC_VERSION;
  m.source = fs::path(options.source).filename().string();
  if (config) {
    m.fingerprint = fingerprint;
    m.trainConfig = describeTrainConfig(*config);
    const ScheduleSpec &spec = config->schedule;
    rt::Schedule &sched = m.schedule;
    sched.kind = spec.kind == ScheduleSpec::Cosine   ? rt::Schedule::Cosine
                 : spec.kind == ScheduleSpec::Linear ? rt::Schedule::Linear
                                                     : rt::Schedule::Constant;
    sched.lr = config->optimizer.lr;
    if (sched.kind != rt::Schedule::Constant) {
      sched.warmup = spec.warmup;
      sched.total = spec.total;
    }
    if (sched.kind == rt::Schedule::Cosine)
      sched.minLr = spec.minLr;
    m.accum = config->accum;
    m.memoryBudget = memoryBudgetOf(module, options);
  }
  m.files = {{"plan", "plan.json"},
             {"weights", "weights.safetensors"},
             {"kernel_source", "kernels/kernels.cc"},
             {"kernel_prelude", "kernels/tcc_kernel.h"},
             {"host_kernels", "kernels/host.so"}};
  if (constants)
    m.files["constants"] = "constants.safetensors";
  if (cuda)
    m.files["cuda_kernels"] = "kernels/kernels.fatbin";
  return m;
}

/// `from` as `to`: a hard link where the filesystem allows, else a copy.
LogicalResult linkOrCopy(ErrorFn fail, const fs::path &from,
                         const fs::path &to) {
  std::error_code ec;
  fs::create_hard_link(from, to, ec);
  if (!ec)
    return success();
  if (!fs::copy_file(from, to, ec) || ec)
    return fail() << "cannot copy '" << from.string() << "' to '" << to.string()
                  << "': " << ec.message();
  return success();
}

/// A timing scope nested in `parent`, or an inactive one.
TimingScope nestedScope(TimingScope *parent, StringRef name) {
  return parent ? parent->nest(name) : TimingScope();
}

/// Writes every file into `dir` (which exists and is empty); kernels/host.so
/// is options.prebuiltHostKernels when given, else compiled from `source`.
/// The kernels compile while the other files are written.
LogicalResult writeFiles(Location loc, const fs::path &dir,
                         const PlanData &data,
                         const codegen::KernelSource &source,
                         rt::Manifest manifest, bool cuda,
                         const ArtifactOptions &options,
                         codegen::KernelBuildReport &report) {
  auto fail = [loc] { return emitError(loc); };
  auto fsyncIf = [&](const fs::path &path, bool isDir) {
    return options.sync ? fsyncPath(fail, path, isDir) : success();
  };
  fs::path kernels = dir / "kernels";
  std::error_code ec;
  if (!fs::create_directory(kernels, ec) || ec)
    return fail() << "cannot create '" << kernels.string()
                  << "': " << (ec ? ec.message() : std::string("exists"));

  const std::string &prebuiltHost = options.prebuiltHostKernels;
  std::string hostSo =
      prebuiltHost.empty() ? (kernels / "host.so").string() : std::string();
  std::string fatbin = cuda ? (kernels / "kernels.fatbin").string() : "";
  LogicalResult built = success();
  std::thread build;
  if (!hostSo.empty() || !fatbin.empty())
    build = std::thread([&] {
      TimingScope scope = nestedScope(options.timing, "kernel build");
      built = codegen::buildKernels(loc, source, hostSo, fatbin,
                                    options.kernelBuild, &report,
                                    options.timing ? &scope : nullptr);
    });
  struct Join {
    std::thread &t;
    ~Join() {
      if (t.joinable())
        t.join();
    }
  } join{build};

  {
    TimingScope scope = nestedScope(options.timing, "write plan.json");
    if (failed(writeSynced(fail, dir / "plan.json",
                           rt::writePlanJson(data.plan), options.sync)))
      return failure();
  }
  {
    TimingScope scope = nestedScope(options.timing, "write weights");
    if (failed(writeTensors(fail, dir / "weights.safetensors", data.weights)) ||
        (!data.constants.empty() &&
         failed(writeTensors(fail, dir / "constants.safetensors",
                             data.constants))))
      return failure();
  }
  if (failed(writeSynced(fail, kernels / "kernels.cc", source.text(),
                         options.sync)))
    return failure();
  // The prelude kernels.cc includes, so the source rebuilds from the
  // artifact alone: `nvcc -I OUT.tcc -x cu OUT.tcc/kernels/kernels.cc`.
  std::error_code copyError;
  fs::copy_file(codegen::kernelPreludePath(), kernels / "tcc_kernel.h",
                fs::copy_options::overwrite_existing, copyError);
  if (copyError)
    return fail() << "cannot copy the kernel prelude '"
                  << codegen::kernelPreludePath()
                  << "': " << copyError.message();
  if (!prebuiltHost.empty() &&
      failed(linkOrCopy(fail, prebuiltHost, kernels / "host.so")))
    return failure();
  if (build.joinable())
    build.join();
  if (failed(built) || failed(fsyncIf(kernels / "host.so", /*isDir=*/false)) ||
      (cuda && failed(fsyncIf(kernels / "kernels.fatbin", /*isDir=*/false))))
    return failure();
  // The manifest last, recording every file's size and SHA-256: a
  // directory with a manifest is complete.
  try {
    manifest.integrity = rt::fileIntegrity(dir.string(), manifest);
  } catch (const rt::Error &e) {
    return fail() << e.what();
  }
  if (failed(writeSynced(fail, dir / "manifest.json",
                         rt::writeManifestJson(manifest), options.sync)))
    return failure();
  return success(succeeded(fsyncIf(kernels, /*isDir=*/true)) &&
                 succeeded(fsyncIf(dir, /*isDir=*/true)));
}

} // namespace

LogicalResult checkArtifactPath(Location loc, llvm::StringRef path) {
  if (path.empty() || path == "-")
    return emitError(loc)
           << "the artifact needs a directory path, e.g. -o model.tcc";
  fs::path out = normalized(path);
  fs::path parent = parentOf(out);
  std::error_code ec;
  if (!fs::is_directory(parent, ec))
    return emitError(loc) << "cannot write '" << path << "': directory '"
                          << parent.string() << "' does not exist";
  fs::file_status status = fs::symlink_status(out, ec);
  if (fs::exists(status) && (fs::is_symlink(status) ||
                             !fs::is_directory(status) || !isArtifactDir(out)))
    return emitError(loc)
           << "'" << path
           << "' exists and is not a tcc artifact; refusing to replace it";
  if (::access(parent.c_str(), W_OK | X_OK) != 0)
    return emitError(loc) << "cannot write '" << path << "': directory '"
                          << parent.string()
                          << "' is not writable: " << errnoText();
  return success();
}

/// Lowers a copy of `module` into `lowered` (kernels renamed with
/// options.kernelPrefix, fusions with the same kernel sharing one name),
/// reads its plan and generates its kernel source.
static LogicalResult prepare(ModuleOp module, rt::Kind kind,
                             const ArtifactOptions &options,
                             OwningOpRef<ModuleOp> &lowered, PlanData &plan,
                             codegen::KernelSource &kernelSource) {
  lowered = module.clone();
  {
    TimingScope scope = nestedScope(options.timing, "lowering");
    TimingScope *passes = options.timing ? &scope : nullptr;
    AfterStage afterStage =
        options.afterStage ? AfterStage(options.afterStage) : nullptr;
    if (failed(kind == rt::Kind::Training
                   ? lowerTrainModule(*lowered, afterStage, passes)
                   : lowerInferenceModule(*lowered, afterStage, passes)))
      return failure();
  }
  if (!options.kernelPrefix.empty())
    lowered->walk([&](exec::FusionOp fusion) {
      fusion.setName(options.kernelPrefix + fusion.getName().str());
    });
  {
    TimingScope scope = nestedScope(options.timing, "kernel source");
    // Before the plan: the plan names each kernel step's shared symbol.
    if (failed(codegen::shareIdenticalKernels(*lowered)))
      return failure();
    FailureOr<codegen::KernelSource> source = codegen::emitKernels(*lowered);
    if (failed(source))
      return failure();
    kernelSource = std::move(*source);
  }
  TimingScope scope = nestedScope(options.timing, "plan");
  FailureOr<PlanData> built = buildPlan(*lowered, kind);
  if (failed(built))
    return failure();
  plan = std::move(*built);
  plan.plan.kernels = rt::kernelTable(plan.plan);
  // The CUDA launch shape each kernel's text expects.
  std::map<std::string, codegen::LaunchShape> shapes;
  lowered->walk([&](exec::FusionOp fusion) {
    shapes[codegen::kernelSymbol(fusion)] = codegen::launchShape(fusion);
  });
  for (rt::KernelSignature &k : plan.plan.kernels) {
    k.outputsPerBlock = shapes[k.symbol].outputsPerBlock;
    k.blockThreads = shapes[k.symbol].blockThreads;
    if (shapes[k.symbol].rowSlices > 1) {
      k.rowSlices = shapes[k.symbol].rowSlices;
      k.workspaceBytes = shapes[k.symbol].workspaceBytes;
    }
  }
  return success();
}

/// Both kinds: `config` is null for an inference artifact.
static LogicalResult writeOfKind(ModuleOp module, rt::Kind kind,
                                 const TrainConfig *config,
                                 const ArtifactOptions &options, StringRef path,
                                 ArtifactSummary *summary) {
  Location files = UnknownLoc::get(module.getContext());
  if (failed(checkArtifactPath(files, path)))
    return failure();
  OwningOpRef<ModuleOp> lowered;
  PlanData plan;
  codegen::KernelSource kernelSource;
  if (failed(prepare(module, kind, options, lowered, plan, kernelSource)))
    return failure();

  bool cuda = options.cudaKernels && codegen::cudaCompilerAvailable();
  std::string fingerprint =
      config ? fingerprintOf(plan.plan, *config) : std::string();
  rt::Manifest manifest =
      manifestOf(module, options, config, fingerprint, !plan.constants.empty(), cuda);

  fs::path final = normalized(path);
  codegen::KernelBuildReport buildReport;
  TempDir tmp;
  tmp.path = parentOf(final) / ("." + final.filename().string() + ".tmp-" +
                                std::to_string(::getpid()));
  std::error_code ec;
  removeStaleTemporaries(parentOf(final), final.filename().string());
  fs::remove_all(tmp.path, ec); // an earlier failed run of this process id
  if (!fs::create_directory(tmp.path, ec) || ec)
    return emitError(files)
           << "cannot create '" << tmp.path.string()
           << "': " << (ec ? ec.message() : std::string("exists"));
  if (failed(writeFiles(files, tmp.path, plan, kernelSource, manifest, cuda,
                        options, buildReport)) ||
      failed(moveIntoPlace([&] { return emitError(files); }, tmp.path, final)))
    return failure();
  tmp.keep = true;
  // Makes the rename durable; the artifact is complete either way.
  if (options.sync)
    (void)fsyncPath([] { return InFlightDiagnostic(); }, parentOf(final),
                    /*isDir=*/true);

  if (summary) {
    *summary = ArtifactSummary();
    summary->kind = kind;
    summary->path = path.str();
    summary->cudaKernels = cuda;
    summary->fingerprint = fingerprint;
    summary->distinctKernels = kernelSource.kernels.size();
    summary->kernelBuild = buildReport;
    summarize(*lowered, plan, *summary);
  }
  return success();
}

LogicalResult writeArtifact(ModuleOp module, const TrainConfig &config,
                            const ArtifactOptions &options, StringRef path,
                            ArtifactSummary *summary) {
  return writeOfKind(module, rt::Kind::Training, &config, options, path,
                     summary);
}

FailureOr<std::string> kernelSource(ModuleOp module, rt::Kind kind,
                                    const ArtifactOptions &options) {
  OwningOpRef<ModuleOp> lowered;
  PlanData plan;
  codegen::KernelSource source;
  if (failed(prepare(module, kind, options, lowered, plan, source)))
    return failure();
  return source.text();
}

LogicalResult compileHostKernels(Location loc, const std::string &source,
                                 const std::string &soPath) {
  return codegen::compileHostSharedObject(loc, source, soPath);
}

LogicalResult writeInferenceArtifact(ModuleOp module,
                                     const ArtifactOptions &options,
                                     StringRef path, ArtifactSummary *summary) {
  return writeOfKind(module, rt::Kind::Inference, nullptr, options, path,
                     summary);
}

FailureOr<SessionBytes> planSession(ModuleOp module) {
  OwningOpRef<ModuleOp> lowered = module.clone();
  if (failed(lowerTrainModule(*lowered)))
    return failure();
  FailureOr<PlanData> data = buildPlan(*lowered, rt::Kind::Training);
  if (failed(data))
    return failure();
  ArtifactSummary s;
  summarize(*lowered, *data, s);
  SessionBytes bytes;
  bytes.arena = s.arenaBytes;
  bytes.params = s.paramBytes;
  bytes.working = s.workingBytes;
  bytes.optState = s.optStateBytes;
  bytes.constants = s.constantBytes;
  for (const rt::Function &f : data->plan.functions) {
    if (f.name != "train_step")
      continue;
    for (const rt::TensorDesc &in : f.inputs)
      bytes.inputs += in.bytes;
    try {
      rt::Dataflow flow = rt::analyzeDataflow(
          f, [](const std::string &why) { rt::fail(TCC_ERROR_FORMAT, why); });
      bytes.timeline = rt::timelinePeaks(
          rt::heldArenaBytes(f, flow, f.arenaBytes), rt::kTimelineColumns);
    } catch (const rt::Error &e) {
      return module.emitError() << "the planned train_step: " << e.what();
    }
  }
  return bytes;
}

std::string formatSummary(const ArtifactSummary &s) {
  bool inference = s.kind == rt::Kind::Inference;
  std::string text = "wrote " + s.path + (inference ? " (inference)" : "") +
                     ": " + std::to_string(s.kernels) + " kernels (" +
                     (s.cudaKernels ? "host + CUDA" : "host") + ")";
  for (const FunctionSummary &f : s.functions)
    text += ", " + f.name + " " + std::to_string(f.kernels) + " launches + " +
            std::to_string(f.calls) + " library calls" +
            (f.collectives ? " + " + std::to_string(f.collectives) +
                                 " collectives"
                           : "");
  text += ", arena " + std::to_string(s.arenaBytes) + " bytes, params " +
          std::to_string(s.paramBytes) + " bytes";
  if (s.workingBytes)
    text += ", working copies " + std::to_string(s.workingBytes) + " bytes";
  if (!inference)
    text += ", optimizer state " + std::to_string(s.optStateBytes) + " bytes";
  if (s.constantBytes)
    text += ", constants " + std::to_string(s.constantBytes) + " bytes";
  return text;
}

} // namespace tcc::artifact
