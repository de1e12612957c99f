// Generated exec.fusion kernels against the reference interpreter: functions
// with elementwise chains and with every layout / reduction kernel kind
// (transpose, slice, split, slice_grad, concat, gather, gather_grad,
// reduce_sum/mean/max/min with prologues and epilogues, chains of layout
// ops and reshapes; f32, f64, i32, i64, i1) are fused, their kernel source
// compiled into a host shared object and each kernel run (in three pieces,
// to exercise the begin/end contract) on random inputs into a poisoned
// buffer; every output must match the interpreter running that fusion op bit
// for bit (same formulas in the same order, same libm). NaN results are
// compared as NaN, not by payload. With nvcc present, the same sources must
// also compile into a fatbin. The tiny GPT, MLP and BERT training steps
// (exported by PyTorch, compiled by the tcc driver) must consist of kernels,
// library calls and views only after tcc-fuse-gemm-epilogue and tcc-fuse,
// and their whole kernel source must build. bf16 / f16 kernels (16-bit
// storage, float math, each result rounded once) match the interpreter's
// emulation bit for bit, and the prelude's conversions match
// runtime/data/half.h.
// The fixture and the modules are CodegenTestUtil.h and
// CodegenTestModules.h; the CUDA variant's vector path is tested in
// CodegenVectorTest.cpp.
#include "CodegenTestUtil.h"

#include <map>

#include "kernels/tcc_kernel.h"

#include "llvm/ADT/StringSet.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>

using namespace mlir;
using namespace testutil;
using namespace codegentest;

namespace {

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
  EXPECT_GE(checkAgainstInterpreter(*module, /*specials=*/false), 7);
}

TEST_F(CodegenTest, StructuredKernelsMatchInterpreter) {
  OwningOpRef<ModuleOp> module = fused(kStructured);
  ASSERT_TRUE(module);
  // Every op became a kernel, each kind at least once.
  llvm::StringSet<> kinds;
  module->walk([&](func::FuncOp func) {
    for (Operation &op : func.getBody().front()) {
      if (auto fusion = llvm::dyn_cast<tcc::exec::FusionOp>(op)) {
        if (Operation *structured = fusion.getStructuredOp())
          kinds.insert(structured->getName().getStringRef());
        continue;
      }
      EXPECT_TRUE(llvm::isa<func::ReturnOp>(op))
          << op.getName().getStringRef().str() << " left outside a kernel";
    }
  });
  // The layout chains of @layout_chains: one kernel each.
  int chains = 0;
  module->walk([&](tcc::exec::FusionOp fusion) {
    chains += llvm::any_of(fusion.getBody().front(), [](Operation &op) {
      return llvm::isa<tcc::ReshapeOp>(op);
    });
  });
  EXPECT_EQ(chains, 6);
  for (StringRef kind :
       {"tcc.transpose", "tcc.slice", "tcc.slice_grad", "tcc.concat",
        "tcc.gather", "tcc.gather_grad", "tcc.reduce_sum", "tcc.reduce_mean",
        "tcc.reduce_max", "tcc.reduce_min"})
    EXPECT_TRUE(kinds.contains(kind)) << kind.str() << " never outlined";
  // Plain values, then NaN / infinities / -0 / integers near their limits.
  EXPECT_GE(checkAgainstInterpreter(*module, /*specials=*/false), 60);
  EXPECT_GE(checkAgainstInterpreter(*module, /*specials=*/true), 60);
}

TEST_F(CodegenTest, StructuredSourceText) {
  OwningOpRef<ModuleOp> module = fused(kStructured);
  ASSERT_TRUE(module);
  FailureOr<std::string> source = codegen::emitKernelSource(*module);
  ASSERT_TRUE(succeeded(source));
  // A sum accumulates in double over a loop and rounds once; a transpose of
  // [2, 3, 4, 5] by (0, 2, 1, 3) reads with constant strides.
  EXPECT_NE(source->find("double acc"), std::string::npos) << *source;
  EXPECT_NE(source->find(" + static_cast<double>("), std::string::npos);
  EXPECT_NE(source->find("tcc_k::wrap_add("), std::string::npos);
  EXPECT_NE(source->find("(tcc.transpose)"), std::string::npos);
  EXPECT_NE(source->find("in0[(i / 60) * 60 + (i / 15 % 4) * 5 + (i / 5 % 3) * 20 + i % 5]"),
            std::string::npos)
      << *source;
  // A layout chain is one kernel whose header lists its ops.
  EXPECT_NE(source->find("(tcc.slice, tcc.reshape, tcc.transpose)"),
            std::string::npos);
}

