// Row reductions of the generated exec.fusion kernels (a reduction over the
// innermost dims, RowReduction.cpp): their CUDA launch shapes by row
// length, the host loop against the interpreter, and the device's group
// path (a warp or block per row, a fixed tree) run on the host through the
// prelude's CUDA thread emulation against the host kernel, bit for bit,
// under several block shapes and twice.
#include "CodegenTestUtil.h"

#include <map>

using namespace mlir;
using namespace testutil;
using namespace codegentest;

namespace {

// Every reduction kind over the innermost dims, f32 / bf16 / f64 / i32:
// rows shorter than a warp (the one-thread loop), a warp per row (rows not
// a multiple of 32), a block of 256 (not a multiple of the block), a block
// of 1024 (50,304 logits), a full reduction (8192 -> 1, eval accuracy's
// count), a reduction with an epilogue, and a max and a min over rows of
// +0 and -0 (x * 0), where the in-order loop's first zero is the result.
constexpr const char *kRows = R"mlir(
  func.func @rows(%a: tensor<6x20xf32>, %b: tensor<5x100xf32>, %c: tensor<3x50304xf32>,
                  %d: tensor<3x50304xbf16>, %e: tensor<4x3000xf32>, %f: tensor<2x7x1000xi32>,
                  %g: tensor<4x6x3xf64>, %p: tensor<8x1024xf32>, %q: tensor<8x1024xf32>,
                  %l: tensor<8x1024xi64>, %h: tensor<9x40xbf16>, %hb: tensor<9xbf16>,
                  %zb: tensor<7x100xf32>, %ze: tensor<2x5000xf32>)
      -> (tensor<6xf32>, tensor<5xf32>, tensor<3xf32>, tensor<3xbf16>, tensor<4xf32>,
          tensor<2xi32>, tensor<f64>, tensor<f32>, tensor<9xbf16>,
          tensor<7xf32>, tensor<2xf32>) {
    %0 = tcc.reduce_sum %a {axes = array<i64: 1>} : (tensor<6x20xf32>) -> tensor<6xf32>
    %1 = tcc.reduce_max %b {axes = array<i64: 1>} : (tensor<5x100xf32>) -> tensor<5xf32>
    %2 = tcc.reduce_max %c {axes = array<i64: 1>} : (tensor<3x50304xf32>) -> tensor<3xf32>
    %3 = tcc.reduce_mean %d {axes = array<i64: 1>} : (tensor<3x50304xbf16>) -> tensor<3xbf16>
    %4 = tcc.reduce_min %e {axes = array<i64: 1>} : (tensor<4x3000xf32>) -> tensor<4xf32>
    %5 = tcc.reduce_sum %f {axes = array<i64: 1, 2>} : (tensor<2x7x1000xi32>) -> tensor<2xi32>
    %6 = tcc.reduce_min %g {axes = array<i64: 0, 1, 2>} : (tensor<4x6x3xf64>) -> tensor<f64>
    %ge = tcc.cmp ge, %p, %q : (tensor<8x1024xf32>, tensor<8x1024xf32>) -> tensor<8x1024xi1>
    %ig = tcc.constant dense<-100> : tensor<i64>
    %ne = tcc.cmp ne, %l, %ig : (tensor<8x1024xi64>, tensor<i64>) -> tensor<8x1024xi1>
    %ok = tcc.and %ge, %ne : (tensor<8x1024xi1>, tensor<8x1024xi1>) -> tensor<8x1024xi1>
    %one = tcc.cast %ok : (tensor<8x1024xi1>) -> tensor<8x1024xf32>
    %7 = tcc.reduce_sum %one {axes = array<i64: 0, 1>} : (tensor<8x1024xf32>) -> tensor<f32>
    %hm = tcc.reduce_max %h {axes = array<i64: 1>} : (tensor<9x40xbf16>) -> tensor<9xbf16>
    %hs = tcc.sqrt %hm : (tensor<9xbf16>) -> tensor<9xbf16>
    %8 = tcc.add %hs, %hb : (tensor<9xbf16>, tensor<9xbf16>) -> tensor<9xbf16>
    %z = tcc.constant dense<0.0> : tensor<f32>
    %zbz = tcc.mul %zb, %z : (tensor<7x100xf32>, tensor<f32>) -> tensor<7x100xf32>
    %9 = tcc.reduce_max %zbz {axes = array<i64: 1>} : (tensor<7x100xf32>) -> tensor<7xf32>
    %zez = tcc.mul %ze, %z : (tensor<2x5000xf32>, tensor<f32>) -> tensor<2x5000xf32>
    %10 = tcc.reduce_min %zez {axes = array<i64: 1>} : (tensor<2x5000xf32>) -> tensor<2xf32>
    return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10 : tensor<6xf32>, tensor<5xf32>, tensor<3xf32>,
        tensor<3xbf16>, tensor<4xf32>, tensor<2xi32>, tensor<f64>, tensor<f32>, tensor<9xbf16>,
        tensor<7xf32>, tensor<2xf32>
  }
)mlir";

