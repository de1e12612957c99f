//===- CodegenTestUtil.h - fixture of the codegen tests --------*- C++ -*-===//
//
// The CodegenTest fixture of CodegenTest.cpp and CodegenVectorTest.cpp:
// fusing a module (CodegenTestModules.h), checking its generated host
// kernels against the interpreter and the CUDA variant (its vector path
// included, run on the host through the prelude's grid emulation) against
// the host kernels; and the random inputs, buffer placement and value
// comparison those checks use.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_TEST_UNIT_CODEGENTESTUTIL_H
#define TCC_TEST_UNIT_CODEGENTESTUTIL_H

#include "CodegenTestModules.h"
#include "ErrorCapture.h"
#include "TestUtil.h"

#include "data/half.h"

#include "exec/ExecOps.h"
#include "tcc/Codegen/KernelEmitter.h"
#include "tcc/Codegen/Toolchain.h"
#include "tcc/Interp/Interpreter.h"
#include "tcc/TccOps.h"
#include "tcc/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <thread>
#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace codegentest {

using namespace mlir;
using namespace testutil;
namespace codegen = tcc::codegen;

using KernelFn = void (*)(const void *const *, void *, int64_t, int64_t);

/// Deterministic inputs: floats in [-3, 3) (some exactly 0), ints, bools.
/// With `specials`, floats also hold NaN, infinities and -0, and integers
/// values near their limits (so sums wrap). An input used as gather /
/// gather_grad indices is in [-indexRange, indexRange) when that is set.
inline Array randomInput(RankedTensorType type, uint32_t seed,
                         bool specials = false, int64_t indexRange = 0) {
  int64_t n = type.getNumElements();
  std::vector<int64_t> shape(type.getShape());
  uint32_t s = seed * 2654435761u + 12345;
  auto next = [&] {
    s = s * 1664525u + 1013904223u;
    return s >> 8;
  };
  auto real = [&]() -> double {
    if (specials) {
      switch (next() % 29) {
      case 0:
        return std::nan("");
      case 1:
        return INFINITY;
      case 2:
        return -INFINITY;
      case 3:
        return -0.0;
      }
    }
    return next() % 17 == 0 ? 0.0 : double(next()) / double(1 << 24) * 6 - 3;
  };
  auto integer = [&](int64_t limit) -> int64_t {
    if (indexRange)
      return int64_t(next() % uint32_t(2 * indexRange)) - indexRange;
    if (specials && next() % 5 == 0)
      return (next() & 1 ? limit : -limit - 1) + int64_t(next() % 8) *
                                                     (next() & 1 ? -1 : 1) / 2;
    return int64_t(next()) - (1 << 23);
  };
  Type elem = type.getElementType();
  if (elem.isBF16() || elem.isF16()) {
    // Scaled up so f16 products overflow and sums lose low bits.
    std::vector<uint16_t> v(n);
    for (uint16_t &x : v) {
      float r = float(real()) * (elem.isF16() ? 100.0f : 1.0f);
      x = elem.isBF16() ? tcc::data::floatToBf16(r) : tcc::data::floatToF16(r);
    }
    return makeArray("", elem.isBF16() ? DType::BF16 : DType::F16, shape, v);
  }
  if (elem.isF32()) {
    std::vector<float> v(n);
    for (float &x : v)
      x = float(real());
    return f32(shape, v);
  }
  if (elem.isF64()) {
    std::vector<double> v(n);
    for (double &x : v)
      x = real();
    return makeArray("", DType::F64, shape, v);
  }
  if (elem.isInteger(1)) {
    std::vector<uint8_t> v(n);
    for (uint8_t &x : v)
      x = next() & 1;
    return makeArray("", DType::Bool, shape, v);
  }
  if (elem.isInteger(32)) {
    std::vector<int32_t> v(n);
    for (int32_t &x : v)
      x = int32_t(integer(INT32_MAX - 8));
    return makeArray("", DType::I32, shape, v);
  }
  std::vector<int64_t> v(n);
  for (int64_t &x : v)
    x = integer(INT64_MAX - 8);
  return i64(shape, v);
}

