// Element types, tensor values and locations as the artifact writes them.
#include "Plan.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Location.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace mlir;
using tcc::data::Array;
using tcc::data::DType;

namespace tcc::artifact {

std::optional<DType> toDType(Type element) {
  if (element.isF32())
    return DType::F32;
  if (element.isF64())
    return DType::F64;
  if (element.isBF16())
    return DType::BF16;
  if (element.isF16())
    return DType::F16;
  if (element.isSignlessInteger(64) || element.isSignedInteger(64))
    return DType::I64;
  if (element.isSignlessInteger(32) || element.isSignedInteger(32))
    return DType::I32;
  if (element.isSignlessInteger(1))
    return DType::Bool;
  return std::nullopt;
}

static std::string typeText(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type;
  return s;
}

bool elementsToArray(Attribute value, Type type, const std::string &name,
                     Array &out, std::string &error) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(type);
  std::optional<DType> dtype =
      tensor ? toDType(tensor.getElementType()) : std::nullopt;
  if (!tensor || !tensor.hasStaticShape() || !dtype) {
    error = "'" + name + "' has unsupported type " + typeText(type);
    return false;
  }
  out.name = name;
  out.dtype = *dtype;
  out.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
  size_t elementBytes = data::dtypeSize(*dtype);
  size_t count = static_cast<size_t>(out.numElements());
  out.bytes.assign(count * elementBytes, 0);

  if (auto dense = llvm::dyn_cast<DenseElementsAttr>(value)) {
    if (*dtype == DType::Bool) {
      // i1 is bit-packed in the attribute's storage; one byte each here.
      size_t i = 0;
      for (bool v : dense.getValues<bool>())
        out.bytes[i++] = v;
      return true;
    }
    ArrayRef<char> raw = dense.getRawData();
    if (dense.isSplat() && raw.size() == elementBytes) {
      for (size_t i = 0; i < count; ++i)
        std::memcpy(out.bytes.data() + i * elementBytes, raw.data(),
                    elementBytes);
      return true;
    }
    if (raw.size() == out.bytes.size()) {
      std::memcpy(out.bytes.data(), raw.data(), raw.size());
      return true;
    }
  } else if (auto resource = llvm::dyn_cast<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob) {
      error = "'" + name + "': its dense resource has no data";
      return false;
    }
    if (blob->getData().size() == out.bytes.size()) {
      std::memcpy(out.bytes.data(), blob->getData().data(), out.bytes.size());
      return true;
    }
  }
  error = "'" + name + "': unsupported value for " + typeText(type);
  return false;
}

std::string describeLoc(Location loc) {
  if (auto file = llvm::dyn_cast<FileLineColLoc>(loc))
    return file.getFilename().str() + ":" + std::to_string(file.getLine()) +
           ":" + std::to_string(file.getColumn());
  if (auto name = llvm::dyn_cast<NameLoc>(loc))
    return "node '" + name.getName().str() + "'";
  if (auto fused = llvm::dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations()) {
      std::string text = describeLoc(inner);
      if (text != "an unknown location")
        return text;
    }
  if (auto call = llvm::dyn_cast<CallSiteLoc>(loc))
    return describeLoc(call.getCallee());
  if (auto opaque = llvm::dyn_cast<OpaqueLoc>(loc))
    return describeLoc(opaque.getFallbackLocation());
  return "an unknown location";
}

} // namespace tcc::artifact
