//===- library_ops.h - the library calls a plan may make --------*- C++ -*-===//
//
// Each library op's operands and results (in the tcc op's ODS order), its
// attributes with their ODS defaults, and the function that checks a call's
// dtypes and shapes. The table is library_ops.inc, which tcc-tblgen writes
// from the op definitions (dialects/tcc/*.td, LibraryCallOpInterface); this
// header only gives it C++ types. Backend independent: a backend refuses
// separately what it cannot run.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_PLAN_LIBRARY_OPS_H
#define TCC_RUNTIME_PLAN_LIBRARY_OPS_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tcc::rt {

/// The library ops, named after their tcc op classes.
enum class Op {
#define TCC_LIBRARY_OP(Enum, name) Enum,
#include "plan/library_ops.inc"
};

/// A library call's attributes: one field per attribute name over all
/// library ops (the ODS name in camelCase), so only the fields of the
/// step's op mean anything. Filled from the plan with the op's defaults.
struct Attrs {
#define TCC_LIBRARY_OP_ATTR_FIELDS
#include "plan/library_ops.inc"
};

enum class AttrKind { Bool, Int, Float };

struct OperandSpec {
  std::string name;
  bool optional = false;
};

struct AttrSpec {
  const char *name;
  AttrKind kind;
  /// No ODS default: a plan must give it.
  bool required;
  /// The ODS default (bools as 0/1), where not required.
  double fallback;
  /// Where it lives in Attrs (a bool, int64_t or double by `kind`).
  size_t offset;

  /// The field of `attrs` this attribute is stored in.
  bool &asBool(Attrs &attrs) const;
  int64_t &asInt(Attrs &attrs) const;
  double &asFloat(Attrs &attrs) const;
  /// Its value in `attrs` as a double (bools 0/1).
  double value(const Attrs &attrs) const;
  /// Stores the default into `attrs`.
  void setDefault(Attrs &attrs) const;
};

class CallCheck;

struct OpSchema {
  Op op;
  const char *name; ///< the tcc op name without "tcc.": "layer_norm_grad"
  /// Its group in profiles ("GEMM", "attention", "optimizer"...).
  const char *family;
  std::vector<OperandSpec> operands, results;
  std::vector<AttrSpec> attrs;
  /// Checks a call's dtypes, shapes and attribute values (plan/calls.cpp);
  /// normalises what the backends expect normalised (axes).
  void (*check)(CallCheck &call);
};

/// Every library op's check, defined in plan/calls.cpp.
#define TCC_LIBRARY_OP(Enum, name) void check##Enum(CallCheck &call);
#include "plan/library_ops.inc"

const OpSchema &opSchema(Op op);
/// The families of the steps that are not library calls (profiles and the
/// GPU cost model group by them as by OpSchema::family).
inline constexpr const char *kKernelFamily = "generated kernels";
inline constexpr const char *kCollectiveFamily = "collectives";
/// "matmul".
const char *opName(Op op);
/// The op called `name` ("matmul"); false when it is not a library op.
bool parseOp(const std::string &name, Op &op);
/// "matmul, gemm, ..." for messages.
std::string libraryOpNames();
/// Attrs with every attribute of `op` at its default (required ones zero).
Attrs defaultAttrs(Op op);

} // namespace tcc::rt

#endif // TCC_RUNTIME_PLAN_LIBRARY_OPS_H