/// eval_step's lookup of the label's logit for accuracy (TrainLoss.cpp's
/// buildCorrectCount) over `classes` classes: the sum over the classes of
/// where(class id == label, logit, 0) (the test draws the labels in
/// [-classes, classes), indexRanges: half the rows find theirs).
std::string accuracyModule(int64_t classes) {
  std::string ids;
  for (int64_t c = 0; c < classes; ++c)
    ids += (c ? ", " : "") + std::to_string(c);
  std::string n = std::to_string(classes);
  std::string x = "tensor<2x3x" + n + "xf32>";
  return R"mlir(
  func.func @pick(%x: )mlir" + x + R"mlir(, %lab: tensor<2x3xi64>) -> tensor<2x3xf32> {
    %ids = tcc.constant dense<[)mlir" + ids + "]> : tensor<" + n + R"mlir(xi64>
    %col = tcc.reshape %lab : (tensor<2x3xi64>) -> tensor<2x3x1xi64>
    %hot = tcc.cmp eq, %ids, %col : (tensor<)mlir" + n + R"mlir(xi64>, tensor<2x3x1xi64>) -> tensor<2x3x)mlir" + n + R"mlir(xi1>
    %zero = tcc.constant dense<0.0> : tensor<f32>
    %w = tcc.where %hot, %x, %zero : (tensor<2x3x)mlir" + n + "xi1>, " + x + R"mlir(, tensor<f32>) -> )mlir" + x + R"mlir(
    %s = tcc.reduce_sum %w {axes = array<i64: 2>} : ()mlir" + x + R"mlir() -> tensor<2x3xf32>
    return %s : tensor<2x3xf32>
  }
)mlir";
}

/// Each fusion's launch shape, by its result type.
std::map<std::string, std::pair<int64_t, int64_t>> shapes(ModuleOp module) {
  std::map<std::string, std::pair<int64_t, int64_t>> out;
  module->walk([&](tcc::exec::FusionOp fusion) {
    std::string text;
    llvm::raw_string_ostream os(text);
    fusion.getResult().getType().print(os);
    codegen::LaunchShape s = codegen::launchShape(fusion);
    out[text] = {s.outputsPerBlock, s.blockThreads};
  });
  return out;
}

using Shape = std::pair<int64_t, int64_t>;

