#include "Tensor.h"
#include "Kernel.h"

#include "data/half.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace mlir;

namespace tcc::interp {

std::optional<data::DType> toDType(Type elementType, bool promote) {
  if (elementType.isF32())
    return promote ? data::DType::F64 : data::DType::F32;
  if (elementType.isF64())
    return data::DType::F64;
  if (elementType.isBF16())
    return data::DType::BF16;
  if (elementType.isF16())
    return data::DType::F16;
  if (elementType.isSignlessInteger(1))
    return data::DType::Bool;
  if (elementType.isSignlessInteger(32))
    return data::DType::I32;
  if (elementType.isSignlessInteger(64))
    return data::DType::I64;
  return std::nullopt;
}

bool allocate(Type type, bool promote, data::Array &out) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return false;
  std::optional<data::DType> dtype = toDType(tensor.getElementType(), promote);
  if (!dtype)
    return false;
  out.dtype = *dtype;
  out.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
  out.bytes.assign(out.numElements() * data::dtypeSize(*dtype), 0);
  return true;
}

std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string typeStr(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type;
  return s;
}

SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

bool nextIndex(MutableArrayRef<int64_t> index, ArrayRef<int64_t> shape) {
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    if (++index[d] < shape[d])
      return true;
    index[d] = 0;
  }
  return false;
}

IndexMap IndexMap::strided(ArrayRef<int64_t> outShape,
                           ArrayRef<int64_t> strides, int64_t base) {
  IndexMap map;
  map.isIdentity = false;
  int64_t n = 1;
  for (int64_t d : outShape)
    n *= d;
  map.offsets.resize(n);
  if (n == 0)
    return map;
  SmallVector<int64_t> index(outShape.size(), 0);
  int64_t i = 0;
  do {
    int64_t offset = base;
    for (size_t d = 0; d < index.size(); ++d)
      offset += index[d] * strides[d];
    map.offsets[i++] = offset;
  } while (nextIndex(index, outShape));
  return map;
}

IndexMap IndexMap::broadcast(ArrayRef<int64_t> inShape,
                             ArrayRef<int64_t> outShape) {
  if (inShape == outShape)
    return identity();
  SmallVector<int64_t> inStrides = stridesOf(inShape);
  SmallVector<int64_t> strides(outShape.size(), 0);
  size_t lead = outShape.size() - inShape.size();
  for (size_t d = 0; d < inShape.size(); ++d)
    if (inShape[d] != 1)
      strides[lead + d] = inStrides[d];
  return strided(outShape, strides);
}

int64_t readInt(const data::Array &a, int64_t i) {
  if (a.dtype == data::DType::I32)
    return a.data<int32_t>()[i];
  if (a.dtype == data::DType::Bool)
    return a.data<uint8_t>()[i];
  return a.data<int64_t>()[i];
}

/// Half <-> float32 conversions of whole arrays.
static void widenHalf(const data::Array &a, data::Array &out) {
  out.name = a.name;
  out.dtype = data::DType::F32;
  out.shape = a.shape;
  int64_t n = a.numElements();
  out.bytes.assign(n * sizeof(float), 0);
  const uint16_t *src = a.data<uint16_t>();
  float *dst = out.data<float>();
  bool bf16 = a.dtype == data::DType::BF16;
  for (int64_t i = 0; i < n; ++i)
    dst[i] = bf16 ? data::bf16ToFloat(src[i]) : data::f16ToFloat(src[i]);
}
static void narrowToHalf(const data::Array &a, data::DType dtype,
                         data::Array &out) {
  out.name = a.name;
  out.dtype = dtype;
  out.shape = a.shape;
  int64_t n = a.numElements();
  out.bytes.assign(n * sizeof(uint16_t), 0);
  const float *src = a.data<float>();
  uint16_t *dst = out.data<uint16_t>();
  bool bf16 = dtype == data::DType::BF16;
  for (int64_t i = 0; i < n; ++i)
    dst[i] = bf16 ? data::floatToBf16(src[i]) : data::floatToF16(src[i]);
}

