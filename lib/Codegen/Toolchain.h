//===- Toolchain.h - Compiling generated kernel sources ---------*- C++ -*-===//
//
// Runs the external compilers on a generated kernel source (KernelEmitter):
// the host C++ compiler CMake configured for a CPU-backend shared object,
// nvcc for a CUDA fatbin. Paths are fixed at configure time.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_LIB_CODEGEN_TOOLCHAIN_H
#define TCC_LIB_CODEGEN_TOOLCHAIN_H

#include <string>

namespace tcc::codegen {

/// Compiles `source` with `c++ -O2 -fPIC -shared -std=c++17
/// -ffp-contract=off -I<runtime dir>` into the shared object `outPath`.
/// On failure returns false with the compiler's diagnostics in `error`.
bool compileHostSharedObject(const std::string &source,
                             const std::string &outPath, std::string &error);

/// The prelude every generated source includes as "kernels/tcc_kernel.h"
/// (runtime/kernels/tcc_kernel.h of this build).
std::string kernelPreludePath();

/// Whether CMake found nvcc (compileCudaFatbin can work).
bool cudaCompilerAvailable();

/// Compiles `source` with nvcc into a fatbin holding sm_80 and sm_90 code
/// and compute_90 PTX (for newer GPUs), with --fmad=false so the device
/// rounds like the interpreter. False with `error` set when nvcc is absent
/// or fails.
bool compileCudaFatbin(const std::string &source, const std::string &outPath,
                       std::string &error);

/// Compiles `source` with nvcc (the fatbin's flags) into the PTX of one
/// virtual architecture (`arch`, e.g. "compute_90") in `outPath`: what the
/// device code looks like, for tests and inspection.
bool compileCudaPtx(const std::string &source, const std::string &arch,
                    const std::string &outPath, std::string &error);

} // namespace tcc::codegen

#endif // TCC_LIB_CODEGEN_TOOLCHAIN_H
