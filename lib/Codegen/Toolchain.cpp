// External compiler invocations: the host C++ compiler and the CUDA tools.
// A kernel build is a small graph of compiler runs (per translation unit,
// then the links), run a few at a time on worker threads; each run's output
// is cached under the hash of the tool, its flags and its inputs, so a
// build whose inputs did not change runs nothing.
#include "tcc/Codegen/Toolchain.h"

#include "KernelCache.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

namespace tcc::codegen {
namespace {

/// A temporary directory, removed with everything in it.
struct TempDir {
  llvm::SmallString<128> path;
  ~TempDir() {
    if (!path.empty())
      llvm::sys::fs::remove_directories(path);
  }
  std::string file(llvm::StringRef name) const {
    llvm::SmallString<128> p(path);
    llvm::sys::path::append(p, name);
    return p.str().str();
  }
};

/// Starts an error diagnostic; one that starts none keeps a failure quiet.
using ErrorFn = llvm::function_ref<mlir::InFlightDiagnostic()>;

mlir::LogicalResult makeTempDir(ErrorFn fail, TempDir &dir) {
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("tcc-kernels", dir.path))
    return fail() << "cannot create a temporary directory: " << ec.message();
  return mlir::success();
}

mlir::LogicalResult writeFile(ErrorFn fail, const std::string &path,
                              llvm::StringRef text) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (!ec) {
    os << text;
    os.close();
    if (os.has_error()) {
      ec = os.error();
      os.clear_error();
    }
  }
  if (ec)
    return fail() << "cannot write " << path << ": " << ec.message();
  return mlir::success();
}

/// Runs `tool` with `args`, its stdout and stderr into the file `log`; a
/// failure is reported with that output.
mlir::LogicalResult runTool(ErrorFn fail, llvm::StringRef tool,
                            std::vector<std::string> args,
                            const std::string &log) {
  args.insert(args.begin(), tool.str());
  std::vector<llvm::StringRef> argv(args.begin(), args.end());
  std::optional<llvm::StringRef> redirects[] = {
      llvm::StringRef(""), llvm::StringRef(log), llvm::StringRef(log)};
  std::string execError;
  int rc = llvm::sys::ExecuteAndWait(tool, argv, /*Env=*/std::nullopt,
                                     redirects, /*SecondsToWait=*/0,
                                     /*MemoryLimit=*/0, &execError);
  if (rc == 0)
    return mlir::success();
  std::string output;
  if (auto buffer = llvm::MemoryBuffer::getFile(log))
    output = (*buffer)->getBuffer().str();
  mlir::InFlightDiagnostic diag = fail() << tool << " failed";
  if (!execError.empty())
    diag << " (" << execError << ")";
  return diag << ":\n" << output;
}

// -ffp-contract=off: a fused multiply-add would round differently from the
// interpreter (on targets that have one). -O3 -fno-trapping-math: the
// contiguous loops of the elementwise kernels vectorise, selects included
// (no fast-math: each element's arithmetic and rounding is the scalar
// code's; only floating-point exception flags, which nothing reads, may
// differ).
const std::vector<std::string> kHostFlags = {
    "-O3",        "-fno-trapping-math", "-fPIC",
    "-std=c++17", "-ffp-contract=off",  "-I" TCC_RUNTIME_INCLUDE_DIR};
// --fmad=false: the device must not contract multiply-adds either.
const std::vector<std::string> kNvccFlags = {"-std=c++17", "--fmad=false",
                                             "-I" TCC_RUNTIME_INCLUDE_DIR};

/// A CUDA tool installed next to nvcc (nvlink, fatbinary).
std::string cudaTool(llvm::StringRef name) {
  llvm::SmallString<256> path(llvm::sys::path::parent_path(TCC_NVCC));
  llvm::sys::path::append(path, name);
  return path.str().str();
}

/// "sm_90" -> "90", "compute_90a" -> "90a".
llvm::StringRef archNumber(llvm::StringRef arch) {
  return arch.substr(arch.find('_') + 1);
}

/// One compiler or linker run: `output` from `run`.
struct Job {
  std::string label, output;
  std::function<mlir::LogicalResult(ErrorFn fail)> run;
  /// Its cache entry; empty: not cached (an intermediate file whose
  /// result is cached further on).
  std::string key = {};
  /// The entry was looked up already (a finished file, looked up before
  /// anything is compiled): only store it.
  bool storeOnly = false;
};

