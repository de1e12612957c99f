// Decoding of ONNX TensorProtos. Every size in a proto is untrusted: it is
// checked against the data actually present before anything is copied.
#include "tcc/Import/OnnxTensor.h"

#include "onnx/onnx_pb.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstring>
#include <limits>

using namespace mlir;

namespace tcc {

using TP = onnx::TensorProto;

std::string onnxDTypeName(int32_t onnxType) {
  switch (onnxType) {
  case TP::FLOAT:
    return "float";
  case TP::UINT8:
    return "uint8";
  case TP::INT8:
    return "int8";
  case TP::UINT16:
    return "uint16";
  case TP::INT16:
    return "int16";
  case TP::INT32:
    return "int32";
  case TP::INT64:
    return "int64";
  case TP::STRING:
    return "string";
  case TP::BOOL:
    return "bool";
  case TP::FLOAT16:
    return "float16";
  case TP::DOUBLE:
    return "double";
  case TP::UINT32:
    return "uint32";
  case TP::UINT64:
    return "uint64";
  case TP::COMPLEX64:
    return "complex64";
  case TP::COMPLEX128:
    return "complex128";
  case TP::BFLOAT16:
    return "bfloat16";
  case TP::UNDEFINED:
    return "undefined";
  default:
    return "undefined (" + std::to_string(onnxType) + ")";
  }
}

std::optional<data::DType> onnxToDType(int32_t onnxType) {
  using data::DType;
  switch (onnxType) {
  case TP::FLOAT:
    return DType::F32;
  case TP::DOUBLE:
    return DType::F64;
  case TP::FLOAT16:
    return DType::F16;
  case TP::BFLOAT16:
    return DType::BF16;
  case TP::INT8:
    return DType::I8;
  case TP::INT16:
    return DType::I16;
  case TP::INT32:
    return DType::I32;
  case TP::INT64:
    return DType::I64;
  case TP::UINT8:
    return DType::U8;
  case TP::UINT16:
    return DType::U16;
  case TP::UINT32:
    return DType::U32;
  case TP::UINT64:
    return DType::U64;
  case TP::BOOL:
    return DType::Bool;
  default:
    return std::nullopt;
  }
}

mlir::Type onnxElementType(MLIRContext &context, int32_t onnxType) {
  switch (onnxType) {
  case TP::FLOAT:
    return Float32Type::get(&context);
  case TP::DOUBLE:
    return Float64Type::get(&context);
  case TP::INT32:
    return IntegerType::get(&context, 32);
  case TP::INT64:
    return IntegerType::get(&context, 64);
  case TP::BOOL:
    return IntegerType::get(&context, 1);
  default:
    return nullptr;
  }
}

/// Copies a typed repeated field into `out`, narrowing each element to `T`
/// (int32_data carries 8/16-bit ints and the bit patterns of 16-bit floats).
template <typename T, typename Field>
static void copyField(const Field &field, std::vector<uint8_t> &out) {
  out.resize(field.size() * sizeof(T));
  for (int i = 0; i < field.size(); ++i) {
    T v = static_cast<T>(field.Get(i));
    std::memcpy(out.data() + i * sizeof(T), &v, sizeof(T));
  }
}

std::string printable(llvm::StringRef text) {
  std::string out;
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20)
      out += llvm::formatv("\\x{0:x-2}", unsigned(c)).str();
    else
      out += c;
  }
  return out;
}

/// The start of an error about `tensor`: "tensor 'name': ".
static InFlightDiagnostic tensorError(TensorErrorFn emitError,
                                      const onnx::TensorProto &tensor) {
  return emitError() << "tensor '" << printable(tensor.name()) << "': ";
}

/// Checks what tensorProtoToArray and takeTensorProtoAsResource both need
/// before touching the data: where it is stored, its dtype and its shape.
/// Sets `array`'s name, dtype and shape and the byte count the shape needs.
static LogicalResult readTensorHeader(const onnx::TensorProto &tensor,
                                      data::Array &array,
                                      uint64_t &expectedBytes,
                                      TensorErrorFn emitError) {
  if (tensor.data_location() == TP::EXTERNAL || tensor.external_data_size() > 0)
    return tensorError(emitError, tensor)
           << "external data is not supported (save the model with its "
              "tensors inside the .onnx file)";
  if (tensor.has_segment())
    return tensorError(emitError, tensor)
           << "segmented tensors are not supported";
  std::optional<data::DType> dtype = onnxToDType(tensor.data_type());
  if (!dtype)
    return tensorError(emitError, tensor)
           << "unsupported dtype " << onnxDTypeName(tensor.data_type());
  array.name = tensor.name();
  array.dtype = *dtype;
  array.shape.clear();
  size_t elemSize = data::dtypeSize(*dtype);
  // Bounded so that numel * elemSize cannot overflow.
  const uint64_t maxElems = (uint64_t(1) << 62) / elemSize;
  uint64_t numel = 1;
  for (int64_t d : tensor.dims()) {
    if (d < 0)
      return tensorError(emitError, tensor) << "negative dimension " << d;
    if (d != 0 && numel > maxElems / uint64_t(d))
      return tensorError(emitError, tensor) << "too many elements";
    numel *= uint64_t(d);
    array.shape.push_back(d);
  }
  expectedBytes = numel * elemSize;
  return success();
}