/// A module holding one function that runs a clone of `fusion`.
inline OwningOpRef<ModuleOp> wrapFusion(tcc::exec::FusionOp fusion) {
  OpBuilder b(fusion.getContext());
  Location loc = fusion.getLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  auto type = b.getFunctionType(fusion.getInputs().getTypes(),
                                fusion.getResultTypes());
  auto func = func::FuncOp::create(b, loc, "kernel", type);
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToEnd(entry);
  IRMapping map;
  map.map(fusion.getInputs(), entry->getArguments());
  Operation *clone = b.clone(*fusion, map);
  func::ReturnOp::create(b, loc, clone->getResults());
  return module;
}

inline bool sameValue(DType dtype, const uint8_t *a, const uint8_t *b);

/// The dtype of a kernel buffer's element type.
inline DType dtypeOf(Type elem) {
  return elem.isF32()          ? DType::F32
         : elem.isF64()        ? DType::F64
         : elem.isBF16()       ? DType::BF16
         : elem.isF16()        ? DType::F16
         : elem.isInteger(1)   ? DType::Bool
         : elem.isInteger(32)  ? DType::I32
                               : DType::I64;
}

/// A kernel's stores (exec.fusion's results 1..): buffers of their bytes,
/// filled with `poison`.
inline std::vector<std::vector<uint8_t>> storeBuffers(tcc::exec::FusionOp fusion,
                                                      uint8_t poison) {
  std::vector<std::vector<uint8_t>> out;
  for (Value v : fusion.getStores()) {
    auto type = llvm::cast<RankedTensorType>(v.getType());
    out.emplace_back(size_t(type.getNumElements()) *
                         tcc::data::dtypeSize(dtypeOf(type.getElementType())),
                     poison);
  }
  return out;
}

/// The elements of buffers `got` and `want` of `dtype` that differ.
inline int countMismatches(DType dtype, const std::vector<uint8_t> &got,
                           const std::vector<uint8_t> &want) {
  size_t size = tcc::data::dtypeSize(dtype);
  int mismatches = 0;
  for (size_t e = 0; e * size < want.size(); ++e)
    mismatches += !sameValue(dtype, &got[e * size], &want[e * size]);
  return mismatches;
}

inline bool sameValue(DType dtype, const uint8_t *a, const uint8_t *b) {
  if (dtype == DType::BF16 || dtype == DType::F16) {
    uint16_t x, y;
    std::memcpy(&x, a, 2);
    std::memcpy(&y, b, 2);
    auto isNaN = [&](uint16_t h) {
      return dtype == DType::BF16 ? std::isnan(tcc::data::bf16ToFloat(h))
                                  : std::isnan(tcc::data::f16ToFloat(h));
    };
    if (isNaN(x) && isNaN(y))
      return true;
  }
  if (dtype == DType::F32) {
    float x, y;
    std::memcpy(&x, a, 4);
    std::memcpy(&y, b, 4);
    if (std::isnan(x) && std::isnan(y))
      return true;
  }
  if (dtype == DType::F64) {
    double x, y;
    std::memcpy(&x, a, 8);
    std::memcpy(&y, b, 8);
    if (std::isnan(x) && std::isnan(y))
      return true;
  }
  return std::memcmp(a, b, tcc::data::dtypeSize(dtype)) == 0;
}

/// The CUDA variant of a kernel source compiled as host code: the prelude's
/// grid emulation (TCC_KERNEL_EMULATE_CUDA) gives each call the thread that
/// tcc_emulate_cuda_thread set and counts the vector accesses.
struct EmulatedCuda {
  void *handle = nullptr;
  void (*setThread)(unsigned, unsigned, unsigned, unsigned, unsigned,
                    unsigned) = nullptr;
  void (*counters)(int64_t *) = nullptr;
  void (*setBlock)(unsigned) = nullptr;

