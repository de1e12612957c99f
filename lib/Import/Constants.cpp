// Ops whose result is known at import time: Constant, ConstantOfShape, Shape,
// Size, Range; and Identity, which only forwards what its input is.
#include "ConstFold.h"
#include "Importer.h"

#include "tcc/Import/OnnxTensor.h"

#include <cmath>

using namespace mlir;

namespace tcc::onnx_import {

/// Decodes a tensor attribute, reporting an unsupported dtype as such.
static FailureOr<DenseElementsAttr> tensorAttr(NodeImporter &n,
                                               const onnx::TensorProto &t) {
  if (failed(n.elementType(t.data_type())))
    return failure();
  DenseElementsAttr attr =
      tensorProtoToElementsAttr(*n.context(), t, [&] { return n.emitError(); });
  if (!attr)
    return failure();
  return attr;
}

static LogicalResult convertConstant(NodeImporter &n) {
  if (failed(n.expectInputs(0, 0)) || n.node().attribute_size() != 1)
    return n.fail("expects no inputs and exactly one value attribute");
  const onnx::AttributeProto &a = n.node().attribute(0);
  MLIRContext *ctx = n.context();
  Type f32 = Float32Type::get(ctx), i64 = IntegerType::get(ctx, 64);
  DenseElementsAttr value;
  if (a.name() == "value") {
    auto attr = tensorAttr(n, a.t());
    if (failed(attr))
      return failure();
    value = *attr;
  } else if (a.name() == "value_float") {
    value = DenseElementsAttr::get(RankedTensorType::get({}, f32), a.f());
  } else if (a.name() == "value_floats") {
    llvm::SmallVector<float> v(a.floats().begin(), a.floats().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({int64_t(v.size())}, f32), llvm::ArrayRef(v));
  } else if (a.name() == "value_int") {
    value = DenseElementsAttr::get(RankedTensorType::get({}, i64), a.i());
  } else if (a.name() == "value_ints") {
    llvm::SmallVector<int64_t> v(a.ints().begin(), a.ints().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({int64_t(v.size())}, i64), llvm::ArrayRef(v));
  } else {
    return n.unsupported("attribute '" + a.name() + "' is not supported");
  }
  return n.setConstant(0, value);
}

static LogicalResult convertConstantOfShape(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)) || failed(n.expectAttrs({"value"})))
    return failure();
  auto shape = n.intsInput(0, "shape");
  if (failed(shape))
    return failure();
  if (llvm::any_of(*shape, [](int64_t d) { return d < 0; }))
    return n.fail("shape has a negative dimension");
  DenseElementsAttr fill = DenseElementsAttr::get(
      RankedTensorType::get({1}, Float32Type::get(n.context())), 0.0f);
  if (const onnx::AttributeProto *a = n.attr("value")) {
    auto attr = tensorAttr(n, a->t());
    if (failed(attr))
      return failure();
    if (attr->getNumElements() != 1)
      return n.fail("value must hold exactly one element");
    fill = *attr;
  }
  auto type = RankedTensorType::get(*shape, fill.getElementType());
  return n.setConstant(
      0, DenseElementsAttr::get(type, *fill.value_begin<Attribute>()));
}

static LogicalResult convertShape(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)) || failed(n.expectAttrs({"start", "end"})))
    return failure();
  llvm::ArrayRef<int64_t> shape = n.inputShape(0);
  int64_t rank = shape.size();
  auto clampDim = [&](int64_t d) {
    d = d < 0 ? d + rank : d;
    return std::min(std::max<int64_t>(d, 0), rank);
  };
  int64_t start = clampDim(n.intAttr("start", 0));
  int64_t end = clampDim(n.intAttr("end", rank));
  llvm::SmallVector<int64_t> dims;
  for (int64_t d = start; d < end; ++d)
    dims.push_back(shape[d]);
  auto type = RankedTensorType::get({int64_t(dims.size())},
                                    IntegerType::get(n.context(), 64));
  return n.setConstant(0, DenseElementsAttr::get(type, llvm::ArrayRef(dims)));
}

static LogicalResult convertSize(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)) || failed(n.expectAttrs({})))
    return failure();
  auto type = RankedTensorType::get({}, IntegerType::get(n.context(), 64));
  return n.setConstant(
      0, DenseElementsAttr::get(type, n.inputType(0).getNumElements()));
}

static LogicalResult convertRange(NodeImporter &n) {
  if (failed(n.expectInputs(3, 3)) || failed(n.expectAttrs({})))
    return failure();
  const char *names[] = {"start", "limit", "delta"};
  Lit lits[3];
  for (int i = 0; i < 3; ++i) {
    DenseElementsAttr c = n.constantInput(i);
    if (!c)
      return n.notConstant(i, names[i]);
    if (c.getNumElements() != 1)
      return n.fail(llvm::Twine("the ") + names[i] + " must be a scalar");
    lits[i] = *toLit(c);
  }
  auto scalarType = lits[0].type;
  int64_t count;
  if (lits[0].isFloat()) {
    double start = lits[0].f(0), delta = lits[2].f(0);
    if (delta == 0)
      return n.fail("delta is zero");
    count = int64_t(std::max(std::ceil((lits[1].f(0) - start) / delta), 0.0));
  } else {
    int64_t start = lits[0].i(0), limit = lits[1].i(0), delta = lits[2].i(0);
    if (delta == 0)
      return n.fail("delta is zero");
    int64_t span = limit - start;
    count = span / delta + ((span % delta != 0) && ((span < 0) == (delta < 0)));
    count = std::max<int64_t>(count, 0);
  }
  if (count > kMaxFoldElements)
    return n.unsupported("Range of " + std::to_string(count) +
                         " elements is too large to fold");
  Lit out;
  out.type = RankedTensorType::get({count}, scalarType.getElementType());
  for (int64_t k = 0; k < count; ++k) {
    if (lits[0].isFloat())
      out.floats.push_back(lits[0].f(0) + double(k) * lits[2].f(0));
    else
      out.ints.push_back(lits[0].i(0) + k * lits[2].i(0));
  }
  return n.setConstant(0, fromLit(out));
}

static LogicalResult convertIdentity(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)))
    return failure();
  if (DenseElementsAttr c = n.constantInput(0))
    return n.setConstant(0, c);
  return n.setOutput(0, n.input(0));
}

void registerConstantConverters(ConverterTable &table) {
  table["Constant"] = convertConstant;
  table["ConstantOfShape"] = convertConstantOfShape;
  table["Shape"] = convertShape;
  table["Size"] = convertSize;
  table["Range"] = convertRange;
  table["Identity"] = convertIdentity;
}

} // namespace tcc::onnx_import
