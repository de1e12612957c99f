//===- cudnn_conv.h - convolution through cuDNN, loaded at run time -*- C++ -*-===//
//
// The CUDA backend's tcc.conv and tcc.conv_grad run on cuDNN's legacy
// convolution API (cudnnConvolutionForward / BackwardData / BackwardFilter)
// when a cuDNN 9 library can be loaded, else on tcc's own kernels
// (conv.cu). cuDNN is never a link-time dependency: the library is
// dlopen'ed once per process - TCC_CUDNN_LIBRARY names the file, else
// "libcudnn.so.9", then "libcudnn.so" - and the functions used are
// resolved into a table. TCC_CUDNN=0 keeps the own kernels. Built without
// the toolkit's cudnn.h (TCC_HAVE_CUDNN unset), nothing is loaded.
//
// Each session holds one CudnnContext (a handle on the session's stream)
// and one CudnnConvPlan per conv step that cuDNN can express
// (cudnnConvDims): descriptors and algorithms chosen once, when the session
// opens, by cuDNN's heuristic (never by timing, so the choice is the same
// on every run), among the deterministic ones only. fp32 runs in full fp32
// (CUDNN_FMA_MATH) unless TF32 is allowed (TCC_CUDA_TF32=1, as the GEMMs).
//
// Plain C++: no cuDNN or CUDA types in this header.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_KERNELS_CUDA_CUDNN_CONV_H
#define TCC_RUNTIME_KERNELS_CUDA_CUDNN_CONV_H

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/window.h"

#include <cstddef>
#include <memory>
#include <string>

namespace tcc::cuda {

/// The process's cuDNN, loaded on first use.
struct CudnnLibrary {
  bool loaded = false;
  int version = 0;    ///< cudnnGetVersion(): 90100 for 9.1.0
  std::string path;   ///< the file dlopen'ed
  std::string reason; ///< why it is not loaded: "TCC_CUDNN=0", ...
};

/// Loads cuDNN once (thread-safe) as the file comment says; later calls
/// return the same result.
const CudnnLibrary &cudnnLibrary();

/// Loads cuDNN from `path` (a file name for dlopen) without reading the
/// environment, for tests; not cached.
CudnnLibrary loadCudnnLibrary(const std::string &path);

/// "9.1.0" for cudnnGetVersion()'s 90100.
std::string cudnnVersionString(int version);

/// What runs the conv steps, for the profile: "cuDNN 9.1.0", or
/// "tcc kernels (" + the reason + ")".
std::string convLibraryName(const CudnnLibrary &library);

/// A conv as cuDNN's 4-D NCHW descriptors take it: symmetric padding
/// (padH above and below, padW left and right) and int sizes.
struct CudnnConvDims {
  int n = 0, c = 0, h = 0, w = 0, oc = 0, oh = 0, ow = 0, kh = 0, kw = 0;
  int padH = 0, padW = 0, sh = 1, sw = 1, dh = 1, dw = 1, group = 1;
};

/// Whether cuDNN can run the conv of `s`, and how. cuDNN pads
/// symmetrically; an asymmetric pad is expressible when cuDNN's output
/// size with the top (left) pad on both sides is the conv's: every output
/// reads the same taps, the extra bottom (right) pad then reaches no
/// output. Otherwise, and for sizes past int, an empty batch or an empty
/// tensor, false with `why` naming the reason.
bool cudnnConvDims(const kernels::WindowShape &s, CudnnConvDims &dims,
                   std::string &why);

/// A cuDNN handle on one stream (one per session).
class CudnnContext {
public:
  /// On the current device, its stream set to `stream`; null with `error`
  /// set when cuDNN is not loaded or refuses.
  static std::unique_ptr<CudnnContext> create(cudaStream_t stream,
                                              std::string *error);
  ~CudnnContext();
  CudnnContext(const CudnnContext &) = delete;
  CudnnContext &operator=(const CudnnContext &) = delete;
  void *handle() const { return handle_; }

private:
  CudnnContext() = default;
  void *handle_ = nullptr;
};

/// One conv's descriptors and algorithms, f32 NCHW: the forward one, or
/// (`backward`) those of the input and weight gradients.
class CudnnConvPlan {
public:
  /// Null with `error` set when cuDNN offers no deterministic algorithm
  /// within `maxWorkspaceBytes` for a direction, or refuses the
  /// descriptors. The context must outlive the plan.
  static std::unique_ptr<CudnnConvPlan>
  create(const CudnnContext &context, const CudnnConvDims &dims,
         bool backward, bool allowTF32, size_t maxWorkspaceBytes,
         std::string *error);
  ~CudnnConvPlan();
  CudnnConvPlan(const CudnnConvPlan &) = delete;
  CudnnConvPlan &operator=(const CudnnConvPlan &) = delete;

  /// The largest workspace of the plan's algorithms.
  size_t workspaceBytes() const;

  /// A forward plan: y = conv(x, w) (+ bias[oc] when bias is not null);
  /// enqueued on the context's stream.
  Status forward(const float *x, const float *w, const float *bias, float *y,
                 void *workspace) const;
  /// A backward plan: dx and dw from dy (either may be null: not
  /// computed). The bias gradient is conv2d_bwd's kernel.
  Status backward(const float *x, const float *w, const float *dy, float *dx,
                  float *dw, void *workspace) const;

private:
  CudnnConvPlan() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace tcc::cuda

#endif // TCC_RUNTIME_KERNELS_CUDA_CUDNN_CONV_H
