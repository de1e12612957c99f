// Mixed precision: the policy that says which ops compute in the low
// precision (bf16 or f16) and which stay in fp32, and the lowering that
// applies it to a function (the tcc-lower-precision pass; the training-step
// builder runs it on @forward before differentiating, so every cast gets its
// gradient rule and parameters keep fp32 master copies).
#ifndef TCC_TRANSFORMS_PRECISION_H
#define TCC_TRANSFORMS_PRECISION_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace tcc {

enum class Precision { FP32, BF16, FP16 };

/// Where one op kind computes under a low precision: `Low` takes its float
/// operands in bf16/f16 and stores its float results in it (every op still
/// computes in fp32 registers and rounds each result once); `FP32` takes and
/// returns fp32.
enum class OpPrecision { Low, FP32 };

struct PrecisionPolicy {
  Precision precision = Precision::FP32;
  /// Per op kind ("layer_norm", without the dialect prefix), overriding the
  /// default table.
  llvm::StringMap<OpPrecision> overrides;
};

/// One row of the default policy table: an op kind, its class and why.
struct PolicyRow {
  llvm::StringLiteral op;
  OpPrecision precision;
  llvm::StringLiteral note;
};

/// The default table: the one place that says which ops stay fp32. Op kinds
/// not listed are Low.
llvm::ArrayRef<PolicyRow> defaultPolicyTable();

/// The class of op kind `op` ("reduce_sum") under `policy`.
OpPrecision opPrecision(const PrecisionPolicy &policy, llvm::StringRef op);

/// The precision flags' parsers. A malformed value is an error diagnostic
/// at `loc` (where the flags came from: the command line, a pass's op)
/// naming the flag, e.g. `--precision 'fp8': expected fp32, bf16 or fp16`.
///
/// "fp32" | "bf16" | "fp16".
mlir::FailureOr<Precision> parsePrecision(mlir::Location loc,
                                          llvm::StringRef text);
llvm::StringRef precisionName(Precision p);
/// "OP=low|fp32[,OP=...]" into policy.overrides; OP must not be an op whose
/// precision is fixed, and with `checkOpKinds` it must name an op that loc's
/// context has registered (tcc.OP; the tcc dialect must be loaded).
mlir::LogicalResult parsePrecisionOverrides(mlir::Location loc,
                                            llvm::StringRef text,
                                            PrecisionPolicy &policy,
                                            bool checkOpKinds = false);
/// The precision flags (--precision, --precision-policy) as a policy; the
/// overrides need bf16 or fp16, as they change nothing at fp32.
mlir::FailureOr<PrecisionPolicy>
parsePrecisionPolicy(mlir::Location loc, llvm::StringRef precision,
                     llvm::StringRef overrides, bool checkOpKinds = false);
/// "layer_norm=fp32,softmax=fp32": the overrides in --precision-policy's
/// syntax, sorted ("" without any).
std::string describeOverrides(const PrecisionPolicy &policy);
/// "bf16:layer_norm=fp32": the precision and its overrides, for manifests
/// and reports.
std::string describePrecision(const PrecisionPolicy &policy);

/// Rewrites `f` to compute under `policy` (a no-op for FP32): float operands
/// of Low ops are cast to the low type, of FP32 ops to f32; results follow.
/// Parameters (tcc.get_param) stay fp32 and are cast at each use, so their
/// gradients come back to fp32 through each cast's own gradient rule.
/// Function results take the types their values get.
mlir::LogicalResult lowerPrecision(mlir::func::FuncOp f,
                                   const PrecisionPolicy &policy);

} // namespace tcc

#endif // TCC_TRANSFORMS_PRECISION_H