  /// Runs a kernel whose threads cooperate (a plan launch shape: one block
  /// of `threads` per `perBlock` outputs, at most `maxBlocks`, times
  /// `slices` in grid.y) over [begin, end), with `workspace` (when not
  /// null) after the inputs: each block's threads as concurrent host
  /// threads sharing the prelude's barrier, one block after another, in an
  /// order shuffled by `seed` (0: x fastest, then y).
  void launchBlocks(KernelFn fn, std::vector<const void *> inputs,
                    void *workspace, void *output, int64_t begin, int64_t end,
                    int64_t perBlock, unsigned threads, int64_t maxBlocks,
                    unsigned slices = 1, unsigned seed = 0) const {
    int64_t n = end - begin;
    if (n <= 0)
      return;
    if (workspace)
      inputs.push_back(workspace);
    unsigned grid = unsigned(std::min((n + perBlock - 1) / perBlock, maxBlocks));
    std::vector<std::pair<unsigned, unsigned>> blocks;
    for (unsigned y = 0; y < slices; ++y)
      for (unsigned x = 0; x < grid; ++x)
        blocks.push_back({x, y});
    if (seed)
      std::shuffle(blocks.begin(), blocks.end(), std::mt19937(seed));
    for (auto [x, y] : blocks) {
      setBlock(threads);
      std::vector<std::thread> pool;
      for (unsigned t = 0; t < threads; ++t)
        pool.emplace_back([=, &inputs] {
          setThread(grid, slices, threads, x, y, t);
          fn(inputs.data(), output, begin, end);
        });
      for (std::thread &th : pool)
        th.join();
    }
  }

  /// Runs `fn` over [begin, end) as the CUDA backend launches a kernel step
  /// (runtime/exec/cuda_backend.cpp: blocks of 256 threads, a grid of
  /// ceil(elements / 256) blocks but at most `maxBlocks`), one thread after
  /// another. Returns {vector loads, vector stores, misaligned accesses}.
  std::array<int64_t, 3> launch(KernelFn fn, const void *const *inputs,
                                void *output, int64_t begin, int64_t end,
                                int64_t maxBlocks) const {
    std::array<int64_t, 3> count{};
    counters(count.data()); // clear
    const int64_t block = 256;
    int64_t n = end - begin;
    if (n <= 0)
      return count; // the backend skips empty steps
    unsigned grid = unsigned(std::min((n + block - 1) / block, maxBlocks));
    for (unsigned b = 0; b < grid; ++b)
      for (unsigned t = 0; t < unsigned(block); ++t) {
        setThread(grid, 1, unsigned(block), b, 0, t);
        fn(inputs, output, begin, end);
      }
    counters(count.data());
    return count;
  }
};

/// `bytes` at `offset` bytes past a 64-byte boundary inside `storage`.
inline uint8_t *placeAt(std::vector<uint8_t> &storage,
                        const std::vector<uint8_t> &bytes, size_t offset) {
  storage.assign(bytes.size() + 128, 0);
  uintptr_t base = (reinterpret_cast<uintptr_t>(storage.data()) + 63) & ~uintptr_t(63);
  uint8_t *p = reinterpret_cast<uint8_t *>(base + offset);
  if (!bytes.empty())
    std::memcpy(p, bytes.data(), bytes.size());
  return p;
}

/// For each block argument of `fusion` read as gather / gather_grad
/// indices, the size of the dim they index (inputs must be in range: the
/// interpreter rejects others), and for one compared for equality (through
/// a reshape) with a constant (the class ids of an accuracy count), the
/// constant's size, so that some compare equal.
inline llvm::DenseMap<unsigned, int64_t>
indexRanges(tcc::exec::FusionOp fusion) {
  llvm::DenseMap<unsigned, int64_t> ranges;
  fusion.getBody().walk([&](Operation *op) {
    Value indices;
    int64_t dim = 0;
    if (auto gather = llvm::dyn_cast<tcc::GatherOp>(op)) {
      indices = gather.getIndices();
      dim = llvm::cast<RankedTensorType>(gather.getData().getType())
                .getDimSize(gather.getAxis());
    } else if (auto grad = llvm::dyn_cast<tcc::GatherGradOp>(op)) {
      indices = grad.getIndices();
      dim = llvm::cast<RankedTensorType>(grad.getType()).getDimSize(
          grad.getAxis());
    }
    if (auto cmp = llvm::dyn_cast<tcc::CmpOp>(op);
        cmp && cmp.getPredicate() == tcc::CmpPredicate::eq &&
        cmp.getLhs().getDefiningOp<tcc::ConstantOp>()) {
      indices = cmp.getRhs();
      if (auto reshape = indices.getDefiningOp<tcc::ReshapeOp>())
        indices = reshape.getInput();
      dim = llvm::cast<RankedTensorType>(cmp.getLhs().getType()).getNumElements();
    }
    if (auto arg = llvm::dyn_cast_or_null<BlockArgument>(indices))
      ranges[arg.getArgNumber()] = dim;
  });
  return ranges;
}

