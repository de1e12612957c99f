// Element types and tensor values as the artifact writes them.
#include "Plan.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <algorithm>
#include <cstring>

using namespace mlir;
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

/// Passes `count` copies of the `size`-byte `element` to `sink`, a buffer
/// at a time: a splat's expansion never exists whole.
static void writeRepeated(const data::ByteSink &sink, const char *element,
                          size_t size, size_t count) {
  constexpr size_t kChunkBytes = 1 << 16;
  size_t perChunk = std::max<size_t>(1, kChunkBytes / size);
  std::vector<char> chunk(std::min(count, perChunk) * size);
  for (size_t i = 0; i < chunk.size(); i += size)
    std::memcpy(chunk.data() + i, element, size);
  for (size_t done = 0; done < count;) {
    size_t n = std::min(count - done, perChunk);
    sink(chunk.data(), n * size);
    done += n;
  }
}

/// Passes one byte (0 or 1) per element of `values` to `sink`, a buffer at
/// a time. An i1 attribute's storage is bit-packed, a resource's may hold
/// any non-zero byte for true.
template <typename Range>
static void writeBools(const data::ByteSink &sink, const Range &values) {
  std::vector<uint8_t> chunk;
  chunk.reserve(1 << 16);
  for (auto v : values) {
    chunk.push_back(v ? 1 : 0);
    if (chunk.size() == chunk.capacity()) {
      sink(chunk.data(), chunk.size());
      chunk.clear();
    }
  }
  sink(chunk.data(), chunk.size());
}

FailureOr<data::TensorSource>
elementsSource(Attribute value, Type type, const std::string &name,
               llvm::function_ref<InFlightDiagnostic()> emitError) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(type);
  std::optional<DType> dtype =
      tensor ? toDType(tensor.getElementType()) : std::nullopt;
  if (!tensor || !tensor.hasStaticShape() || !dtype)
    return emitError() << "'" << name << "' has unsupported type " << type;
  data::TensorSource out;
  out.name = name;
  out.dtype = *dtype;
  out.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
  size_t elementBytes = data::dtypeSize(*dtype);
  size_t count = static_cast<size_t>(out.numElements());
  bool isBool = *dtype == DType::Bool;

  // Attributes live as long as the context, so the sources may read them
  // when the file is written.
  if (auto dense = llvm::dyn_cast<DenseElementsAttr>(value)) {
    if (isBool) {
      out.write = [dense](const data::ByteSink &sink) {
        writeBools(sink, dense.getValues<bool>());
      };
      return out;
    }
    ArrayRef<char> raw = dense.getRawData();
    if (dense.isSplat() && raw.size() == elementBytes) {
      out.write = [raw, elementBytes, count](const data::ByteSink &sink) {
        writeRepeated(sink, raw.data(), elementBytes, count);
      };
      return out;
    }
    if (raw.size() == count * elementBytes) {
      out.write = [raw](const data::ByteSink &sink) {
        sink(raw.data(), raw.size());
      };
      return out;
    }
  } else if (auto resource = llvm::dyn_cast<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    StringRef key = resource.getRawHandle().getKey();
    if (!blob)
      return emitError() << "'" << name << "': its dense resource '" << key
                         << "' has no data";
    ArrayRef<char> raw = blob->getData();
    if (raw.size() != count * elementBytes)
      return emitError() << "'" << name << "': its dense resource '" << key
                         << "' holds " << raw.size() << " bytes, " << type
                         << " needs " << count * elementBytes;
    if (isBool)
      out.write = [raw](const data::ByteSink &sink) { writeBools(sink, raw); };
    else
      out.write = [raw](const data::ByteSink &sink) {
        sink(raw.data(), raw.size());
      };
    return out;
  }
  return emitError() << "'" << name << "': unsupported value for " << type;
}

} // namespace tcc::artifact