/// Runs `jobs` on up to `parallel` threads, each taking its output from
/// `cache` when it holds the job's key. Stops starting jobs at the first
/// failure (a job that runs beside it may report its own).
mlir::LogicalResult runJobs(ErrorFn fail, std::vector<Job> &jobs,
                            unsigned parallel, const KernelCache &cache,
                            mlir::TimingScope *timing,
                            KernelBuildReport &report,
                            const std::function<void(const Job &)> &finished) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;
  auto worker = [&] {
    for (size_t i; !failed && (i = next++) < jobs.size();) {
      Job &job = jobs[i];
      KernelCache::Fetch fetched = job.key.empty() || job.storeOnly
                                       ? KernelCache::Fetch::Miss
                                       : cache.fetch(job.key, job.output);
      bool hit = fetched == KernelCache::Fetch::Hit;
      mlir::TimingScope scope =
          timing ? timing->nest(job.label + (hit ? " (cached)" : ""))
                 : mlir::TimingScope();
      bool ok = hit || mlir::succeeded(job.run(fail));
      if (ok && !hit && !job.key.empty())
        cache.store(job.key, job.output);
      if (!ok)
        failed = true;
      std::lock_guard<std::mutex> lock(mutex);
      report.cached += hit;
      report.compiled += !hit;
      report.corrupt += fetched == KernelCache::Fetch::Corrupt;
      if (ok && finished)
        finished(job);
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < std::min<size_t>(parallel, jobs.size()); ++t)
    threads.emplace_back(worker);
  worker();
  for (std::thread &t : threads)
    t.join();
  return mlir::failure(failed);
}

/// The runs that make one output file: compiles, then links, then the
/// final run, whose result is the file (and is cached as a whole).
struct Output {
  std::vector<Job> compiles, links;
  std::optional<Job> final;
};

/// Copies the finished `from` to `to` (the temporary directory may be on
/// another filesystem than the output).
mlir::LogicalResult deliver(ErrorFn fail, const std::string &from,
                            const std::string &to) {
  if (std::error_code ec = llvm::sys::fs::copy_file(from, to))
    return fail() << "cannot write " << to << ": " << ec.message();
  return mlir::success();
}

} // namespace

std::vector<std::string> defaultCudaArchs() {
  return {"sm_80", "sm_90", "compute_90"};
}

mlir::FailureOr<std::vector<std::string>> parseCudaArchs(mlir::Location loc,
                                                         llvm::StringRef text) {
  // What this nvcc builds, when there is one to ask; when it cannot say,
  // the entries are only checked for their form.
  llvm::SmallVector<llvm::StringRef> known;
  std::string listing;
  TempDir dir;
  auto quiet = [] { return mlir::InFlightDiagnostic(); };
  if (cudaCompilerAvailable() && mlir::succeeded(makeTempDir(quiet, dir))) {
    for (const char *flag : {"--list-gpu-code", "--list-gpu-arch"})
      if (mlir::succeeded(runTool(quiet, TCC_NVCC, {flag}, dir.file(flag))))
        if (auto out = llvm::MemoryBuffer::getFile(dir.file(flag)))
          listing += (*out)->getBuffer().str() + "\n";
    llvm::SplitString(listing, known, " \t\r\n");
  }
  std::vector<std::string> archs;
  llvm::SmallVector<llvm::StringRef> entries;
  text.split(entries, ',');
  for (llvm::StringRef entry : entries) {
    llvm::StringRef e = entry.trim();
    auto [kind, number] = e.split('_');
    llvm::StringRef digits = number.rtrim("af");
    bool wellFormed = (kind == "sm" || kind == "compute") &&
                      digits.size() >= 2 &&
                      llvm::all_of(digits, llvm::isDigit) &&
                      number.size() - digits.size() <= 1;
    std::string base = (kind + "_" + digits).str();
    if (!wellFormed)
      return mlir::emitError(loc)
             << "--cuda-arch '" << e
             << "': expected sm_XY (SASS) or compute_XY (PTX), e.g. "
                "--cuda-arch sm_90 or sm_80,sm_90,compute_90";
    if (!known.empty() && !llvm::is_contained(known, base))
      return mlir::emitError(loc) << "--cuda-arch '" << e
                                  << "': not an architecture this nvcc builds ("
                                  << llvm::join(known, ", ") << ")";
    if (!llvm::is_contained(archs, e.str()))
      archs.push_back(e.str());
  }
  return archs;
}

