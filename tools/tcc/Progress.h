// What `tcc compile` (and the compile of `tcc train`) shows while it works:
// one line per stage as it finishes, with the seconds it took, and the
// kernel build's compiler runs as they finish, so that a compile that takes
// half a minute (nvcc building the CUDA fatbin) says what it is doing and
// what it costs. On stderr; shown when stderr is a terminal (mode "auto"),
// always ("lines", for logs and tests) or never ("none").
#ifndef TCC_TOOLS_TCC_PROGRESS_H
#define TCC_TOOLS_TCC_PROGRESS_H

#include "tcc/Codegen/Toolchain.h"

#include "llvm/ADT/StringRef.h"

#include <chrono>
#include <string>

namespace tcc::driver {

class Progress {
public:
  /// `mode` is auto, lines or none (checked by the command).
  explicit Progress(llvm::StringRef mode);
  bool on() const { return enabled; }

  /// Stage `name` has finished: "[tcc] name  0.12 s" (the time since the
  /// previous line), with `detail` after the name when given.
  void stage(llvm::StringRef name, llvm::StringRef detail = "");
  /// The kernel build's progress (codegen::KernelBuildOptions::progress):
  /// first what it will run and, when nvcc runs, that the CUDA fatbin is
  /// most of the compile and --no-cuda skips it; then each finished run (one
  /// live line on a terminal).
  void kernels(const codegen::KernelBuildProgress &progress);

private:
  using Clock = std::chrono::steady_clock;
  double secondsSince(Clock::time_point start) const;

  bool enabled = false;
  /// Rewrite one line in place (a terminal) instead of adding lines.
  bool live = false;
  Clock::time_point last = Clock::now(), buildStart;
};

/// Whether `mode` is one Progress takes; the error text when it is not.
std::string checkProgressMode(llvm::StringRef mode);

} // namespace tcc::driver

#endif // TCC_TOOLS_TCC_PROGRESS_H