// A warp per row below 2048 elements (8 rows a block of 256), a block of
// 256 below 16,384, a block of 1024 beyond; rows under 32 elements keep
// one thread per output. The host loops match the interpreter (NaN,
// infinities, -0 included); the group path gives the host kernels' bits
// as launched, with 2 and 3 warps, with 48 threads (6 a row for a warp
// path), in one block (grid-stride) and in three launches.
TEST_F(CodegenTest, RowReductionsSpreadRowsOverAGroup) {
  OwningOpRef<ModuleOp> module = fused(kRows);
  ASSERT_TRUE(module);
  EXPECT_EQ(shapes(*module),
            (std::map<std::string, Shape>{{"tensor<6xf32>", Shape{0, 0}},
                                          {"tensor<5xf32>", Shape{8, 256}},
                                          {"tensor<3xf32>", Shape{1, 1024}},
                                          {"tensor<3xbf16>", Shape{1, 1024}},
                                          {"tensor<4xf32>", Shape{1, 256}},
                                          {"tensor<2xi32>", Shape{1, 256}},
                                          {"tensor<f64>", Shape{8, 256}},
                                          {"tensor<f32>", Shape{1, 256}},
                                          {"tensor<9xbf16>", Shape{8, 256}},
                                          {"tensor<7xf32>", Shape{8, 256}},
                                          {"tensor<2xf32>", Shape{1, 256}}}));
  FailureOr<std::string> source = codegen::emitKernelSource(*module);
  ASSERT_TRUE(succeeded(source));
  EXPECT_CONTAINS(*source, "// A row reduction of 50304 elements: a block per "
                           "row, partials combined in a fixed tree.");
  EXPECT_CONTAINS(*source, "// A row reduction of 100 elements: a warp per row");
  EXPECT_CONTAINS(*source, "if (blockDim.x <= 256 && blockDim.x >= 8 && "
                           "blockDim.x % 8 == 0) {\n    __shared__ float part[256];\n"
                           "    __shared__ int64_t part_at[256];");
  EXPECT_CONTAINS(*source, "tcc_k::pick_max(part[t], part_at[t], part[t + s], "
                           "part_at[t + s]);");
  EXPECT_CONTAINS(*source, "tcc_k::pick_min(acc, at, ");
  EXPECT_CONTAINS(*source, "part[t] = tcc_k::wrap_add(part[t], int64_t(part[t + s]));");
  EXPECT_CONTAINS(*source, "TCC_KERNEL_BLOCK(");
  EXPECT_EQ(source->find("A row reduction of 20 elements"), std::string::npos);
  EXPECT_EQ(checkAgainstInterpreter(*module, /*specials=*/false), 11);
  EXPECT_EQ(checkAgainstInterpreter(*module, /*specials=*/true), 11);
  EXPECT_EQ(checkVectorPath(*module, /*specials=*/false), 0);
  EXPECT_EQ(checkVectorPath(*module, /*specials=*/true), 0);
}

// nvcc compiles the group paths (sm_80, sm_90; shared memory, barriers,
// pick_max / pick_min in float and double).
TEST_F(CodegenTest, RowReductionsCompileWithNvcc) {
  if (!codegen::cudaCompilerAvailable())
    GTEST_SKIP() << "nvcc not found at configure time; fatbin not tested";
  OwningOpRef<ModuleOp> module = fused(kRows);
  ASSERT_TRUE(module);
  FailureOr<codegen::KernelSource> source = codegen::emitKernels(*module);
  ASSERT_TRUE(succeeded(source));
  std::string fatbin = tempPath("codegen", "rows.fatbin");
  ASSERT_TRUE(succeeded(codegen::buildKernels(UnknownLoc::get(&context),
                                              *source, "", fatbin,
                                              codegen::KernelBuildOptions())))
      << errors.first() << "\n"
      << source->text();
  EXPECT_GT(readFile(fatbin).size(), 0u);
}

// The accuracy's label lookup over GPT-2's 50,304 classes (a block per row)
// and over 1000 (a warp per row), in the kernel the fusion pass makes of it.
TEST_F(CodegenTest, RowReductionOfTheAccuracyLookup) {
  for (int64_t classes : {1000, 50304}) {
    std::string text = accuracyModule(classes);
    OwningOpRef<ModuleOp> module = fused(text.c_str());
    ASSERT_TRUE(module);
    EXPECT_EQ(shapes(*module),
              (std::map<std::string, Shape>{
                  {"tensor<2x3xf32>",
                   classes == 1000 ? Shape{8, 256} : Shape{1, 1024}}}));
    EXPECT_EQ(checkAgainstInterpreter(*module, /*specials=*/false), 1);
    EXPECT_EQ(checkVectorPath(*module, /*specials=*/false), 0);
    EXPECT_EQ(checkVectorPath(*module, /*specials=*/true), 0);
  }
}

