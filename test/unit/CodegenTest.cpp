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
#include "TestUtil.h"

#include "data/half.h"
#include "kernels/tcc_kernel.h"

#include "exec/ExecOps.h"
#include "tcc/Codegen/KernelEmitter.h"
#include "tcc/Interp/Interpreter.h"
#include "tcc/TccOps.h"
#include "tcc/Transforms/Passes.h"
#include "Toolchain.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringSet.h"

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <dlfcn.h>
#include <map>
#include <set>
#include <unistd.h>

using namespace mlir;
using namespace testutil;
namespace codegen = tcc::codegen;

namespace {

// Chains with row-bias, [4, 1] column and scalar broadcasting, both GELU
// forms and their gradients, compare/where with an i1 kernel input and
// output, saturating casts, sigmoid, pow, NaN-propagating max, rsqrt.
const char *kChains = R"mlir(
  func.func @chains(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %b: tensor<8xf32>,
                    %c: tensor<4x1xf32>, %s: tensor<f32>, %g: tensor<4x8xf32>)
      -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
          tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xi1>) {
    %zero = tcc.constant dense<0.0> : tensor<f32>
    %half = tcc.constant dense<0.5> : tensor<f32>
    %big = tcc.constant dense<4.0e18> : tensor<f32>
    %bigger = tcc.constant dense<1.0e9> : tensor<f32>
    %inf = tcc.constant dense<0x7F800000> : tensor<f32>
    %0 = tcc.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %1 = tcc.gelu %0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %2 = tcc.mul %1, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %3 = tcc.mul %y, %c : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
    %4 = tcc.gelu %3 {approximate = #tcc<gelu_approx tanh>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %5 = tcc.sub %4, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %6 = tcc.gelu_grad %x, %g : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %7 = tcc.gelu_grad %y, %g {approximate = #tcc<gelu_approx tanh>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %8 = tcc.add %6, %7 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %m = tcc.cmp gt, %x, %zero : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xi1>
    %9 = tcc.sigmoid %y : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %10 = tcc.where %m, %9, %x : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %11 = tcc.mul %x, %big : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %12 = tcc.cast %11 : (tensor<4x8xf32>) -> tensor<4x8xi64>
    %13 = tcc.cast %12 : (tensor<4x8xi64>) -> tensor<4x8xf32>
    %14 = tcc.mul %y, %bigger : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %15 = tcc.cast %14 : (tensor<4x8xf32>) -> tensor<4x8xi32>
    %16 = tcc.cast %15 : (tensor<4x8xi32>) -> tensor<4x8xf32>
    %17 = tcc.add %13, %16 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %18 = tcc.pow %x, %c : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
    %19 = tcc.max %18, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %20 = tcc.abs %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %21 = tcc.rsqrt %20 : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %22 = tcc.min %19, %21 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %23 = tcc.where %m, %inf, %22 : (tensor<4x8xi1>, tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %24 = tcc.broadcast %b : (tensor<8xf32>) -> tensor<4x8xf32>
    %25 = tcc.div %24, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %26 = tcc.neg %25 : (tensor<4x8xf32>) -> tensor<4x8xf32>
    return %2, %5, %8, %10, %17, %23, %26, %m
        : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
          tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xi1>
  }
)mlir";

// Every layout and reduction kernel kind: reductions over leading, middle,
// trailing, several and all axes, keepdims, odd and empty sizes, every
// numeric type (integer sums wrap, integer means truncate); prologues
// (`reduce_sum(mul(g, g))`, a broadcast bias in the reduced space, a cast)
// and epilogues (sqrt, scaling by scalar and row operands); transposes,
// slices and slice_grads with negative strides, splits, concats with an
// empty piece, gathers with negative, scalar and i1 indices, gather_grads
// with repeated indices; layout chains (slice -> reshape -> transpose with a
// bias-add prologue and with negative strides, a subtraction read through
// a reshape by a transpose, transposes -> reshapes -> concat with an
// epilogue, two reshapes in a row; i64 and f64); lone broadcasts and
// casts.
const char *kStructured = R"mlir(
  func.func @reduce_f32(%x: tensor<3x5x7xf32>)
      -> (tensor<5x7xf32>, tensor<3x7xf32>, tensor<3x5xf32>, tensor<f32>,
          tensor<1x5x1xf32>, tensor<3x1x7xf32>, tensor<5xf32>) {
    %0 = tcc.reduce_sum %x {axes = array<i64: 0>} : (tensor<3x5x7xf32>) -> tensor<5x7xf32>
    %1 = tcc.reduce_sum %x {axes = array<i64: 1>} : (tensor<3x5x7xf32>) -> tensor<3x7xf32>
    %2 = tcc.reduce_max %x {axes = array<i64: 2>} : (tensor<3x5x7xf32>) -> tensor<3x5xf32>
    %3 = tcc.reduce_mean %x {axes = array<i64: 0, 1, 2>} : (tensor<3x5x7xf32>) -> tensor<f32>
    %4 = tcc.reduce_min %x {axes = array<i64: 0, 2>, keepdims = true} : (tensor<3x5x7xf32>) -> tensor<1x5x1xf32>
    %5 = tcc.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : (tensor<3x5x7xf32>) -> tensor<3x1x7xf32>
    %6 = tcc.reduce_max %x {axes = array<i64: 0, 2>} : (tensor<3x5x7xf32>) -> tensor<5xf32>
    return %0, %1, %2, %3, %4, %5, %6 : tensor<5x7xf32>, tensor<3x7xf32>, tensor<3x5xf32>, tensor<f32>,
          tensor<1x5x1xf32>, tensor<3x1x7xf32>, tensor<5xf32>
  }
  func.func @reduce_f64(%x: tensor<4x6x3xf64>)
      -> (tensor<4x3xf64>, tensor<6xf64>, tensor<4x6x1xf64>, tensor<f64>) {
    %0 = tcc.reduce_sum %x {axes = array<i64: 1>} : (tensor<4x6x3xf64>) -> tensor<4x3xf64>
    %1 = tcc.reduce_mean %x {axes = array<i64: 0, 2>} : (tensor<4x6x3xf64>) -> tensor<6xf64>
    %2 = tcc.reduce_max %x {axes = array<i64: 2>, keepdims = true} : (tensor<4x6x3xf64>) -> tensor<4x6x1xf64>
    %3 = tcc.reduce_min %x {axes = array<i64: 0, 1, 2>} : (tensor<4x6x3xf64>) -> tensor<f64>
    return %0, %1, %2, %3 : tensor<4x3xf64>, tensor<6xf64>, tensor<4x6x1xf64>, tensor<f64>
  }
  func.func @reduce_int(%x: tensor<5x3xi32>, %y: tensor<3x4x5xi64>)
      -> (tensor<3xi32>, tensor<3xi32>, tensor<5xi32>, tensor<i32>,
          tensor<3x5xi64>, tensor<4xi64>, tensor<3x1x5xi64>, tensor<1x4x1xi64>) {
    %0 = tcc.reduce_sum %x {axes = array<i64: 0>} : (tensor<5x3xi32>) -> tensor<3xi32>
    %1 = tcc.reduce_mean %x {axes = array<i64: 0>} : (tensor<5x3xi32>) -> tensor<3xi32>
    %2 = tcc.reduce_max %x {axes = array<i64: 1>} : (tensor<5x3xi32>) -> tensor<5xi32>
    %3 = tcc.reduce_min %x {axes = array<i64: 0, 1>} : (tensor<5x3xi32>) -> tensor<i32>
    %4 = tcc.reduce_sum %y {axes = array<i64: 1>} : (tensor<3x4x5xi64>) -> tensor<3x5xi64>
    %5 = tcc.reduce_mean %y {axes = array<i64: 0, 2>} : (tensor<3x4x5xi64>) -> tensor<4xi64>
    %6 = tcc.reduce_min %y {axes = array<i64: 1>, keepdims = true} : (tensor<3x4x5xi64>) -> tensor<3x1x5xi64>
    %7 = tcc.reduce_max %y {axes = array<i64: 0, 2>, keepdims = true} : (tensor<3x4x5xi64>) -> tensor<1x4x1xi64>
    return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<3xi32>, tensor<3xi32>, tensor<5xi32>, tensor<i32>,
          tensor<3x5xi64>, tensor<4xi64>, tensor<3x1x5xi64>, tensor<1x4x1xi64>
  }
  func.func @reduce_empty(%x: tensor<3x0xf32>, %y: tensor<0x2xi32>)
      -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2xi32>, tensor<2xi32>) {
    %0 = tcc.reduce_sum %x {axes = array<i64: 1>} : (tensor<3x0xf32>) -> tensor<3xf32>
    %1 = tcc.reduce_max %x {axes = array<i64: 1>} : (tensor<3x0xf32>) -> tensor<3xf32>
    %2 = tcc.reduce_min %x {axes = array<i64: 1>} : (tensor<3x0xf32>) -> tensor<3xf32>
    %3 = tcc.reduce_mean %x {axes = array<i64: 1>} : (tensor<3x0xf32>) -> tensor<3xf32>
    %4 = tcc.reduce_mean %y {axes = array<i64: 0>} : (tensor<0x2xi32>) -> tensor<2xi32>
    %5 = tcc.reduce_max %y {axes = array<i64: 0>} : (tensor<0x2xi32>) -> tensor<2xi32>
    return %0, %1, %2, %3, %4, %5 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2xi32>, tensor<2xi32>
  }
  func.func @reduce_fused(%g: tensor<16x9xf32>, %x: tensor<2x5x6xf32>, %b: tensor<6xf32>,
                          %s: tensor<f32>, %i: tensor<4x6xi32>, %d: tensor<3x4x5xf64>)
      -> (tensor<f32>, tensor<6xf32>, tensor<4x1xf64>, tensor<3x5xf64>) {
    %0 = tcc.mul %g, %g : (tensor<16x9xf32>, tensor<16x9xf32>) -> tensor<16x9xf32>
    %1 = tcc.reduce_sum %0 {axes = array<i64: 0, 1>} : (tensor<16x9xf32>) -> tensor<f32>
    %2 = tcc.sqrt %1 : (tensor<f32>) -> tensor<f32>
    %3 = tcc.sub %x, %b : (tensor<2x5x6xf32>, tensor<6xf32>) -> tensor<2x5x6xf32>
    %4 = tcc.reduce_sum %3 {axes = array<i64: 0, 1>} : (tensor<2x5x6xf32>) -> tensor<6xf32>
    %5 = tcc.mul %4, %s : (tensor<6xf32>, tensor<f32>) -> tensor<6xf32>
    %6 = tcc.add %5, %b : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
    %7 = tcc.cast %i : (tensor<4x6xi32>) -> tensor<4x6xf64>
    %8 = tcc.reduce_mean %7 {axes = array<i64: 1>, keepdims = true} : (tensor<4x6xf64>) -> tensor<4x1xf64>
    %9 = tcc.neg %8 : (tensor<4x1xf64>) -> tensor<4x1xf64>
    %10 = tcc.abs %d : (tensor<3x4x5xf64>) -> tensor<3x4x5xf64>
    %11 = tcc.reduce_max %10 {axes = array<i64: 1>} : (tensor<3x4x5xf64>) -> tensor<3x5xf64>
    return %2, %6, %9, %11 : tensor<f32>, tensor<6xf32>, tensor<4x1xf64>, tensor<3x5xf64>
  }
  func.func @transposes(%x: tensor<2x3x4x5xf32>, %y: tensor<2x3x4x5xf32>, %m: tensor<3x5xi1>,
                        %z: tensor<4x2x3xi64>, %w: tensor<4x3x2x5xf32>, %v: tensor<3x7xi32>)
      -> (tensor<2x4x3x5xf32>, tensor<5x3x2x4xf32>, tensor<5x3xi1>, tensor<3x4x2xi64>,
          tensor<4x3x2x5xf32>, tensor<7x3xi32>) {
    %0 = tcc.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x3x4x5xf32>) -> tensor<2x4x3x5xf32>
    %1 = tcc.add %x, %y : (tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>) -> tensor<2x3x4x5xf32>
    %2 = tcc.transpose %1 {perm = array<i64: 3, 1, 0, 2>} : (tensor<2x3x4x5xf32>) -> tensor<5x3x2x4xf32>
    %3 = tcc.transpose %m {perm = array<i64: 1, 0>} : (tensor<3x5xi1>) -> tensor<5x3xi1>
    %4 = tcc.transpose %z {perm = array<i64: 2, 0, 1>} : (tensor<4x2x3xi64>) -> tensor<3x4x2xi64>
    %5 = tcc.transpose %y {perm = array<i64: 2, 1, 0, 3>} : (tensor<2x3x4x5xf32>) -> tensor<4x3x2x5xf32>
    %6 = tcc.mul %5, %w : (tensor<4x3x2x5xf32>, tensor<4x3x2x5xf32>) -> tensor<4x3x2x5xf32>
    %7 = tcc.transpose %v {perm = array<i64: 1, 0>} : (tensor<3x7xi32>) -> tensor<7x3xi32>
    return %0, %2, %3, %4, %6, %7 : tensor<2x4x3x5xf32>, tensor<5x3x2x4xf32>, tensor<5x3xi1>, tensor<3x4x2xi64>,
          tensor<4x3x2x5xf32>, tensor<7x3xi32>
  }
  func.func @slices(%x: tensor<5x7xf32>, %i: tensor<6x4xi32>, %b: tensor<3x8xi1>, %d: tensor<1x9x1xf64>,
                    %e: tensor<2x4x9xf32>, %f: tensor<7x2xi64>)
      -> (tensor<2x3xf32>, tensor<6x2xi32>, tensor<2x5xi1>, tensor<1x3x1xf64>,
          tensor<2x4x3xf32>, tensor<2x4x3xf32>, tensor<2x4x3xf32>,
          tensor<1x2xi64>, tensor<2x2xi64>, tensor<4x2xi64>) {
    %0 = tcc.slice %x {starts = array<i64: 1, 0>, limits = array<i64: 5, 7>, strides = array<i64: 2, 3>} : (tensor<5x7xf32>) -> tensor<2x3xf32>
    %1 = tcc.slice %i {starts = array<i64: 5, 3>, limits = array<i64: -1, -1>, strides = array<i64: -1, -2>} : (tensor<6x4xi32>) -> tensor<6x2xi32>
    %2 = tcc.slice %b {starts = array<i64: 1, 2>, limits = array<i64: 3, 7>, strides = array<i64: 1, 1>} : (tensor<3x8xi1>) -> tensor<2x5xi1>
    %3 = tcc.slice %d {starts = array<i64: 0, 8, 0>, limits = array<i64: 1, 0, 1>, strides = array<i64: 1, -3, 1>} : (tensor<1x9x1xf64>) -> tensor<1x3x1xf64>
    %4:3 = tcc.split %e {axis = 2 : i64, sizes = array<i64: 3, 3, 3>} : (tensor<2x4x9xf32>) -> (tensor<2x4x3xf32>, tensor<2x4x3xf32>, tensor<2x4x3xf32>)
    %5:3 = tcc.split %f {axis = 0 : i64, sizes = array<i64: 1, 2, 4>} : (tensor<7x2xi64>) -> (tensor<1x2xi64>, tensor<2x2xi64>, tensor<4x2xi64>)
    return %0, %1, %2, %3, %4#0, %4#1, %4#2, %5#0, %5#1, %5#2
        : tensor<2x3xf32>, tensor<6x2xi32>, tensor<2x5xi1>, tensor<1x3x1xf64>,
          tensor<2x4x3xf32>, tensor<2x4x3xf32>, tensor<2x4x3xf32>,
          tensor<1x2xi64>, tensor<2x2xi64>, tensor<4x2xi64>
  }
  func.func @slice_grads(%g: tensor<2x3xf32>, %h: tensor<6x2xi64>, %b: tensor<2x5xi1>, %e: tensor<1x3x1xf64>)
      -> (tensor<5x7xf32>, tensor<6x4xi64>, tensor<3x8xi1>, tensor<1x9x1xf64>) {
    %0 = tcc.slice_grad %g {starts = array<i64: 1, 0>, limits = array<i64: 5, 7>, strides = array<i64: 2, 3>} : (tensor<2x3xf32>) -> tensor<5x7xf32>
    %1 = tcc.slice_grad %h {starts = array<i64: 5, 3>, limits = array<i64: -1, -1>, strides = array<i64: -1, -2>} : (tensor<6x2xi64>) -> tensor<6x4xi64>
    %2 = tcc.slice_grad %b {starts = array<i64: 1, 2>, limits = array<i64: 3, 7>, strides = array<i64: 1, 1>} : (tensor<2x5xi1>) -> tensor<3x8xi1>
    %3 = tcc.slice_grad %e {starts = array<i64: 0, 8, 0>, limits = array<i64: 1, 0, 1>, strides = array<i64: 1, -3, 1>} : (tensor<1x3x1xf64>) -> tensor<1x9x1xf64>
    return %0, %1, %2, %3 : tensor<5x7xf32>, tensor<6x4xi64>, tensor<3x8xi1>, tensor<1x9x1xf64>
  }
  func.func @concats(%a: tensor<3x2xf32>, %b: tensor<3x5xf32>, %c: tensor<3x1xf32>,
                     %p: tensor<2x3xi1>, %q: tensor<1x3xi1>,
                     %r: tensor<2x2x3xf64>, %s: tensor<2x2x0xf64>, %t: tensor<2x2x4xf64>,
                     %u: tensor<2x4xi32>, %v: tensor<2x3xi32>, %w: tensor<2x5xi64>)
      -> (tensor<3x8xf32>, tensor<3x3xi1>, tensor<2x2x7xf64>, tensor<3x7xf32>, tensor<2x7xi32>, tensor<4x5xi64>) {
    %0 = tcc.concat %a, %b, %c {axis = 1 : i64} : (tensor<3x2xf32>, tensor<3x5xf32>, tensor<3x1xf32>) -> tensor<3x8xf32>
    %1 = tcc.concat %p, %q {axis = 0 : i64} : (tensor<2x3xi1>, tensor<1x3xi1>) -> tensor<3x3xi1>
    %2 = tcc.concat %r, %s, %t {axis = 2 : i64} : (tensor<2x2x3xf64>, tensor<2x2x0xf64>, tensor<2x2x4xf64>) -> tensor<2x2x7xf64>
    %3 = tcc.add %b, %c : (tensor<3x5xf32>, tensor<3x1xf32>) -> tensor<3x5xf32>
    %4 = tcc.concat %a, %3 {axis = 1 : i64} : (tensor<3x2xf32>, tensor<3x5xf32>) -> tensor<3x7xf32>
    %5 = tcc.concat %u, %v {axis = 1 : i64} : (tensor<2x4xi32>, tensor<2x3xi32>) -> tensor<2x7xi32>
    %6 = tcc.concat %w, %w {axis = 0 : i64} : (tensor<2x5xi64>, tensor<2x5xi64>) -> tensor<4x5xi64>
    return %0, %1, %2, %4, %5, %6 : tensor<3x8xf32>, tensor<3x3xi1>, tensor<2x2x7xf64>, tensor<3x7xf32>, tensor<2x7xi32>, tensor<4x5xi64>
  }
  func.func @gathers(%x: tensor<4x6xf32>, %i: tensor<2x3xi32>, %y: tensor<5x3xi64>, %j: tensor<4xi64>,
                     %b: tensor<3x4x5xi1>, %k: tensor<i64>, %d: tensor<2x3x4xf64>, %l: tensor<5xi1>)
      -> (tensor<4x2x3xf32>, tensor<4x3xi64>, tensor<3x5xi1>, tensor<2x3x5xf64>) {
    %0 = tcc.gather %x, %i {axis = 1 : i64} : (tensor<4x6xf32>, tensor<2x3xi32>) -> tensor<4x2x3xf32>
    %1 = tcc.gather %y, %j {axis = 0 : i64} : (tensor<5x3xi64>, tensor<4xi64>) -> tensor<4x3xi64>
    %2 = tcc.gather %b, %k {axis = 1 : i64} : (tensor<3x4x5xi1>, tensor<i64>) -> tensor<3x5xi1>
    %3 = tcc.gather %d, %l {axis = 2 : i64} : (tensor<2x3x4xf64>, tensor<5xi1>) -> tensor<2x3x5xf64>
    return %0, %1, %2, %3 : tensor<4x2x3xf32>, tensor<4x3xi64>, tensor<3x5xi1>, tensor<2x3x5xf64>
  }
  func.func @gather_grads(%i: tensor<2x3xi32>, %g: tensor<4x2x3xf32>, %j: tensor<5xi64>,
                          %h: tensor<2x5x4xf64>, %k: tensor<i64>, %e: tensor<3x2xf32>,
                          %m: tensor<4x2x3xf32>)
      -> (tensor<4x6xf32>, tensor<2x3x4xf64>, tensor<3x7x2xf32>, tensor<4x6xf32>) {
    %0 = tcc.gather_grad %i, %g {axis = 1 : i64} : (tensor<2x3xi32>, tensor<4x2x3xf32>) -> tensor<4x6xf32>
    %1 = tcc.gather_grad %j, %h {axis = 1 : i64} : (tensor<5xi64>, tensor<2x5x4xf64>) -> tensor<2x3x4xf64>
    %2 = tcc.gather_grad %k, %e {axis = 1 : i64} : (tensor<i64>, tensor<3x2xf32>) -> tensor<3x7x2xf32>
    %3 = tcc.mul %m, %m : (tensor<4x2x3xf32>, tensor<4x2x3xf32>) -> tensor<4x2x3xf32>
    %4 = tcc.gather_grad %i, %3 {axis = 1 : i64} : (tensor<2x3xi32>, tensor<4x2x3xf32>) -> tensor<4x6xf32>
    return %0, %1, %2, %4 : tensor<4x6xf32>, tensor<2x3x4xf64>, tensor<3x7x2xf32>, tensor<4x6xf32>
  }
  func.func @layout_chains(%qkv: tensor<2x8x96xf32>, %b: tensor<96xf32>,
                           %dq: tensor<2x2x8x16xf32>, %dk: tensor<2x2x8x16xf32>,
                           %dv: tensor<2x2x8x16xf32>, %r: tensor<2x8x96xf32>,
                           %x: tensor<6x4xi64>, %y: tensor<3x4x5xf64>)
      -> (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x8x96xf32>,
          tensor<2x6xi64>, tensor<2x5x6xf64>, tensor<2x6x8x16xf32>) {
    %half = tcc.constant dense<0.5> : tensor<f32>
    %0 = tcc.add %qkv, %b : (tensor<2x8x96xf32>, tensor<96xf32>) -> tensor<2x8x96xf32>
    %1 = tcc.slice %0 {starts = array<i64: 0, 0, 0>, limits = array<i64: 2, 8, 32>, strides = array<i64: 1, 1, 1>} : (tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
    %2 = tcc.reshape %1 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
    %3 = tcc.transpose %2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
    %4 = tcc.slice %qkv {starts = array<i64: 1, 7, 95>, limits = array<i64: -1, -1, 31>, strides = array<i64: -1, -1, -2>} : (tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
    %5 = tcc.reshape %4 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
    %6 = tcc.transpose %5 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
    %7 = tcc.transpose %dq {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x8x16xf32>) -> tensor<2x8x2x16xf32>
    %8 = tcc.reshape %7 : (tensor<2x8x2x16xf32>) -> tensor<2x8x32xf32>
    %9 = tcc.transpose %dk {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x8x16xf32>) -> tensor<2x8x2x16xf32>
    %10 = tcc.reshape %9 : (tensor<2x8x2x16xf32>) -> tensor<2x8x32xf32>
    %11 = tcc.transpose %dv {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x8x16xf32>) -> tensor<2x8x2x16xf32>
    %12 = tcc.reshape %11 : (tensor<2x8x2x16xf32>) -> tensor<2x8x32xf32>
    %13 = tcc.concat %8, %10, %12 {axis = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x96xf32>
    %14 = tcc.add %13, %r : (tensor<2x8x96xf32>, tensor<2x8x96xf32>) -> tensor<2x8x96xf32>
    %15 = tcc.mul %14, %half : (tensor<2x8x96xf32>, tensor<f32>) -> tensor<2x8x96xf32>
    %16 = tcc.transpose %x {perm = array<i64: 1, 0>} : (tensor<6x4xi64>) -> tensor<4x6xi64>
    %17 = tcc.reshape %16 : (tensor<4x6xi64>) -> tensor<24xi64>
    %18 = tcc.reshape %17 : (tensor<24xi64>) -> tensor<2x12xi64>
    %19 = tcc.slice %18 {starts = array<i64: 0, 1>, limits = array<i64: 2, 12>, strides = array<i64: 1, 2>} : (tensor<2x12xi64>) -> tensor<2x6xi64>
    %20 = tcc.transpose %y {perm = array<i64: 2, 0, 1>} : (tensor<3x4x5xf64>) -> tensor<5x3x4xf64>
    %21 = tcc.reshape %20 : (tensor<5x3x4xf64>) -> tensor<5x2x6xf64>
    %22 = tcc.transpose %21 {perm = array<i64: 1, 0, 2>} : (tensor<5x2x6xf64>) -> tensor<2x5x6xf64>
    %23 = tcc.sub %r, %b : (tensor<2x8x96xf32>, tensor<96xf32>) -> tensor<2x8x96xf32>
    %24 = tcc.reshape %23 : (tensor<2x8x96xf32>) -> tensor<2x8x6x16xf32>
    %25 = tcc.transpose %24 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x6x16xf32>) -> tensor<2x6x8x16xf32>
    return %3, %6, %15, %19, %22, %25 : tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x8x96xf32>,
          tensor<2x6xi64>, tensor<2x5x6xf64>, tensor<2x6x8x16xf32>
  }
  func.func @alone(%b: tensor<3xi1>, %x: tensor<2x1xi64>, %d: tensor<2x3xf64>, %f: tensor<2x3xi1>)
      -> (tensor<2x3xi1>, tensor<2x4xi64>, tensor<2x3xi32>, tensor<2x3xf64>) {
    %0 = tcc.broadcast %b : (tensor<3xi1>) -> tensor<2x3xi1>
    %1 = tcc.broadcast %x : (tensor<2x1xi64>) -> tensor<2x4xi64>
    %2 = tcc.cast %d : (tensor<2x3xf64>) -> tensor<2x3xi32>
    %3 = tcc.cast %f : (tensor<2x3xi1>) -> tensor<2x3xf64>
    return %0, %1, %2, %3 : tensor<2x3xi1>, tensor<2x4xi64>, tensor<2x3xi32>, tensor<2x3xf64>
  }
)mlir";

// bf16 / f16 storage: elementwise chains with broadcasting, splat constants
// (rounded to the type; an infinity), f16 overflow, casts between f32, bf16,
// f16 and integers, compare/where; every reduction kind with a prologue and
// an epilogue; transpose, slice, concat, gather, gather_grad and slice_grad.
const char *kHalf = R"mlir(
  func.func @half_chains(%x: tensor<4x8xbf16>, %y: tensor<4x8xbf16>, %b: tensor<8xbf16>,
                         %h: tensor<4x8xf16>, %k: tensor<4x1xf16>, %f: tensor<4x8xf32>)
      -> (tensor<4x8xbf16>, tensor<4x8xf16>, tensor<4x8xf32>, tensor<4x8xbf16>, tensor<4x8xi32>) {
    %c = tcc.constant dense<0.3> : tensor<bf16>
    %inf = tcc.constant dense<0x7F80> : tensor<bf16>
    %big = tcc.constant dense<300.0> : tensor<f16>
    %0 = tcc.add %x, %b : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
    %1 = tcc.gelu %0 : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
    %2 = tcc.mul %1, %c : (tensor<4x8xbf16>, tensor<bf16>) -> tensor<4x8xbf16>
    %3 = tcc.exp %y : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
    %4 = tcc.div %2, %3 : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
    %5 = tcc.mul %h, %big : (tensor<4x8xf16>, tensor<f16>) -> tensor<4x8xf16>
    %6 = tcc.mul %5, %big : (tensor<4x8xf16>, tensor<f16>) -> tensor<4x8xf16>
    %7 = tcc.sigmoid %k : (tensor<4x1xf16>) -> tensor<4x1xf16>
    %8 = tcc.sub %6, %7 : (tensor<4x8xf16>, tensor<4x1xf16>) -> tensor<4x8xf16>
    %9 = tcc.max %8, %h : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
    %10 = tcc.cast %f : (tensor<4x8xf32>) -> tensor<4x8xbf16>
    %11 = tcc.cast %10 : (tensor<4x8xbf16>) -> tensor<4x8xf16>
    %12 = tcc.cast %11 : (tensor<4x8xf16>) -> tensor<4x8xf32>
    %13 = tcc.add %12, %f : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %m = tcc.cmp gt, %x, %y : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xi1>
    %14 = tcc.where %m, %inf, %x : (tensor<4x8xi1>, tensor<bf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
    %15 = tcc.mul %y, %y : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
    %16 = tcc.cast %15 : (tensor<4x8xbf16>) -> tensor<4x8xi32>
    return %4, %9, %13, %14, %16 : tensor<4x8xbf16>, tensor<4x8xf16>, tensor<4x8xf32>, tensor<4x8xbf16>, tensor<4x8xi32>
  }
  func.func @half_reduce(%x: tensor<3x5x7xbf16>, %h: tensor<3x5x7xf16>, %b: tensor<7xbf16>)
      -> (tensor<5x7xbf16>, tensor<3x7xf16>, tensor<3x5xbf16>, tensor<f16>, tensor<7xbf16>, tensor<5xf16>) {
    %0 = tcc.reduce_sum %x {axes = array<i64: 0>} : (tensor<3x5x7xbf16>) -> tensor<5x7xbf16>
    %1 = tcc.reduce_mean %h {axes = array<i64: 1>} : (tensor<3x5x7xf16>) -> tensor<3x7xf16>
    %2 = tcc.reduce_max %x {axes = array<i64: 2>} : (tensor<3x5x7xbf16>) -> tensor<3x5xbf16>
    %3 = tcc.reduce_min %h {axes = array<i64: 0, 1, 2>} : (tensor<3x5x7xf16>) -> tensor<f16>
    %4 = tcc.mul %x, %x : (tensor<3x5x7xbf16>, tensor<3x5x7xbf16>) -> tensor<3x5x7xbf16>
    %5 = tcc.reduce_sum %4 {axes = array<i64: 0, 1>} : (tensor<3x5x7xbf16>) -> tensor<7xbf16>
    %6 = tcc.sqrt %5 : (tensor<7xbf16>) -> tensor<7xbf16>
    %7 = tcc.add %6, %b : (tensor<7xbf16>, tensor<7xbf16>) -> tensor<7xbf16>
    %8 = tcc.reduce_sum %h {axes = array<i64: 0, 2>} : (tensor<3x5x7xf16>) -> tensor<5xf16>
    return %0, %1, %2, %3, %7, %8 : tensor<5x7xbf16>, tensor<3x7xf16>, tensor<3x5xbf16>, tensor<f16>, tensor<7xbf16>, tensor<5xf16>
  }
  func.func @half_layout(%x: tensor<2x3x4xbf16>, %h: tensor<2x3x4xf16>, %i: tensor<5xi32>,
                         %g: tensor<2x5x4xbf16>, %a: tensor<2x3x2xf16>)
      -> (tensor<4x3x2xbf16>, tensor<2x2x2xf16>, tensor<2x3x6xf16>, tensor<2x5x4xbf16>,
          tensor<2x3x4xbf16>, tensor<2x3x4xf16>) {
    %0 = tcc.transpose %x {perm = array<i64: 2, 1, 0>} : (tensor<2x3x4xbf16>) -> tensor<4x3x2xbf16>
    %1 = tcc.slice %h {starts = array<i64: 0, 2, 3>, limits = array<i64: 2, -1, -1>, strides = array<i64: 1, -2, -2>} : (tensor<2x3x4xf16>) -> tensor<2x2x2xf16>
    %2 = tcc.concat %h, %a {axis = 2 : i64} : (tensor<2x3x4xf16>, tensor<2x3x2xf16>) -> tensor<2x3x6xf16>
    %3 = tcc.gather %x, %i {axis = 1 : i64} : (tensor<2x3x4xbf16>, tensor<5xi32>) -> tensor<2x5x4xbf16>
    %4 = tcc.gather_grad %i, %g {axis = 1 : i64} : (tensor<5xi32>, tensor<2x5x4xbf16>) -> tensor<2x3x4xbf16>
    %5 = tcc.slice_grad %1 {starts = array<i64: 0, 2, 3>, limits = array<i64: 2, -1, -1>, strides = array<i64: 1, -2, -2>} : (tensor<2x2x2xf16>) -> tensor<2x3x4xf16>
    return %0, %1, %2, %3, %4, %5 : tensor<4x3x2xbf16>, tensor<2x2x2xf16>, tensor<2x3x6xf16>, tensor<2x5x4xbf16>,
          tensor<2x3x4xbf16>, tensor<2x3x4xf16>
  }
)mlir";

// The CUDA variant's 16-byte vector path (TCC_VECTOR_LOOP): odd element
// counts (a tail after the last whole chunk; 19 i1 elements at W = 16, so
// launches of a third of them hold no whole chunk), a 9797-element kernel
// over several blocks, contiguous inputs next to a row bias, a scalar and a
// [3, 1] column read per element, an i1 input and an i1 output next to
// f32, reads through a reshape and through a leading slice (an input
// larger than the output read at the output index), a kernel with no
// contiguous input (stores only), every element type and mixed widths
// (bf16 -> f32, f64 -> f32), and kernels that stay scalar (a reduction, a
// transpose, fewer elements than a chunk).
const char *kVector = R"mlir(
  func.func @vector_f32(%x: tensor<3x7xf32>, %y: tensor<3x7xf32>, %b: tensor<7xf32>,
                        %s: tensor<f32>, %m: tensor<3x7xi1>, %c: tensor<3x1xf32>,
                        %big: tensor<97x101xf32>, %r: tensor<4x8xf32>, %q: tensor<32xf32>,
                        %w: tensor<6x8xf32>, %v: tensor<3x8xf32>)
      -> (tensor<3x7xf32>, tensor<3x7xf32>, tensor<3x7xi1>, tensor<97x101xf32>,
          tensor<32xf32>, tensor<3x8xf32>, tensor<3x7xf32>, tensor<3xf32>, tensor<101x97xf32>) {
    %0 = tcc.add %x, %b : (tensor<3x7xf32>, tensor<7xf32>) -> tensor<3x7xf32>
    %1 = tcc.gelu %0 : (tensor<3x7xf32>) -> tensor<3x7xf32>
    %2 = tcc.mul %1, %s : (tensor<3x7xf32>, tensor<f32>) -> tensor<3x7xf32>
    %3 = tcc.sub %2, %c : (tensor<3x7xf32>, tensor<3x1xf32>) -> tensor<3x7xf32>
    %4 = tcc.where %m, %x, %y : (tensor<3x7xi1>, tensor<3x7xf32>, tensor<3x7xf32>) -> tensor<3x7xf32>
    %5 = tcc.cmp gt, %x, %y : (tensor<3x7xf32>, tensor<3x7xf32>) -> tensor<3x7xi1>
    %6 = tcc.mul %big, %big : (tensor<97x101xf32>, tensor<97x101xf32>) -> tensor<97x101xf32>
    %7 = tcc.sigmoid %6 : (tensor<97x101xf32>) -> tensor<97x101xf32>
    %8 = tcc.reshape %r : (tensor<4x8xf32>) -> tensor<32xf32>
    %9 = tcc.add %8, %q : (tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32>
    %10 = tcc.slice %w {starts = array<i64: 0, 0>, limits = array<i64: 3, 8>, strides = array<i64: 1, 1>} : (tensor<6x8xf32>) -> tensor<3x8xf32>
    %11 = tcc.add %10, %v : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
    %12 = tcc.broadcast %b : (tensor<7xf32>) -> tensor<3x7xf32>
    %13 = tcc.neg %12 : (tensor<3x7xf32>) -> tensor<3x7xf32>
    %14 = tcc.mul %x, %x : (tensor<3x7xf32>, tensor<3x7xf32>) -> tensor<3x7xf32>
    %15 = tcc.reduce_sum %14 {axes = array<i64: 1>} : (tensor<3x7xf32>) -> tensor<3xf32>
    %16 = tcc.transpose %big {perm = array<i64: 1, 0>} : (tensor<97x101xf32>) -> tensor<101x97xf32>
    return %3, %4, %5, %7, %9, %11, %13, %15, %16
        : tensor<3x7xf32>, tensor<3x7xf32>, tensor<3x7xi1>, tensor<97x101xf32>,
          tensor<32xf32>, tensor<3x8xf32>, tensor<3x7xf32>, tensor<3xf32>, tensor<101x97xf32>
  }
  func.func @vector_types(%h: tensor<5x9xbf16>, %g: tensor<5x9xbf16>, %f: tensor<45xf16>,
                          %c: tensor<5x9xf32>, %d: tensor<7xf64>, %e: tensor<7xf64>,
                          %i: tensor<11xi32>, %j: tensor<11xi32>, %k: tensor<5xi64>,
                          %p: tensor<19xi1>, %q: tensor<19xi1>, %t: tensor<3xbf16>)
      -> (tensor<5x9xbf16>, tensor<5x9xf32>, tensor<45xf16>, tensor<7xf64>, tensor<7xf32>,
          tensor<11xi32>, tensor<5xi64>, tensor<19xi1>, tensor<3xbf16>) {
    %0 = tcc.mul %h, %g : (tensor<5x9xbf16>, tensor<5x9xbf16>) -> tensor<5x9xbf16>
    %1 = tcc.exp %0 : (tensor<5x9xbf16>) -> tensor<5x9xbf16>
    %2 = tcc.cast %h : (tensor<5x9xbf16>) -> tensor<5x9xf32>
    %3 = tcc.add %2, %c : (tensor<5x9xf32>, tensor<5x9xf32>) -> tensor<5x9xf32>
    %4 = tcc.add %f, %f : (tensor<45xf16>, tensor<45xf16>) -> tensor<45xf16>
    %5 = tcc.div %d, %e : (tensor<7xf64>, tensor<7xf64>) -> tensor<7xf64>
    %6 = tcc.cast %d : (tensor<7xf64>) -> tensor<7xf32>
    %7 = tcc.add %i, %j : (tensor<11xi32>, tensor<11xi32>) -> tensor<11xi32>
    %8 = tcc.mul %k, %k : (tensor<5xi64>, tensor<5xi64>) -> tensor<5xi64>
    %9 = tcc.and %p, %q : (tensor<19xi1>, tensor<19xi1>) -> tensor<19xi1>
    %10 = tcc.sqrt %t : (tensor<3xbf16>) -> tensor<3xbf16>
    return %1, %3, %4, %5, %6, %7, %8, %9, %10
        : tensor<5x9xbf16>, tensor<5x9xf32>, tensor<45xf16>, tensor<7xf64>, tensor<7xf32>,
          tensor<11xi32>, tensor<5xi64>, tensor<19xi1>, tensor<3xbf16>
  }
)mlir";

using KernelFn = void (*)(const void *const *, void *, int64_t, int64_t);

/// Deterministic inputs: floats in [-3, 3) (some exactly 0), ints, bools.
/// With `specials`, floats also hold NaN, infinities and -0, and integers
/// values near their limits (so sums wrap). An input used as gather /
/// gather_grad indices is in [-indexRange, indexRange) when that is set.
Array randomInput(RankedTensorType type, uint32_t seed, bool specials = false,
                  int64_t indexRange = 0) {
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
OwningOpRef<ModuleOp> wrapFusion(tcc::exec::FusionOp fusion) {
  OpBuilder b(fusion.getContext());
  Location loc = fusion.getLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  auto type = b.getFunctionType(fusion.getInputs().getTypes(),
                                fusion.getResult().getType());
  auto func = func::FuncOp::create(b, loc, "kernel", type);
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToEnd(entry);
  IRMapping map;
  map.map(fusion.getInputs(), entry->getArguments());
  Operation *clone = b.clone(*fusion, map);
  func::ReturnOp::create(b, loc, clone->getResults());
  return module;
}

bool sameValue(DType dtype, const uint8_t *a, const uint8_t *b) {
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
  void (*setThread)(unsigned, unsigned, unsigned, unsigned) = nullptr;
  void (*counters)(int64_t *) = nullptr;

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
        setThread(grid, unsigned(block), b, t);
        fn(inputs, output, begin, end);
      }
    counters(count.data());
    return count;
  }
};

