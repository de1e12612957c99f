// Generators over the tcc ops that implement LibraryCallOpInterface: the one
// definition of a library call's operands, results and attributes is its
// ODS op, and everything else that spells them is written from it here.
//
//   -gen-library-call-defs   getCallOperands() / getCallResults() of each op
//                            (included by dialects/tcc/TccLibraryCalls.cpp)
//   -gen-runtime-op-table    runtime/plan/library_ops.inc: the runtime's op
//                            enum, the Attrs fields and the op schemas, in
//                            plain C++ (the runtime has no LLVM/MLIR)
#include "mlir/TableGen/Argument.h"
#include "mlir/TableGen/Attribute.h"
#include "mlir/TableGen/GenInfo.h"
#include "mlir/TableGen/Operator.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/TableGen/Error.h"
#include "llvm/TableGen/Record.h"
#include "llvm/TableGen/TableGenBackend.h"

#include <cmath>
#include <string>
#include <vector>

using namespace mlir::tblgen;
using llvm::formatv;
using llvm::raw_ostream;
using llvm::RecordKeeper;
using llvm::StringRef;

namespace {

constexpr StringRef kInterfaceTrait = "::tcc::LibraryCallOpInterface::Trait";

/// The runtime's view of an attribute kind.
enum class Kind { Bool, Int, Float };

StringRef kindName(Kind kind) {
  switch (kind) {
  case Kind::Bool:
    return "Bool";
  case Kind::Int:
    return "Int";
  case Kind::Float:
    return "Float";
  }
  return "";
}

StringRef kindCppType(Kind kind) {
  switch (kind) {
  case Kind::Bool:
    return "bool";
  case Kind::Int:
    return "int64_t";
  case Kind::Float:
    return "double";
  }
  return "";
}

struct CallAttr {
  std::string name;
  Kind kind;
  bool required;
  double fallback; // the ODS default where not required
};

struct CallOp {
  const llvm::Record *def;
  std::string enumName;    // "LayerNormGrad"
  std::string runtimeName; // "layer_norm_grad"
  std::string family;      // "layer_norm", for profiles
  std::vector<std::pair<std::string, bool>> operands, results; // name, optional
  std::vector<CallAttr> attrs;
};

/// "weight_decay" -> "weightDecay".
std::string camel(StringRef name) {
  std::string out;
  bool upper = false;
  for (char c : name) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? llvm::toUpper(c) : c;
    upper = false;
  }
  return out;
}

/// The runtime kind of an ODS attribute, from its (default-stripped) base.
Kind attrKind(const llvm::Record *def, const NamedAttribute &named) {
  StringRef base = named.attr.getBaseAttr().getAttrDefName();
  if (base == "BoolAttr")
    return Kind::Bool;
  if (base == "I64Attr")
    return Kind::Int;
  if (base == "F64Attr")
    return Kind::Float;
  llvm::PrintFatalError(def->getLoc(),
                        "library call attribute '" + named.name + "' is a " +
                            base +
                            "; the runtime's op table takes BoolAttr, "
                            "I64Attr and F64Attr (with or without a "
                            "default)");
}

/// The numeric value of an ODS default ("false", "-100", "1e-8").
double defaultValue(const llvm::Record *def, const NamedAttribute &named,
                    Kind kind) {
  StringRef text = named.attr.getDefaultValue().trim();
  if (kind == Kind::Bool) {
    if (text == "false" || text == "true")
      return text == "true";
  } else {
    double v;
    if (!text.getAsDouble(v) &&
        (kind == Kind::Float ||
         (v == std::trunc(v) && std::fabs(v) < 9007199254740992.0)))
      return v;
  }
  llvm::PrintFatalError(def->getLoc(), "cannot read the default '" + text +
                                           "' of attribute '" + named.name +
                                           "' as a runtime value");
}

std::vector<CallOp> collectOps(const RecordKeeper &records) {
  std::vector<CallOp> ops;
  for (const llvm::Record *def : records.getAllDerivedDefinitions("Op")) {
    Operator op(def);
    if (op.getDialect().getName() != "tcc" || !op.getTrait(kInterfaceTrait))
      continue;
    CallOp call;
    call.def = def;
    call.enumName = op.getCppClassName().drop_back(2).str(); // "...Op"
    call.runtimeName = op.getOperationName().substr(strlen("tcc."));
    call.family = def->getValueAsString("callFamily").str();
    if (call.family.empty())
      llvm::PrintFatalError(def->getLoc(),
                            "library call " + call.runtimeName +
                                " names no callFamily (its group in "
                                "profiles, e.g. \"GEMM\")");
    for (const NamedTypeConstraint &operand : op.getOperands()) {
      if (operand.isVariadic())
        llvm::PrintFatalError(def->getLoc(),
                              "library call operand '" + operand.name +
                                  "' is variadic; a plan step has one value "
                                  "per operand");
      call.operands.push_back({operand.name.str(), operand.isOptional()});
    }
    for (int i = 0; i < op.getNumResults(); ++i) {
      const NamedTypeConstraint &result = op.getResult(i);
      if (result.isVariadic())
        llvm::PrintFatalError(def->getLoc(), "library call result '" +
                                                 result.name + "' is variadic");
      call.results.push_back({result.name.str(), result.isOptional()});
    }
    for (const NamedAttribute &named : op.getAttributes()) {
      if (named.attr.isDerivedAttr())
        continue;
      if (named.attr.isOptional() && !named.attr.hasDefaultValue())
        llvm::PrintFatalError(def->getLoc(),
                              "library call attribute '" + named.name +
                                  "' is optional without a default; give it "
                                  "a default the runtime can apply");
      Kind kind = attrKind(def, named);
      bool required = !named.attr.hasDefaultValue();
      call.attrs.push_back({named.name.str(), kind, required,
                            required ? 0.0 : defaultValue(def, named, kind)});
    }
    ops.push_back(std::move(call));
  }
  // By name: the runtime's enum, table and messages list them so.
  llvm::sort(ops, [](const CallOp &a, const CallOp &b) {
    return a.runtimeName < b.runtimeName;
  });
  return ops;
}