std::string defaultKernelCacheDir() {
  if (const char *dir = std::getenv("TCC_CACHE_DIR"); dir && *dir)
    return dir;
  llvm::SmallString<256> path;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    path = xdg;
  } else if (const char *home = std::getenv("HOME"); home && *home) {
    path = home;
    llvm::sys::path::append(path, ".cache");
  } else {
    return "";
  }
  llvm::sys::path::append(path, "tcc");
  return path.str().str();
}

namespace {

/// One kernel build's inputs, written to a temporary directory, and the
/// runs that make each output from them.
class Build {
public:
  Build(const KernelSource &source, unsigned units,
        const KernelBuildOptions &options)
      : options(options), units(source.units(units)), whole(source.text()) {}

  /// Writes the sources.
  mlir::LogicalResult prepare(ErrorFn fail, bool needWhole);
  /// The runs that make host.so in the temporary directory.
  Output host() const;
  /// The runs that make kernels.fatbin of `sass` and `ptx` architectures.
  Output cuda(llvm::ArrayRef<std::string> sass,
              llvm::ArrayRef<std::string> ptx) const;
  std::string file(llvm::StringRef name) const { return tmp.file(name); }
  size_t unitCount() const { return units.size(); }

private:
  /// The cache key of a run of `tool` with `flags` (no file names: they
  /// are temporary) on `text`, which includes the prelude.
  std::string key(llvm::StringRef what, llvm::StringRef tool,
                  llvm::ArrayRef<std::string> flags,
                  llvm::StringRef text) const {
    std::string joined = llvm::join(flags, " ");
    return KernelCache::key({what, tool, joined, prelude, text});
  }
  std::string unitLabel(size_t i) const {
    return "unit " + std::to_string(i + 1) + " of " +
           std::to_string(units.size());
  }

