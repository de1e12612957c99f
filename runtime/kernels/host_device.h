//===- host_device.h - functions for both the host and CUDA -----*- C++ -*-===//
//
// TCC_HOST_DEVICE marks a small function of the plain C++ headers that both
// the CPU and the CUDA kernels include (window.h, dropout_hash.h,
// attention_layout.h): __host__ __device__ and inlined under nvcc, inline
// otherwise.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_KERNELS_HOST_DEVICE_H
#define TCC_KERNELS_HOST_DEVICE_H

#if defined(__CUDACC__)
#define TCC_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define TCC_HOST_DEVICE inline
#endif

#endif // TCC_KERNELS_HOST_DEVICE_H
