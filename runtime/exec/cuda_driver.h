//===- cuda_driver.h - the CUDA driver API, resolved at run time -*- C++ -*-===//
//
// The CUDA backend loads and launches the generated kernels' fatbin with
// the driver API, whose functions it resolves through the CUDA runtime
// (cudaGetDriverEntryPointByVersion) instead of linking libcuda: a runtime
// linked against libcuda.so.1 would not load on a machine without the
// NVIDIA driver, where the cpu backend must keep working. Internal to the
// CUDA backend (cuda_backend.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_EXEC_CUDA_DRIVER_H
#define TCC_RUNTIME_EXEC_CUDA_DRIVER_H

#include <cuda.h>

#include <string>

namespace tcc::rt {

/// The driver API functions the CUDA backend uses.
struct Driver {
  decltype(&::cuGetErrorName) getErrorName = nullptr;
  decltype(&::cuGetErrorString) getErrorString = nullptr;
  decltype(&::cuModuleLoadData) moduleLoadData = nullptr;
  decltype(&::cuModuleGetFunction) moduleGetFunction = nullptr;
  decltype(&::cuModuleUnload) moduleUnload = nullptr;
  decltype(&::cuLaunchKernel) launchKernel = nullptr;
  decltype(&::cuDeviceGet) deviceGet = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) primaryCtxRetain = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease) primaryCtxRelease = nullptr;
  decltype(&::cuCtxGetCurrent) ctxGetCurrent = nullptr;
  decltype(&::cuCtxSetCurrent) ctxSetCurrent = nullptr;
};

/// The process's driver functions (null until loadDriver succeeds).
Driver &driver();

/// Resolves driver(); "" or why it failed. Needs a working CUDA runtime.
std::string loadDriver();

/// "NAME (text)" of a driver result.
std::string driverError(CUresult r);

/// Makes `context` current on the calling thread for the scope and the
/// caller's context (possibly none) current again at its end. Failing to
/// switch is not reported here: the CUDA calls of the scope then fail and
/// say so.
class ContextScope {
public:
  explicit ContextScope(CUcontext context) {
    if (!context || driver().ctxGetCurrent(&saved) != CUDA_SUCCESS ||
        saved == context)
      return;
    switched = driver().ctxSetCurrent(context) == CUDA_SUCCESS;
  }
  ~ContextScope() {
    if (switched)
      driver().ctxSetCurrent(saved);
  }
  ContextScope(const ContextScope &) = delete;
  ContextScope &operator=(const ContextScope &) = delete;

private:
  CUcontext saved = nullptr;
  bool switched = false;
};

} // namespace tcc::rt

#endif // TCC_RUNTIME_EXEC_CUDA_DRIVER_H
