//===- inspect.h - `tcc inspect OUT.tcc` ------------------------*- C++ -*-===//
//
// Prints what an artifact holds, read through the runtime's own loader: the
// manifest, the batch inputs, parameters and optimizer state, per function
// its steps (generated kernels, library calls by op) and arena, whether the
// CPU backend and the CUDA backend can run it (the CUDA backend's refusal
// rules and the fatbin's architectures, no GPU needed; "not built" without
// TCC_CUDA), and the memory a session holds — the same numbers tcc_memory()
// reports for a session of it.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_EXEC_INSPECT_H
#define TCC_RUNTIME_EXEC_INSPECT_H

#include <ostream>
#include <string>

namespace tcc::rt {

/// Prints the summary of artifact `dir` to `out`. Returns 0 (TCC_OK), or a
/// tcc_status with `error` set to one line when the artifact cannot be read;
/// nothing is printed then.
int inspectArtifact(const std::string &dir, std::ostream &out,
                    std::string &error);

} // namespace tcc::rt

#endif // TCC_RUNTIME_EXEC_INSPECT_H
