// Op attributes as JSON for the plan's library calls, and the one number
// format every JSON file of the artifact uses for doubles.
#include "tcc/Artifact/Artifact.h"
#include "tcc/TccOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/JSON.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace mlir;

namespace tcc::artifact {

std::string formatDouble(double value) {
  // The shortest of %.15g .. %.17g that reads back exactly: 0.1 stays
  // "0.1", not "0.10000000000000001".
  char buf[40];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, value);
    if (std::strtod(buf, nullptr) == value)
      break;
  }
  std::string text = buf;
  // Keep a double looking like one in JSON ("1.0", not "1").
  if (text.find_first_of(".eEn") == std::string::npos)
    text += ".0";
  return text;
}

static std::string attrText(Attribute attr) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << attr;
  return s;
}

LogicalResult writeAttributeJson(llvm::json::OStream &os, Attribute attr,
                                 std::string &error) {
  // BoolAttr is an i1 IntegerAttr: test it first.
  if (auto b = llvm::dyn_cast<BoolAttr>(attr)) {
    os.value(b.getValue());
    return success();
  }
  if (auto i = llvm::dyn_cast<IntegerAttr>(attr)) {
    if (i.getType().isUnsignedInteger())
      os.value(static_cast<int64_t>(i.getValue().getZExtValue()));
    else
      os.value(i.getValue().getSExtValue());
    return success();
  }
  if (auto f = llvm::dyn_cast<FloatAttr>(attr)) {
    double v = f.getValueAsDouble();
    if (!std::isfinite(v)) {
      error = "attribute " + attrText(attr) + " is not finite (JSON has no "
              "inf or NaN)";
      return failure();
    }
    os.rawValue(formatDouble(v));
    return success();
  }
  if (auto s = llvm::dyn_cast<StringAttr>(attr)) {
    os.value(s.getValue());
    return success();
  }
  if (llvm::isa<UnitAttr>(attr)) {
    os.value(true);
    return success();
  }
  if (auto e = llvm::dyn_cast<GeluApproxAttr>(attr)) {
    os.value(stringifyGeluApprox(e.getValue()));
    return success();
  }
  if (auto e = llvm::dyn_cast<CmpPredicateAttr>(attr)) {
    os.value(stringifyCmpPredicate(e.getValue()));
    return success();
  }
  if (auto a = llvm::dyn_cast<DenseI64ArrayAttr>(attr)) {
    os.array([&] {
      for (int64_t v : a.asArrayRef())
        os.value(v);
    });
    return success();
  }
  if (auto a = llvm::dyn_cast<DenseI32ArrayAttr>(attr)) {
    os.array([&] {
      for (int32_t v : a.asArrayRef())
        os.value(static_cast<int64_t>(v));
    });
    return success();
  }
  if (auto a = llvm::dyn_cast<DenseBoolArrayAttr>(attr)) {
    os.array([&] {
      for (bool v : a.asArrayRef())
        os.value(v);
    });
    return success();
  }
  if (auto a = llvm::dyn_cast<DenseIntElementsAttr>(attr);
      a && a.getType().getRank() <= 1 && !a.getElementType().isInteger(1)) {
    os.array([&] {
      for (const APInt &v : a.getValues<APInt>())
        os.value(v.getSExtValue());
    });
    return success();
  }
  if (auto a = llvm::dyn_cast<ArrayAttr>(attr)) {
    LogicalResult result = success();
    os.array([&] {
      for (Attribute element : a)
        if (succeeded(result))
          result = writeAttributeJson(os, element, error);
    });
    return result;
  }
  error = "attribute " + attrText(attr) + " has no JSON form in the plan";
  return failure();
}

} // namespace tcc::artifact