/// How many values `tensor`'s typed field for its dtype holds (those of
/// raw_data aside); nullopt for a dtype tcc::data cannot hold.
static std::optional<uint64_t>
typedFieldCount(const onnx::TensorProto &tensor) {
  switch (tensor.data_type()) {
  case TP::FLOAT:
    return tensor.float_data_size();
  case TP::DOUBLE:
    return tensor.double_data_size();
  case TP::INT64:
    return tensor.int64_data_size();
  case TP::UINT32:
  case TP::UINT64:
    return tensor.uint64_data_size();
  case TP::INT32:
  case TP::INT16:
  case TP::UINT16:
  case TP::FLOAT16:
  case TP::BFLOAT16:
  case TP::INT8:
  case TP::UINT8:
  case TP::BOOL:
    return tensor.int32_data_size();
  default:
    return std::nullopt;
  }
}

LogicalResult checkTensorProto(const onnx::TensorProto &tensor,
                               TensorErrorFn emitError) {
  // Strings, complex numbers and undefined dtypes are left to the converter
  // that reads them (which refuses them): ONNX parses none of them as a shape.
  if (!onnxToDType(tensor.data_type()))
    return success();
  data::Array array;
  uint64_t expectedBytes;
  if (failed(readTensorHeader(tensor, array, expectedBytes, emitError)))
    return failure();
  if (tensor.has_raw_data()) {
    if (tensor.raw_data().size() != expectedBytes)
      return tensorError(emitError, tensor)
             << "raw_data holds " << tensor.raw_data().size()
             << " bytes, the shape needs " << expectedBytes;
    return success();
  }
  uint64_t numel = expectedBytes / data::dtypeSize(array.dtype);
  uint64_t count = typedFieldCount(tensor).value_or(0);
  if (count != numel)
    return tensorError(emitError, tensor)
           << "holds " << count << " values, the shape needs " << numel;
  return success();
}

FailureOr<data::Array> tensorProtoToArray(const onnx::TensorProto &tensor,
                                          TensorErrorFn emitError) {
  data::Array array;
  uint64_t expectedBytes;
  if (failed(readTensorHeader(tensor, array, expectedBytes, emitError)))
    return failure();
  uint64_t numel = expectedBytes / data::dtypeSize(array.dtype);

  if (tensor.has_raw_data()) {
    const std::string &raw = tensor.raw_data();
    if (raw.size() != expectedBytes)
      return tensorError(emitError, tensor)
             << "raw_data holds " << raw.size() << " bytes, the shape needs "
             << expectedBytes;
    array.bytes.assign(raw.begin(), raw.end());
    return array;
  }

  uint64_t count = 0;
  switch (tensor.data_type()) {
  case TP::FLOAT:
    count = tensor.float_data_size();
    copyField<float>(tensor.float_data(), array.bytes);
    break;
  case TP::DOUBLE:
    count = tensor.double_data_size();
    copyField<double>(tensor.double_data(), array.bytes);
    break;
  case TP::INT64:
    count = tensor.int64_data_size();
    copyField<int64_t>(tensor.int64_data(), array.bytes);
    break;
  case TP::UINT32:
    count = tensor.uint64_data_size();
    copyField<uint32_t>(tensor.uint64_data(), array.bytes);
    break;
  case TP::UINT64:
    count = tensor.uint64_data_size();
    copyField<uint64_t>(tensor.uint64_data(), array.bytes);
    break;
  case TP::INT32:
    count = tensor.int32_data_size();
    copyField<int32_t>(tensor.int32_data(), array.bytes);
    break;
  case TP::INT16:
    count = tensor.int32_data_size();
    copyField<int16_t>(tensor.int32_data(), array.bytes);
    break;
  case TP::UINT16:
  case TP::FLOAT16:
  case TP::BFLOAT16:
    count = tensor.int32_data_size();
    copyField<uint16_t>(tensor.int32_data(), array.bytes);
    break;
  case TP::INT8:
    count = tensor.int32_data_size();
    copyField<int8_t>(tensor.int32_data(), array.bytes);
    break;
  case TP::UINT8:
    count = tensor.int32_data_size();
    copyField<uint8_t>(tensor.int32_data(), array.bytes);
    break;
  case TP::BOOL:
    count = tensor.int32_data_size();
    array.bytes.resize(count);
    for (uint64_t i = 0; i < count; ++i)
      array.bytes[i] = tensor.int32_data(int(i)) != 0;
    break;
  default:
    return tensorError(emitError, tensor)
           << "unsupported dtype " << onnxDTypeName(tensor.data_type());
  }
  if (count != numel)
    return tensorError(emitError, tensor)
           << "holds " << count << " values, the shape needs " << numel;
  return array;
}

