#include "Progress.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <unistd.h>

namespace tcc::driver {

std::string checkProgressMode(llvm::StringRef mode) {
  if (mode == "auto" || mode == "lines" || mode == "none")
    return "";
  return "--progress must be auto, lines or none, got '" + mode.str() + "'";
}

Progress::Progress(llvm::StringRef mode) {
  bool terminal = isatty(STDERR_FILENO);
  enabled = mode == "lines" || (mode == "auto" && terminal);
  live = enabled && terminal && mode == "auto";
}

double Progress::secondsSince(Clock::time_point start) const {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void Progress::stage(llvm::StringRef name, llvm::StringRef detail) {
  if (!enabled)
    return;
  llvm::errs() << "[tcc] " << name;
  if (!detail.empty())
    llvm::errs() << ": " << detail;
  llvm::errs() << llvm::format("  %.2f s\n", secondsSince(last));
  last = Clock::now();
}

void Progress::kernels(const codegen::KernelBuildProgress &p) {
  if (!enabled)
    return;
  llvm::raw_ostream &os = llvm::errs();
  if (p.done == 0) {
    buildStart = Clock::now();
    if (p.total == 0) {
      os << "[tcc] kernels: all from the kernel cache\n";
      return;
    }
    os << "[tcc] kernels: " << p.total << " compiler runs (host C++"
       << (p.cuda ? " and nvcc" : "") << ")";
    if (p.cuda)
      os << "; the CUDA fatbin takes most of the compile (--no-cuda skips "
            "it, and the artifact then runs on the CPU only)";
    os << "\n";
    return;
  }
  if (live)
    os << "\r\x1b[K";
  os << "[tcc] kernels: " << p.done << "/" << p.total << " " << p.label
     << llvm::format("  %.1f s", secondsSince(buildStart));
  if (!live || p.done == p.total)
    os << "\n";
  os.flush();
  if (p.done == p.total)
    last = Clock::now();
}

} // namespace tcc::driver