class CodegenTest : public ::testing::Test {
protected:
  CodegenTest() {
    context.loadDialect<tcc::TccDialect, tcc::exec::ExecDialect,
                        func::FuncDialect>();
  }

  OwningOpRef<ModuleOp> fused(const char *text = kChains) {
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
    if (!module)
      return nullptr;
    PassManager pm(&context);
    pm.addPass(tcc::createFuse());
    if (failed(pm.run(*module)) || failed(verify(*module)))
      return nullptr;
    return module;
  }

  /// Builds `module`'s kernels into a shared object, runs every kernel on
  /// random inputs in three pieces into a poisoned buffer and compares with
  /// the interpreter running that fusion op. Returns the kernels checked.
  int checkAgainstInterpreter(ModuleOp module, bool specials) {
    FailureOr<std::string> source = codegen::emitKernelSource(module);
    EXPECT_TRUE(succeeded(source));
    if (failed(source))
      return 0;
    std::string so = tempPath("codegen", "kernels.so");
    bool built = succeeded(codegen::compileHostSharedObject(
        UnknownLoc::get(&context), *source, so));
    EXPECT_TRUE(built) << errors.first() << "\n" << *source;
    if (!built)
      return 0;
    void *handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    EXPECT_TRUE(handle) << dlerror();
    if (!handle)
      return 0;

    int kernels = 0;
    module->walk([&](tcc::exec::FusionOp fusion) {
      ++kernels;
      std::string symbol = codegen::kernelSymbol(fusion);
      auto fn = reinterpret_cast<KernelFn>(dlsym(handle, symbol.c_str()));
      ASSERT_TRUE(fn) << symbol;

      llvm::DenseMap<unsigned, int64_t> ranges = indexRanges(fusion);
      std::vector<Array> inputs;
      for (auto [i, input] : llvm::enumerate(fusion.getInputs()))
        inputs.push_back(randomInput(
            llvm::cast<RankedTensorType>(input.getType()), 7 * kernels + i,
            specials, ranges.lookup(i)));
      OwningOpRef<ModuleOp> wrapper = wrapFusion(fusion);
      std::vector<Array> want;
      std::string error;
      ASSERT_TRUE(tcc::interp::run(
          wrapper->lookupSymbol<func::FuncOp>("kernel"), inputs, want, error))
          << symbol << ": " << error;
      ASSERT_EQ(want.size(), fusion.getNumResults());

      // Poisoned with NaN (all ones) so a skipped element cannot pass.
      std::vector<uint8_t> out(want[0].bytes.size(), 0xff);
      std::vector<std::vector<uint8_t>> stores = storeBuffers(fusion, 0xff);
      std::vector<const void *> pointers;
      for (const Array &a : inputs)
        pointers.push_back(a.bytes.data());
      for (std::vector<uint8_t> &b : stores)
        pointers.push_back(b.data());
      int64_t n = want[0].numElements();
      fn(pointers.data(), out.data(), 0, n / 3);
      fn(pointers.data(), out.data(), n / 3, 2 * n / 3);
      fn(pointers.data(), out.data(), 2 * n / 3, n);

      size_t size = tcc::data::dtypeSize(want[0].dtype);
      int mismatches = 0;
      int64_t first = -1;
      for (int64_t e = 0; e < n; ++e)
        if (!sameValue(want[0].dtype, &out[e * size],
                       &want[0].bytes[e * size])) {
          ++mismatches;
          if (first < 0)
            first = e;
        }
      std::string text;
      llvm::raw_string_ostream os(text);
      fusion.print(os);
      EXPECT_EQ(mismatches, 0) << symbol << " differs from the interpreter, "
                               << "first at element " << first << ":\n"
                               << text;
      for (size_t k = 0; k < stores.size(); ++k)
        EXPECT_EQ(countMismatches(want[k + 1].dtype, stores[k],
                                  want[k + 1].bytes),
                  0)
            << symbol << ": store " << k + 1
            << " differs from the interpreter:\n"
            << text;
    });
    dlclose(handle);
    return kernels;
  }