/// `bytes` (owned by `owner`, freed with it) as a blob aligned for elements
/// of `alignment` bytes; copied only when the allocation is not so aligned.
template <typename Owner>
static AsmResourceBlob blobOf(Owner *owner, ArrayRef<char> bytes,
                              size_t alignment) {
  if (reinterpret_cast<uintptr_t>(bytes.data()) % alignment == 0)
    return AsmResourceBlob(
        bytes, alignment, [owner](void *, size_t, size_t) { delete owner; },
        /*dataIsMutable=*/true);
  AsmResourceBlob copy =
      HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, alignment);
  delete owner;
  return copy;
}

DenseResourceElementsAttr takeTensorProtoAsResource(MLIRContext &context,
                                                    onnx::TensorProto &tensor,
                                                    TensorErrorFn emitError) {
  data::Array array;
  uint64_t expectedBytes;
  if (failed(readTensorHeader(tensor, array, expectedBytes, emitError)))
    return nullptr;
  Type elem = onnxElementType(context, tensor.data_type());
  if (!elem) {
    tensorError(emitError, tensor)
        << "unsupported dtype " << onnxDTypeName(tensor.data_type());
    return nullptr;
  }
  auto type = RankedTensorType::get(array.shape, elem);
  size_t alignment = data::dtypeSize(array.dtype);
  AsmResourceBlob blob;
  if (tensor.has_raw_data() && tensor.raw_data().size() == expectedBytes) {
    // The message's own buffer becomes the blob's: the bytes exist once.
    std::string *raw = tensor.release_raw_data();
    if (array.dtype == data::DType::Bool)
      for (char &c : *raw)
        c = c != 0;
    blob = blobOf(raw, ArrayRef<char>(raw->data(), raw->size()), alignment);
  } else {
    // Typed fields (and a raw_data of the wrong size, which this reports).
    FailureOr<data::Array> decoded = tensorProtoToArray(tensor, emitError);
    if (failed(decoded))
      return nullptr;
    auto *bytes = new std::vector<uint8_t>(std::move(decoded->bytes));
    blob = blobOf(bytes,
                  ArrayRef<char>(reinterpret_cast<const char *>(bytes->data()),
                                 bytes->size()),
                  alignment);
  }
  return DenseResourceElementsAttr::get(type, tensor.name(), std::move(blob));
}

DenseElementsAttr arrayToElementsAttr(MLIRContext &context,
                                      const data::Array &array,
                                      TensorErrorFn emitError) {
  Type elem;
  switch (array.dtype) {
  case data::DType::F32:
    elem = Float32Type::get(&context);
    break;
  case data::DType::F64:
    elem = Float64Type::get(&context);
    break;
  case data::DType::I32:
    elem = IntegerType::get(&context, 32);
    break;
  case data::DType::I64:
    elem = IntegerType::get(&context, 64);
    break;
  case data::DType::Bool:
    elem = IntegerType::get(&context, 1);
    break;
  default:
    emitError() << "array '" << printable(array.name) << "': unsupported dtype "
                << data::dtypeName(array.dtype);
    return nullptr;
  }
  size_t elemSize = data::dtypeSize(array.dtype);
  int64_t numel = array.numElements();
  if (array.bytes.size() != size_t(numel) * elemSize) {
    emitError() << "array '" << printable(array.name) << "': holds "
                << array.bytes.size() << " bytes, the shape needs "
                << size_t(numel) * elemSize;
    return nullptr;
  }
  auto type = RankedTensorType::get(array.shape, elem);
  const uint8_t *p = array.bytes.data();
  bool splat = numel > 1;
  for (int64_t i = 1; splat && i < numel; ++i)
    splat = std::memcmp(p, p + i * elemSize, elemSize) == 0;
  size_t n = splat ? 1 : size_t(numel);

  switch (array.dtype) {
  case data::DType::F32:
    return DenseElementsAttr::get(
        type, llvm::ArrayRef(reinterpret_cast<const float *>(p), n));
  case data::DType::F64:
    return DenseElementsAttr::get(
        type, llvm::ArrayRef(reinterpret_cast<const double *>(p), n));
  case data::DType::I32:
    return DenseElementsAttr::get(
        type, llvm::ArrayRef(reinterpret_cast<const int32_t *>(p), n));
  case data::DType::I64:
    return DenseElementsAttr::get(
        type, llvm::ArrayRef(reinterpret_cast<const int64_t *>(p), n));
  default: {
    llvm::SmallVector<bool> bits(n);
    for (size_t i = 0; i < n; ++i)
      bits[i] = p[i] != 0;
    return DenseElementsAttr::get(type, bits);
  }
  }
}

DenseElementsAttr tensorProtoToElementsAttr(MLIRContext &context,
                                            const onnx::TensorProto &tensor,
                                            TensorErrorFn emitError) {
  // Named in ONNX's terms, before the array would name its own dtype.
  if (!onnxElementType(context, tensor.data_type())) {
    tensorError(emitError, tensor)
        << "unsupported dtype " << onnxDTypeName(tensor.data_type());
    return nullptr;
  }
  FailureOr<data::Array> array = tensorProtoToArray(tensor, emitError);
  if (failed(array))
    return nullptr;
  return arrayToElementsAttr(context, *array, emitError);
}

} // namespace tcc
