// Reference interpreter of the tcc dialect: the numerics oracle. Clear, not
// fast. Values are tcc::data::Array (the runtime's host array type), so the
// results go straight to .npz files.
#ifndef TCC_INTERP_INTERPRETER_H
#define TCC_INTERP_INTERPRETER_H

#include "data/npz.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>
#include <vector>

namespace tcc::interp {

struct Options {
  /// Compute every f32 value in f64 (inputs, params and results become f64):
  /// the oracle for finite differences and for tolerance studies.
  bool promoteToF64 = false;
};

/// Runs `func` with `inputs` bound to its arguments in order (parameters are
/// read from the enclosing module's tcc.param ops). Element types: f32, f64,
/// i32, i64 and i1 (DType::Bool, one byte holding 0 or 1). Each input must
/// have its argument's dtype and shape. `results` are named after
/// resultNames(func). On failure returns false and sets `error` to one line
/// naming the op and its location (or the offending argument).
bool run(mlir::func::FuncOp func, const std::vector<data::Array> &inputs,
         std::vector<data::Array> &results, std::string &error,
         const Options &options = {});

/// Evaluates the single op `op` on `operands` (one array per operand, in
/// order, each with its operand's dtype and shape) with the same kernel and
/// numerics as `run`: f32 elementwise math in float, sums accumulated in
/// double and rounded once (lib/Interp/Numerics.h); bf16/f16 computed in
/// float and rounded to storage. `results` get one array per result. Ops
/// holding a region are refused (their bodies may read outer values). On
/// failure returns false with a one-line `error` naming the op.
bool evaluate(mlir::Operation *op, llvm::ArrayRef<data::Array> operands,
              std::vector<data::Array> &results, std::string &error,
              const Options &options = {});

/// Binds arrays to `func`'s arguments by their `tcc.name` attribute, checking
/// dtype and shape as `run` does (so with `promoteToF64`, f64 arrays are also
/// accepted for f32 arguments); arrays no argument names are ignored.
/// Returns false with a one-line error naming the array.
bool bindByName(mlir::func::FuncOp func, const std::vector<data::Array> &named,
                std::vector<data::Array> &ordered, std::string &error,
                const Options &options = {});

/// The ops the interpreter executes (full names, e.g. "tcc.matmul"), sorted.
/// tcc.param is not among them: it is read through tcc.get_param.
std::vector<std::string> supportedOps();

/// Names of `func`'s results (their `tcc.name` attribute, else "output<i>").
std::vector<std::string> resultNames(mlir::func::FuncOp func);

} // namespace tcc::interp

#endif // TCC_INTERP_INTERPRETER_H
