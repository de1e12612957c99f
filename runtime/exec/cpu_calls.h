//===- cpu_calls.h - the CPU backend's library calls ------------*- C++ -*-===//
//
// One call step of a plan (GEMMs, attention, normalisations, losses,
// embedding, dropout, optimizer updates, packing) on the host kernels of
// runtime/kernels/cpu. The backend (cpu_backend.cpp) widens 16-bit operands
// to f32 around it.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_EXEC_CPU_CALLS_H
#define TCC_RUNTIME_EXEC_CPU_CALLS_H

#include "exec/artifact.h"

#include <cstddef>
#include <cstdint>

namespace tcc::rt {

/// Runs call step `s` of `fn` on f32 (dropout also f64) operands; `ptrs[v]`
/// is the address of value v. A pack_index step sets `tokens`, which the
/// calls over packed token rows (Step::tokenRows) run over.
void runCall(const Artifact &artifact, const Function &fn, size_t s,
             uint8_t *const *ptrs, int64_t &tokens);

} // namespace tcc::rt

#endif // TCC_RUNTIME_EXEC_CPU_CALLS_H
