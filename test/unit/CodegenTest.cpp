// Generated exec.fusion kernels against the reference interpreter: a
// function with several elementwise chains is fused, its kernel source
// compiled into a host shared object and each kernel run (in two halves, to
// exercise the begin/end contract) on random inputs; every output must match
// the interpreter running that fusion op bit for bit (same formulas in the
// same order, same libm). NaN results are compared as NaN, not by payload.
// With nvcc present, the same source must also compile into a fatbin.
#include "TestUtil.h"

#include "exec/ExecOps.h"
#include "tcc/Codegen/KernelEmitter.h"
#include "tcc/Interp/Interpreter.h"
#include "tcc/TccOps.h"
#include "tcc/Transforms/Passes.h"
#include "Toolchain.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <dlfcn.h>

using namespace mlir;
using namespace testutil;
namespace codegen = tcc::codegen;

namespace {

// Chains with row-bias, [4, 1] column and scalar broadcasting, both GELU
// forms and their gradients, compare/where with an i1 kernel input and
// output, saturating casts, sigmoid, pow, NaN-propagating max, rsqrt.
const char *kChains = R"mlir(
  func.func @chains(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %b: tensor<8xf32>,
                    %c: tensor<4x1xf32>, %s: tensor<f32>, %g: tensor<4x8xf32>)
      -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
          tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xi1>) {
    %zero = tcc.constant dense<0.0> : tensor<f32>
    %half = tcc.constant dense<0.5> : tensor<f32>
    %big = tcc.constant dense<4.0e18> : tensor<f32>
    %bigger = tcc.constant dense<1.0e9> : tensor<f32>
    %inf = tcc.constant dense<0x7F800000> : tensor<f32>
    %0 = tcc.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %1 = tcc.gelu %0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %2 = tcc.mul %1, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %3 = tcc.mul %y, %c : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
    %4 = tcc.gelu %3 {approximate = #tcc<gelu_approx tanh>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %5 = tcc.sub %4, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %6 = tcc.gelu_grad %x, %g : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %7 = tcc.gelu_grad %y, %g {approximate = #tcc<gelu_approx tanh>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %8 = tcc.add %6, %7 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %m = tcc.cmp gt, %x, %zero : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xi1>
    %9 = tcc.sigmoid %y : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %10 = tcc.where %m, %9, %x : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %11 = tcc.mul %x, %big : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %12 = tcc.cast %11 : (tensor<4x8xf32>) -> tensor<4x8xi64>
    %13 = tcc.cast %12 : (tensor<4x8xi64>) -> tensor<4x8xf32>
    %14 = tcc.mul %y, %bigger : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %15 = tcc.cast %14 : (tensor<4x8xf32>) -> tensor<4x8xi32>
    %16 = tcc.cast %15 : (tensor<4x8xi32>) -> tensor<4x8xf32>
    %17 = tcc.add %13, %16 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %18 = tcc.pow %x, %c : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
    %19 = tcc.max %18, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %20 = tcc.abs %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %21 = tcc.rsqrt %20 : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %22 = tcc.min %19, %21 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %23 = tcc.where %m, %inf, %22 : (tensor<4x8xi1>, tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %24 = tcc.broadcast %b : (tensor<8xf32>) -> tensor<4x8xf32>
    %25 = tcc.div %24, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %26 = tcc.neg %25 : (tensor<4x8xf32>) -> tensor<4x8xf32>
    return %2, %5, %8, %10, %17, %23, %26, %m
        : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
          tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xi1>
  }
)mlir";

using KernelFn = void (*)(const void *const *, void *, int64_t, int64_t);

/// Deterministic inputs: floats in [-3, 3) (some exactly 0), ints, bools.
Array randomInput(RankedTensorType type, uint32_t seed) {
  int64_t n = type.getNumElements();
  std::vector<int64_t> shape(type.getShape());
  uint32_t s = seed * 2654435761u + 12345;
  auto next = [&] {
    s = s * 1664525u + 1013904223u;
    return s >> 8;
  };
  Type elem = type.getElementType();
  if (elem.isF32()) {
    std::vector<float> v(n);
    for (float &x : v)
      x = next() % 17 == 0 ? 0.0f : float(next()) / float(1 << 24) * 6 - 3;
    return f32(shape, v);
  }
  if (elem.isInteger(1)) {
    std::vector<uint8_t> v(n);
    for (uint8_t &x : v)
      x = next() & 1;
    return makeArray("", DType::Bool, shape, v);
  }
  std::vector<int64_t> v(n);
  for (int64_t &x : v)
    x = int64_t(next()) - (1 << 23);
  return i64(shape, v);
}

/// A module holding one function that runs a clone of `fusion`.
OwningOpRef<ModuleOp> wrapFusion(tcc::exec::FusionOp fusion) {
  OpBuilder b(fusion.getContext());
  Location loc = fusion.getLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  auto type = b.getFunctionType(fusion.getInputs().getTypes(),
                                fusion.getResult().getType());
  auto func = func::FuncOp::create(b, loc, "kernel", type);
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToEnd(entry);
  IRMapping map;
  map.map(fusion.getInputs(), entry->getArguments());
  Operation *clone = b.clone(*fusion, map);
  func::ReturnOp::create(b, loc, clone->getResults());
  return module;
}

bool sameValue(DType dtype, const uint8_t *a, const uint8_t *b) {
  if (dtype == DType::F32) {
    float x, y;
    std::memcpy(&x, a, 4);
    std::memcpy(&y, b, 4);
    if (std::isnan(x) && std::isnan(y))
      return true;
  }
  return std::memcmp(a, b, tcc::data::dtypeSize(dtype)) == 0;
}

class CodegenTest : public ::testing::Test {
protected:
  CodegenTest() {
    context.loadDialect<tcc::TccDialect, tcc::exec::ExecDialect,
                        func::FuncDialect>();
  }

  OwningOpRef<ModuleOp> fused() {
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(kChains, &context);
    if (!module)
      return nullptr;
    PassManager pm(&context);
    pm.addPass(tcc::createFuse());
    if (failed(pm.run(*module)) || failed(verify(*module)))
      return nullptr;
    return module;
  }

  MLIRContext context;
};

TEST_F(CodegenTest, BroadcastIndexMath) {
  EXPECT_EQ(codegen::broadcastIndexExpr({4, 8}, {4, 8}), "i");
  EXPECT_EQ(codegen::broadcastIndexExpr({8}, {4, 8}), "i % 8");
  EXPECT_EQ(codegen::broadcastIndexExpr({4, 1}, {4, 8}), "i / 8");
  EXPECT_EQ(codegen::broadcastIndexExpr({}, {4, 8}), "0");
  EXPECT_EQ(codegen::broadcastIndexExpr({1, 1}, {4, 8}), "0");
  EXPECT_EQ(codegen::broadcastIndexExpr({4, 1}, {2, 4, 8}), "i / 8 % 4");
  EXPECT_EQ(codegen::broadcastIndexExpr({2, 1, 8}, {2, 4, 8}),
            "(i / 32) * 8 + i % 8");
  EXPECT_EQ(codegen::broadcastIndexExpr({4, 8}, {2, 4, 8}), "i % 32");
  EXPECT_EQ(codegen::broadcastIndexExpr({3}, {4, 8}), "");
}

TEST_F(CodegenTest, SourceText) {
  OwningOpRef<ModuleOp> module = fused();
  ASSERT_TRUE(module);
  FailureOr<std::string> source = codegen::emitKernelSource(*module);
  ASSERT_TRUE(succeeded(source));
  EXPECT_NE(source->find("#include \"kernels/tcc_kernel.h\""),
            std::string::npos);
  EXPECT_NE(source->find("TCC_KERNEL(fused_0)"), std::string::npos);
  // The row bias, the [4, 1] column and the scalar.
  EXPECT_NE(source->find("[i % 8]"), std::string::npos) << *source;
  EXPECT_NE(source->find("[i / 8]"), std::string::npos) << *source;
  EXPECT_NE(source->find("[0]"), std::string::npos) << *source;
  EXPECT_NE(source->find("tcc_k::gelu_grad_tanh("), std::string::npos);
  EXPECT_NE(source->find("tcc_k::cast<int64_t>("), std::string::npos);
}

TEST_F(CodegenTest, HostKernelsMatchInterpreter) {
  OwningOpRef<ModuleOp> module = fused();
  ASSERT_TRUE(module);
  FailureOr<std::string> source = codegen::emitKernelSource(*module);
  ASSERT_TRUE(succeeded(source));
  std::string so = tempPath("codegen", "kernels.so");
  std::string error;
  ASSERT_TRUE(codegen::compileHostSharedObject(*source, so, error))
      << error << "\n" << *source;
  void *handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_TRUE(handle) << dlerror();

  int kernels = 0;
  module->walk([&](tcc::exec::FusionOp fusion) {
    ++kernels;
    std::string symbol = codegen::kernelSymbol(fusion);
    auto fn = reinterpret_cast<KernelFn>(dlsym(handle, symbol.c_str()));
    ASSERT_TRUE(fn) << symbol;

    std::vector<Array> inputs;
    for (auto [i, input] : llvm::enumerate(fusion.getInputs()))
      inputs.push_back(randomInput(
          llvm::cast<RankedTensorType>(input.getType()), 7 * kernels + i));
    OwningOpRef<ModuleOp> wrapper = wrapFusion(fusion);
    std::vector<Array> want;
    ASSERT_TRUE(tcc::interp::run(
        wrapper->lookupSymbol<func::FuncOp>("kernel"), inputs, want, error))
        << error;
    ASSERT_EQ(want.size(), 1u);

    // Poisoned with NaN (all ones) so a skipped element cannot pass.
    std::vector<uint8_t> out(want[0].bytes.size(), 0xff);
    std::vector<const void *> pointers;
    for (const Array &a : inputs)
      pointers.push_back(a.bytes.data());
    int64_t n = want[0].numElements();
    fn(pointers.data(), out.data(), 0, n / 2);
    fn(pointers.data(), out.data(), n / 2, n);

    size_t size = tcc::data::dtypeSize(want[0].dtype);
    int mismatches = 0;
    for (int64_t e = 0; e < n; ++e)
      if (!sameValue(want[0].dtype, &out[e * size], &want[0].bytes[e * size]))
        ++mismatches;
    EXPECT_EQ(mismatches, 0) << symbol << " differs from the interpreter";
  });
  EXPECT_GE(kernels, 7);
  dlclose(handle);
}

TEST_F(CodegenTest, CudaFatbinCompiles) {
  if (!codegen::cudaCompilerAvailable())
    GTEST_SKIP() << "nvcc not found at configure time; fatbin not tested";
  OwningOpRef<ModuleOp> module = fused();
  ASSERT_TRUE(module);
  FailureOr<std::string> source = codegen::emitKernelSource(*module);
  ASSERT_TRUE(succeeded(source));
  std::string fatbin = tempPath("codegen", "kernels.fatbin");
  std::string error;
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(codegen::compileCudaFatbin(*source, fatbin, error)) << error;
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  std::printf("nvcc fatbin (sm_80, sm_90, compute_90): %.1f s, %zu bytes\n",
              seconds, readFile(fatbin).size());
  EXPECT_GT(readFile(fatbin).size(), 0u);
}

} // namespace
