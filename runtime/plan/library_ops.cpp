//===- library_ops.cpp - the op table of library_ops.inc ------------------===//

#include "plan/library_ops.h"

#include "plan/calls.h"

#include <cstddef>

namespace tcc::rt {

namespace {

const std::vector<OpSchema> &schemas() {
  static const std::vector<OpSchema> table = {
#define TCC_LIBRARY_OP_SCHEMAS
#include "plan/library_ops.inc"
  };
  return table;
}

template <class T> T &field(Attrs &attrs, size_t offset) {
  return *reinterpret_cast<T *>(reinterpret_cast<char *>(&attrs) + offset);
}

} // namespace

bool &AttrSpec::asBool(Attrs &attrs) const {
  return field<bool>(attrs, offset);
}
int64_t &AttrSpec::asInt(Attrs &attrs) const {
  return field<int64_t>(attrs, offset);
}
double &AttrSpec::asFloat(Attrs &attrs) const {
  return field<double>(attrs, offset);
}

double AttrSpec::value(const Attrs &attrs) const {
  Attrs &a = const_cast<Attrs &>(attrs);
  switch (kind) {
  case AttrKind::Bool:
    return asBool(a) ? 1 : 0;
  case AttrKind::Int:
    return double(asInt(a));
  case AttrKind::Float:
    return asFloat(a);
  }
  return 0;
}

void AttrSpec::setDefault(Attrs &attrs) const {
  switch (kind) {
  case AttrKind::Bool:
    asBool(attrs) = fallback != 0;
    break;
  case AttrKind::Int:
    asInt(attrs) = static_cast<int64_t>(fallback);
    break;
  case AttrKind::Float:
    asFloat(attrs) = fallback;
    break;
  }
}

const OpSchema &opSchema(Op op) { return schemas()[static_cast<size_t>(op)]; }

const char *opName(Op op) { return opSchema(op).name; }

bool parseOp(const std::string &name, Op &op) {
  for (const OpSchema &s : schemas())
    if (name == s.name) {
      op = s.op;
      return true;
    }
  return false;
}

std::string libraryOpNames() {
  std::string s;
  for (const OpSchema &op : schemas())
    s += (s.empty() ? "" : ", ") + std::string(op.name);
  return s;
}

Attrs defaultAttrs(Op op) {
  Attrs attrs;
  for (const AttrSpec &a : opSchema(op).attrs)
    a.setDefault(attrs);
  return attrs;
}

} // namespace tcc::rt
