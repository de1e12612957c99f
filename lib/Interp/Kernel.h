// What the interpreter's kernels see: the op, its operand arrays and
// preallocated result arrays, and a registry keyed by op name. One kernel
// function per op family, registered by the file that implements it.
#ifndef TCC_LIB_INTERP_KERNEL_H
#define TCC_LIB_INTERP_KERNEL_H

#include "Tensor.h"

#include "tcc/Interp/Interpreter.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <string>

namespace tcc::interp {

class KernelContext {
public:
  KernelContext(mlir::Operation *op,
                llvm::DenseMap<mlir::Value, data::Array> &values,
                std::vector<data::Array> &results, const Options &options)
      : op(op), values(values), results(results), options(options) {}

  mlir::Operation *op;

  /// The array of an operand already computed (the driver checked).
  const data::Array &in(mlir::Value v) const { return values.find(v)->second; }
  const data::Array &in(unsigned operandIndex) const {
    return in(op->getOperand(operandIndex));
  }
  /// For optional operands: null when `v` is absent.
  const data::Array *opt(mlir::Value v) const { return v ? &in(v) : nullptr; }
  /// Result arrays, sized and typed from the result types before the call.
  data::Array &out(unsigned i = 0) { return results[i]; }
  const Options &opts() const { return options; }

  /// Records why the kernel failed; always returns false so kernels can
  /// `return ctx.fail(...)`. The driver adds the op name and location.
  bool fail(const std::string &message) {
    error = message;
    return false;
  }
  bool unsupportedDType(const data::Array &a) {
    return fail(std::string("unsupported element type ") +
                data::dtypeName(a.dtype));
  }
  /// Ends a dtype dispatch: a visitor that matched no type returned false
  /// without a message, which means `typed` has an unsupported type.
  bool finish(bool ok, const data::Array &typed) {
    if (!ok && error.empty())
      unsupportedDType(typed);
    return ok;
  }
  std::string error;

private:
  llvm::DenseMap<mlir::Value, data::Array> &values;
  std::vector<data::Array> &results;
  const Options &options;
};

using KernelFn = bool (*)(KernelContext &ctx);
using KernelTable = llvm::StringMap<KernelFn>;

// Each kernel file fills in the ops it implements.
void registerElementwiseKernels(KernelTable &table);
void registerShapeKernels(KernelTable &table);
void registerReduceKernels(KernelTable &table);
void registerContractKernels(KernelTable &table);
void registerSourceKernels(KernelTable &table);
void registerTrainKernels(KernelTable &table);
void registerGradKernels(KernelTable &table);
void registerWindowKernels(KernelTable &table);
void registerFusionKernels(KernelTable &table);
void registerPackKernels(KernelTable &table);

/// Runs `block`'s ops in order with `values` holding its arguments (and any
/// value it reads from outside), then puts the terminator's operand arrays in
/// `returned`. The function driver and region-holding ops (exec.fusion) share
/// it. On failure sets `error` to one line naming the op.
bool runBlock(mlir::Block &block,
              llvm::DenseMap<mlir::Value, data::Array> &values,
              const Options &options, std::vector<data::Array> &returned,
              std::string &error);

/// Fails `ctx` at the first of `indices` outside [-dim, dim): the index rule
/// gather and gather_grad share.
bool checkGatherIndices(KernelContext &ctx, const data::Array &indices,
                        int64_t axis, int64_t dim);

/// The registry (built once).
const KernelTable &kernelTable();

//===----------------------------------------------------------------------===//
// Element type dispatch: calls `fn(T{})` with the C++ type of `dtype`.
//===----------------------------------------------------------------------===//

/// f32 and f64.
template <class Fn> bool visitFloat(data::DType dtype, Fn &&fn) {
  switch (dtype) {
  case data::DType::F32:
    return fn(float{});
  case data::DType::F64:
    return fn(double{});
  default:
    return false;
  }
}

/// f32, f64, i32, i64: the types arithmetic is defined on.
template <class Fn> bool visitNumeric(data::DType dtype, Fn &&fn) {
  switch (dtype) {
  case data::DType::I32:
    return fn(int32_t{});
  case data::DType::I64:
    return fn(int64_t{});
  default:
    return visitFloat(dtype, fn);
  }
}

/// Every supported type; i1 is visited as uint8_t holding 0 or 1.
template <class Fn> bool visitAny(data::DType dtype, Fn &&fn) {
  if (dtype == data::DType::Bool)
    return fn(uint8_t{});
  return visitNumeric(dtype, fn);
}

} // namespace tcc::interp

#endif // TCC_LIB_INTERP_KERNEL_H
