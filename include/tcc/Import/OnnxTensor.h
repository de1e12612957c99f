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
#include "mlir/IR/Diagnostics.h"
#include "mlir/Support/LLVM.h"

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

/// Starts the error diagnostic of a tensor that cannot be decoded, which
/// the decoder continues with "tensor 'name': why". The caller decides where
/// it is and what it is about ("initializer "); one that starts no
/// diagnostic keeps the failure quiet.
using TensorErrorFn = llvm::function_ref<mlir::InFlightDiagnostic()>;

/// Decodes `tensor` (raw_data or the typed fields; bool, 8/16-bit ints and
/// 16-bit floats come from int32_data as ONNX stores them). Fails for
/// external data, segments, strings, complex numbers and size mismatches.
mlir::FailureOr<data::Array> tensorProtoToArray(const onnx::TensorProto &tensor,
                                                TensorErrorFn emitError);

/// Checks, without decoding, that `tensor`'s data holds exactly what its
/// dims say (raw_data bytes or typed-field values) and that its dims, dtype
/// and storage are ones tensorProtoToArray reads; dtypes tcc::data cannot
/// hold (strings, complex) pass. The importer runs it on every tensor of a
/// model before any ONNX library call, whose parsers trust the dims.
mlir::LogicalResult checkTensorProto(const onnx::TensorProto &tensor,
                                     TensorErrorFn emitError);

/// `array` as a dense attribute of a supported tcc element type; null for
/// other dtypes (the error names the array). Arrays whose elements are all
/// equal become splats, which keeps zero biases and all-ones scales short
/// in the IR.
mlir::DenseElementsAttr arrayToElementsAttr(mlir::MLIRContext &context,
                                            const data::Array &array,
                                            TensorErrorFn emitError);

/// tensorProtoToArray followed by arrayToElementsAttr.
mlir::DenseElementsAttr
tensorProtoToElementsAttr(mlir::MLIRContext &context,
                          const onnx::TensorProto &tensor,
                          TensorErrorFn emitError);

/// `tensor` (a tcc element type) as a dense resource named after it, for
/// weights and other large tensors: the packed array (i1 one byte per
/// element) in a blob of the context's builtin dialect, aligned for its
/// element type. raw_data is moved into the blob, not copied, so `tensor`
/// no longer holds it; the typed fields are decoded. Null on the problems
/// tensorProtoToArray reports.
mlir::DenseResourceElementsAttr
takeTensorProtoAsResource(mlir::MLIRContext &context, onnx::TensorProto &tensor,
                          TensorErrorFn emitError);

/// `text` with control characters as \xNN: names in an ONNX file are
/// arbitrary bytes, and an error message stays one line.
std::string printable(llvm::StringRef text);

} // namespace tcc

#endif // TCC_IMPORT_ONNXTENSOR_H
