// Convolution on cuDNN (kernels/cuda/cudnn_conv.h) against the CPU kernels
// (tested against the interpreter in CpuKernelsTest) and tcc's own CUDA
// kernels (conv.cu), forward, input, weight and bias gradients, on shapes
// covering stride, symmetric and expressible asymmetric padding, dilation,
// groups (depthwise too) and 1-D (H = 1); run twice, the same bits.
// Tolerance 1e-5 (expectClose: scaled by the tensor's largest value): the
// plans run in full fp32 (CUDNN_FMA_MATH), in another summation order.
// Without a GPU the tests print "no CUDA device: skipped"; without a
// loadable cuDNN 9 they print why and skip (set TCC_CUDNN_LIBRARY).
// The host side at the end (which convs cuDNN can express, the loader, the
// profile's note) needs no GPU and runs everywhere.
#include "GpuTestUtil.h"

#include "exec/cuda_calls.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cuda/cudnn_conv.h"
#include "kernels/cuda/window_kernels.h"

namespace tcc::gputest {
namespace {

namespace cu = tcc::cuda;

class CudnnConv : public GpuTest {
protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped())
      return;
    const cu::CudnnLibrary &lib = cu::cudnnLibrary();
    if (!lib.loaded) {
      std::printf("cuDNN not loaded (%s): skipped\n", lib.reason.c_str());
      GTEST_SKIP() << lib.reason;
    }
    std::string error;
    context = cu::CudnnContext::create(nullptr, &error);
    ASSERT_TRUE(context) << error;
  }
  std::unique_ptr<cu::CudnnContext> context;
};

struct Case {
  const char *name;
  kernels::WindowShape s;
};

kernels::WindowShape shape(int64_t n, int64_t c, int64_t h, int64_t w,
                           int64_t oc, int64_t kh, int64_t kw, int64_t sh,
                           int64_t sw, int64_t pt, int64_t pl, int64_t pb,
                           int64_t pr, int64_t dh, int64_t dw, int64_t group) {
  kernels::WindowShape s;
  s.n = n, s.c = c, s.h = h, s.w = w, s.oc = oc, s.kh = kh, s.kw = kw;
  s.sh = sh, s.sw = sw, s.padTop = pt, s.padLeft = pl, s.padBottom = pb;
  s.padRight = pr, s.dh = dh, s.dw = dw, s.group = group;
  s.oh = (h + pt + pb - (kh - 1) * dh - 1) / sh + 1;
  s.ow = (w + pl + pr - (kw - 1) * dw - 1) / sw + 1;
  return s;
}

const Case kCases[] = {
    {"3x3 pad 1", shape(2, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1)},
    {"stride 2, 7x7 pad 3 (a ResNet stem)",
     shape(2, 3, 16, 16, 8, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 1)},
    {"dilation 2, rectangular kernel",
     shape(1, 4, 11, 9, 6, 3, 2, 1, 1, 2, 1, 2, 1, 2, 2, 1)},
    {"groups 2, stride (2, 1)",
     shape(2, 4, 9, 7, 6, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 2)},
    {"depthwise", shape(2, 8, 10, 10, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 8)},
    {"1-D (H = 1), stride 2, dilation 3",
     shape(3, 5, 1, 40, 7, 1, 4, 1, 2, 0, 3, 0, 3, 1, 3, 1)},
    // SAME-style padding (top 1, bottom 0 with stride 2 on an even size):
    // cuDNN's symmetric pad 1 gives the same 3 rows.
    {"asymmetric pads cuDNN expresses",
     shape(2, 3, 6, 6, 4, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1, 1)},
};

class CudnnConvCases : public CudnnConv,
                       public ::testing::WithParamInterface<Case> {};

