//===- clones.h - CPU kernels compiled for several x86-64 levels -*- C++ -*-===//
//
// TCC_CPU_CLONES on a function makes GCC compile it for x86-64-v4
// (AVX-512), x86-64-v3 (AVX2, FMA) and the baseline, and bind the clone the
// CPU runs when the library loads (an ifunc): the runtime is built once for
// any x86-64 machine and still uses the wide loops where they exist. Only
// for code whose arithmetic is the same in every clone: compiled with
// -ffp-contract=off (no fused multiply-add but the explicit std::fma), with
// no reassociation, so wider vectors change no bit.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_KERNELS_CPU_CLONES_H
#define TCC_RUNTIME_KERNELS_CPU_CLONES_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TCC_CPU_CLONES                                                         \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define TCC_CPU_CLONES
#endif

#endif // TCC_RUNTIME_KERNELS_CPU_CLONES_H
