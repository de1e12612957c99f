//===- cuda_driver.cpp - the CUDA driver API, resolved at run time --------===//

#include "exec/cuda_driver.h"

#include <cuda_runtime_api.h>

#include <type_traits>

namespace tcc::rt {

Driver &driver() {
  static Driver d;
  return d;
}

std::string loadDriver() {
  Driver &d = driver();
  if (d.launchKernel)
    return "";
  auto get = [](const char *symbol, auto &fn) -> std::string {
    void *p = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    cudaError_t e = cudaGetDriverEntryPointByVersion(symbol, &p, 12000,
                                                     cudaEnableDefault, &q);
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !p) {
      cudaGetLastError();
      return std::string("no driver entry point ") + symbol +
             (e != cudaSuccess ? std::string(": ") + cudaGetErrorString(e)
                               : std::string());
    }
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    return "";
  };
  std::string why;
  for (std::string w :
       {get("cuGetErrorName", d.getErrorName),
        get("cuGetErrorString", d.getErrorString),
        get("cuModuleLoadData", d.moduleLoadData),
        get("cuModuleGetFunction", d.moduleGetFunction),
        get("cuModuleUnload", d.moduleUnload), get("cuDeviceGet", d.deviceGet),
        get("cuDevicePrimaryCtxRetain", d.primaryCtxRetain),
        get("cuDevicePrimaryCtxRelease", d.primaryCtxRelease),
        get("cuCtxGetCurrent", d.ctxGetCurrent),
        get("cuCtxSetCurrent", d.ctxSetCurrent),
        get("cuLaunchKernel", d.launchKernel)})
    if (why.empty())
      why = w;
  if (!why.empty())
    d.launchKernel = nullptr;
  return why;
}

std::string driverError(CUresult r) {
  const char *name = nullptr, *text = nullptr;
  if (driver().getErrorName)
    driver().getErrorName(r, &name);
  if (driver().getErrorString)
    driver().getErrorString(r, &text);
  return std::string(name ? name : "CUDA_ERROR_?") + " (" +
         (text ? text : "unknown") + ")";
}

} // namespace tcc::rt
