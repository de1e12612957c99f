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

/// The product of shape[begin, end).
int64_t product(const std::vector<int64_t> &shape, size_t begin, size_t end);

/// Matmul batch broadcasting, for every backend: per output batch index,
/// the index of the operand matrix it reads (numpy broadcasting of the
/// leading dims `operand` against `out`).
std::vector<int64_t> batchMap(const std::vector<int64_t> &operand,
                              const std::vector<int64_t> &out);

/// The stride (in matrices) that reproduces `map` (0 or 1), or -1.
int64_t uniformStride(const std::vector<int64_t> &map);

} // namespace tcc::rt

#endif // TCC_RUNTIME_EXEC_OPS_H