  const KernelBuildOptions &options;
  std::vector<std::string> units, unitFiles;
  std::string whole, wholeFile, prelude;
  TempDir tmp;
};

mlir::LogicalResult Build::prepare(ErrorFn fail, bool needWhole) {
  if (mlir::failed(makeTempDir(fail, tmp)))
    return mlir::failure();
  auto buffer = llvm::MemoryBuffer::getFile(kernelPreludePath());
  if (!buffer)
    return fail() << "cannot read the kernel prelude " << kernelPreludePath();
  prelude = (*buffer)->getBuffer().str();
  for (auto [i, unit] : llvm::enumerate(units)) {
    unitFiles.push_back(tmp.file("unit" + std::to_string(i) + ".cc"));
    if (mlir::failed(writeFile(fail, unitFiles.back(), unit)))
      return mlir::failure();
  }
  wholeFile = tmp.file("kernels.cc");
  return needWhole ? writeFile(fail, wholeFile, whole) : mlir::success();
}

Output Build::host() const {
  Output out;
  std::string id = toolIdentity(TCC_HOST_CXX);
  std::vector<std::string> objects, objectKeys{"host.so", id};
  for (auto [i, unit] : llvm::enumerate(units)) {
    std::string object = tmp.file("host" + std::to_string(i) + ".o");
    std::string k = key("host object", id, kHostFlags, unit);
    std::vector<std::string> args = kHostFlags;
    args.insert(args.end(), {"-c", "-o", object, "-x", "c++", unitFiles[i]});
    out.compiles.push_back({"host c++ " + unitLabel(i), object,
                            [=](ErrorFn fail) {
                              return runTool(fail, TCC_HOST_CXX, args,
                                             object + ".log");
                            },
                            k});
    objects.push_back(object);
    objectKeys.push_back(k);
  }
  std::string so = tmp.file("host.so");
  std::vector<std::string> args{"-shared", "-o", so};
  args.insert(args.end(), objects.begin(), objects.end());
  out.final = Job{"host link", so,
                  [=](ErrorFn fail) {
                    return runTool(fail, TCC_HOST_CXX, args, so + ".log");
                  },
                  KernelCache::key(std::vector<llvm::StringRef>(
                      objectKeys.begin(), objectKeys.end()))};
  return out;
}

Output Build::cuda(llvm::ArrayRef<std::string> sass,
                   llvm::ArrayRef<std::string> ptx) const {
  Output out;
  std::string id = toolIdentity(TCC_NVCC);
  std::vector<std::string> fatbinKeys{"fatbin", id,
                                      llvm::join(options.cudaArchs, ",")};
  std::vector<std::string> unitFatbins, images;
  // PTX first (the longest run should not start last): the whole source
  // as one module, since PTX modules do not link.
  for (const std::string &arch : ptx) {
    std::string ptxFile = tmp.file(arch + ".ptx");
    std::vector<std::string> flags{"-ptx"};
    flags.insert(flags.end(), kNvccFlags.begin(), kNvccFlags.end());
    flags.push_back("-arch=" + arch);
    std::string k = key("cuda ptx", id, flags, whole);
    std::vector<std::string> args = flags;
    args.insert(args.end(), {"-o", ptxFile, "-x", "cu", wholeFile});
    out.compiles.push_back({"nvcc ptx (" + arch + ")", ptxFile,
                            [=](ErrorFn fail) {
                              return runTool(fail, TCC_NVCC, args,
                                             ptxFile + ".log");
                            },
                            k});
    images.push_back("--image3=kind=ptx,sm=" + archNumber(arch).str() +
                     ",file=" + ptxFile);
    fatbinKeys.push_back(k);
  }
  // SASS: relocatable device code per unit (-rdc), linked per architecture
  // into one cubin, so the runtime still loads one module.
  std::vector<std::string> flags{"-fatbin", "-rdc=true"};
  flags.insert(flags.end(), kNvccFlags.begin(), kNvccFlags.end());
  for (const std::string &arch : sass) {
    llvm::StringRef n = archNumber(arch);
    flags.push_back("-gencode");
    flags.push_back(("arch=compute_" + n + ",code=sm_" + n).str());
  }
  for (auto [i, unit] :
       llvm::enumerate(sass.empty() ? llvm::ArrayRef<std::string>()
                                    : llvm::ArrayRef(units))) {
    std::string unitFatbin = tmp.file("cuda" + std::to_string(i) + ".fatbin");
    std::string k = key("cuda unit", id, flags, unit);
    std::vector<std::string> args = flags;
    args.insert(args.end(), {"-o", unitFatbin, "-x", "cu", unitFiles[i]});
    out.compiles.push_back(
        {"nvcc " + unitLabel(i) + " (" + llvm::join(sass, ",") + ")",
         unitFatbin,
         [=](ErrorFn fail) {
           return runTool(fail, TCC_NVCC, args, unitFatbin + ".log");
         },
         k});
    unitFatbins.push_back(unitFatbin);
    fatbinKeys.push_back(k);
  }
  // The linked cubins are not cached on their own: the fatbin is.
  for (const std::string &arch : sass) {
    std::string cubin = tmp.file(arch + ".cubin");
    std::vector<std::string> args{"--arch=" + arch, "-o", cubin};
    args.insert(args.end(), unitFatbins.begin(), unitFatbins.end());
    out.links.push_back({"nvlink " + arch, cubin, [=](ErrorFn fail) {
                           return runTool(fail, cudaTool("nvlink"), args,
                                          cubin + ".log");
                         }});
    images.push_back("--image3=kind=elf,sm=" + archNumber(arch).str() +
                     ",file=" + cubin);
  }
  std::string fatbin = tmp.file("kernels.fatbin");
  std::vector<std::string> args{"--create=" + fatbin, "-64"};
  args.insert(args.end(), images.begin(), images.end());
  out.final =
      Job{"fatbinary", fatbin,
          [=](ErrorFn fail) {
            return runTool(fail, cudaTool("fatbinary"), args, fatbin + ".log");
          },
          KernelCache::key(std::vector<llvm::StringRef>(fatbinKeys.begin(),
                                                        fatbinKeys.end()))};
  return out;
}

} // namespace