TEST_P(CudnnConvCases, MatchesCpuAndOwnKernelsBitStable) {
  const kernels::WindowShape s = GetParam().s;
  cu::CudnnConvDims dims;
  std::string why;
  ASSERT_TRUE(cu::cudnnConvDims(s, dims, why)) << why;
  std::string error;
  auto plan = cu::CudnnConvPlan::create(*context, dims, /*backward=*/false,
                                        /*allowTF32=*/false, 32u << 20,
                                        &error);
  ASSERT_TRUE(plan) << error;
  auto grad = cu::CudnnConvPlan::create(*context, dims, /*backward=*/true,
                                        /*allowTF32=*/false, 32u << 20,
                                        &error);
  ASSERT_TRUE(grad) << error;
  size_t nx = size_t(s.n * s.c * s.h * s.w),
         nw = size_t(s.oc * (s.c / s.group) * s.kh * s.kw),
         ny = size_t(s.n * s.oc * s.oh * s.ow), nb = size_t(s.oc);
  std::vector<float> x = randomNormal(nx, 3), w = randomNormal(nw, 5),
                     b = randomNormal(nb, 7), gy = randomNormal(ny, 11);
  std::vector<float> y(ny), dx(nx), dw(nw), db(nb);
  cpu::conv2d_fwd(s, x.data(), w.data(), b.data(), y.data());
  cpu::conv2d_bwd(s, x.data(), w.data(), gy.data(), dx.data(), dw.data(),
                  db.data());
  DevBuf<float> dX(x), dW(w), dB(b), dGy(gy), dY(ny), dDx(nx), dDw(nw),
      dDb(nb);
  DevBuf<char> work(
      std::max({plan->workspaceBytes(), grad->workspaceBytes(), size_t(1)}));
  struct Results {
    std::vector<float> y, dx, dw, db;
  };
  auto run = [&](bool cudnn) {
    dY.poison(), dDx.poison(), dDw.poison(), dDb.poison();
    if (cudnn) {
      checkStatus(plan->forward(dX.get(), dW.get(), dB.get(), dY.get(),
                                work.get()),
                  "cuDNN forward");
      checkStatus(grad->backward(dX.get(), dW.get(), dGy.get(), dDx.get(),
                                 dDw.get(), work.get()),
                  "cuDNN backward");
      checkStatus(cu::conv2d_bwd(s, nullptr, nullptr, dGy.get(), nullptr,
                                 nullptr, dDb.get(), nullptr),
                  "conv2d_bwd bias");
    } else {
      checkStatus(
          cu::conv2d_fwd(s, dX.get(), dW.get(), dB.get(), dY.get(), nullptr),
          "conv2d_fwd");
      checkStatus(cu::conv2d_bwd(s, dX.get(), dW.get(), dGy.get(), dDx.get(),
                                 dDw.get(), dDb.get(), nullptr),
                  "conv2d_bwd");
    }
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    return Results{dY.download(), dDx.download(), dDw.download(),
                   dDb.download()};
  };
  auto widened = [](const std::vector<float> &v) {
    return std::vector<double>(v.begin(), v.end());
  };
  Results got = run(true), own = run(false);
  expectClose(got.y, widened(y), 1e-5, "cuDNN y vs cpu");
  expectClose(got.dx, widened(dx), 1e-5, "cuDNN dx vs cpu");
  expectClose(got.dw, widened(dw), 1e-5, "cuDNN dw vs cpu");
  expectClose(got.db, widened(db), 1e-5, "cuDNN db vs cpu");
  expectClose(got.y, widened(own.y), 1e-5, "cuDNN y vs own");
  expectClose(got.dx, widened(own.dx), 1e-5, "cuDNN dx vs own");
  expectClose(got.dw, widened(own.dw), 1e-5, "cuDNN dw vs own");
  Results again = run(true);
  expectBitEqual(got.y, again.y, "cuDNN y second run");
  expectBitEqual(got.dx, again.dx, "cuDNN dx second run");
  expectBitEqual(got.dw, again.dw, "cuDNN dw second run");
  expectBitEqual(got.db, again.db, "cuDNN db second run");
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudnnConvCases, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case> &info) {
                           return "case" + std::to_string(info.index);
                         });

