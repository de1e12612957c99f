//===- json_file.h - reading the artifact's JSON files -----------*- C++ -*-===//
//
// What plan_read.cpp (plan.json) and manifest_read.cpp (manifest.json)
// share: JsonFile reads one file and checks its fields, every message
// prefixed with the file and the field's path. Internal to runtime/plan.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_PLAN_JSON_FILE_H
#define TCC_RUNTIME_PLAN_JSON_FILE_H

#include "plan/plan_json.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

namespace tcc::rt::json_read {

using data::DType;
using nlohmann::json;

/// A JSON text for messages, cut short.
inline std::string brief(const json &v) {
  std::string s = v.dump();
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

/// Reads one JSON file; `where` prefixes every message.
class JsonFile {
public:
  explicit JsonFile(std::string path) : path(std::move(path)) {}
  const std::string path;

  [[noreturn]] void bad(const std::string &where, const std::string &what,
                        tcc_status status = TCC_ERROR_FORMAT) const {
    fail(status, path + ": " + (where.empty() ? "" : where + ": ") + what);
  }

  json read() const {
    std::ifstream in = openInput(path);
    std::string text{std::istreambuf_iterator<char>(in), {}};
    if (in.bad())
      fail(TCC_ERROR_IO, path + ": read error");
    try {
      return json::parse(text);
    } catch (const json::exception &e) {
      // "[json.exception.parse_error.101] parse error at line 3, ..."
      std::string msg = e.what();
      size_t close = msg.find("] ");
      if (close != std::string::npos)
        msg = msg.substr(close + 2);
      fail(TCC_ERROR_FORMAT, path + ": malformed JSON: " + msg);
    }
  }

  const json &field(const json &obj, const std::string &where,
                    const char *key) const {
    if (!obj.is_object())
      bad(where, "is not an object");
    auto it = obj.find(key);
    if (it == obj.end())
      bad(where, std::string("missing '") + key + "'");
    return *it;
  }
  const json *optField(const json &obj, const std::string &where,
                       const char *key) const {
    if (!obj.is_object())
      bad(where, "is not an object");
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }
  static std::string sub(const std::string &where, const char *key) {
    return where.empty() ? key : where + "." + key;
  }
  static std::string at(const std::string &where, size_t i) {
    return where + "[" + std::to_string(i) + "]";
  }

  int64_t toInt(const json &v, const std::string &where) const {
    if (!v.is_number_integer() ||
        (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)))
      bad(where, "expected an integer, got " + brief(v));
    return v.get<int64_t>();
  }
  int64_t intField(const json &obj, const std::string &where,
                   const char *key) const {
    return toInt(field(obj, where, key), sub(where, key));
  }
  double numberField(const json &obj, const std::string &where,
                     const char *key) const {
    const json &v = field(obj, where, key);
    if (!v.is_number())
      bad(sub(where, key), "expected a number, got " + brief(v));
    return v.get<double>();
  }
  std::string toString(const json &v, const std::string &where) const {
    if (!v.is_string())
      bad(where, "expected a string, got " + brief(v));
    return v.get<std::string>();
  }
  std::string stringField(const json &obj, const std::string &where,
                          const char *key) const {
    return toString(field(obj, where, key), sub(where, key));
  }
  const json &arrayField(const json &obj, const std::string &where,
                         const char *key) const {
    const json &v = field(obj, where, key);
    if (!v.is_array())
      bad(sub(where, key), "expected an array, got " + brief(v));
    return v;
  }

  DType dtype(const json &obj, const std::string &where) const {
    static const std::pair<const char *, DType> names[] = {
        {"f32", DType::F32}, {"f64", DType::F64},   {"i32", DType::I32},
        {"i64", DType::I64}, {"bool", DType::Bool}, {"bf16", DType::BF16},
        {"f16", DType::F16}};
    std::string s = stringField(obj, where, "dtype");
    for (auto &[name, t] : names)
      if (s == name)
        return t;
    bad(sub(where, "dtype"), "unknown dtype '" + s +
                                 "' (expected f32, f64, i32, i64, bool, bf16 "
                                 "or f16)");
  }

  /// dtype + shape, with element and byte counts that cannot overflow.
  void shape(const json &obj, const std::string &where, DType dtype,
             std::vector<int64_t> &shape, int64_t &elements,
             int64_t &bytes) const {
    const json &dims = arrayField(obj, where, "shape");
    shape.clear();
    elements = 1;
    for (size_t i = 0; i < dims.size(); ++i) {
      int64_t d = toInt(dims[i], at(sub(where, "shape"), i));
      if (d < 0)
        bad(sub(where, "shape"), "negative dim " + std::to_string(d));
      if (d != 0 && elements > (INT64_C(1) << 56) / d)
        bad(sub(where, "shape"), shapeString(shape) + "... is too large");
      elements *= d;
      shape.push_back(d);
    }
    bytes = elements * static_cast<int64_t>(data::dtypeSize(dtype));
  }

  TensorDesc tensor(const json &obj, const std::string &where) const {
    TensorDesc t;
    t.name = stringField(obj, where, "name");
    if (t.name.empty())
      bad(sub(where, "name"), "is empty");
    t.dtype = dtype(obj, where);
    shape(obj, where, t.dtype, t.shape, t.elements, t.bytes);
    return t;
  }

  std::vector<TensorDesc> tensors(const json &obj, const std::string &where,
                                  const char *key) const {
    const json &list = arrayField(obj, where, key);
    std::vector<TensorDesc> out;
    std::set<std::string> seen;
    for (size_t i = 0; i < list.size(); ++i) {
      out.push_back(tensor(list[i], at(sub(where, key), i)));
      if (!seen.insert(out.back().name).second)
        bad(at(sub(where, key), i), "duplicate name '" + out.back().name + "'");
    }
    return out;
  }
};

inline std::string describe(const TensorDesc &t) {
  return std::string(data::dtypeName(t.dtype)) + " " + shapeString(t.shape);
}

} // namespace tcc::rt::json_read

#endif // TCC_RUNTIME_PLAN_JSON_FILE_H