// Sums over widely ranged data (2^60 and its negation between values of
// 2^-20 to 2^20), where the group path's order (lanes, then the tree)
// rounds differently from the host's in-order double sum: two runs of the same launch give the
// same bits, and every row is within the order's error bound of the
// interpreter, 2 (n - 1) 2^-53 sum|x| in double plus one f32 rounding.
TEST_F(CodegenTest, RowSumsAreDeterministicAndWithinTheOrderBound) {
  OwningOpRef<ModuleOp> module = fused(R"mlir(
    func.func @sum(%x: tensor<3x20000xf32>) -> tensor<3xf32> {
      %0 = tcc.reduce_sum %x {axes = array<i64: 1>} : (tensor<3x20000xf32>) -> tensor<3xf32>
      return %0 : tensor<3xf32>
    })mlir");
  ASSERT_TRUE(module);
  tcc::exec::FusionOp fusion;
  module->walk([&](tcc::exec::FusionOp f) { fusion = f; });
  codegen::LaunchShape shape = codegen::launchShape(fusion);
  ASSERT_EQ(shape.outputsPerBlock, 1);
  ASSERT_EQ(shape.blockThreads, 1024);
  const int64_t rows = 3, n = 20000;
  std::vector<float> x(rows * n);
  std::vector<double> magnitude(rows, 0.0);
  uint32_t seed = 12345;
  for (int64_t e = 0; e < rows * n; ++e) {
    seed = seed * 1664525u + 1013904223u;
    float m = float((seed >> 12) % 1000 + 1) / 1000.0f;
    // +L, -L, small: the in-order sum loses its low bits (below L's
    // double ulp, 2^8) each time it adds L, a lane loses others.
    if (e % n % 3 == 0)
      x[e] = std::ldexp(m, 60);
    else if (e % n % 3 == 1)
      x[e] = -x[e - 1];
    else
      x[e] = std::ldexp((seed & 1) ? -m : m, int(seed >> 8) % 41 - 20);
    magnitude[e / n] += std::fabs(double(x[e]));
  }
  std::vector<Array> want;
  std::string error;
  OwningOpRef<ModuleOp> wrapper = wrapFusion(fusion);
  ASSERT_TRUE(tcc::interp::run(wrapper->lookupSymbol<func::FuncOp>("kernel"),
                               {makeArray("", DType::F32, {rows, n}, x)}, want,
                               error))
      << error;
  FailureOr<std::string> source = codegen::emitKernelSource(*module);
  ASSERT_TRUE(succeeded(source));
  EmulatedCuda cuda = emulated(*source);
  ASSERT_TRUE(cuda.handle);
  auto fn = reinterpret_cast<KernelFn>(
      dlsym(cuda.handle, codegen::kernelSymbol(fusion).c_str()));
  ASSERT_TRUE(fn);
  const std::vector<const void *> inputs = {x.data()};
  int differ = 0;
  for (unsigned threads : {1024u, 96u}) {
    std::vector<float> first(rows, -1.0f), second(rows, -2.0f);
    cuda.launchBlocks(fn, inputs, nullptr, first.data(), 0, rows, 1, threads,
                      132 * 32);
    cuda.launchBlocks(fn, inputs, nullptr, second.data(), 0, rows, 1, threads,
                      132 * 32);
    for (int64_t r = 0; r < rows; ++r) {
      float expected;
      std::memcpy(&expected, &want[0].bytes[r * 4], 4);
      EXPECT_EQ(std::memcmp(&first[r], &second[r], 4), 0)
          << threads << " threads, row " << r << ": " << first[r] << " then "
          << second[r];
      double bound = 2.0 * double(n - 1) * std::ldexp(1.0, -53) * magnitude[r] +
                     std::ldexp(std::fabs(double(expected)), -23);
      EXPECT_LE(std::fabs(double(first[r]) - double(expected)), bound)
          << threads << " threads, row " << r;
      differ += std::memcmp(&first[r], &expected, 4) != 0;
    }
  }
  // The data is order-sensitive: the bound, not bit identity, is the claim.
  EXPECT_GT(differ, 0);
  dlclose(cuda.handle);
}

} // namespace