// Column reductions of 256 rows or more get the CUDA block path and its
// launch shape (32 outputs per block); the host loop matches the
// interpreter, and the block path, run by the emulation with a block's
// threads concurrent (its launch shape, 2 and 3 warps, one block, three
// launches, and 48 threads, which takes the one-thread loop), gives the
// host's bits.
TEST_F(CodegenTest, ColumnReductionsSplitRowsOverAWarpBlock) {
  OwningOpRef<ModuleOp> module = fused(kColumn);
  ASSERT_TRUE(module);
  std::map<int64_t, std::pair<int64_t, int64_t>> shapes; // by outputs
  module->walk([&](tcc::exec::FusionOp fusion) {
    codegen::LaunchShape s = codegen::launchShape(fusion);
    shapes[llvm::cast<RankedTensorType>(fusion.getResult().getType()).getNumElements()] = {
        s.outputsPerBlock, s.blockThreads};
  });
  using Shape = std::pair<int64_t, int64_t>;
  EXPECT_EQ(shapes, (std::map<int64_t, Shape>{{40, Shape{32, 1024}},
                                              {33, Shape{32, 1024}},
                                              {9, Shape{32, 1024}},
                                              {8, Shape{0, 0}}}));
  FailureOr<std::string> source = codegen::emitKernelSource(*module);
  ASSERT_TRUE(succeeded(source));
  EXPECT_CONTAINS(*source, "#if TCC_KERNEL_GRID\n  // A column reduction of 300 rows");
  EXPECT_CONTAINS(*source, "A column reduction of 300 rows: a block per 32 "
                           "outputs, its warps splitting the rows.");
  EXPECT_CONTAINS(*source, "TCC_KERNEL_BLOCK(");
  EXPECT_CONTAINS(*source, ", 1024) {");
  EXPECT_CONTAINS(*source, "for (; r + 7 * warps < 320; r += 8 * warps)");
  EXPECT_EQ(source->find("A column reduction of 255 rows"), std::string::npos);
  EXPECT_EQ(checkAgainstInterpreter(*module, /*specials=*/true), 4);
  EXPECT_EQ(checkVectorPath(*module, /*specials=*/false), 0);
  EXPECT_EQ(checkVectorPath(*module, /*specials=*/true), 0);
}

// Row slices: enough that a warp sums at most 64 rows, more (slices of at
// least 256 rows) until the launch has an H100 wave of threads (270,336):
// 8192 x 768 takes 11 slices of 745 rows (24 rows a warp; 24 x 11 blocks
// of 1024 threads, one wave), x 3072 and x 2304 take 4 of 2048 (64 a
// warp). The workspace holds a double per (slice, column of the whole
// tiles) and a 4-byte counter per tile.
TEST_F(CodegenTest, ColumnReductionSlicesFillAWave) {
  OwningOpRef<ModuleOp> module = fused(kColumnGpt2);
  ASSERT_TRUE(module);
  std::map<int64_t, std::pair<int64_t, int64_t>> shapes; // by outputs
  module->walk([&](tcc::exec::FusionOp fusion) {
    codegen::LaunchShape s = codegen::launchShape(fusion);
    EXPECT_EQ(s.outputsPerBlock, 32);
    EXPECT_EQ(s.blockThreads, 1024);
    shapes[llvm::cast<RankedTensorType>(fusion.getResult().getType()).getNumElements()] = {
        s.rowSlices, s.workspaceBytes};
  });
  using Shape = std::pair<int64_t, int64_t>;
  EXPECT_EQ(shapes,
            (std::map<int64_t, Shape>{
                {768, Shape{11, 11 * 24 * 32 * 8 + 24 * 4}},
                {3072, Shape{4, 4 * 96 * 32 * 8 + 96 * 4}},
                {2304, Shape{4, 4 * 72 * 32 * 8 + 72 * 4}}}));
}

