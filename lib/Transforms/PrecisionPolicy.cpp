// The mixed-precision policy table and its command-line spelling.
#include "tcc/Transforms/Precision.h"

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

bool parsePrecision(llvm::StringRef text, Precision &out, std::string &error) {
  if (text == "fp32" || text == "f32")
    out = Precision::FP32;
  else if (text == "bf16")
    out = Precision::BF16;
  else if (text == "fp16" || text == "f16")
    out = Precision::FP16;
  else {
    error = "--precision '" + text.str() + "': expected fp32, bf16 or fp16";
    return false;
  }
  return true;
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

bool parsePrecisionOverrides(llvm::StringRef text, PrecisionPolicy &policy,
                             std::string &error, mlir::MLIRContext *context) {
  llvm::SmallVector<llvm::StringRef> items;
  text.split(items, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef item : items) {
    auto [op, cls] = item.trim().split('=');
    op = op.trim();
    cls = cls.trim();
    std::string where = "--precision-policy '" + item.trim().str() + "': ";
    if (op.empty() || cls.empty()) {
      error = where + "expected OP=low or OP=fp32";
      return false;
    }
    if (context && !mlir::RegisteredOperationName::lookup(
                       ("tcc." + op).str(), context)) {
      error = where + "'" + op.str() + "' is not a tcc op kind";
      return false;
    }
    if (isFixed(op)) {
      error = where + "the precision of " + op.str() +
              " is fixed by the lowering";
      return false;
    }
    if (cls == "low")
      policy.overrides[op] = OpPrecision::Low;
    else if (cls == "fp32")
      policy.overrides[op] = OpPrecision::FP32;
    else {
      error = where + "expected low or fp32, not '" + cls.str() + "'";
      return false;
    }
  }
  return true;
}

bool parsePrecisionPolicy(llvm::StringRef precision, llvm::StringRef overrides,
                          PrecisionPolicy &policy, std::string &error,
                          mlir::MLIRContext *context) {
  PrecisionPolicy p;
  if (!parsePrecision(precision, p.precision, error) ||
      !parsePrecisionOverrides(overrides, p, error, context))
    return false;
  if (!overrides.empty() && p.precision == Precision::FP32) {
    error = "--precision-policy needs --precision bf16 or fp16";
    return false;
  }
  policy = std::move(p);
  return true;
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