  /// The CUDA variant of kernel `source` built as host code with the
  /// prelude's grid emulation and loaded (a null handle, with a test
  /// failure, when that fails).
  EmulatedCuda emulated(const std::string &source) {
    EmulatedCuda cuda;
    std::string so = tempPath("codegen", "emulated.so");
    if (failed(codegen::compileHostSharedObject(
            UnknownLoc::get(&context),
            "#define TCC_KERNEL_EMULATE_CUDA 1\n" + source, so))) {
      ADD_FAILURE() << errors.first() << "\n" << source;
      return cuda;
    }
    cuda.handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    EXPECT_TRUE(cuda.handle) << dlerror();
    if (!cuda.handle)
      return cuda;
    cuda.setThread = reinterpret_cast<decltype(cuda.setThread)>(
        dlsym(cuda.handle, "tcc_emulate_cuda_thread"));
    cuda.counters = reinterpret_cast<decltype(cuda.counters)>(
        dlsym(cuda.handle, "tcc_emulate_cuda_counters"));
    cuda.setBlock = reinterpret_cast<decltype(cuda.setBlock)>(
        dlsym(cuda.handle, "tcc_emulate_cuda_block"));
    EXPECT_TRUE(cuda.setThread && cuda.counters && cuda.setBlock);
    if (!cuda.setThread || !cuda.counters || !cuda.setBlock)
      cuda.handle = nullptr;
    return cuda;
  }