// A plan made twice for the same shape picks the same algorithms: two
// plans give the same bits (the heuristic, not timing, chooses).
TEST_F(CudnnConv, TwoPlansSameBits) {
  kernels::WindowShape s = kCases[1].s;
  cu::CudnnConvDims dims;
  std::string why, error;
  ASSERT_TRUE(cu::cudnnConvDims(s, dims, why)) << why;
  std::unique_ptr<cu::CudnnConvPlan> plans[2][2]; // [copy][backward]
  for (auto &copy : plans)
    for (int backward = 0; backward < 2; ++backward) {
      copy[backward] = cu::CudnnConvPlan::create(*context, dims, backward,
                                                 false, 32u << 20, &error);
      ASSERT_TRUE(copy[backward]) << error;
    }
  size_t nx = size_t(s.n * s.c * s.h * s.w), nw = size_t(s.oc * s.c * 49),
         ny = size_t(s.n * s.oc * s.oh * s.ow);
  DevBuf<float> dX(randomNormal(nx, 1)), dW(randomNormal(nw, 2)),
      dGy(randomNormal(ny, 4)), dY(ny), dDw(nw);
  size_t bytes = 1;
  for (auto &copy : plans)
    for (auto &p : copy)
      bytes = std::max(bytes, p->workspaceBytes());
  DevBuf<char> work(bytes);
  std::vector<std::vector<float>> ys, dws;
  for (auto &copy : plans) {
    dY.poison(), dDw.poison();
    checkStatus(copy[0]->forward(dX.get(), dW.get(), nullptr, dY.get(),
                                 work.get()),
                "forward");
    checkStatus(copy[1]->backward(dX.get(), dW.get(), dGy.get(), nullptr,
                                  dDw.get(), work.get()),
                "backward");
    ys.push_back(dY.download());
    dws.push_back(dDw.download());
  }
  expectBitEqual(ys[0], ys[1], "y of two plans");
  expectBitEqual(dws[0], dws[1], "dw of two plans");
}

//===----------------------------------------------------------------------===//
// Host side, no GPU
//===----------------------------------------------------------------------===//

TEST(CudnnConvDims, SymmetricPadsAndSizes) {
  cu::CudnnConvDims d;
  std::string why;
  ASSERT_TRUE(cu::cudnnConvDims(kCases[3].s, d, why)) << why;
  // groups 2, stride (2, 1): [2, 4, 9, 7] -> [2, 6, 5, 7].
  EXPECT_EQ(d.n, 2);
  EXPECT_EQ(d.c, 4);
  EXPECT_EQ(d.h, 9);
  EXPECT_EQ(d.w, 7);
  EXPECT_EQ(d.oc, 6);
  EXPECT_EQ(d.oh, 5);
  EXPECT_EQ(d.ow, 7);
  EXPECT_EQ(d.padH, 1);
  EXPECT_EQ(d.padW, 1);
  EXPECT_EQ(d.sh, 2);
  EXPECT_EQ(d.sw, 1);
  EXPECT_EQ(d.group, 2);
  ASSERT_TRUE(cu::cudnnConvDims(kCases[2].s, d, why)) << why;
  EXPECT_EQ(d.kh, 3);
  EXPECT_EQ(d.kw, 2);
  EXPECT_EQ(d.dh, 2);
  EXPECT_EQ(d.dw, 2);
  EXPECT_EQ(d.padH, 2);
  EXPECT_EQ(d.padW, 1);
}

TEST(CudnnConvDims, AsymmetricPadsOnlyWhenTheOutputSizeAgrees) {
  cu::CudnnConvDims d;
  std::string why;
  // Top 1, bottom 0 on 6 rows, 3 taps, stride 2: 3 rows either way.
  ASSERT_TRUE(cu::cudnnConvDims(kCases[6].s, d, why)) << why;
  EXPECT_EQ(d.oh, 3);
  EXPECT_EQ(d.padH, 1);
  EXPECT_EQ(d.padW, 1);
  // The same on 5 rows: 2 rows, but cuDNN's pad 1 on both sides gives 3.
  kernels::WindowShape s = shape(1, 1, 5, 5, 1, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1, 1);
  EXPECT_EQ(s.oh, 2);
  EXPECT_FALSE(cu::cudnnConvDims(s, d, why));
  EXPECT_EQ(why, "asymmetric padding (1, 1, 0, 0) whose extra rows or "
                 "columns change the output size");
  // TensorFlow's SAME on 8 with stride 2: top 0, bottom 1 gives 4 rows,
  // cuDNN's pad 0 on both sides 3.
  s = shape(1, 1, 8, 8, 1, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1, 1);
  EXPECT_EQ(s.oh, 4);
  EXPECT_FALSE(cu::cudnnConvDims(s, d, why));
  EXPECT_EQ(why, "asymmetric padding (0, 0, 1, 1) whose extra rows or "
                 "columns change the output size");
}