/// `bytes` at `offset` bytes past a 64-byte boundary inside `storage`.
uint8_t *placeAt(std::vector<uint8_t> &storage, const std::vector<uint8_t> &bytes,
                 size_t offset) {
  storage.assign(bytes.size() + 128, 0);
  uintptr_t base = (reinterpret_cast<uintptr_t>(storage.data()) + 63) & ~uintptr_t(63);
  uint8_t *p = reinterpret_cast<uint8_t *>(base + offset);
  if (!bytes.empty())
    std::memcpy(p, bytes.data(), bytes.size());
  return p;
}

/// For each block argument of `fusion` read as gather / gather_grad
/// indices, the size of the dim they index (inputs must be in range: the
/// interpreter rejects others).
llvm::DenseMap<unsigned, int64_t> indexRanges(tcc::exec::FusionOp fusion) {
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
    std::string error;
    bool built = codegen::compileHostSharedObject(*source, so, error);
    EXPECT_TRUE(built) << error << "\n" << *source;
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
      ASSERT_TRUE(tcc::interp::run(
          wrapper->lookupSymbol<func::FuncOp>("kernel"), inputs, want, error))
          << symbol << ": " << error;
      ASSERT_EQ(want.size(), 1u);

      // Poisoned with NaN (all ones) so a skipped element cannot pass.
      std::vector<uint8_t> out(want[0].bytes.size(), 0xff);
      std::vector<const void *> pointers;
      for (const Array &a : inputs)
        pointers.push_back(a.bytes.data());
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
    });
    dlclose(handle);
    return kernels;
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
  /// Returns the kernels with a vector path; `widths` collects their W.
  int checkVectorPath(ModuleOp module, bool specials,
                      std::set<int64_t> *widths = nullptr) {
    FailureOr<std::string> source = codegen::emitKernelSource(module);
    EXPECT_TRUE(succeeded(source));
    if (failed(source))
      return 0;
    std::string hostSo = tempPath("codegen", "vector-host.so");
    std::string emuSo = tempPath("codegen", "vector-emulated.so");
    std::string error;
    bool built = codegen::compileHostSharedObject(*source, hostSo, error) &&
                 codegen::compileHostSharedObject(
                     "#define TCC_KERNEL_EMULATE_CUDA 1\n" + *source, emuSo,
                     error);
    EXPECT_TRUE(built) << error << "\n" << *source;
    if (!built)
      return 0;
    void *host = dlopen(hostSo.c_str(), RTLD_NOW | RTLD_LOCAL);
    EXPECT_TRUE(host) << dlerror();
    EmulatedCuda cuda;
    cuda.handle = dlopen(emuSo.c_str(), RTLD_NOW | RTLD_LOCAL);
    EXPECT_TRUE(cuda.handle) << dlerror();
    if (!host || !cuda.handle)
      return 0;
    cuda.setThread = reinterpret_cast<decltype(cuda.setThread)>(
        dlsym(cuda.handle, "tcc_emulate_cuda_thread"));
    cuda.counters = reinterpret_cast<decltype(cuda.counters)>(
        dlsym(cuda.handle, "tcc_emulate_cuda_counters"));
    EXPECT_TRUE(cuda.setThread && cuda.counters);
    if (!cuda.setThread || !cuda.counters)
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
      std::vector<uint8_t> want(n * size, 0xff);
      scalar(pointers.data(), want.data(), 0, n);

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
};

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

