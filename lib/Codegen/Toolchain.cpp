// External compiler invocations. The source goes through a temporary file
// and the tool's stdout and stderr through another, so a failed compile
// reports the compiler's own diagnostics.
#include "Toolchain.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <vector>

namespace tcc::codegen {
namespace {

/// Removes a temporary file when it goes out of scope.
struct TempFile {
  llvm::SmallString<128> path;
  ~TempFile() {
    if (!path.empty())
      llvm::sys::fs::remove(path);
  }
};

bool createTemp(llvm::StringRef suffix, TempFile &file, std::string &error) {
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "tcc-kernels", suffix, file.path)) {
    error = "cannot create a temporary file: " + ec.message();
    return false;
  }
  return true;
}

/// Writes `source` to a temporary `.suffix` file and runs `tool` with
/// `args` followed by that file's path.
bool runCompiler(llvm::StringRef tool, std::vector<std::string> args,
                 llvm::StringRef suffix, const std::string &source,
                 std::string &error) {
  TempFile input, log;
  if (!createTemp(suffix, input, error) || !createTemp("log", log, error))
    return false;
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(input.path, ec);
    if (ec) {
      error = "cannot write " + input.path.str().str() + ": " + ec.message();
      return false;
    }
    os << source;
  }
  args.insert(args.begin(), tool.str());
  args.push_back(input.path.str().str());
  std::vector<llvm::StringRef> argv(args.begin(), args.end());
  std::optional<llvm::StringRef> redirects[] = {
      llvm::StringRef(""), log.path.str(), log.path.str()};
  std::string execError;
  int rc = llvm::sys::ExecuteAndWait(tool, argv, /*Env=*/std::nullopt,
                                     redirects, /*SecondsToWait=*/0,
                                     /*MemoryLimit=*/0, &execError);
  if (rc == 0)
    return true;
  std::string output;
  if (auto buffer = llvm::MemoryBuffer::getFile(log.path))
    output = (*buffer)->getBuffer().str();
  error = tool.str() + " failed";
  if (!execError.empty())
    error += " (" + execError + ")";
  error += ":\n" + output;
  return false;
}

} // namespace

bool compileHostSharedObject(const std::string &source,
                             const std::string &outPath, std::string &error) {
  // -ffp-contract=off: a fused multiply-add would round differently from
  // the interpreter (on targets that have one).
  return runCompiler(TCC_HOST_CXX,
                     {"-O2", "-fPIC", "-shared", "-std=c++17",
                      "-ffp-contract=off", "-I" TCC_RUNTIME_INCLUDE_DIR, "-o",
                      outPath, "-x", "c++"},
                     "cpp", source, error);
}

std::string kernelPreludePath() {
  return TCC_RUNTIME_INCLUDE_DIR "/kernels/tcc_kernel.h";
}

bool cudaCompilerAvailable() { return !llvm::StringRef(TCC_NVCC).empty(); }

bool compileCudaFatbin(const std::string &source, const std::string &outPath,
                       std::string &error) {
  if (!cudaCompilerAvailable()) {
    error = "CUDA is not available: nvcc was not found when tcc was "
            "configured";
    return false;
  }
  return runCompiler(TCC_NVCC,
                     {"-fatbin", "-std=c++17", "--fmad=false",
                      "-gencode", "arch=compute_80,code=sm_80",
                      "-gencode", "arch=compute_90,code=sm_90",
                      "-gencode", "arch=compute_90,code=compute_90",
                      "-I" TCC_RUNTIME_INCLUDE_DIR, "-o", outPath, "-x", "cu"},
                     "cu", source, error);
}

bool compileCudaPtx(const std::string &source, const std::string &arch,
                    const std::string &outPath, std::string &error) {
  if (!cudaCompilerAvailable()) {
    error = "CUDA is not available: nvcc was not found when tcc was "
            "configured";
    return false;
  }
  return runCompiler(TCC_NVCC,
                     {"-ptx", "-std=c++17", "--fmad=false", "-arch=" + arch,
                      "-I" TCC_RUNTIME_INCLUDE_DIR, "-o", outPath, "-x", "cu"},
                     "cu", source, error);
}

} // namespace tcc::codegen
