// Building kernels: fusions that generate the same kernel share one symbol,
// the kernels split into translation units that build into one shared
// object (and one fatbin) exporting every symbol, the kernel cache hands a
// second build its files and detects a corrupted entry (removed, rebuilt),
// and --cuda-arch puts exactly the architectures asked for in the fatbin.
#include "CodegenTestUtil.h"

#include "KernelCache.h"

#include "llvm/Support/FileSystem.h"

#include <fstream>

using namespace mlir;
using namespace testutil;
using namespace codegentest;

namespace {

// Three fusions; the first two compute the same kernel under two names.
const char *kTwins = R"mlir(
  func.func @f(%a: tensor<64xf32>, %b: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
    %0 = exec.fusion "first" (%a, %b) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32> {
    ^bb0(%x: tensor<64xf32>, %y: tensor<64xf32>):
      %s = tcc.add %x, %y : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
      exec.yield %s : tensor<64xf32>
    }
    %1 = exec.fusion "second" (%0, %b) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32> {
    ^bb0(%x: tensor<64xf32>, %y: tensor<64xf32>):
      %s = tcc.add %x, %y : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
      exec.yield %s : tensor<64xf32>
    }
    %2 = exec.fusion "third" (%1, %b) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32> {
    ^bb0(%x: tensor<64xf32>, %y: tensor<64xf32>):
      %s = tcc.mul %x, %y : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
      exec.yield %s : tensor<64xf32>
    }
    return %0, %1, %2 : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
  }
)mlir";

std::vector<std::string> fusionNames(ModuleOp module) {
  std::vector<std::string> names;
  module.walk(
      [&](tcc::exec::FusionOp f) { names.push_back(f.getName().str()); });
  return names;
}

/// The symbols `so` exports of `names` ("tcc_" + name).
std::vector<std::string> exported(const std::string &so,
                                  const std::vector<std::string> &names) {
  std::vector<std::string> found;
  void *handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  EXPECT_TRUE(handle) << dlerror();
  if (!handle)
    return found;
  for (const std::string &n : names)
    if (dlsym(handle, ("tcc_" + n).c_str()))
      found.push_back(n);
  dlclose(handle);
  return found;
}

/// The SASS and PTX architectures of a fatbin, read from its headers (the
/// layout runtime/exec/cuda_calls.cpp documents).
void fatbinArchs(const std::string &path, std::vector<int> &sass,
                 std::vector<int> &ptx) {
  std::vector<uint8_t> b = readFile(path);
  auto u16 = [&](size_t at) { return uint16_t(b[at] | b[at + 1] << 8); };
  auto u32 = [&](size_t at) {
    return uint32_t(u16(at)) | uint32_t(u16(at + 2)) << 16;
  };
  auto u64 = [&](size_t at) {
    return uint64_t(u32(at)) | uint64_t(u32(at + 4)) << 32;
  };
  for (size_t at = 0; at + 16 <= b.size() && u32(at) == 0xBA55ED50u;) {
    size_t entry = at + u16(at + 6), end = entry + u64(at + 8);
    ASSERT_LE(end, b.size());
    while (entry + 32 <= end) {
      (u16(entry) == 2 ? sass : ptx).push_back(int(u32(entry + 28)));
      entry += u32(entry + 4) + u64(entry + 8);
    }
    at = end;
  }
}

TEST_F(CodegenTest, IdenticalKernelsShareOneSymbol) {
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kTwins, &context);
  ASSERT_TRUE(module);
  FailureOr<codegen::KernelSource> before = codegen::emitKernels(*module);
  ASSERT_TRUE(succeeded(before));
  EXPECT_EQ(before->kernels.size(), 3u);

  ASSERT_TRUE(succeeded(codegen::shareIdenticalKernels(*module)));
  EXPECT_EQ(fusionNames(*module),
            (std::vector<std::string>{"first", "first", "third"}));
  FailureOr<codegen::KernelSource> after = codegen::emitKernels(*module);
  ASSERT_TRUE(succeeded(after));
  ASSERT_EQ(after->kernels.size(), 2u);
  EXPECT_CONTAINS(after->kernels[0], "TCC_KERNEL(first)");
  EXPECT_CONTAINS(after->kernels[1], "TCC_KERNEL(third)");

  // One symbol for two different kernels is an error on the op.
  module->walk([](tcc::exec::FusionOp f) { f.setName("clash"); });
  EXPECT_TRUE(failed(codegen::emitKernels(*module)));
  EXPECT_CONTAINS(errors.first(), "duplicate kernel symbol tcc_clash");
}