mlir::LogicalResult buildKernels(mlir::Location loc, const KernelSource &source,
                                 const std::string &hostSo,
                                 const std::string &fatbin,
                                 const KernelBuildOptions &options,
                                 KernelBuildReport *reportOut,
                                 mlir::TimingScope *timing) {
  auto fail = [loc] {
    return mlir::emitError(loc) << "compiling the kernels failed: ";
  };
  KernelBuildReport report;
  report.jobs = options.jobs
                    ? options.jobs
                    : std::max(1u, std::thread::hardware_concurrency());
  if (!fatbin.empty() && !cudaCompilerAvailable())
    return fail() << "CUDA is not available: nvcc was not found when tcc was "
                     "configured";
  std::vector<std::string> sass, ptx;
  for (const std::string &arch : options.cudaArchs)
    (llvm::StringRef(arch).starts_with("sm_") ? sass : ptx).push_back(arch);
  if (!fatbin.empty() && sass.empty() && ptx.empty())
    return fail() << "no CUDA architecture to build";

  // A few kernels per unit: each compiler run costs a fraction of a second
  // before it reads a kernel, which splitting must not multiply needlessly.
  constexpr size_t kKernelsPerUnit = 8;
  unsigned units = std::clamp<size_t>(
      llvm::divideCeil(source.kernels.size(), kKernelsPerUnit), 1, report.jobs);
  Build build(source, units, options);
  if (mlir::failed(build.prepare(fail, !fatbin.empty() && !ptx.empty())))
    return mlir::failure();
  report.units = build.unitCount();

  // The finished files first: on a warm cache nothing runs at all. Then
  // the compiles (CUDA's first: they take longest), the links, and the
  // fatbin from the linked cubins.
  KernelCache cache(options.cacheDir);
  std::vector<Job> phases[3];
  std::optional<Output> outputs[] = {
      fatbin.empty() ? std::nullopt : std::optional(build.cuda(sass, ptx)),
      hostSo.empty() ? std::nullopt : std::optional(build.host())};
  for (std::optional<Output> &out : outputs) {
    if (!out)
      continue;
    Job &final = *out->final;
    KernelCache::Fetch fetched = cache.fetch(final.key, final.output);
    report.corrupt += fetched == KernelCache::Fetch::Corrupt;
    if (fetched == KernelCache::Fetch::Hit) {
      ++report.cached;
      if (timing)
        timing->nest(final.label + " (cached)");
      continue;
    }
    final.storeOnly = true;
    llvm::append_range(phases[0], out->compiles);
    llvm::append_range(phases[1], out->links);
    // The host link needs only its objects: it runs beside nvlink.
    phases[out->links.empty() ? 1 : 2].push_back(std::move(final));
  }
  KernelBuildProgress progress;
  for (std::vector<Job> &phase : phases)
    progress.total += phase.size();
  // The fatbin was not in the cache: nvcc runs.
  progress.cuda = outputs[0] && outputs[0]->final->storeOnly;
  auto finished = [&](const Job &job) {
    ++progress.done;
    progress.label = job.label;
    options.progress(progress);
  };
  if (options.progress)
    options.progress(progress);
  for (std::vector<Job> &phase : phases)
    if (mlir::failed(runJobs(
            fail, phase, report.jobs, cache, timing, report,
            options.progress ? finished : std::function<void(const Job &)>())))
      return mlir::failure();
  if ((!hostSo.empty() &&
       mlir::failed(deliver(fail, build.file("host.so"), hostSo))) ||
      (!fatbin.empty() &&
       mlir::failed(deliver(fail, build.file("kernels.fatbin"), fatbin))))
    return mlir::failure();
  if (reportOut)
    *reportOut = report;
  return mlir::success();
}

mlir::LogicalResult compileHostSharedObject(mlir::Location loc,
                                            const std::string &source,
                                            const std::string &outPath) {
  KernelSource one;
  one.header = source;
  KernelBuildOptions options;
  options.jobs = 1;
  return buildKernels(loc, one, outPath, "", options);
}

std::string kernelPreludePath() {
  return TCC_RUNTIME_INCLUDE_DIR "/kernels/tcc_kernel.h";
}

bool cudaCompilerAvailable() { return !llvm::StringRef(TCC_NVCC).empty(); }

mlir::LogicalResult compileCudaPtx(mlir::Location loc,
                                   const std::string &source,
                                   const std::string &arch,
                                   const std::string &outPath) {
  auto fail = [loc] { return mlir::emitError(loc); };
  if (!cudaCompilerAvailable())
    return fail() << "CUDA is not available: nvcc was not found when tcc was "
                     "configured";
  TempDir tmp;
  if (mlir::failed(makeTempDir(fail, tmp)) ||
      mlir::failed(writeFile(fail, tmp.file("kernels.cu"), source)))
    return mlir::failure();
  std::vector<std::string> args{"-ptx"};
  args.insert(args.end(), kNvccFlags.begin(), kNvccFlags.end());
  args.insert(args.end(), {"-arch=" + arch, "-o", outPath, "-x", "cu",
                           tmp.file("kernels.cu")});
  return runTool(fail, TCC_NVCC, args, tmp.file("log"));
}

} // namespace tcc::codegen