// The two-stage block path (slices of rows, the last block of a tile adding
// their sums), run by the emulation: 600 rows in 2 slices, a mean of 1000
// in 3 (the last 332 rows), 2100 bf16 rows in 8 (the last 259; also
// summed to a bf16 result, and 600 f16 rows to an f16 mean: the block path
// rounds the sum as the cast after it would). Every case
// of checkVectorPath (its launch, fewer warps and slices, one block, three
// launches, blocks in shuffled orders, each run twice) gives the host
// kernel's bits, which checkAgainstInterpreter pins to the interpreter's:
// tolerance 0, as the double sums are exact for these data.
TEST_F(CodegenTest, ColumnReductionSlicesMatchTheHost) {
  OwningOpRef<ModuleOp> module = fused(kColumnSlices);
  ASSERT_TRUE(module);
  FailureOr<std::string> source = codegen::emitKernelSource(*module);
  ASSERT_TRUE(succeeded(source));
  EXPECT_CONTAINS(*source, "A column reduction of 2100 rows: a block per 32 "
                           "outputs and slice of rows (8 slices)");
  EXPECT_CONTAINS(*source, "atomicAdd(arrival, 1u)");
  EXPECT_CONTAINS(*source, "out[i] = tcc_k::f32_to_bf16(static_cast<float>(total));");
  EXPECT_CONTAINS(*source, "out[i] = tcc_k::f32_to_f16(static_cast<float>(total / "
                           "static_cast<double>(600)));");
  EXPECT_EQ(checkAgainstInterpreter(*module, /*specials=*/true), 5);
  std::set<int64_t> slices;
  EXPECT_EQ(checkVectorPath(*module, /*specials=*/true, nullptr, &slices), 0);
  EXPECT_EQ(slices, (std::set<int64_t>{2, 3, 8}));
}

// Stores: each reduction's prologue value that the function also returns
// is a result of the reduction's kernel (one kernel each, no separate
// elementwise kernel), written where it is computed, bit for bit the
// interpreter's (host loops) and the host kernel's (the CUDA block paths,
// 2 and 8 slices, the row groups and the one-thread loops under the
// emulation). A bf16 store is rounded where it is computed and the sum
// reads the rounded value. A layout chain under a sum (merged after
// outlining) is stored as the sum reads it.
TEST_F(CodegenTest, ReductionStoresMatchTheInterpreter) {
  OwningOpRef<ModuleOp> module = fused(kStores);
  ASSERT_TRUE(module);
  std::vector<unsigned> stores;
  module->walk([&](tcc::exec::FusionOp fusion) {
    stores.push_back(fusion.getStores().size());
  });
  EXPECT_EQ(stores, (std::vector<unsigned>{1, 1, 1, 2, 1, 1, 1, 1, 1}));
  FailureOr<std::string> source = codegen::emitKernelSource(*module);
  ASSERT_TRUE(succeeded(source));
  EXPECT_CONTAINS(*source, "float *s1 = static_cast<float *>(const_cast<void "
                           "*>(inputs[2]));");
  EXPECT_CONTAINS(*source, "float *s2 = static_cast<float *>(const_cast<void "
                           "*>(inputs[2]));");
  EXPECT_CONTAINS(*source, "uint16_t *s1 = static_cast<uint16_t *>");
  EXPECT_CONTAINS(*source, "= tcc_k::f32_to_bf16(");
  // The gelu_grad kernel's workspace follows its store.
  EXPECT_CONTAINS(*source, "(inputs[3])) : nullptr;");
  // The concat under the last sum is computed in the sum's loops.
  EXPECT_CONTAINS(*source, "(tcc.transpose, tcc.transpose, tcc.transpose, "
                           "tcc.reshape, tcc.reshape, tcc.reshape, "
                           "tcc.concat, tcc.reduce_sum)");
  EXPECT_EQ(checkAgainstInterpreter(*module, /*specials=*/false), 9);
  EXPECT_EQ(checkAgainstInterpreter(*module, /*specials=*/true), 9);
  std::set<int64_t> slices;
  EXPECT_EQ(checkVectorPath(*module, /*specials=*/true, nullptr, &slices), 0);
  EXPECT_EQ(slices, (std::set<int64_t>{1, 2, 8}));
}

// Siblings: the layout chains of each head split are one kernel of three
// results, and the two concats one of two, each result written at every
// output index, bit for bit the interpreter's and, in the emulated CUDA
// variant (a scalar loop), the host's; the two elementwise kernels of x
// stay apart (each keeps its vector path).
TEST_F(CodegenTest, SiblingKernelsMatchTheInterpreter) {
  OwningOpRef<ModuleOp> module = fused(kSiblings);
  ASSERT_TRUE(module);
  std::vector<unsigned> results;
  module->walk([&](tcc::exec::FusionOp fusion) {
    results.push_back(fusion.getNumResults());
  });
  EXPECT_EQ(results, (std::vector<unsigned>{3, 3, 1, 1, 2}));
  FailureOr<std::string> source = codegen::emitKernelSource(*module);
  ASSERT_TRUE(succeeded(source));
  EXPECT_CONTAINS(*source, "uint16_t *s2 = static_cast<uint16_t *>");
  EXPECT_EQ(source->find("A concatenation"), std::string::npos);
  EXPECT_EQ(checkAgainstInterpreter(*module, /*specials=*/false), 5);
  EXPECT_EQ(checkAgainstInterpreter(*module, /*specials=*/true), 5);
  EXPECT_EQ(checkVectorPath(*module, /*specials=*/true), 2);
}