TEST_F(CodegenTest, UnitsSplitEvenlyAndKeepEveryKernel) {
  codegen::KernelSource source;
  source.header = "#include \"kernels/tcc_kernel.h\"\n";
  for (int i = 0; i < 7; ++i)
    source.kernels.push_back("// k" + std::to_string(i) + "\n" +
                             std::string(i == 0 ? 600 : 100, 'x') + "\n");
  for (unsigned count : {1u, 2u, 3u, 7u, 20u}) {
    std::vector<std::string> units = source.units(count);
    EXPECT_EQ(units.size(), std::min(count, 7u));
    std::string all;
    for (const std::string &u : units) {
      EXPECT_EQ(u.rfind(source.header, 0), 0u) << "each unit is complete";
      EXPECT_NE(u, source.header) << "no unit is empty";
      all += u.substr(source.header.size());
    }
    EXPECT_EQ(source.header + all, source.text()) << "order and content kept";
  }
  // The large kernel gets a unit of its own.
  std::vector<std::string> two = source.units(2);
  EXPECT_CONTAINS(two[0], "// k0");
  EXPECT_EQ(two[0].find("// k1"), std::string::npos);
  codegen::KernelSource none{"only", {}};
  EXPECT_EQ(none.units(4), std::vector<std::string>{"only"});
}

TEST(KernelCache, StoresFetchesAndDetectsCorruption) {
  std::string dir = tempPath("kcache", "cache");
  llvm::sys::fs::remove_directories(dir);
  codegen::KernelCache cache(dir);
  std::string key = codegen::KernelCache::key({"tool", "flags", "source"});
  EXPECT_EQ(key.size(), 64u);
  EXPECT_NE(key, codegen::KernelCache::key({"tool", "flagss", "ource"}));

  std::string in = tempPath("kcache", "in.bin"),
              out = tempPath("kcache", "out.bin");
  std::ofstream(in, std::ios::binary) << std::string("compiled bytes\0\1", 16);
  EXPECT_EQ(cache.fetch(key, out), codegen::KernelCache::Fetch::Miss);
  cache.store(key, in);
  ASSERT_EQ(cache.fetch(key, out), codegen::KernelCache::Fetch::Hit);
  EXPECT_EQ(readFile(out), readFile(in));

  // A flipped byte, a truncation: detected, the entry removed.
  std::string entry = cache.entryPath(key);
  for (int damage = 0; damage < 2; ++damage) {
    std::vector<uint8_t> bytes = readFile(entry);
    if (damage == 0)
      bytes[3] ^= 1;
    else
      bytes.resize(bytes.size() - 5);
    std::ofstream(entry, std::ios::binary)
        .write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
    EXPECT_EQ(cache.fetch(key, out), codegen::KernelCache::Fetch::Corrupt);
    EXPECT_FALSE(exists(entry));
    cache.store(key, in);
  }
  EXPECT_EQ(codegen::KernelCache("").fetch(key, out),
            codegen::KernelCache::Fetch::Miss);
}

/// Ten small kernels tcc_k0 .. tcc_k9 (k<n> fills its output with n): more
/// than one unit's worth.
codegen::KernelSource tenKernels(std::vector<std::string> &names) {
  codegen::KernelSource source;
  source.header = "#include \"kernels/tcc_kernel.h\"\n";
  for (int k = 0; k < 10; ++k) {
    names.push_back("k" + std::to_string(k));
    source.kernels.push_back(
        "TCC_KERNEL(k" + std::to_string(k) +
        ") {\n  (void)inputs;\n  float *out = static_cast<float *>(output);\n"
        "  TCC_FOR_EACH(i) out[i] = " +
        std::to_string(k) + ".0f;\n}\n");
  }
  return source;
}

