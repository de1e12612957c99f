//===- SafetensorsTest.cpp - tests for runtime/data/safetensors -----------===//
//
// Fixtures come from test/unit/fixtures/make_safetensors_fixtures.py, whose
// writer follows the reference serializer; the values asserted here are the
// ones that script writes. The hand-written byte layouts below are the
// reference implementation's own serialization test vectors.
//
//===----------------------------------------------------------------------===//

#include "data/safetensors.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
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
  return testutil::tempPath("st", name);
}

/// A file of the 8-byte length, `header` verbatim and `data`.
std::vector<uint8_t> fileOf(const std::string &header,
                            const std::vector<uint8_t> &data = {}) {
  std::vector<uint8_t> out;
  for (int i = 0; i < 8; ++i)
    out.push_back(uint8_t(uint64_t(header.size()) >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::vector<uint8_t> f32Bytes(std::vector<float> v) {
  std::vector<uint8_t> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

} // namespace

TEST(Safetensors, ReadsReferenceLayout) {
  std::map<std::string, std::string> md{{"stale", "x"}};
  std::vector<Array> arrays =
      readSafetensors(fixture("basic.safetensors"), &md);
  EXPECT_EQ(md, (std::map<std::string, std::string>{{"format", "pt"},
                                                    {"note", "tcc fixture"}}));
  // Data order: descending dtype alignment, then name.
  std::vector<std::string> names;
  for (const Array &a : arrays)
    names.push_back(a.name);
  EXPECT_EQ(names, (std::vector<std::string>{"step", "f64", "embed.weight",
                                             "empty", "w.bf16", "ln.bias",
                                             "ids", "i8", "mask"}));
  ASSERT_EQ(arrays.size(), 9u);

  EXPECT_EQ(arrays[0].dtype, DType::I64);
  EXPECT_TRUE(arrays[0].shape.empty());
  EXPECT_EQ(values<int64_t>(arrays[0]), (std::vector<int64_t>{7}));
  EXPECT_EQ(values<double>(arrays[1]), (std::vector<double>{0.1}));
  EXPECT_EQ(arrays[2].shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(values<float>(arrays[2]),
            (std::vector<float>{-1.f, -0.5f, 0.f, 0.5f, 1.f, 1.5f}));
  EXPECT_EQ(arrays[3].shape, (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(arrays[3].bytes.empty());
  EXPECT_EQ(arrays[4].dtype, DType::BF16);
  EXPECT_EQ(values<uint16_t>(arrays[4]),
            (std::vector<uint16_t>{0x3F80, 0xC000}));
  EXPECT_EQ(arrays[5].dtype, DType::F16); // 1.5 and -2.0 as IEEE half bits.
  EXPECT_EQ(values<uint16_t>(arrays[5]),
            (std::vector<uint16_t>{0x3E00, 0xC000}));
  EXPECT_EQ(arrays[6].dtype, DType::U16);
  EXPECT_EQ(values<uint16_t>(arrays[6]), (std::vector<uint16_t>{0, 1, 65535}));
  EXPECT_EQ(values<int8_t>(arrays[7]), (std::vector<int8_t>{-128, 127}));
  EXPECT_EQ(arrays[8].dtype, DType::Bool);
  EXPECT_EQ(arrays[8].bytes, (std::vector<uint8_t>{1, 0, 0, 1}));
}

// What we write must be what the reference writes, whatever the input order.
TEST(Safetensors, WriterMatchesReferenceBytes) {
  std::string ref = fixture("basic.safetensors");
  std::map<std::string, std::string> md;
  std::vector<Array> arrays = readSafetensors(ref, &md);
  std::string path = tempPath("rewrite.safetensors");
  writeSafetensors(path, arrays, md);
  EXPECT_EQ(readFile(path), readFile(ref));
  std::reverse(arrays.begin(), arrays.end());
  writeSafetensors(path, arrays, md);
  EXPECT_EQ(readFile(path), readFile(ref));
  EXPECT_FALSE(exists(path + ".tmp"));
  std::remove(path.c_str());
}

// The reference's test_serialization_forced_alignement and test_empty.
TEST(Safetensors, ExactBytesOfTinyFiles) {
  std::string path = tempPath("tiny.safetensors");
  writeSafetensors(path, {makeArray<float>("attn0", DType::F32, {1, 1, 2, 3},
                                           {0, 1, 2, 3, 4, 5})});
  std::string header =
      R"({"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}})";
  ASSERT_EQ(header.size(), 65u);
  std::vector<uint8_t> want =
      fileOf(header + std::string(7, ' '), f32Bytes({0, 1, 2, 3, 4, 5}));
  ASSERT_EQ(want[0], 72);
  EXPECT_EQ(readFile(path), want);

  writeSafetensors(path, {});
  EXPECT_EQ(readFile(path), fileOf("{}      "));
  writeSafetensors(path, {}, {{"framework", "pt"}});
  EXPECT_EQ(readFile(path), fileOf(R"({"__metadata__":{"framework":"pt"}})" +
                                   std::string(5, ' ')));
  std::map<std::string, std::string> md;
  EXPECT_TRUE(readSafetensors(path, &md).empty());
  EXPECT_EQ(md.at("framework"), "pt");
  std::remove(path.c_str());
}

TEST(Safetensors, ReadsAnyOrderUnpaddedHeader) {
  std::map<std::string, std::string> md{{"stale", "x"}};
  std::vector<Array> arrays =
      readSafetensors(fixture("unordered.safetensors"), &md);
  EXPECT_TRUE(md.empty());
  ASSERT_EQ(arrays.size(), 3u);
  EXPECT_EQ(arrays[0].name, "flag");
  EXPECT_EQ(arrays[0].bytes, (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_EQ(arrays[1].name, "b"); // f32 data at offset 3, misaligned.
  EXPECT_EQ(arrays[1].shape, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(values<float>(arrays[1]), (std::vector<float>{2.5f, -1.f}));
  EXPECT_EQ(arrays[2].name, "a");
  EXPECT_EQ(values<int32_t>(arrays[2]), (std::vector<int32_t>{-7, 9}));
}

TEST(Safetensors, RoundTripEveryDtype) {
  std::vector<Array> arrays;
  for (int d = 0; d <= int(DType::Bool); ++d) {
    DType dtype = DType(d);
    Array a;
    a.name = std::string("t_") + dtypeName(dtype);
    a.dtype = dtype;
    a.shape = d % 3 == 0 ? std::vector<int64_t>{} : std::vector<int64_t>{2, 3};
    a.bytes.resize(dtypeSize(dtype) * a.numElements());
    for (size_t i = 0; i < a.bytes.size(); ++i)
      a.bytes[i] = dtype == DType::Bool ? i % 2 : uint8_t(i * 37 + d);
    arrays.push_back(std::move(a));
  }
  arrays.push_back(makeArray<int32_t>("zero", DType::I32, {4, 0}, {}));
  arrays.push_back(makeArray<float>("ünï/cødé", DType::F32, {1}, {3.f}));
  std::string path = tempPath("every.safetensors");
  writeSafetensors(path, arrays, {{"k", "v\"quoted\"\n"}});
  std::map<std::string, std::string> md;
  std::vector<Array> back = readSafetensors(path, &md);
  EXPECT_EQ(md.at("k"), "v\"quoted\"\n");
  ASSERT_EQ(back.size(), arrays.size());
  for (const Array &a : arrays) {
    const Array *b = findArray(back, a.name);
    ASSERT_NE(b, nullptr) << a.name;
    EXPECT_EQ(b->dtype, a.dtype) << a.name;
    EXPECT_EQ(b->shape, a.shape) << a.name;
    EXPECT_EQ(b->bytes, a.bytes) << a.name;
  }
  EXPECT_STREQ(safetensorsDTypeName(DType::BF16), "BF16");
  EXPECT_STREQ(safetensorsDTypeName(DType::Bool), "BOOL");
  std::remove(path.c_str());
}

TEST(Safetensors, MissingFile) {
  std::string path = tempPath("absent.safetensors");
  EXPECT_EQ(errorOf([&] { readSafetensors(path); }),
            path + ": cannot open: No such file or directory");
}

TEST(Safetensors, EveryTruncationIsAnError) {
  std::vector<uint8_t> whole = readFile(fixture("basic.safetensors"));
  std::string path = tempPath("trunc.safetensors");
  for (size_t n = 0; n < whole.size(); ++n) {
    writeFile(path, {whole.begin(), whole.begin() + n});
    EXPECT_CONTAINS(errorOf([&] { readSafetensors(path); }), path);
  }
  std::vector<uint8_t> longer = whole;
  longer.push_back(0);
  writeFile(path, longer);
  EXPECT_EQ(errorOf([&] { readSafetensors(path); }),
            path + ": 1 bytes after the last tensor's data");
  std::remove(path.c_str());
}

TEST(Safetensors, CorruptHeaders) {
  std::string path = tempPath("bad.safetensors");
  auto errorFor = [&](const std::vector<uint8_t> &bytes) {
    writeFile(path, bytes);
    return errorOf([&] { readSafetensors(path); });
  };
  auto u8 = [](const std::string &name, int b, int e) {
    return "\"" + name + R"(":{"dtype":"U8","shape":[)" +
           std::to_string(e - b) + R"(],"data_offsets":[)" + std::to_string(b) +
           "," + std::to_string(e) + "]}";
  };
  std::vector<uint8_t> three{1, 2, 3};
  std::string ctxA = path + ": tensor 'a': ";

  EXPECT_EQ(errorFor(fileOf("{" + u8("a", 1, 3) + "}", three)),
            ctxA + "gap of 1 bytes before the data (offsets must be "
                   "contiguous)");
  EXPECT_EQ(
      errorFor(fileOf("{" + u8("a", 0, 2) + "," + u8("b", 1, 3) + "}", three)),
      path + ": tensor 'b': data overlaps tensor 'a'");
  EXPECT_EQ(errorFor(fileOf(
                R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})",
                {0, 0, 0, 0})),
            ctxA + "data_offsets [0, 4] hold 4 bytes but F32 [2] needs 8");
  EXPECT_EQ(errorFor(fileOf("{" + u8("a", 0, 4) + "}", three)),
            ctxA + "data_offsets [0, 4] extend past the 3 data bytes in the "
                   "file (truncated file?)");
  EXPECT_EQ(errorFor(fileOf(
                R"({"a":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})",
                {0})),
            ctxA + "unsupported dtype 'F8_E4M3'");
  EXPECT_EQ(errorFor(fileOf(
                R"({"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}})")),
            ctxA + "'shape' must hold non-negative integers");
  EXPECT_EQ(
      errorFor(fileOf(
          R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1.0]}})", {0})),
      ctxA + "'data_offsets' must hold non-negative integers");
  EXPECT_EQ(errorFor(fileOf(R"({"a":{"dtype":"U8","shape":[1]}})", {0})),
            ctxA + "header entry lacks 'data_offsets'");
  EXPECT_EQ(errorFor(fileOf(R"({"a":{"dtype":"F64","shape":)"
                            R"([4611686018427387904,4],"data_offsets":[0,8]}})",
                            {0})),
            ctxA + "shape [4611686018427387904, 4] is too large");
  EXPECT_EQ(errorFor(fileOf(R"({"__metadata__":{"k":1}})")),
            path + ": '__metadata__' value of 'k' is not a string");
  EXPECT_EQ(errorFor(fileOf("{\"a\":")), path + ": malformed JSON header");
  EXPECT_EQ(errorFor(fileOf("[1]     ")),
            path + ": not a safetensors file (header does not start with '{')");
  EXPECT_EQ(errorFor(fileOf("{\"\xff\":{}}")),
            path + ": malformed JSON header");
  std::vector<uint8_t> huge = fileOf("{}");
  huge[5] = 1; // 2^40
  EXPECT_EQ(errorFor(huge),
            path + ": header length 1099511627778 is too large (not a "
                   "safetensors file?)");
  std::vector<uint8_t> past = fileOf("{}");
  past[0] = 9;
  EXPECT_EQ(errorFor(past), path + ": truncated file (header of 9 bytes "
                                   "extends past the end)");
  std::remove(path.c_str());
}

// Any single corrupted byte gives a successful read or an Error, never a
// crash (run under ASan to also rule out out-of-bounds reads).
TEST(Safetensors, CorruptBytesNeverCrash) {
  std::vector<uint8_t> whole = readFile(fixture("basic.safetensors"));
  std::string path = tempPath("flip.safetensors");
  for (size_t i = 0; i < whole.size(); ++i)
    for (uint8_t x : {0x01, 0x20, 0xFF}) {
      std::vector<uint8_t> bad = whole;
      bad[i] ^= x;
      writeFile(path, bad);
      try {
        readSafetensors(path);
      } catch (const Error &e) {
        EXPECT_CONTAINS(e.what(), path);
      }
    }
  std::remove(path.c_str());
}

TEST(Safetensors, WriterRejectsBadArrays) {
  std::string path = tempPath("reject.safetensors");
  Array ok = makeArray<float>("w", DType::F32, {2}, {1, 2});
  Array shortBytes = ok;
  shortBytes.bytes.pop_back();
  Array reserved = ok, empty = ok, badUtf8 = ok;
  reserved.name = "__metadata__";
  empty.name = "";
  badUtf8.name = "w\xff";
  EXPECT_EQ(errorOf([&] {
              writeSafetensors(path, {ok, ok});
            }),
            path + ": tensor 'w': duplicate tensor name");
  EXPECT_EQ(errorOf([&] { writeSafetensors(path, {shortBytes}); }),
            path + ": tensor 'w': holds 7 bytes but f32 [2] needs 8");
  EXPECT_EQ(errorOf([&] { writeSafetensors(path, {reserved}); }),
            path + ": tensor '__metadata__': the name is reserved for the "
                   "metadata map");
  EXPECT_EQ(errorOf([&] { writeSafetensors(path, {empty}); }),
            path + ": empty tensor name");
  EXPECT_CONTAINS(errorOf([&] { writeSafetensors(path, {badUtf8}); }),
                  "the name is not valid UTF-8");
  EXPECT_FALSE(exists(path));
  EXPECT_FALSE(exists(path + ".tmp"));

  std::string noDir = tempPath("no_such_dir/x.safetensors");
  EXPECT_CONTAINS(errorOf([&] { writeSafetensors(noDir, {ok}); }), noDir);
}

// Streaming writes the reference file from sources that hand over their
// bytes piece by piece, and refuses a source whose byte count is not its
// shape's, leaving nothing behind.
TEST(Safetensors, StreamedWriteMatchesAndChecksByteCounts) {
  std::string ref = fixture("basic.safetensors");
  std::map<std::string, std::string> md;
  std::vector<Array> arrays = readSafetensors(ref, &md);
  std::vector<TensorSource> sources;
  for (const Array &a : arrays)
    sources.push_back({a.name, a.dtype, a.shape, [&a](const ByteSink &sink) {
                         // One byte at a time: pieces need not be elements.
                         for (uint8_t b : a.bytes)
                           sink(&b, 1);
                       }});
  std::string path = tempPath("streamed.safetensors");
  streamSafetensors(path, sources, md);
  EXPECT_EQ(readFile(path), readFile(ref));
  std::remove(path.c_str());

  uint8_t bytes[12] = {};
  auto source = [&](size_t n) {
    return TensorSource{"w",
                        DType::F32,
                        {2},
                        [&bytes, n](const ByteSink &sink) { sink(bytes, n); }};
  };
  EXPECT_EQ(errorOf([&] { streamSafetensors(path, {source(4)}); }),
            path + ": tensor 'w': its source gave 4 bytes but f32 [2] needs 8");
  EXPECT_EQ(errorOf([&] { streamSafetensors(path, {source(12)}); }),
            path + ": tensor 'w': its source gave more than the 8 bytes of "
                   "f32 [2]");
  EXPECT_FALSE(exists(path));
  EXPECT_FALSE(exists(path + ".tmp"));
}

// An independent reader (json + numpy) must accept what we write; skipped
// where numpy is missing.
TEST(Safetensors, PythonReadsWrittenFile) {
  if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no /usr/bin/python3 with numpy";
  std::map<std::string, std::string> md;
  std::vector<Array> arrays =
      readSafetensors(fixture("basic.safetensors"), &md);
  std::reverse(arrays.begin(), arrays.end());
  std::string path = tempPath("py.safetensors");
  writeSafetensors(path, arrays, md);
  std::string cmd = "/usr/bin/python3 " +
                    fixture("make_safetensors_fixtures.py") + " --check " +
                    path;
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  std::remove(path.c_str());
}
