//===- NpzTest.cpp - tests for runtime/data/npz ---------------------------===//
//
// Fixtures come from numpy (test/unit/fixtures/make_fixtures.py); the values
// asserted here are the ones that script writes.
//
//===----------------------------------------------------------------------===//

#include "data/npz.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <unistd.h>

using namespace tcc::data;
using namespace testutil;

namespace {

std::string tempPath(const std::string &name) {
  return testutil::tempPath("npz", name);
}

/// Bytes 11, 48, 85, ... (0 or 1 for bool): distinct per position, so a
/// misplaced byte shows.
Array patternArray(const std::string &name, DType dtype,
                   std::vector<int64_t> shape) {
  Array a;
  a.name = name;
  a.dtype = dtype;
  a.shape = std::move(shape);
  a.bytes.resize(dtypeSize(dtype) * a.numElements());
  for (size_t i = 0; i < a.bytes.size(); ++i)
    a.bytes[i] = uint8_t(i * 37 + 11);
  if (dtype == DType::Bool)
    for (uint8_t &b : a.bytes)
      b &= 1;
  return a;
}

/// The arrays of make_fixtures.py's basic_arrays(), in order.
void checkBasic(const std::vector<Array> &arrays) {
  ASSERT_EQ(arrays.size(), 4u);
  EXPECT_EQ(arrays[0].name, "a");
  EXPECT_EQ(arrays[1].name, "v");
  EXPECT_EQ(arrays[2].name, "mask");
  EXPECT_EQ(arrays[3].name, "s");

  const Array &a = arrays[0];
  EXPECT_EQ(a.dtype, DType::F32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values<float>(a),
            (std::vector<float>{0.f, 0.5f, 1.f, 1.5f, 2.f, 2.5f}));

  const Array &v = arrays[1];
  EXPECT_EQ(v.dtype, DType::I64);
  EXPECT_EQ(v.shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(values<int64_t>(v),
            (std::vector<int64_t>{-3, 0, 7, int64_t(1) << 40}));

  const Array &mask = arrays[2];
  EXPECT_EQ(mask.dtype, DType::Bool);
  EXPECT_EQ(mask.shape, (std::vector<int64_t>{5}));
  EXPECT_EQ(mask.bytes, (std::vector<uint8_t>{1, 0, 1, 1, 0}));

  const Array &s = arrays[3];
  EXPECT_EQ(s.dtype, DType::F64);
  EXPECT_TRUE(s.shape.empty());
  EXPECT_EQ(s.numElements(), 1);
  ASSERT_EQ(s.bytes.size(), 8u);
  EXPECT_EQ(*s.data<double>(), 3.25);
}

void expectSameArrays(const std::vector<Array> &got,
                      const std::vector<Array> &want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].name, want[i].name);
    EXPECT_EQ(got[i].dtype, want[i].dtype) << want[i].name;
    EXPECT_EQ(got[i].shape, want[i].shape) << want[i].name;
    EXPECT_EQ(got[i].bytes, want[i].bytes) << want[i].name;
  }
}

std::vector<Array> everyWritableDtype() {
  return {patternArray("f16", DType::F16, {3}),
          patternArray("f32", DType::F32, {2, 3}),
          patternArray("f64", DType::F64, {}),
          patternArray("i8", DType::I8, {5}),
          patternArray("i16", DType::I16, {1, 1, 2}),
          patternArray("i32", DType::I32, {4}),
          patternArray("i64", DType::I64, {2, 2}),
          patternArray("u8", DType::U8, {7}),
          patternArray("u16", DType::U16, {3}),
          patternArray("u32", DType::U32, {2}),
          patternArray("u64", DType::U64, {1}),
          patternArray("bool", DType::Bool, {3, 2}),
          patternArray("empty", DType::F32, {0, 4}),
          patternArray("dir/nested", DType::I32, {2})};
}

} // namespace

TEST(Npz, DTypeNamesAndSizes) {
  EXPECT_EQ(dtypeSize(DType::BF16), 2u);
  EXPECT_EQ(dtypeSize(DType::F64), 8u);
  EXPECT_EQ(dtypeSize(DType::Bool), 1u);
  EXPECT_EQ(dtypeSize(DType::U32), 4u);
  EXPECT_STREQ(dtypeName(DType::F32), "f32");
  EXPECT_STREQ(dtypeName(DType::BF16), "bf16");
  EXPECT_STREQ(dtypeName(DType::I64), "i64");
  EXPECT_STREQ(dtypeName(DType::Bool), "bool");
}