// Two units build into one shared object with every kernel; the second
// build takes the finished file from the cache; with every entry corrupted
// each is detected when read and rebuilt.
TEST(KernelBuild, UnitsLinkIntoOneObjectAndComeFromTheCache) {
  MLIRContext context;
  ErrorCapture errors(context);
  Location loc = UnknownLoc::get(&context);
  std::vector<std::string> names;
  codegen::KernelSource source = tenKernels(names);
  codegen::KernelBuildOptions options;
  options.jobs = 2;
  options.cacheDir = tempPath("kbuild", "cache");
  llvm::sys::fs::remove_directories(options.cacheDir);
  std::string so = tempPath("kbuild", "host.so");
  codegen::KernelBuildReport report;
  ASSERT_TRUE(
      succeeded(codegen::buildKernels(loc, source, so, "", options, &report)))
      << errors.first();
  EXPECT_EQ(report.units, 2u);
  EXPECT_EQ(report.cached, 0u);
  EXPECT_EQ(report.compiled, 3u); // two objects, the link
  EXPECT_EQ(exported(so, names), names);

  ASSERT_TRUE(
      succeeded(codegen::buildKernels(loc, source, so, "", options, &report)))
      << errors.first();
  EXPECT_EQ(report.compiled, 0u);
  EXPECT_EQ(report.cached, 1u); // the shared object itself
  EXPECT_EQ(exported(so, names), names);

  std::error_code ec;
  int damaged = 0;
  for (llvm::sys::fs::recursive_directory_iterator it(options.cacheDir, ec),
       end;
       it != end && !ec; it.increment(ec))
    if (it->type() == llvm::sys::fs::file_type::regular_file) {
      std::vector<uint8_t> bytes = readFile(it->path());
      bytes[bytes.size() / 2] ^= 0xff;
      std::ofstream(it->path(), std::ios::binary)
          .write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
      ++damaged;
    }
  EXPECT_EQ(damaged, 3);
  ASSERT_TRUE(
      succeeded(codegen::buildKernels(loc, source, so, "", options, &report)))
      << errors.first();
  EXPECT_EQ(report.corrupt, 3u);
  EXPECT_EQ(report.compiled, 3u);
  EXPECT_EQ(exported(so, names), names);
  ASSERT_TRUE(
      succeeded(codegen::buildKernels(loc, source, so, "", options, &report)));
  EXPECT_EQ(report.cached, 1u) << "the rebuilt entries are whole again";

  // A compile error is the compiler's message, and no output is left.
  source.kernels.push_back("this is not C++\n");
  std::string bad = tempPath("kbuild", "bad.so");
  EXPECT_TRUE(failed(codegen::buildKernels(loc, source, bad, "", options)));
  EXPECT_CONTAINS(errors.first(), "compiling the kernels failed: ");
  EXPECT_CONTAINS(errors.first(), " failed:\n");
  EXPECT_FALSE(exists(bad));
}

TEST(CudaArch, ParsesListsAndRejectsOneClearly) {
  MLIRContext context;
  ErrorCapture errors(context);
  Location loc = UnknownLoc::get(&context);
  EXPECT_EQ(expectSuccess(codegen::parseCudaArchs(loc, "sm_90")),
            std::vector<std::string>{"sm_90"});
  EXPECT_EQ(expectSuccess(
                codegen::parseCudaArchs(loc, "sm_80, sm_90,compute_90,sm_90")),
            codegen::defaultCudaArchs());
  for (const char *bad : {"sm90", "gfx90a", "sm_", "sm_9x", "", "sm_90,,"}) {
    errors.clear();
    EXPECT_TRUE(failed(codegen::parseCudaArchs(loc, bad))) << bad;
    EXPECT_CONTAINS(errors.first(), "--cuda-arch '");
    EXPECT_CONTAINS(errors.first(),
                    "expected sm_XY (SASS) or compute_XY (PTX)");
  }
  if (codegen::cudaCompilerAvailable()) {
    errors.clear();
    EXPECT_TRUE(failed(codegen::parseCudaArchs(loc, "sm_80,sm_91")));
    EXPECT_CONTAINS(errors.first(), "--cuda-arch 'sm_91': not an "
                                    "architecture this nvcc builds (");
  }
}

// The fatbin holds what --cuda-arch asks for: SASS of each sm_XY, PTX of
// each compute_XY, from units linked per architecture.
TEST_F(CodegenTest, FatbinHoldsTheArchitecturesAskedFor) {
  if (!codegen::cudaCompilerAvailable())
    GTEST_SKIP() << "nvcc not found at configure time; fatbin not tested";
  OwningOpRef<ModuleOp> module = fused(kChains);
  ASSERT_TRUE(module);
  FailureOr<codegen::KernelSource> source = codegen::emitKernels(*module);
  ASSERT_TRUE(succeeded(source));
  struct Case {
    std::vector<std::string> archs;
    std::vector<int> sass, ptx;
  } cases[] = {{{"sm_90"}, {90}, {}},
               {codegen::defaultCudaArchs(), {80, 90}, {90}},
               {{"compute_80"}, {}, {80}}};
  for (const Case &c : cases) {
    codegen::KernelBuildOptions options;
    options.cudaArchs = c.archs;
    options.jobs = 2;
    std::string fatbin = tempPath("kbuild", "kernels.fatbin");
    codegen::KernelBuildReport report;
    ASSERT_TRUE(succeeded(codegen::buildKernels(
        UnknownLoc::get(&context), *source, "", fatbin, options, &report)))
        << errors.first();
    std::vector<int> sass, ptx;
    fatbinArchs(fatbin, sass, ptx);
    std::sort(sass.begin(), sass.end());
    EXPECT_EQ(sass, c.sass);
    EXPECT_EQ(ptx, c.ptx);
  }
}

} // namespace
