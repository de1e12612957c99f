// The gradient-check harness shared by GradCheckTest.cpp and
// GradCheckNnTest.cpp: for a case's op, f(x...) = sum(op(x...) * W) with a
// fixed random W is differentiated by the tcc-autodiff pass; the resulting
// @f_grad, run by the interpreter in float64 (promoteToF64), must match
// float64 central finite differences of @f, and its f32 run must agree too
// (which exercises the float instantiation of the backward kernels).
#ifndef TCC_TEST_UNIT_GRADCHECK_H
#define TCC_TEST_UNIT_GRADCHECK_H

#include "tcc/Interp/Interpreter.h"
#include "tcc/TccOps.h"
#include "tcc/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <ostream>
#include <random>

namespace gradcheck {

using namespace mlir;
using tcc::data::Array;
using tcc::data::DType;

/// Inputs are kept away from 0 (the kink of relu, abs, max with 0) and,
/// for log / sqrt / rsqrt / a pow base / a divisor, positive.
enum class Range { Signed, Positive };

struct Arg {
  std::vector<int64_t> shape;
  Range range = Range::Signed;
  std::vector<float> values = {}; // explicit values instead of random ones
};

struct GradCase {
  std::string name;
  std::vector<Arg> args;    // f32 arguments %a0, %a1, ...: all differentiated
  std::string body;         // defines %y from them
  std::vector<int64_t> out; // %y's shape (f32)
  /// |grad - fd| <= tol * max(1, |fd|): the FD error in float64 with
  /// eps = 1e-6 is about 1e-9 here, so 1e-6 leaves room only for real bugs.
  double tol = 1e-6;
  std::vector<float> w = {}; // W, when not random
};

inline std::string ty(const std::vector<int64_t> &shape,
                      const char *elem = "f32") {
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += std::to_string(d) + "x";
  return s + elem + ">";
}

inline int64_t count(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

inline Array makeArray(DType dtype, const std::vector<int64_t> &shape) {
  Array a;
  a.dtype = dtype;
  a.shape = shape;
  a.bytes.resize(count(shape) * (dtype == DType::F64 ? 8 : 4));
  return a;
}

inline double at(const Array &a, int64_t i) {
  return a.dtype == DType::F64 ? a.data<double>()[i] : a.data<float>()[i];
}

/// The MLIR text of @f: the case's body, times W, summed to a scalar.
inline std::string buildSource(const GradCase &c, std::mt19937 &rng) {
  std::uniform_real_distribution<float> unit(-1, 1);
  std::string hex = "0x";
  for (int64_t i = 0; i < count(c.out); ++i) {
    float w = c.w.empty() ? unit(rng) : c.w[i];
    uint8_t bytes[4];
    std::memcpy(bytes, &w, 4);
    for (uint8_t b : bytes) {
      const char *digits = "0123456789ABCDEF";
      hex += digits[b >> 4];
      hex += digits[b & 15];
    }
  }
  std::string args, axes, t = ty(c.out);
  for (size_t i = 0; i < c.args.size(); ++i)
    args +=
        (i ? ", %a" : "%a") + std::to_string(i) + ": " + ty(c.args[i].shape);
  for (size_t d = 0; d < c.out.size(); ++d)
    axes += (d ? ", " : ": ") + std::to_string(d);
  return "func.func @f(" + args +
         ") -> tensor<f32> attributes {tcc.differentiate} {\n" + c.body +
         "\n  %w = tcc.constant dense<\"" + hex + "\"> : " + t +
         "\n  %yw = tcc.mul %y, %w : (" + t + ", " + t + ") -> " + t +
         "\n  %l = tcc.reduce_sum %yw {axes = array<i64" + axes + ">} : (" + t +
         ") -> tensor<f32>\n  return %l : tensor<f32>\n}\n";
}

class GradCheck : public ::testing::TestWithParam<GradCase> {
protected:
  GradCheck() { context.loadDialect<tcc::TccDialect, func::FuncDialect>(); }

  /// Parses and differentiates the case; false (with a failure) if it cannot.
  bool prepare(const GradCase &c, std::mt19937 &rng) {
    std::string source = buildSource(c, rng);
    module = parseSourceString<ModuleOp>(source, &context);
    if (!module) {
      ADD_FAILURE() << "does not parse:\n" << source;
      return false;
    }
    PassManager pm(&context);
    pm.addPass(tcc::createAutodiff());
    if (failed(pm.run(*module))) {
      ADD_FAILURE() << "tcc-autodiff failed on:\n" << source;
      return false;
    }
    f = module->lookupSymbol<func::FuncOp>("f");
    fGrad = module->lookupSymbol<func::FuncOp>("f_grad");
    return f && fGrad;
  }

  std::vector<Array> run(func::FuncOp func, const std::vector<Array> &inputs,
                         bool promote) {
    std::vector<Array> results;
    std::string error;
    tcc::interp::Options options;
    options.promoteToF64 = promote;
    EXPECT_TRUE(tcc::interp::run(func, inputs, results, error, options))
        << error;
    return results;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  func::FuncOp f, fGrad;
};

/// Random f32 inputs (as f32 and as the same values in f64).
inline void makeInputs(const GradCase &c, std::mt19937 &rng,
                       std::vector<Array> &in32, std::vector<Array> &in64) {
  std::uniform_real_distribution<float> mag(0.2f, 2.0f), pos(0.5f, 2.0f);
  std::bernoulli_distribution sign;
  for (const Arg &arg : c.args) {
    Array a32 = makeArray(DType::F32, arg.shape),
          a64 = makeArray(DType::F64, arg.shape);
    for (int64_t i = 0; i < count(arg.shape); ++i) {
      float v = !arg.values.empty() ? arg.values[i]
                : arg.range == Range::Positive
                    ? pos(rng)
                    : (sign(rng) ? 1 : -1) * mag(rng);
      a32.data<float>()[i] = v;
      a64.data<double>()[i] = v;
    }
    in32.push_back(a32);
    in64.push_back(a64);
  }
}

inline std::string caseName(const ::testing::TestParamInfo<GradCase> &info) {
  return info.param.name;
}

/// gtest prints a parameter that fails by its name, not its bytes.
inline void PrintTo(const GradCase &c, std::ostream *os) { *os << c.name; }

} // namespace gradcheck

#endif // TCC_TEST_UNIT_GRADCHECK_H
