// plan.json. One entry (tensor, value, step, result) per
// line, keys in the order docs/artifact.md lists them, so the files are as
// easy to read and grep as to parse.
#include "Plan.h"

#include "tcc/Artifact/Artifact.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>

namespace tcc::artifact {
namespace {

using Writer = std::function<void(llvm::json::OStream &)>;

/// One JSON value on one line.
std::string compact(const Writer &write) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::json::OStream json(os);
  write(json);
  return s;
}

void shapeArray(llvm::json::OStream &json, const std::vector<int64_t> &shape) {
  json.array([&] {
    for (int64_t d : shape)
      json.value(d);
  });
}

void idArray(llvm::json::OStream &json, const std::vector<int64_t> &ids) {
  json.array([&] {
    for (int64_t id : ids)
      json.value(id);
  });
}

std::string tensorLine(const TensorDesc &t) {
  return compact([&](llvm::json::OStream &json) {
    json.object([&] {
      json.attribute("name", t.name);
      json.attribute("dtype", data::dtypeName(t.dtype));
      json.attributeBegin("shape");
      shapeArray(json, t.shape);
      json.attributeEnd();
      if (t.init) {
        json.attributeBegin("init");
        json.rawValue(formatDouble(*t.init));
        json.attributeEnd();
      }
      if (t.working)
        json.attribute("working", data::dtypeName(*t.working));
    });
  });
}

std::string valueLine(int64_t id, const ValueDesc &v) {
  return compact([&](llvm::json::OStream &json) {
    json.object([&] {
      json.attribute("id", id);
      json.attribute("dtype", data::dtypeName(v.dtype));
      json.attributeBegin("shape");
      shapeArray(json, v.shape);
      json.attributeEnd();
      json.attribute("storage", storageName(v.storage));
      switch (v.storage) {
      case Storage::Arena:
        json.attribute("offset", v.offset);
        break;
      case Storage::Param:
      case Storage::OptState:
      case Storage::Input:
      case Storage::Working:
        json.attribute("index", v.index);
        break;
      case Storage::Constant:
        json.attribute("name", v.constant);
        break;
      case Storage::Step:
        break;
      }
    });
  });
}

std::string stepLine(const StepDesc &s) {
  return compact([&](llvm::json::OStream &json) {
    json.object([&] {
      json.attribute("kind", s.kernel ? "kernel" : "call");
      if (s.kernel) {
        json.attribute("symbol", s.symbol);
      } else {
        json.attribute("op", s.op);
        json.attributeBegin("attrs");
        json.rawValue(s.attrsJson);
        json.attributeEnd();
      }
      json.attributeBegin("inputs");
      idArray(json, s.inputs);
      json.attributeEnd();
      json.attributeBegin("outputs");
      idArray(json, s.outputs);
      json.attributeEnd();
      if (s.kernel)
        json.attribute("elements", s.elements);
    });
  });
}

std::string resultLine(const ResultDesc &r) {
  return compact([&](llvm::json::OStream &json) {
    json.object([&] {
      json.attribute("role", r.role);
      if (r.role == "output")
        json.attribute("name", r.name);
      else if (r.role != "loss")
        json.attribute("index", r.index);
      json.attribute("value", r.value);
    });
  });
}

std::string quoted(llvm::StringRef s) {
  return compact([&](llvm::json::OStream &json) { json.value(s); });
}

/// `"key": [` lines `]` with the given indent; "[]" when empty.
void list(llvm::raw_ostream &os, llvm::StringRef indent, llvm::StringRef key,
          const std::vector<std::string> &lines, bool last) {
  os << indent << quoted(key) << ": [";
  if (lines.empty()) {
    os << "]";
  } else {
    os << "\n";
    for (size_t i = 0; i < lines.size(); ++i)
      os << indent << "  " << lines[i] << (i + 1 < lines.size() ? ",\n" : "\n");
    os << indent << "]";
  }
  os << (last ? "\n" : ",\n");
}

template <class T, class F>
std::vector<std::string> lines(const std::vector<T> &items, F line) {
  std::vector<std::string> out;
  for (const T &item : items)
    out.push_back(line(item));
  return out;
}

} // namespace

std::string planJson(const Plan &plan) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "{\n  \"version\": " << kArtifactVersion << ",\n";
  list(os, "  ", "params", lines(plan.params, tensorLine), false);
  list(os, "  ", "opt_state", lines(plan.optState, tensorLine), false);
  os << "  \"functions\": {\n";
  for (size_t f = 0; f < plan.functions.size(); ++f) {
    const FunctionPlan &fp = plan.functions[f];
    os << "    " << quoted(fp.name) << ": {\n";
    os << "      \"arena_bytes\": " << fp.arenaBytes << ",\n";
    list(os, "      ", "inputs", lines(fp.inputs, tensorLine), false);
    std::vector<std::string> values;
    for (size_t i = 0; i < fp.values.size(); ++i)
      values.push_back(valueLine(i, fp.values[i]));
    list(os, "      ", "values", values, false);
    list(os, "      ", "steps", lines(fp.steps, stepLine), false);
    list(os, "      ", "results", lines(fp.results, resultLine), true);
    os << "    }" << (f + 1 < plan.functions.size() ? ",\n" : "\n");
  }
  os << "  }\n}\n";
  return s;
}

} // namespace tcc::artifact