  /// The CUDA variant of `module`'s kernels, built as host code with the
  /// prelude's grid emulation, against its host kernels (the scalar loop,
  /// which checkAgainstInterpreter pins to the interpreter): every kernel on
  /// random inputs in 64-byte aligned buffers as the CUDA backend launches
  /// it, with a single block (grid-stride loops), in three launches of
  /// [0, n/3), [n/3, 2n/3), [2n/3, n) (heads and tails of partial chunks),
  /// with the output and then each input one element off its alignment (the
  /// vector path must step aside), into a poisoned buffer; every element
  /// must equal the host kernel's (NaN as NaN). A kernel with a vector path
  /// (vectorWidth W > 1) stores floor(n / W) chunks when aligned and none
  /// when its output is not, and no vector access is ever misaligned.
  /// Returns the kernels with a vector path; `widths` collects their W,
  /// `blockSlices` the row slices of the kernels with a block path.
  int checkVectorPath(ModuleOp module, bool specials,
                      std::set<int64_t> *widths = nullptr,
                      std::set<int64_t> *blockSlices = nullptr) {
    FailureOr<std::string> source = codegen::emitKernelSource(module);
    EXPECT_TRUE(succeeded(source));
    if (failed(source))
      return 0;
    std::string hostSo = tempPath("codegen", "vector-host.so");
    Location loc = UnknownLoc::get(&context);
    bool built = succeeded(codegen::compileHostSharedObject(loc, *source, hostSo));
    EXPECT_TRUE(built) << errors.first() << "\n" << *source;
    if (!built)
      return 0;
    void *host = dlopen(hostSo.c_str(), RTLD_NOW | RTLD_LOCAL);
    EXPECT_TRUE(host) << dlerror();
    EmulatedCuda cuda = emulated(*source);
    if (!host || !cuda.handle)
      return 0;

    int kernels = 0, vectorised = 0, inputChecked = 0;
    module->walk([&](tcc::exec::FusionOp fusion) {
      ++kernels;
      std::string symbol = codegen::kernelSymbol(fusion);
      auto scalar = reinterpret_cast<KernelFn>(dlsym(host, symbol.c_str()));
      auto device = reinterpret_cast<KernelFn>(dlsym(cuda.handle, symbol.c_str()));
      ASSERT_TRUE(scalar && device) << symbol;
      int64_t width = codegen::vectorWidth(fusion);
      if (width > 1) {
        ++vectorised;
        if (widths)
          widths->insert(width);
      }

      llvm::DenseMap<unsigned, int64_t> ranges = indexRanges(fusion);
      std::vector<Array> inputs;
      for (auto [i, input] : llvm::enumerate(fusion.getInputs()))
        inputs.push_back(randomInput(
            llvm::cast<RankedTensorType>(input.getType()), 11 * kernels + i,
            specials, ranges.lookup(i)));
      auto outType = llvm::cast<RankedTensorType>(fusion.getResult().getType());
      int64_t n = outType.getNumElements();
      Type outElem = outType.getElementType();
      size_t size = outElem.isInteger(1) ? 1 : outElem.getIntOrFloatBitWidth() / 8;
      DType dtype = outElem.isF32()   ? DType::F32
                    : outElem.isF64() ? DType::F64
                    : outElem.isBF16() ? DType::BF16
                    : outElem.isF16() ? DType::F16
                    : outElem.isInteger(1) ? DType::Bool
                    : outElem.isInteger(32) ? DType::I32
                                            : DType::I64;

      std::vector<const void *> pointers;
      for (const Array &a : inputs)
        pointers.push_back(a.bytes.data());
      // The stores: the host kernel's, then each launch's own buffers.
      std::vector<DType> storeTypes;
      for (Value v : fusion.getStores())
        storeTypes.push_back(dtypeOf(llvm::cast<RankedTensorType>(v.getType()).getElementType()));
      std::vector<std::vector<uint8_t>> wantStores = storeBuffers(fusion, 0xff);
      std::vector<const void *> hostPointers = pointers;
      for (std::vector<uint8_t> &b : wantStores)
        hostPointers.push_back(b.data());
      std::vector<uint8_t> want(n * size, 0xff);
      scalar(hostPointers.data(), want.data(), 0, n);
      auto checkStores = [&](const std::vector<std::vector<uint8_t>> &got,
                             const char *name) {
        for (size_t k = 0; k < got.size(); ++k)
          EXPECT_EQ(countMismatches(storeTypes[k], got[k], wantStores[k]), 0)
              << symbol << " (" << name << "): store " << k + 1
              << " differs from the host kernel's";
      };

      // A kernel whose threads cooperate (a column reduction's block
      // path): its launch shape, fewer and odd warps, a block that is not
      // whole warps (the one-thread loop), one block (grid-stride over
      // tiles), three launches; with row slices also one slice (no
      // workspace), fewer slices and the blocks in two shuffled orders
      // (another block is the last of a tile). Each case runs twice on
      // the same workspace (its counters back at 0): the same bits.
      codegen::LaunchShape shape = codegen::launchShape(fusion);
      if (shape.outputsPerBlock > 0) {
        struct BlockCase {
          const char *name;
          unsigned threads;
          int64_t maxBlocks;
          bool pieces;
          unsigned slices, seed;
        };
        const unsigned full = unsigned(shape.blockThreads);
        const unsigned slices = unsigned(shape.rowSlices);
        std::vector<BlockCase> blockCases = {
            {"as launched", full, 132 * 32, false, slices, 0},
            {"two warps", 64, 132 * 32, false, slices, 0},
            {"three warps, one block", 96, 1, false, slices, 0},
            {"48 threads", 48, 132 * 32, false, slices, 0},
            {"in three launches", full, 132 * 32, true, slices, 0}};
        if (slices > 1)
          blockCases.insert(
              blockCases.end(),
              {{"one slice", full, 132 * 32, false, 1, 0},
               {"two slices, shuffled", 64, 132 * 32, false, 2, 7},
               {"shuffled", full, 132 * 32, false, slices, 1},
               {"shuffled again", 96, 1, false, slices, 2}});
        std::vector<uint64_t> workspace(size_t(shape.workspaceBytes + 7) / 8,
                                        0);
        for (const BlockCase &c : blockCases) {
          std::vector<uint8_t> got(n * size, 0xa5), again;
          for (int run = 0; run < 2; ++run) {
            if (run == 1)
              again.assign(n * size, 0x5a);
            uint8_t *into = run == 0 ? got.data() : again.data();
            std::vector<std::vector<uint8_t>> gotStores =
                storeBuffers(fusion, run == 0 ? 0xa5 : 0x5a);
            std::vector<const void *> args = pointers;
            for (std::vector<uint8_t> &b : gotStores)
              args.push_back(b.data());
            std::vector<std::pair<int64_t, int64_t>> ranges = {{0, n}};
            if (c.pieces)
              ranges = {{0, n / 3}, {n / 3, 2 * n / 3}, {2 * n / 3, n}};
            for (auto [b, e] : ranges)
              cuda.launchBlocks(device, args,
                                workspace.empty() ? nullptr : workspace.data(),
                                into, b, e, shape.outputsPerBlock, c.threads,
                                c.maxBlocks, c.slices, c.seed);
            checkStores(gotStores, c.name);
          }
          int mismatches = 0;
          for (int64_t e = 0; e < n; ++e)
            mismatches += !sameValue(dtype, &got[e * size], &want[e * size]);
          EXPECT_EQ(mismatches, 0)
              << symbol << " (" << c.name << ", " << c.threads
              << " threads): the block path differs from the host kernel";
          EXPECT_EQ(got, again) << symbol << " (" << c.name
                                << "): a second run gave other bits";
        }
        if (blockSlices)
          blockSlices->insert(shape.rowSlices);
        return;
      }

      struct Case {
        const char *name;
        int64_t maxBlocks;
        bool pieces;
        int misaligned; // -2 none, -1 the output, k input k
      };
      std::vector<Case> cases = {{"as launched", 132 * 32, false, -2},
                                 {"one block", 1, false, -2},
                                 {"in three launches", 132 * 32, true, -2},
                                 {"output misaligned", 132 * 32, false, -1}};
      for (int k = 0; k < int(inputs.size()); ++k)
        cases.push_back({"an input misaligned", 132 * 32, false, k});
      bool inputsMatter = false;
      for (const Case &c : cases) {
        std::vector<std::vector<uint8_t>> storage(inputs.size() + 1);
        std::vector<const void *> in;
        for (size_t k = 0; k < inputs.size(); ++k) {
          size_t elem = tcc::data::dtypeSize(inputs[k].dtype);
          in.push_back(placeAt(storage[k], inputs[k].bytes,
                               c.misaligned == int(k) ? elem : 0));
        }
        std::vector<std::vector<uint8_t>> gotStores = storeBuffers(fusion, 0xa5);
        for (std::vector<uint8_t> &b : gotStores)
          in.push_back(b.data());
        // Poisoned with a pattern no kernel computes here.
        uint8_t *out = placeAt(storage.back(), std::vector<uint8_t>(n * size, 0xa5),
                               c.misaligned == -1 ? size : 0);
        std::array<int64_t, 3> count{};
        if (c.pieces) {
          for (auto [b, e] : {std::pair<int64_t, int64_t>{0, n / 3},
                              {n / 3, 2 * n / 3},
                              {2 * n / 3, n}}) {
            std::array<int64_t, 3> piece =
                cuda.launch(device, in.data(), out, b, e, c.maxBlocks);
            for (int j = 0; j < 3; ++j)
              count[j] += piece[j];
          }
        } else {
          count = cuda.launch(device, in.data(), out, 0, n, c.maxBlocks);
        }
        int mismatches = 0;
        int64_t first = -1;
        for (int64_t e = 0; e < n; ++e)
          if (!sameValue(dtype, &out[e * size], &want[e * size])) {
            ++mismatches;
            if (first < 0)
              first = e;
          }
        EXPECT_EQ(mismatches, 0)
            << symbol << " (W = " << width << ", " << n << " elements, "
            << c.name << "): the CUDA variant differs from the host kernel, "
            << "first at element " << first << "\n" << *source;
        checkStores(gotStores, c.name);
        EXPECT_EQ(count[2], 0) << symbol << " " << c.name
                               << ": a misaligned vector access";
        if (width == 1) {
          EXPECT_EQ(count[0] + count[1], 0) << symbol << " " << c.name;
        } else if (c.misaligned == -2 && !c.pieces) {
          EXPECT_EQ(count[1], n / width) << symbol << " " << c.name;
        } else if (c.misaligned == -1) {
          EXPECT_EQ(count[0] + count[1], 0) << symbol << " " << c.name;
        } else if (c.misaligned >= 0 && n >= width) {
          // Off for an input read contiguously, else unaffected.
          EXPECT_TRUE(count[1] == 0 || count[1] == n / width)
              << symbol << " " << c.name << " " << c.misaligned;
          inputsMatter |= count[0] + count[1] == 0;
        }
      }
      inputChecked += inputsMatter;
    });
    // Misaligning an input read contiguously turned the vector path off.
    if (vectorised > 0)
      EXPECT_GT(inputChecked, 0);
    dlclose(host);
    dlclose(cuda.handle);
    return vectorised;
  }

  MLIRContext context;
  /// What a failing compiler call said (the kernel builds report at an
  /// unknown location of this context).
  testutil::ErrorCapture errors{context};
};

} // namespace codegentest

#endif // TCC_TEST_UNIT_CODEGENTESTUTIL_H
