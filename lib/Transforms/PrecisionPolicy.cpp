// The mixed-precision policy table and its command-line spelling.
#include "tcc/Transforms/Precision.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/StringExtras.h"

namespace tcc {

// Every op computes in fp32 registers; this table only says what it stores.
// Low by default: activations and their gradients live in bf16/f16, which
// halves their memory and traffic. The fp32 entries are the values whose
// rounding would hurt: sums over many elements (losses, statistics,
// gradient norms) and the optimizer's master weights and state.
static const PolicyRow kTable[] = {
    {"matmul", OpPrecision::Low, "low operands, fp32 accumulation"},
    {"gemm", OpPrecision::Low, "low operands, fp32 accumulation"},
    {"attention", OpPrecision::Low,
     "softmax max/sum in fp32 inside the kernel"},
    {"layer_norm", OpPrecision::Low,
     "mean and variance in fp32 inside the kernel"},
    {"layer_norm_grad", OpPrecision::Low,
     "low input gradient; the scale and bias gradients come out fp32"},
    {"softmax", OpPrecision::Low, "max and sum in fp32 inside the kernel"},
    {"log_softmax", OpPrecision::Low, "max and sum in fp32 inside the kernel"},
    {"cross_entropy", OpPrecision::Low,
     "low logits; the loss sum and count come out fp32"},
    {"reduce_sum", OpPrecision::FP32,
     "sums (losses, statistics, norms) accumulate and stay fp32"},
    {"reduce_mean", OpPrecision::FP32,
     "sums (losses, statistics, norms) accumulate and stay fp32"},
    {"sgd_update", OpPrecision::FP32, "fp32 master weights and state (fixed)"},
    {"adamw_update", OpPrecision::FP32,
     "fp32 master weights and state (fixed)"},
};

/// Op kinds whose class is not the user's to choose: the optimizer updates
/// own the master weights, and casts, constants and parameter reads are what
/// the lowering itself places.
static bool isFixed(llvm::StringRef op) {
  return llvm::is_contained({"sgd_update", "adamw_update", "cast", "constant",
                             "get_param", "param"},
                            op);
}

llvm::ArrayRef<PolicyRow> defaultPolicyTable() { return kTable; }

OpPrecision opPrecision(const PrecisionPolicy &policy, llvm::StringRef op) {
  auto it = policy.overrides.find(op);
  if (it != policy.overrides.end())
    return it->second;
  for (const PolicyRow &row : kTable)
    if (row.op == op)
      return row.precision;
  return OpPrecision::Low;
}

mlir::FailureOr<Precision> parsePrecision(mlir::Location loc,
                                          llvm::StringRef text) {
  if (text == "fp32" || text == "f32")
    return Precision::FP32;
  if (text == "bf16")
    return Precision::BF16;
  if (text == "fp16" || text == "f16")
    return Precision::FP16;
  return mlir::emitError(loc)
         << "--precision '" << text << "': expected fp32, bf16 or fp16";
}

llvm::StringRef precisionName(Precision p) {
  switch (p) {
  case Precision::FP32:
    return "fp32";
  case Precision::BF16:
    return "bf16";
  case Precision::FP16:
    return "fp16";
  }
  return "?";
}

mlir::LogicalResult parsePrecisionOverrides(mlir::Location loc,
                                            llvm::StringRef text,
                                            PrecisionPolicy &policy,
                                            bool checkOpKinds) {
  llvm::SmallVector<llvm::StringRef> items;
  text.split(items, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef item : items) {
    auto [op, cls] = item.trim().split('=');
    op = op.trim();
    cls = cls.trim();
    auto fail = [&] {
      return mlir::emitError(loc)
             << "--precision-policy '" << item.trim() << "': ";
    };
    if (op.empty() || cls.empty())
      return fail() << "expected OP=low or OP=fp32";
    if (checkOpKinds && !mlir::RegisteredOperationName::lookup(
                            ("tcc." + op).str(), loc.getContext()))
      return fail() << "'" << op << "' is not a tcc op kind";
    if (isFixed(op))
      return fail() << "the precision of " << op << " is fixed by the lowering";
    if (cls == "low")
      policy.overrides[op] = OpPrecision::Low;
    else if (cls == "fp32")
      policy.overrides[op] = OpPrecision::FP32;
    else
      return fail() << "expected low or fp32, not '" << cls << "'";
  }
  return mlir::success();
}

mlir::FailureOr<PrecisionPolicy> parsePrecisionPolicy(mlir::Location loc,
                                                      llvm::StringRef precision,
                                                      llvm::StringRef overrides,
                                                      bool checkOpKinds) {
  PrecisionPolicy policy;
  mlir::FailureOr<Precision> p = parsePrecision(loc, precision);
  if (mlir::failed(p))
    return mlir::failure();
  policy.precision = *p;
  if (mlir::failed(
          parsePrecisionOverrides(loc, overrides, policy, checkOpKinds)))
    return mlir::failure();
  if (!overrides.empty() && policy.precision == Precision::FP32)
    return mlir::emitError(loc)
           << "--precision-policy needs --precision bf16 or fp16";
  return policy;
}

std::string describeOverrides(const PrecisionPolicy &policy) {
  llvm::SmallVector<std::string> items;
  for (const auto &entry : policy.overrides)
    items.push_back(entry.getKey().str() + "=" +
                    (entry.getValue() == OpPrecision::Low ? "low" : "fp32"));
  llvm::sort(items);
  return llvm::join(items, ",");
}

std::string describePrecision(const PrecisionPolicy &policy) {
  std::string s = precisionName(policy.precision).str();
  if (policy.overrides.empty())
    return s;
  return s + ":" + describeOverrides(policy);
}

} // namespace tcc