TEST_F(CodegenTest, HalfKernelsMatchInterpreter) {
  OwningOpRef<ModuleOp> module = fused(kHalf);
  ASSERT_TRUE(module);
  FailureOr<std::string> source = codegen::emitKernelSource(*module);
  ASSERT_TRUE(succeeded(source));
  // 16-bit buffers, float math, each half result rounded once.
  EXPECT_NE(source->find("const uint16_t *in0"), std::string::npos) << *source;
  EXPECT_NE(source->find("uint16_t *out"), std::string::npos);
  EXPECT_NE(source->find("tcc_k::bf16_to_f32(in"), std::string::npos);
  EXPECT_NE(source->find("tcc_k::round_bf16("), std::string::npos);
  EXPECT_NE(source->find("tcc_k::round_f16("), std::string::npos);
  EXPECT_NE(source->find("out[i] = tcc_k::f32_to_f16("), std::string::npos);
  EXPECT_NE(source->find("double acc"), std::string::npos);
  EXPECT_GE(checkAgainstInterpreter(*module, /*specials=*/false), 14);
  EXPECT_GE(checkAgainstInterpreter(*module, /*specials=*/true), 14);
}

// The prelude's own copy of the conversions (it must stand alone) agrees
// with runtime/data/half.h on every 16-bit pattern and on a sweep of floats.
TEST_F(CodegenTest, PreludeHalfConversionsMatchRuntime) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    uint16_t b = static_cast<uint16_t>(h);
    uint32_t x = tcc::data::floatBits(tcc::data::bf16ToFloat(b));
    ASSERT_EQ(tcc::data::floatBits(tcc_k::bf16_to_f32(b)), x);
    uint32_t y = tcc::data::floatBits(tcc::data::f16ToFloat(b));
    ASSERT_EQ(tcc::data::floatBits(tcc_k::f16_to_f32(b)), y);
  }
  for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += 997) {
    float f = tcc::data::bitsFloat(static_cast<uint32_t>(u));
    ASSERT_EQ(tcc_k::f32_to_bf16(f), tcc::data::floatToBf16(f)) << u;
    ASSERT_EQ(tcc_k::f32_to_f16(f), tcc::data::floatToF16(f)) << u;
  }
}

// The prelude's float tanh of the tanh-GELU (a rational approximation, no
// libm call) against tanh in double on a sweep of floats: relative error
// at most 3.9e-7 (libm's tanhf: 1.7e-7 on the same sweep), and the special
// values exact.
TEST_F(CodegenTest, PreludeGeluTanhIsAccurate) {
  double worst = 0, worstLibm = 0;
  for (uint32_t u = 0; u < 0x41300000u; u += 997) { // [0, 11)
    for (float x : {tcc::data::bitsFloat(u), -tcc::data::bitsFloat(u)}) {
      double t = std::tanh(double(x));
      if (t == 0)
        continue;
      worst =
          std::max(worst, std::fabs(tcc_k::gelu_tanh_of(x) - t) / std::fabs(t));
      worstLibm =
          std::max(worstLibm, std::fabs(std::tanh(x) - t) / std::fabs(t));
    }
  }
  EXPECT_LE(worst, 3.9e-7);
  EXPECT_GT(worst, worstLibm); // the sweep reaches the approximation's error
  EXPECT_LE(worstLibm, 1.7e-7);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(tcc_k::gelu_tanh_of(inf), 1.0f);
  EXPECT_EQ(tcc_k::gelu_tanh_of(-inf), -1.0f);
  EXPECT_EQ(tcc_k::gelu_tanh_of(20.0f), 1.0f);
  EXPECT_TRUE(std::signbit(tcc_k::gelu_tanh_of(-0.0f)));
  EXPECT_TRUE(std::isnan(tcc_k::gelu_tanh_of(std::nanf(""))));
  EXPECT_EQ(tcc_k::gelu_tanh_of(1e-5f), 1e-5f);
}

