//===- ops.h - the library calls of a plan ----------------------*- C++ -*-===//
//
// What a "call" step may be: each library op's operands and results (in the
// tcc op's order), its attributes with their ODS defaults, and the dtype and
// shape rules of dialects/tcc/Tcc*Ops.td. Backend independent: a backend
// refuses separately what it cannot run.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_EXEC_OPS_H
#define TCC_RUNTIME_EXEC_OPS_H

#include "exec/artifact.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <string>

namespace tcc::rt {

/// The op called `name` ("matmul"); false when it is not a library op.
bool parseOp(const std::string &name, Op &op);

/// "matmul, gemm, ..." for messages.
std::string libraryOpNames();

/// Operand and result names of `op` in order; optional ones end in '?'.
const std::vector<std::string> &opInputs(Op op);
const std::vector<std::string> &opOutputs(Op op);

/// Reads `attrs` into step.attrs and checks step.inputs / step.outputs (ids
/// already in range of fn.values) against the op. `bad` receives one line
/// describing the problem and must not return.
void checkCall(Step &step, const nlohmann::json &attrs, const Function &fn,
               const std::function<void(const std::string &)> &bad);

} // namespace tcc::rt

#endif // TCC_RUNTIME_EXEC_OPS_H
