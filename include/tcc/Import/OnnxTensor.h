// ONNX TensorProto -> tcc::data::Array -> mlir::DenseElementsAttr, and
// TensorProto -> mlir::DenseResourceElementsAttr for weights.
//
// Shared by the importer (initializers, Constant nodes) and by tools that read
// ONNX's own test data (`input_0.pb`, `output_0.pb`), so it knows every dtype
// tcc::data::Array can hold, while the MLIR side accepts only the element
// types the tcc dialect computes with (f32, f64, i32, i64, i1).
#ifndef TCC_IMPORT_ONNXTENSOR_H
#define TCC_IMPORT_ONNXTENSOR_H

#include "data/npz.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <optional>
#include <string>

namespace onnx {
class TensorProto;
} // namespace onnx

namespace tcc {

/// ONNX's name for a TensorProto::DataType ("float", "float16", "int64", ...),
/// for messages; "dtype <n>" for values ONNX does not define.
std::string onnxDTypeName(int32_t onnxType);

/// The host array dtype for an ONNX data type, if tcc::data can hold it
/// (not string, complex or undefined).
std::optional<data::DType> onnxToDType(int32_t onnxType);

/// The tcc element type for an ONNX data type: f32, f64, i32, i64 or i1;
/// null for every other type.
mlir::Type onnxElementType(mlir::MLIRContext &context, int32_t onnxType);

/// Decodes `tensor` (raw_data or the typed fields; bool, 8/16-bit ints and
/// 16-bit floats come from int32_data as ONNX stores them). Fails for external
/// data, segments, strings, complex numbers and size mismatches, with a
/// one-line message naming the tensor.
bool tensorProtoToArray(const onnx::TensorProto &tensor, data::Array &array,
                        std::string &error);

/// `array` as a dense attribute of a supported tcc element type; null (with
/// `error` set) for other dtypes. Arrays whose elements are all equal become
/// splats, which keeps zero biases and all-ones scales short in the IR.
mlir::DenseElementsAttr arrayToElementsAttr(mlir::MLIRContext &context,
                                            const data::Array &array,
                                            std::string &error);

/// tensorProtoToArray followed by arrayToElementsAttr.
mlir::DenseElementsAttr
tensorProtoToElementsAttr(mlir::MLIRContext &context,
                          const onnx::TensorProto &tensor, std::string &error);

/// `tensor` (a tcc element type) as a dense resource named after it, for
/// weights and other large tensors: the packed array (i1 one byte per
/// element) in a blob of the context's builtin dialect, aligned for its
/// element type. raw_data is moved into the blob, not copied, so `tensor`
/// no longer holds it; the typed fields are decoded. Null (with `error`
/// set, as tensorProtoToArray words it) on the same problems.
mlir::DenseResourceElementsAttr
takeTensorProtoAsResource(mlir::MLIRContext &context, onnx::TensorProto &tensor,
                          std::string &error);

} // namespace tcc

#endif // TCC_IMPORT_ONNXTENSOR_H