bool convertArray(const data::Array &a, data::DType dtype, data::Array &out) {
  if (isHalf(a.dtype) || isHalf(dtype)) {
    if (a.dtype == dtype) {
      out = a;
      return true;
    }
    data::Array wide;
    const data::Array *src = &a;
    if (isHalf(a.dtype)) {
      widenHalf(a, wide);
      src = &wide;
    }
    if (!isHalf(dtype))
      return convertArray(*src, dtype, out);
    if (src->dtype == data::DType::F32) {
      narrowToHalf(*src, dtype, out);
      return true;
    }
    data::Array f32;
    if (!convertArray(*src, data::DType::F32, f32))
      return false;
    narrowToHalf(f32, dtype, out);
    return true;
  }
  out.name = a.name;
  out.dtype = dtype;
  out.shape = a.shape;
  out.bytes.assign(a.numElements() * data::dtypeSize(dtype), 0);
  int64_t n = a.numElements();
  return visitAny(a.dtype, [&](auto fromTag) {
    using From = decltype(fromTag);
    return visitAny(dtype, [&](auto toTag) {
      using To = decltype(toTag);
      const From *src = a.data<From>();
      To *dst = out.data<To>();
      for (int64_t i = 0; i < n; ++i)
        dst[i] = convertElement<To>(src[i]);
      return true;
    });
  });
}

/// Stores `values` (doubles or int64s, one per element, or a single splat).
template <class V>
static void fill(data::Array &out, const std::vector<V> &values) {
  int64_t n = out.numElements();
  if (isHalf(out.dtype)) {
    bool bf16 = out.dtype == data::DType::BF16;
    uint16_t *dst = out.data<uint16_t>();
    for (int64_t i = 0; i < n; ++i) {
      float v = static_cast<float>(values.size() == 1 ? values[0] : values[i]);
      dst[i] = bf16 ? data::floatToBf16(v) : data::floatToF16(v);
    }
    return;
  }
  visitAny(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    T *dst = out.data<T>();
    for (int64_t i = 0; i < n; ++i)
      dst[i] = convertElement<T>(values.size() == 1 ? values[0] : values[i]);
    return true;
  });
}

/// Fills `out` (allocated with the attribute's own dtype) from `dense`.
static void denseToArray(DenseElementsAttr dense, data::Array &out) {
  Type elem = dense.getElementType();
  // Non-splat dense storage of these types is exactly the packed array.
  if (!dense.isSplat() && !elem.isInteger(1)) {
    ArrayRef<char> raw = dense.getRawData();
    out.bytes.assign(raw.begin(), raw.end());
    return;
  }
  if (llvm::isa<FloatType>(elem)) {
    std::vector<double> values;
    if (dense.isSplat())
      values.push_back(dense.getSplatValue<APFloat>().convertToDouble());
    else
      for (const APFloat &v : dense.getValues<APFloat>())
        values.push_back(v.convertToDouble());
    fill(out, values);
    return;
  }
  std::vector<int64_t> values;
  if (dense.isSplat())
    values.push_back(elem.isInteger(1)
                         ? dense.getSplatValue<bool>()
                         : dense.getSplatValue<APInt>().getSExtValue());
  else
    for (bool v : dense.getValues<bool>())
      values.push_back(v);
  fill(out, values);
}

/// Fills `out` (allocated with the attribute's own dtype) from a resource
/// blob, which holds the packed array with i1 as one byte each.
static bool resourceToArray(DenseResourceElementsAttr resource,
                            data::Array &out, std::string &error) {
  std::string key = resource.getRawHandle().getKey().str();
  AsmResourceBlob *blob = resource.getRawHandle().getBlob();
  if (!blob) {
    error = "dense resource '" + key + "' has no data";
    return false;
  }
  ArrayRef<char> raw = blob->getData();
  if (raw.size() != out.bytes.size()) {
    error = "dense resource '" + key + "' has " + std::to_string(raw.size()) +
            " bytes, expected " + std::to_string(out.bytes.size());
    return false;
  }
  out.bytes.assign(raw.begin(), raw.end());
  if (out.dtype == data::DType::Bool)
    for (uint8_t &b : out.bytes)
      b = b != 0;
  return true;
}

bool elementsToArray(ElementsAttr attr, bool promote, data::Array &out,
                     std::string &error) {
  data::Array stored;
  if (!allocate(attr.getType(), /*promote=*/false, stored)) {
    error = "unsupported constant type " + typeStr(attr.getType());
    return false;
  }
  if (auto dense = llvm::dyn_cast<DenseElementsAttr>(attr)) {
    denseToArray(dense, stored);
  } else if (auto resource = llvm::dyn_cast<DenseResourceElementsAttr>(attr)) {
    if (!resourceToArray(resource, stored, error))
      return false;
  } else {
    error =
        "unsupported constant attribute kind (only dense and dense resource)";
    return false;
  }
  std::optional<data::DType> want =
      toDType(attr.getShapedType().getElementType(), promote);
  if (*want == stored.dtype) {
    out = std::move(stored);
    return true;
  }
  return convertArray(stored, *want, out);
}

} // namespace tcc::interp