TEST(Npz, ReadsNumpySavez) { checkBasic(readNpz(fixture("basic.npz"))); }

TEST(Npz, ReadsNumpySavezCompressed) {
  checkBasic(readNpz(fixture("basic_compressed.npz")));
}

TEST(Npz, ReadsZip64CentralDirectory) {
  checkBasic(readNpz(fixture("zip64.npz")));
}

TEST(Npz, ReadsEveryDtype) {
  std::vector<Array> arrays = readNpz(fixture("dtypes.npz"));
  ASSERT_EQ(arrays.size(), 13u);
  auto get = [&](const char *name, DType dtype) -> const Array & {
    const Array *a = findArray(arrays, name);
    EXPECT_NE(a, nullptr) << name;
    if (!a)
      return arrays[0];
    EXPECT_EQ(a->dtype, dtype) << name;
    return *a;
  };
  // IEEE half bits of 1.0, -2.5, 65504.
  EXPECT_EQ(values<uint16_t>(get("f16", DType::F16)),
            (std::vector<uint16_t>{0x3C00, 0xC100, 0x7BFF}));
  std::vector<float> f32 = values<float>(get("f32", DType::F32));
  ASSERT_EQ(f32.size(), 3u);
  EXPECT_EQ(f32[0], 1.5f);
  EXPECT_TRUE(f32[1] == 0.f && std::signbit(f32[1]));
  EXPECT_EQ(f32[2], 1e30f);
  const Array &f64 = get("f64", DType::F64);
  EXPECT_EQ(f64.shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(values<double>(f64), (std::vector<double>{0.1, -1e300}));
  EXPECT_EQ(values<int8_t>(get("i8", DType::I8)),
            (std::vector<int8_t>{-128, 127}));
  EXPECT_EQ(values<int16_t>(get("i16", DType::I16)),
            (std::vector<int16_t>{-32768, 32767}));
  EXPECT_EQ(values<int32_t>(get("i32", DType::I32)),
            (std::vector<int32_t>{INT32_MIN, INT32_MAX}));
  EXPECT_EQ(values<int64_t>(get("i64", DType::I64)),
            (std::vector<int64_t>{INT64_MIN, INT64_MAX}));
  EXPECT_EQ(values<uint8_t>(get("u8", DType::U8)),
            (std::vector<uint8_t>{0, 255}));
  EXPECT_EQ(values<uint16_t>(get("u16", DType::U16)),
            (std::vector<uint16_t>{0, 65535}));
  EXPECT_EQ(values<uint32_t>(get("u32", DType::U32)),
            (std::vector<uint32_t>{0, UINT32_MAX}));
  EXPECT_EQ(values<uint64_t>(get("u64", DType::U64)),
            (std::vector<uint64_t>{0, UINT64_MAX}));
  const Array &b = get("b", DType::Bool);
  EXPECT_EQ(b.shape, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(b.bytes, (std::vector<uint8_t>{1, 0}));
  const Array &empty = get("empty", DType::F32);
  EXPECT_EQ(empty.shape, (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(empty.numElements(), 0);
  EXPECT_TRUE(empty.bytes.empty());
  EXPECT_EQ(findArray(arrays, "nope"), nullptr);
}

TEST(Npz, ReadsNpyVersions) {
  Array m = readNpy(fixture("matrix.npy"));
  EXPECT_EQ(m.name, "matrix");
  EXPECT_EQ(m.dtype, DType::I32);
  EXPECT_EQ(m.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values<int32_t>(m), (std::vector<int32_t>{1, -2, 3, 40000}));

  Array v2 = readNpy(fixture("v2.npy"));
  EXPECT_EQ(v2.dtype, DType::F32);
  EXPECT_EQ(values<float>(v2), (std::vector<float>{1.25f, 2.5f}));

  Array v3 = readNpy(fixture("v3.npy"));
  EXPECT_EQ(v3.dtype, DType::U16);
  EXPECT_EQ(v3.shape, (std::vector<int64_t>{1}));
  EXPECT_EQ(values<uint16_t>(v3), (std::vector<uint16_t>{7}));
}

TEST(Npz, RejectsUnsupportedArrays) {
  EXPECT_EQ(errorOf([] { readNpz(fixture("fortran.npz")); }),
            fixture("fortran.npz") +
                ": array 'x': fortran-order arrays are not supported");
  EXPECT_EQ(errorOf([] { readNpy(fixture("fortran.npy")); }),
            fixture("fortran.npy") +
                ": fortran-order arrays are not supported");
  std::string msg = errorOf([] { readNpy(fixture("bigendian.npy")); });
  EXPECT_CONTAINS(msg, fixture("bigendian.npy"));
  EXPECT_CONTAINS(msg, "big-endian arrays are not supported");
  msg = errorOf([] { readNpy(fixture("object.npy")); });
  EXPECT_CONTAINS(msg, "object arrays are not supported");
  msg = errorOf([] { readNpy(fixture("complex.npy")); });
  EXPECT_CONTAINS(msg, "unsupported dtype '<c8'");
}

TEST(Npz, MissingFile) {
  std::string path = tempPath("does_not_exist.npz");
  std::string msg = errorOf([&] { readNpz(path); });
  EXPECT_CONTAINS(msg, path);
  EXPECT_CONTAINS(msg, "cannot open");
  msg = errorOf([&] { readNpy(path); });
  EXPECT_CONTAINS(msg, path);
}

TEST(Npz, WrongMagic) {
  std::string path = tempPath("garbage.npy");
  writeFile(path, std::vector<uint8_t>(200, 'x'));
  std::string msg = errorOf([&] { readNpy(path); });
  EXPECT_EQ(msg, path + ": not an .npy file (bad magic)");
  msg = errorOf([&] { readNpz(path); });
  EXPECT_CONTAINS(msg, path + ": not a zip archive");
  msg = errorOf([] { readNpz(fixture("matrix.npy")); });
  EXPECT_CONTAINS(msg, "is an .npy file, not an .npz archive");
  std::remove(path.c_str());
}

TEST(Npz, EveryTruncationIsAnError) {
  for (const char *name : {"matrix.npy", "v3.npy"}) {
    std::vector<uint8_t> whole = readFile(fixture(name));
    std::string path = tempPath(std::string("trunc_") + name);
    for (size_t n = 0; n < whole.size(); ++n) {
      writeFile(path, {whole.begin(), whole.begin() + n});
      EXPECT_CONTAINS(errorOf([&] { readNpy(path); }), path);
    }
    std::remove(path.c_str());
  }
  for (const char *name : {"basic.npz", "basic_compressed.npz", "zip64.npz"}) {
    std::vector<uint8_t> whole = readFile(fixture(name));
    ASSERT_FALSE(whole.empty());
    std::string path = tempPath(std::string("trunc_") + name);
    for (size_t n = 0; n < whole.size(); ++n) {
      writeFile(path, {whole.begin(), whole.begin() + n});
      EXPECT_CONTAINS(errorOf([&] { readNpz(path); }), path);
    }
    std::remove(path.c_str());
  }
}

// Flipping any single byte must give either a successful read or an Error,
// never a crash (run under ASan to also rule out out-of-bounds reads).
TEST(Npz, CorruptBytesNeverCrash) {
  for (const char *name : {"basic.npz", "basic_compressed.npz", "zip64.npz"}) {
    std::vector<uint8_t> whole = readFile(fixture(name));
    std::string path = tempPath(std::string("flip_") + name);
    for (size_t i = 0; i < whole.size(); ++i) {
      std::vector<uint8_t> bad = whole;
      bad[i] ^= 0xFF;
      writeFile(path, bad);
      try {
        readNpz(path);
      } catch (const Error &e) {
        EXPECT_CONTAINS(e.what(), path);
      }
    }
    std::remove(path.c_str());
  }
}

TEST(Npz, CorruptDataFailsCrc) {
  std::vector<uint8_t> bytes = readFile(fixture("basic.npz"));
  // The first .npy image in the archive is member 'a'.
  const uint8_t magic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  auto it = std::search(bytes.begin(), bytes.end(), magic, magic + 6);
  ASSERT_NE(it, bytes.end());
  it[20] ^= 0x01;
  std::string path = tempPath("crc.npz");
  writeFile(path, bytes);
  EXPECT_EQ(errorOf([&] { readNpz(path); }),
            path + ": array 'a': CRC mismatch (corrupt data)");
  std::remove(path.c_str());
}

TEST(Npz, NpzRoundTrip) {
  std::vector<Array> arrays = everyWritableDtype();
  for (bool zip64 : {false, true}) {
    std::string path = tempPath(zip64 ? "rt64.npz" : "rt.npz");
    writeNpz(path, arrays, zip64);
    EXPECT_FALSE(exists(path + ".tmp"));
    expectSameArrays(readNpz(path), arrays);
    std::remove(path.c_str());
  }
}

TEST(Npz, EmptyNpzRoundTrip) {
  std::string path = tempPath("empty.npz");
  writeNpz(path, {});
  EXPECT_TRUE(readNpz(path).empty());
  std::remove(path.c_str());
}

TEST(Npz, NpzOverwriteReplacesFile) {
  std::string path = tempPath("overwrite.npz");
  writeNpz(path, everyWritableDtype());
  std::vector<Array> second = {patternArray("only", DType::I64, {3})};
  writeNpz(path, second);
  expectSameArrays(readNpz(path), second);
  std::remove(path.c_str());
}

TEST(Npz, NpyRoundTrip) {
  for (const Array &a : everyWritableDtype()) {
    if (a.name.find('/') != std::string::npos)
      continue;
    std::string path = tempPath(a.name + ".npy");
    writeNpy(path, a);
    EXPECT_FALSE(exists(path + ".tmp"));
    Array back = readNpy(path);
    EXPECT_EQ(back.name, tempPath(a.name).substr(::testing::TempDir().size()));
    EXPECT_EQ(back.dtype, a.dtype) << a.name;
    EXPECT_EQ(back.shape, a.shape) << a.name;
    EXPECT_EQ(back.bytes, a.bytes) << a.name;
    std::remove(path.c_str());
  }
}

// The header layout is numpy's own, so a re-written file is byte-identical.
TEST(Npz, NpyHeaderMatchesNumpy) {
  std::string path = tempPath("matrix.npy");
  writeNpy(path, readNpy(fixture("matrix.npy")));
  EXPECT_EQ(readFile(path), readFile(fixture("matrix.npy")));
  std::remove(path.c_str());
}

TEST(Npz, WriterRejectsBadArrays) {
  std::string path = tempPath("bad.npz");
  Array bf16 = patternArray("w", DType::BF16, {2});
  EXPECT_EQ(errorOf([&] { writeNpy(path, bf16); }),
            path + ": array 'w': bf16 has no npy dtype");
  EXPECT_EQ(errorOf([&] { writeNpz(path, {bf16}); }),
            path + ": array 'w': bf16 has no npy dtype");

  Array shortData = patternArray("x", DType::F32, {2, 3});
  shortData.bytes.pop_back();
  EXPECT_CONTAINS(errorOf([&] { writeNpz(path, {shortData}); }),
                  path + ": array 'x': has 23 bytes");

  Array a = patternArray("a", DType::U8, {1});
  EXPECT_CONTAINS(errorOf([&] {
                    writeNpz(path, {a, a});
                  }),
                  "duplicate array name");
  EXPECT_CONTAINS(
      errorOf([&] { writeNpz(path, {patternArray("", DType::U8, {})}); }),
      "empty name");
  // Nothing may be left behind by a rejected write.
  EXPECT_FALSE(exists(path));
  EXPECT_FALSE(exists(path + ".tmp"));

  std::string noDir = tempPath("no_such_dir/x.npz");
  EXPECT_CONTAINS(errorOf([&] { writeNpz(noDir, {a}); }), noDir);
}

// np.load must read what writeNpz writes; skipped where numpy is missing.
TEST(Npz, NumpyLoadsWrittenNpz) {
  if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no /usr/bin/python3 with numpy";
  std::vector<Array> arrays = readNpz(fixture("basic.npz"));
  std::string script = tempPath("check.py");
  std::ofstream(script) << R"(import sys
import numpy as np
for path in sys.argv[1:]:
    with np.load(path) as z:
        assert list(z.keys()) == ['a', 'v', 'mask', 's'], list(z.keys())
        assert z['a'].dtype == np.float32 and z['a'].shape == (2, 3)
        assert (z['a'] == np.arange(6, dtype=np.float32).reshape(2, 3) / 2).all()
        assert z['v'].tolist() == [-3, 0, 7, 2**40]
        assert z['mask'].tolist() == [True, False, True, True, False]
        assert z['s'].shape == () and z['s'] == 3.25
)";
  std::string plain = tempPath("np.npz"), zip64 = tempPath("np64.npz");
  writeNpz(plain, arrays);
  writeNpz(zip64, arrays, /*forceZip64=*/true);
  EXPECT_EQ(
      std::system(
          ("/usr/bin/python3 " + script + " " + plain + " " + zip64).c_str()),
      0);
  std::remove(script.c_str());
  std::remove(plain.c_str());
  std::remove(zip64.c_str());
}