TEST(CudnnConvDims, EmptyAndOversizedTensorsStayOnTheOwnKernels) {
  cu::CudnnConvDims d;
  std::string why;
  kernels::WindowShape s = kCases[0].s;
  s.n = 0;
  EXPECT_FALSE(cu::cudnnConvDims(s, d, why));
  EXPECT_EQ(why, "an empty tensor");
  s = shape(1, 1, 65536, 32768, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1);
  EXPECT_FALSE(cu::cudnnConvDims(s, d, why)); // 2^31 elements
  EXPECT_EQ(why, "a tensor of more than 2^31 - 1 elements");
}

TEST(CudnnLibrary, VersionAndNames) {
  EXPECT_EQ(cu::cudnnVersionString(90100), "9.1.0");
  EXPECT_EQ(cu::cudnnVersionString(91900), "9.19.0");
  cu::CudnnLibrary lib;
  lib.loaded = true;
  lib.version = 90803;
  EXPECT_EQ(cu::convLibraryName(lib), "cuDNN 9.8.3");
  lib.loaded = false;
  lib.reason = "TCC_CUDNN=0";
  EXPECT_EQ(cu::convLibraryName(lib), "tcc kernels (TCC_CUDNN=0)");
}

TEST(CudnnLibrary, LoaderNamesWhatIsMissing) {
  cu::CudnnLibrary lib = cu::loadCudnnLibrary("/nonexistent/libcudnn.so.9");
  EXPECT_FALSE(lib.loaded);
#if TCC_TEST_HAVE_CUDNN
  EXPECT_EQ(lib.reason, "/nonexistent/libcudnn.so.9 not found");
  // A library without the functions.
  lib = cu::loadCudnnLibrary("libm.so.6");
  EXPECT_FALSE(lib.loaded);
  EXPECT_EQ(lib.reason, "libm.so.6 lacks cudnnGetVersion");
#ifdef TCC_TEST_CUDNN_LIBRARY
  // The build machine's toolkit cuDNN: every function resolves, version 9
  // (no GPU needed). A GPU machine running these binaries may lack it.
  if (std::FILE *f = std::fopen(TCC_TEST_CUDNN_LIBRARY, "rb")) {
    std::fclose(f);
    lib = cu::loadCudnnLibrary(TCC_TEST_CUDNN_LIBRARY);
    EXPECT_TRUE(lib.loaded) << lib.reason;
    EXPECT_EQ(lib.version / 10000, 9);
  } else {
    std::printf("%s absent: its load not checked\n", TCC_TEST_CUDNN_LIBRARY);
  }
#endif
#else
  EXPECT_EQ(lib.reason, "built without cudnn.h");
#endif
}

TEST(CudnnLibrary, ConvNoteCountsTheStepsOnTheOwnKernels) {
  rt::Step conv, grad, gemm;
  conv.kind = grad.kind = gemm.kind = rt::Step::Call;
  conv.op = rt::Op::Conv;
  grad.op = rt::Op::ConvGrad;
  gemm.op = rt::Op::Gemm;
  rt::CallPlan own;
  own.convOwn = "an empty tensor";
  cu::CudnnLibrary loaded;
  loaded.loaded = true;
  loaded.version = 90100;
  cu::CudnnLibrary missing;
  missing.reason = "libcudnn.so.9 not found";

  rt::ConvTally none;
  none.add(gemm, own);
  EXPECT_EQ(none.note(loaded), "");

  rt::ConvTally tally;
  tally.add(conv, own);
  tally.add(gemm, own);
  tally.add(grad, own);
  EXPECT_EQ(tally.steps, 2);
  EXPECT_EQ(tally.own, 2);
  EXPECT_EQ(tally.note(loaded), "conv: cuDNN 9.1.0, 2 of 2 conv steps on tcc "
                                "kernels (an empty tensor)\n");
  EXPECT_EQ(tally.note(missing),
            "conv: tcc kernels (libcudnn.so.9 not found)\n");
}

} // namespace
} // namespace tcc::gputest
