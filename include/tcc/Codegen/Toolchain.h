//===- Toolchain.h - Compiling generated kernel sources ---------*- C++ -*-===//
//
// Runs the external compilers on generated kernel sources (KernelEmitter):
// the host C++ compiler CMake configured for the CPU backend's shared
// object, nvcc for the CUDA fatbin. Paths are fixed at configure time.
//
// A build splits the kernels into translation units and compiles them
// concurrently (host objects linked into one shared object; relocatable
// device code linked per architecture by nvlink into one fatbin, so the
// runtime still loads one file), and takes every compiled file it can from
// a cache keyed by the content hash of what produced it (KernelCache.h).
//
//===----------------------------------------------------------------------===//

#ifndef TCC_CODEGEN_TOOLCHAIN_H
#define TCC_CODEGEN_TOOLCHAIN_H

#include "tcc/Codegen/KernelEmitter.h"

#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"

#include <functional>
#include <string>
#include <vector>

namespace mlir {
class TimingScope;
} // namespace mlir

namespace tcc::codegen {

/// The CUDA targets `tcc compile` builds without --cuda-arch: SASS for
/// sm_80 (A100) and sm_90 (H100), and compute_90 PTX, which newer GPUs
/// compile when they load it.
std::vector<std::string> defaultCudaArchs();

/// Parses a --cuda-arch value: a comma-separated list of sm_XY (SASS for
/// that GPU) and compute_XY (PTX), each optionally with nvcc's a/f suffix,
/// whose number nvcc builds (checked against `nvcc --list-gpu-code` when
/// nvcc is available). Duplicates are dropped. The first entry that is not
/// one is an error at `loc` naming the flag and the entry.
mlir::FailureOr<std::vector<std::string>> parseCudaArchs(mlir::Location loc,
                                                         llvm::StringRef text);

/// Where kernels are cached when the user names no directory:
/// $TCC_CACHE_DIR, else $XDG_CACHE_HOME/tcc, else $HOME/.cache/tcc; empty
/// when none of them is set.
std::string defaultKernelCacheDir();

/// Where a kernel build is, for a progress display.
struct KernelBuildProgress {
  unsigned done = 0;  ///< compiler runs finished
  unsigned total = 0; ///< compiler runs the build needs (not cached)
  bool cuda = false;  ///< nvcc runs among them
  std::string label;  ///< the run that just finished; "" before the first
};

/// How a kernel build runs.
struct KernelBuildOptions {
  /// parseCudaArchs's form: what the fatbin holds.
  std::vector<std::string> cudaArchs = defaultCudaArchs();
  /// Compiler processes at once; 0: one per hardware thread.
  unsigned jobs = 0;
  /// The kernel cache's directory; empty: compile everything.
  std::string cacheDir;
  /// When set, called once before the first compiler run (done 0) and after
  /// each, from the build's threads one at a time.
  std::function<void(const KernelBuildProgress &)> progress;
};

/// What a kernel build did.
struct KernelBuildReport {
  unsigned units = 0;    ///< translation units the kernels were split into
  unsigned jobs = 0;     ///< compiler processes allowed at once
  unsigned compiled = 0; ///< compiler and linker runs
  unsigned cached = 0;   ///< files taken from the cache instead
  unsigned corrupt = 0;  ///< cache entries that failed their check (rebuilt)
};

/// Compiles `source` into the shared object `hostSo` (host C++: -O2 -fPIC
/// -std=c++17 -ffp-contract=off) and the fatbin `fatbin` (nvcc with
/// --fmad=false, so the device rounds like the interpreter; SASS for each
/// sm_XY, PTX for each compute_XY of options.cudaArchs); an empty path
/// skips that output. A failure is an error diagnostic at `loc` (the build
/// has no place in the IR), "compiling the kernels failed: " and what: the
/// compiler run and its output, or the file it could not write. Nothing is
/// left at the output paths. With `timing`, each
/// compiler run (and each file taken from the cache) is timed in it;
/// `report` (may be null) receives what ran. The compiler runs on worker
/// threads, which may report too: MLIR's diagnostics are thread-safe.
mlir::LogicalResult buildKernels(mlir::Location loc, const KernelSource &source,
                                 const std::string &hostSo,
                                 const std::string &fatbin,
                                 const KernelBuildOptions &options,
                                 KernelBuildReport *report = nullptr,
                                 mlir::TimingScope *timing = nullptr);

/// buildKernels of one source text into a shared object, without a cache:
/// for tests and for the kernels of several artifacts compiled together.
mlir::LogicalResult compileHostSharedObject(mlir::Location loc,
                                            const std::string &source,
                                            const std::string &outPath);

/// The prelude every generated source includes as "kernels/tcc_kernel.h"
/// (runtime/kernels/tcc_kernel.h of this build).
std::string kernelPreludePath();

/// Whether CMake found nvcc (a fatbin can be built).
bool cudaCompilerAvailable();

/// Compiles `source` with nvcc (the fatbin's flags) into the PTX of one
/// virtual architecture (`arch`, e.g. "compute_90") in `outPath`: what the
/// device code looks like, for tests and inspection. Fails as buildKernels.
mlir::LogicalResult compileCudaPtx(mlir::Location loc,
                                   const std::string &source,
                                   const std::string &arch,
                                   const std::string &outPath);

} // namespace tcc::codegen

#endif // TCC_CODEGEN_TOOLCHAIN_H