bool emitCallDefs(const RecordKeeper &records, raw_ostream &os) {
  llvm::emitSourceFileHeader("Library call accessors", os, records);
  for (const llvm::Record *def : records.getAllDerivedDefinitions("Op")) {
    Operator op(def);
    if (op.getDialect().getName() != "tcc" || !op.getTrait(kInterfaceTrait))
      continue;
    auto getters = [&](auto names) {
      std::string list;
      for (StringRef name : names)
        list += (list.empty() ? "" : ", ") + op.getGetterName(name) + "()";
      return list;
    };
    std::vector<StringRef> operands, results;
    for (const NamedTypeConstraint &operand : op.getOperands())
      operands.push_back(operand.name);
    for (int i = 0; i < op.getNumResults(); ++i)
      results.push_back(op.getResult(i).name);
    os << formatv(
        "auto {0}::{1}::getCallOperands()\n    -> "
        "::llvm::SmallVector<::mlir::Value> {{\n  return {{{2}};\n}\n",
        op.getCppNamespace(), op.getCppClassName(), getters(operands));
    os << formatv(
        "auto {0}::{1}::getCallResults()\n    -> "
        "::llvm::SmallVector<::mlir::Value> {{\n  return {{{2}};\n}\n\n",
        op.getCppNamespace(), op.getCppClassName(), getters(results));
  }
  return false;
}

/// `v` as a C++ double literal that reads back exactly.
std::string floatLiteral(double v) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return s;
}

bool emitRuntimeTable(const RecordKeeper &records, raw_ostream &os) {
  std::vector<CallOp> ops = collectOps(records);

  // Attributes of the same name are one Attrs field: they must agree.
  llvm::MapVector<StringRef, std::pair<Kind, std::vector<StringRef>>> fields;
  for (const CallOp &op : ops)
    for (const CallAttr &attr : op.attrs) {
      auto [it, fresh] = fields.insert({attr.name, {attr.kind, {}}});
      if (!fresh && it->second.first != attr.kind)
        llvm::PrintFatalError(op.def->getLoc(),
                              "attribute '" + attr.name + "' of " +
                                  op.runtimeName +
                                  " has another kind than in an earlier op; "
                                  "one name, one Attrs field, one kind");
      it->second.second.push_back(op.runtimeName);
    }

  os << "// runtime/plan/library_ops.inc: the library calls of the runtime, "
        "written by\n"
        "// `tcc-tblgen -gen-runtime-op-table` from the tcc ops that "
        "implement\n"
        "// LibraryCallOpInterface (dialects/tcc/*.td). Do not edit: after "
        "changing an\n"
        "// op, run `cmake --build build --target tcc-update-op-table`. The "
        "compiler's\n"
        "// build checks that this copy is current; a build without the "
        "compiler\n"
        "// (TCC_BUILD_COMPILER=OFF) reads it as it is.\n\n";

  os << "#ifdef TCC_LIBRARY_OP\n// TCC_LIBRARY_OP(Enum, \"name\")\n";
  for (const CallOp &op : ops)
    os << formatv("TCC_LIBRARY_OP({0}, \"{1}\")\n", op.enumName,
                  op.runtimeName);
  os << "#undef TCC_LIBRARY_OP\n#endif\n\n";

  os << "#ifdef TCC_LIBRARY_OP_ATTR_FIELDS\n";
  for (auto &[name, info] : fields)
    os << formatv("{0} {1} = {{}; // {2}\n", kindCppType(info.first),
                  camel(name), llvm::join(info.second, ", "));
  os << "#undef TCC_LIBRARY_OP_ATTR_FIELDS\n#endif\n\n";

  os << "#ifdef TCC_LIBRARY_OP_SCHEMAS\n";
  auto values = [](const std::vector<std::pair<std::string, bool>> &list) {
    std::string s;
    for (auto &[name, optional] : list)
      s += formatv("{0}{{\"{1}\", {2}}", s.empty() ? "" : ", ", name,
                   optional ? "true" : "false");
    return s;
  };
  for (const CallOp &op : ops) {
    std::string attrs;
    for (const CallAttr &attr : op.attrs)
      attrs += formatv("\n   {{\"{0}\", AttrKind::{1}, {2}, {3}, "
                       "offsetof(Attrs, {4})},",
                       attr.name, kindName(attr.kind),
                       attr.required ? "true" : "false",
                       floatLiteral(attr.fallback), camel(attr.name));
    if (!attrs.empty())
      attrs.pop_back();
    os << formatv("{{Op::{0}, \"{1}\", \"{5}\",\n  {{{2}},\n  {{{3}},\n  "
                  "{{{4}},\n  &check{0}},\n",
                  op.enumName, op.runtimeName, values(op.operands),
                  values(op.results), attrs, op.family);
  }
  os << "#undef TCC_LIBRARY_OP_SCHEMAS\n#endif\n";
  return false;
}

mlir::GenRegistration
    genCallDefs("gen-library-call-defs",
                "Generate getCallOperands/getCallResults of library calls",
                emitCallDefs);
mlir::GenRegistration genRuntimeTable("gen-runtime-op-table",
                                      "Generate the runtime's library op table",
                                      emitRuntimeTable);

} // namespace
