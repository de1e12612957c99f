//===- window_kernels.h - CUDA convolution and pooling ----------*- C++ -*-===//
//
// The CUDA launchers of tcc.conv, tcc.max_pool, tcc.avg_pool and their
// backward ops (conv.cu; the CPU kernels are runtime/kernels/cpu/conv.cpp),
// with cuda_kernels.h's conventions: device pointers, dense row-major NCHW
// float32 (no bf16/f16 overloads: the backend refuses those), enqueue only,
// deterministic (no atomics), a Status back.
//
// Direct kernels, not cuDNN: one thread per element written, each a fixed
// order loop. Simple and exact rather than fast; cuDNN is the fast path to
// take for large convolutions.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_KERNELS_CUDA_WINDOW_KERNELS_H
#define TCC_RUNTIME_KERNELS_CUDA_WINDOW_KERNELS_H

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/window.h"

namespace tcc::cuda {

/// conv2d_bwd's dx, dw and db may each be null.
Status conv2d_fwd(const kernels::WindowShape &s, const float *x, const float *w,
                  const float *bias, float *y, cudaStream_t stream);
Status conv2d_bwd(const kernels::WindowShape &s, const float *x, const float *w,
                  const float *dy, float *dx, float *dw, float *db,
                  cudaStream_t stream);
Status max_pool2d_fwd(const kernels::WindowShape &s, const float *x, float *y,
                      cudaStream_t stream);
Status max_pool2d_bwd(const kernels::WindowShape &s, const float *x,
                      const float *dy, float *dx, cudaStream_t stream);
Status avg_pool2d_fwd(const kernels::WindowShape &s, const float *x, float *y,
                      cudaStream_t stream);
Status avg_pool2d_bwd(const kernels::WindowShape &s, const float *dy, float *dx,
                      cudaStream_t stream);

} // namespace tcc::cuda

#endif // TCC_RUNTIME_KERNELS_CUDA_WINDOW_KERNELS_H