TEST_F(CodegenTest, CudaFatbinCompiles) {
  if (!codegen::cudaCompilerAvailable())
    GTEST_SKIP() << "nvcc not found at configure time; fatbin not tested";
  for (const char *text :
       {kChains, kStructured, kHalf, kVector, kColumn, kColumnSlices}) {
    OwningOpRef<ModuleOp> module = fused(text);
    ASSERT_TRUE(module);
    FailureOr<codegen::KernelSource> source = codegen::emitKernels(*module);
    ASSERT_TRUE(succeeded(source));
    std::string fatbin = tempPath("codegen", "kernels.fatbin");
    auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(
        succeeded(codegen::buildKernels(UnknownLoc::get(&context), *source, "",
                                        fatbin, codegen::KernelBuildOptions())))
        << errors.first() << "\n"
        << source->text();
    double seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
    std::printf("nvcc fatbin (sm_80, sm_90, compute_90): %.1f s, %zu bytes\n",
                seconds, readFile(fatbin).size());
    EXPECT_GT(readFile(fatbin).size(), 0u);
  }
}

struct ModelCase {
  const char *model, *loss;
};

class ModelStepTest : public CodegenTest,
                      public ::testing::WithParamInterface<ModelCase> {};

// The tiny models of test/models, exported by PyTorch and compiled by the
// tcc driver into an AdamW step with gradient clipping (so the step also
// holds the gradient-norm reductions): after tcc-fuse-gemm-epilogue and
// tcc-fuse (the artifact's order) every op of every function is a generated
// kernel, a library call or a non-launching view, the module's whole kernel
// source builds for the host and each kernel matches the interpreter on
// random inputs.
TEST_P(ModelStepTest, FusedStepIsKernelsAndLibraryCalls) {
  ModelCase param = GetParam();
  if (!haveDriver())
    GTEST_SKIP() << binDir() << "/tcc is not built";
  std::string step, error;
  ASSERT_TRUE(buildModelStep("codegen", param.model,
                             "--loss '" + std::string(param.loss) +
                                 "' --optimizer adamw:lr=1e-3 --grad-clip 1.0",
                             step, error))
      << error;
  std::vector<uint8_t> text = readFile(step);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(
      std::string(text.begin(), text.end()), &context);
  ASSERT_TRUE(module);
  // The artifact's order: bias adds into their GEMMs, then kernels.
  PassManager pm(&context);
  pm.addNestedPass<func::FuncOp>(tcc::createFuseGemmEpilogue());
  pm.addPass(tcc::createFuse());
  ASSERT_TRUE(succeeded(pm.run(*module)));
  ASSERT_TRUE(succeeded(verify(*module)));

  int kernels = 0, structured = 0;
  for (auto func : module->getOps<func::FuncOp>())
    for (Operation &op : func.getBody().front()) {
      if (auto fusion = llvm::dyn_cast<tcc::exec::FusionOp>(op)) {
        ++kernels;
        structured += fusion.getStructuredOp() != nullptr;
        continue;
      }
      bool allowed = tcc::exec::isLibraryOp(&op) ||
                     op.hasTrait<tcc::OpClass::View>() ||
                     llvm::isa<tcc::ConstantOp, tcc::GetParamOp,
                               func::ReturnOp>(op);
      EXPECT_TRUE(allowed)
          << param.model << " @" << func.getSymName().str() << ": "
          << op.getName().getStringRef().str() << " is neither a kernel nor a "
          << "library call";
    }
  EXPECT_GT(kernels, 10);
  EXPECT_GT(structured, 5);

  // The whole source builds, and every kernel matches the interpreter.
  EXPECT_EQ(checkAgainstInterpreter(*module, /*specials=*/false), kernels);

  // The CUDA variant (emulated on the host) matches the host kernels, its
  // vector path included.
  int vectorised = checkVectorPath(*module, /*specials=*/true);
  std::printf("%s: %d of %d kernels with a vector path\n", param.model,
              vectorised, kernels);
  EXPECT_GT(vectorised, kernels / 4);
}

INSTANTIATE_TEST_SUITE_P(
    Codegen, ModelStepTest,
    ::testing::Values(ModelCase{"gpt", "cross_entropy(logits,labels)"},
                      ModelCase{"mlp", "mse(y,target)"},
                      ModelCase{"bert", "cross_entropy(logits,labels)"}),
    [](const ::testing::TestParamInfo<ModelCase> &info) {
      return std::string(info.param.model);
    });

} // namespace
