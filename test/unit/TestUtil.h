//===- TestUtil.h - helpers shared by the unit tests ------------*- C++ -*-===//
//
// Header-only and free of MLIR, so the runtime-only build's tests use it too.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_TEST_UNIT_TESTUTIL_H
#define TCC_TEST_UNIT_TESTUTIL_H

#include "data/npz.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>
#include <vector>

namespace testutil {

using tcc::data::Array;
using tcc::data::DType;

inline std::string fixture(const std::string &name) {
  return std::string(TCC_FIXTURE_DIR) + "/" + name;
}

/// `tag` keeps the test files apart; the pid keeps processes apart, as ctest
/// may run the discovered tests in parallel.
inline std::string tempPath(const std::string &tag, const std::string &name) {
  return ::testing::TempDir() + "tcc_" + tag + "_" + std::to_string(getpid()) +
         "_" + name;
}

inline std::vector<uint8_t> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

inline void writeBytes(const std::string &path, const void *p, size_t n) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char *>(p), n);
}

inline void writeFile(const std::string &path,
                      const std::vector<uint8_t> &bytes) {
  writeBytes(path, bytes.data(), bytes.size());
}

inline bool exists(const std::string &path) {
  return std::ifstream(path).good();
}

template <class T>
Array makeArray(const std::string &name, DType dtype,
                std::vector<int64_t> shape, const std::vector<T> &vals) {
  Array a;
  a.name = name;
  a.dtype = dtype;
  a.shape = std::move(shape);
  a.bytes.resize(vals.size() * sizeof(T));
  if (!vals.empty())
    std::memcpy(a.bytes.data(), vals.data(), a.bytes.size());
  return a;
}

inline Array f32(std::vector<int64_t> shape, const std::vector<float> &v) {
  return makeArray("", DType::F32, std::move(shape), v);
}

inline Array i64(std::vector<int64_t> shape, const std::vector<int64_t> &v) {
  return makeArray("", DType::I64, std::move(shape), v);
}

template <class T> std::vector<T> values(const Array &a) {
  return std::vector<T>(a.data<T>(), a.data<T>() + a.numElements());
}

/// Elements of any float, integer or bool array as doubles.
inline std::vector<double> valuesAsDouble(const Array &a) {
  std::vector<double> out;
  for (int64_t i = 0; i < a.numElements(); ++i) {
    switch (a.dtype) {
    case DType::F32:
      out.push_back(a.data<float>()[i]);
      break;
    case DType::F64:
      out.push_back(a.data<double>()[i]);
      break;
    case DType::I32:
      out.push_back(a.data<int32_t>()[i]);
      break;
    case DType::I64:
      out.push_back(double(a.data<int64_t>()[i]));
      break;
    case DType::Bool:
      out.push_back(a.data<uint8_t>()[i]);
      break;
    default:
      ADD_FAILURE() << "unexpected dtype";
    }
  }
  return out;
}

/// The message of the tcc::data::Error that `f` throws; any other exception
/// escapes and fails the test.
template <class F> std::string errorOf(F &&f) {
  try {
    f();
  } catch (const tcc::data::Error &e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    return msg;
  }
  ADD_FAILURE() << "expected tcc::data::Error";
  return "";
}

/// The directory holding this test binary (the build's bin/, where the tcc
/// driver is built too).
inline std::string binDir() {
  char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0)
    return ".";
  std::string exe(path, n);
  return exe.substr(0, exe.rfind('/'));
}

/// Exports test/models' `model` with PyTorch (/usr/bin/python3) and builds
/// its training step with the tcc driver of this build:
/// `tcc compile model.onnx FLAGS --emit=mlir -o <dir>/step.mlir`. On
/// success sets `step` to the .mlir path; on failure returns false with the
/// failing command and its output in `error`. Tests skip when bin/tcc is
/// not built (haveDriver()).
inline bool buildModelStep(const std::string &tag, const std::string &model,
                           const std::string &flags, std::string &step,
                           std::string &error) {
  std::string root = std::string(TCC_FIXTURE_DIR) + "/../../..";
  std::string dir = tempPath(tag, model);
  std::string log = dir + ".log";
  step = dir + "/step.mlir";
  for (const std::string &command :
       {"/usr/bin/python3 '" + root + "/test/models/export.py' --model " +
            model + " --out '" + dir + "'",
        "'" + binDir() + "/tcc' compile '" + dir + "/model.onnx' " + flags +
            " --emit=mlir -o '" + step + "'"}) {
    if (std::system((command + " > '" + log + "' 2>&1").c_str()) != 0) {
      std::vector<uint8_t> out = readFile(log);
      error = command + "\n" + std::string(out.begin(), out.end());
      return false;
    }
  }
  return true;
}

/// Whether the tcc driver is built next to this test binary.
inline bool haveDriver() { return exists(binDir() + "/tcc"); }

} // namespace testutil

#define EXPECT_CONTAINS(haystack, needle)                                      \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos)             \
      << "'" << (haystack) << "' lacks '" << (needle) << "'"

#endif // TCC_TEST_UNIT_TESTUTIL_H