TEST_F(CodegenTest, CudaFatbinCompiles) {
  if (!codegen::cudaCompilerAvailable())
    GTEST_SKIP() << "nvcc not found at configure time; fatbin not tested";
  for (const char *text : {kChains, kStructured, kHalf, kVector}) {
    OwningOpRef<ModuleOp> module = fused(text);
    ASSERT_TRUE(module);
    FailureOr<std::string> source = codegen::emitKernelSource(*module);
    ASSERT_TRUE(succeeded(source));
    std::string fatbin = tempPath("codegen", "kernels.fatbin");
    std::string error;
    auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(codegen::compileCudaFatbin(*source, fatbin, error))
        << error << "\n" << *source;
    double seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
    std::printf("nvcc fatbin (sm_80, sm_90, compute_90): %.1f s, %zu bytes\n",
                seconds, readFile(fatbin).size());
    EXPECT_GT(readFile(fatbin).size(), 0u);
  }
}



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
  std::string ptx = tempPath("codegen", "kernels.ptx"), error;
  ASSERT_TRUE(codegen::compileCudaPtx(*source, "compute_90", ptx, error))
      << error;
  std::vector<uint8_t> bytes = readFile(ptx);
  std::string text(bytes.begin(), bytes.end());
  EXPECT_CONTAINS(text, "ld.global.nc.v4.u32");
  EXPECT_CONTAINS(text, "ld.global.nc.v2.u32"); // bf16 read at W = 4
  EXPECT_CONTAINS(text, "st.global.v4.");
  // Lanes stay in registers.
  EXPECT_EQ(text.find("ld.local"), std::string::npos);
  EXPECT_EQ(text.find("st.local"), std::string::npos);
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
                     llvm::isa<tcc::ReshapeOp, tcc::ConstantOp,
                               tcc::GetParamOp, func::ReturnOp>(op);
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
