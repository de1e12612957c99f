// The CUDA variant's 16-byte vector path (TCC_VECTOR_LOOP) of the
// generated exec.fusion kernels: which kernels get one and with which
// width, its results against the host kernels (run on the host through the
// prelude's grid emulation, CodegenTestUtil.h) on the vector module and on
// every fixed-function module, and nvcc's 16-byte global accesses in the
// PTX.
#include "CodegenTestUtil.h"

#include <map>

using namespace mlir;
using namespace testutil;
using namespace codegentest;

namespace {

// The CUDA variant's vector path, run on the host through the prelude's
// grid emulation, computes the host kernels' bits; which kernels get one,
// and with which width.
TEST_F(CodegenTest, VectorPathMatchesScalar) {
  OwningOpRef<ModuleOp> module = fused(kVector);
  ASSERT_TRUE(module);
  std::map<std::string, int64_t> widths;
  module->walk([&](tcc::exec::FusionOp fusion) {
    std::string text;
    llvm::raw_string_ostream os(text);
    fusion.getResult().getType().print(os);
    if (Operation *op = fusion.getStructuredOp())
      text += " " + op->getName().getStringRef().str();
    widths[text] = codegen::vectorWidth(fusion);
  });
  // 16 bytes of the widest buffer read at the output index or written.
  EXPECT_EQ(widths["tensor<97x101xf32>"], 4);
  EXPECT_EQ(widths["tensor<3x7xi1>"], 4);  // f32 inputs, i1 output
  EXPECT_EQ(widths["tensor<32xf32>"], 4);  // through a reshape
  EXPECT_EQ(widths["tensor<3x8xf32> tcc.slice"], 4); // a leading slice
  EXPECT_EQ(widths["tensor<5x9xbf16>"], 8);
  EXPECT_EQ(widths["tensor<5x9xf32>"], 4); // bf16 and f32 inputs
  EXPECT_EQ(widths["tensor<45xf16>"], 8);
  EXPECT_EQ(widths["tensor<7xf64>"], 2);
  EXPECT_EQ(widths["tensor<7xf32>"], 2);   // an f64 input
  EXPECT_EQ(widths["tensor<11xi32>"], 4);
  EXPECT_EQ(widths["tensor<5xi64>"], 2);
  EXPECT_EQ(widths["tensor<19xi1>"], 16);
  EXPECT_EQ(widths["tensor<3xbf16>"], 1);  // fewer elements than a chunk
  EXPECT_EQ(widths["tensor<3xf32> tcc.reduce_sum"], 1);
  EXPECT_EQ(widths["tensor<101x97xf32> tcc.transpose"], 1);

  FailureOr<std::string> source = codegen::emitKernelSource(*module);
  ASSERT_TRUE(succeeded(source));
  // The element function; broadcast operands stay scalar reads inside it.
  EXPECT_CONTAINS(*source, "auto element = [&](int64_t i, float x0) -> float {");
  EXPECT_CONTAINS(*source, "TCC_VECTOR_LOOP(4, element, out, in0);");
  EXPECT_CONTAINS(*source, "TCC_FOR_EACH(i) out[i] = element(i, in0[i]);");
  EXPECT_CONTAINS(*source, "in1[i % 7]");
  EXPECT_CONTAINS(*source, "TCC_VECTOR_LOOP(8, element, out, in0, in1);");
  EXPECT_CONTAINS(*source, "return tcc_k::f32_to_bf16(");

  std::set<int64_t> seen;
  EXPECT_EQ(checkVectorPath(*module, /*specials=*/false, &seen), 15);
  EXPECT_EQ(seen, (std::set<int64_t>{2, 4, 8, 16}));
  EXPECT_EQ(checkVectorPath(*module, /*specials=*/true), 15);
  // The scalar host kernels of this module still match the interpreter.
  EXPECT_EQ(checkAgainstInterpreter(*module, /*specials=*/true), 18);
}

// The fixed-function modules above through the vector path too (layout
// chains with a contiguous residual, half kernels, casts, where).
TEST_F(CodegenTest, VectorPathMatchesScalarOnAllKernelKinds) {
  for (const char *text : {kChains, kStructured, kHalf}) {
    OwningOpRef<ModuleOp> module = fused(text);
    ASSERT_TRUE(module);
    EXPECT_GT(checkVectorPath(*module, /*specials=*/true), 3);
  }
}

// nvcc turns the vector path into 16-byte global accesses: loads through
// the read-only path, stores (PTX of compute_90).
TEST_F(CodegenTest, CudaPtxHasVectorAccesses) {
  if (!codegen::cudaCompilerAvailable())
    GTEST_SKIP() << "nvcc not found at configure time; PTX not tested";
  OwningOpRef<ModuleOp> module = fused(kVector);
  ASSERT_TRUE(module);
  FailureOr<std::string> source = codegen::emitKernelSource(*module);
  ASSERT_TRUE(succeeded(source));
  std::string ptx = tempPath("codegen", "kernels.ptx");
  ASSERT_TRUE(succeeded(codegen::compileCudaPtx(UnknownLoc::get(&context),
                                                *source, "compute_90", ptx)))
      << errors.first();
  std::vector<uint8_t> bytes = readFile(ptx);
  std::string text(bytes.begin(), bytes.end());
  EXPECT_CONTAINS(text, "ld.global.nc.v4.u32");
  EXPECT_CONTAINS(text, "ld.global.nc.v2.u32"); // bf16 read at W = 4
  EXPECT_CONTAINS(text, "st.global.v4.");
  // Lanes stay in registers.
  EXPECT_EQ(text.find("ld.local"), std::string::npos);
  EXPECT_EQ(text.find("st.local"), std::string::npos);
}

} // namespace
