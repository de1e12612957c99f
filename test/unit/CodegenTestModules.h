//===- CodegenTestModules.h - the modules of the codegen tests -*- C++ -*-===//
//
// Functions of tcc ops that tcc-fuse turns into exec.fusion kernels, shared
// by CodegenTest.cpp and CodegenVectorTest.cpp (CodegenTestUtil.h).
//
//===----------------------------------------------------------------------===//

#ifndef TCC_TEST_UNIT_CODEGENTESTMODULES_H
#define TCC_TEST_UNIT_CODEGENTESTMODULES_H

namespace codegentest {

// Chains with row-bias, [4, 1] column and scalar broadcasting, both GELU
// forms and their gradients, compare/where with an i1 kernel input and
// output, saturating casts, sigmoid, pow, NaN-propagating max, rsqrt.
inline constexpr const char *kChains = R"mlir(
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
inline constexpr const char *kStructured = R"mlir(
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

// Column reductions (float sums and means over leading dims): at least 256
// rows take the CUDA block path (a block per 32 outputs, its warps
// splitting the rows), fewer the one-thread-per-output loop; a bf16 input
// cast to f32 first (a bias gradient of 16-bit activations), a mean, a
// partial last tile of columns.
inline constexpr const char *kColumn = R"mlir(
  func.func @columns(%x: tensor<300x40xf32>, %y: tensor<16x20x33xf32>,
                     %h: tensor<260x9xbf16>, %s: tensor<255x8xf32>)
      -> (tensor<40xf32>, tensor<33xf32>, tensor<9xf32>, tensor<8xf32>) {
    %0 = tcc.reduce_sum %x {axes = array<i64: 0>} : (tensor<300x40xf32>) -> tensor<40xf32>
    %1 = tcc.reduce_mean %y {axes = array<i64: 0, 1>} : (tensor<16x20x33xf32>) -> tensor<33xf32>
    %2 = tcc.cast %h : (tensor<260x9xbf16>) -> tensor<260x9xf32>
    %3 = tcc.reduce_sum %2 {axes = array<i64: 0>} : (tensor<260x9xf32>) -> tensor<9xf32>
    %4 = tcc.reduce_sum %s {axes = array<i64: 0>} : (tensor<255x8xf32>) -> tensor<8xf32>
    return %0, %1, %3, %4 : tensor<40xf32>, tensor<33xf32>, tensor<9xf32>, tensor<8xf32>
  }
)mlir";

// Column reductions whose CUDA block path splits the rows into slices
// (launchShape: 2, 3 and 8 slices; ragged last slices and column tiles),
// sum and mean, f32 and bf16 (cast) inputs, and bf16 and f16 results (a
// micro-batch's bias gradient under --accum: the f32 sum rounded once).
inline constexpr const char *kColumnSlices = R"mlir(
  func.func @slices(%x: tensor<600x40xf32>, %y: tensor<10x100x33xf32>,
                    %h: tensor<2100x9xbf16>, %g: tensor<3x200x40xf16>)
      -> (tensor<40xf32>, tensor<33xf32>, tensor<9xf32>, tensor<9xbf16>,
          tensor<40xf16>) {
    %0 = tcc.reduce_sum %x {axes = array<i64: 0>} : (tensor<600x40xf32>) -> tensor<40xf32>
    %1 = tcc.reduce_mean %y {axes = array<i64: 0, 1>} : (tensor<10x100x33xf32>) -> tensor<33xf32>
    %2 = tcc.cast %h : (tensor<2100x9xbf16>) -> tensor<2100x9xf32>
    %3 = tcc.reduce_sum %2 {axes = array<i64: 0>} : (tensor<2100x9xf32>) -> tensor<9xf32>
    %4 = tcc.reduce_sum %h {axes = array<i64: 0>} : (tensor<2100x9xbf16>) -> tensor<9xbf16>
    %5 = tcc.reduce_mean %g {axes = array<i64: 0, 1>} : (tensor<3x200x40xf16>) -> tensor<40xf16>
    return %0, %1, %3, %4, %5 : tensor<40xf32>, tensor<33xf32>, tensor<9xf32>,
                                tensor<9xbf16>, tensor<40xf16>
  }
)mlir";

// Reductions whose prologue values other ops read too: tcc-fuse makes them
// the kernel's stores. A bias gradient's gelu_grad over 600 rows (the
// column block path, 2 slices), a residual sum's mean over 16 x 20 rows
// (the one-thread loop), a bf16 product summed in f32 (stored as bf16,
// the sum reading the rounded value), a chain of two stored values, and
// row reductions of an exp (a warp a row, a block a row, a short row),
// and a layout chain under a column sum (the attention gradient's q/k/v
// heads concatenated under the qkv bias gradient, 384 rows: the block
// path), stored; the same in bf16, summed in f32 through a cast.
inline constexpr const char *kStores = R"mlir(
  func.func @stores(%dy: tensor<600x40xf32>, %pre: tensor<600x40xf32>,
                    %a: tensor<16x20x33xf32>, %b: tensor<16x20x33xf32>,
                    %h: tensor<2100x9xbf16>, %u: tensor<300x8xf32>,
                    %w: tensor<5x300xf32>, %v: tensor<3x3000xf32>,
                    %s: tensor<7x12xf32>, %gq: tensor<4x2x96x16xf32>,
                    %gk: tensor<4x2x96x16xf32>, %gv: tensor<4x2x96x16xf32>,
                    %hq: tensor<2x2x300x8xbf16>, %hk: tensor<2x2x300x8xbf16>)
      -> (tensor<40xf32>, tensor<600x40xf32>, tensor<33xf32>,
          tensor<16x20x33xf32>, tensor<9xf32>, tensor<2100x9xbf16>,
          tensor<8xf32>, tensor<300x8xf32>, tensor<300x8xf32>,
          tensor<5xf32>, tensor<5x300xf32>, tensor<3xf32>, tensor<3x3000xf32>,
          tensor<7xf32>, tensor<7x12xf32>, tensor<96xf32>, tensor<4x96x96xf32>,
          tensor<32xf32>, tensor<2x300x32xbf16>) {
    %0 = tcc.gelu_grad %dy, %pre {approximate = #tcc<gelu_approx tanh>} : (tensor<600x40xf32>, tensor<600x40xf32>) -> tensor<600x40xf32>
    %1 = tcc.reduce_sum %0 {axes = array<i64: 0>} : (tensor<600x40xf32>) -> tensor<40xf32>
    %2 = tcc.add %a, %b : (tensor<16x20x33xf32>, tensor<16x20x33xf32>) -> tensor<16x20x33xf32>
    %3 = tcc.reduce_mean %2 {axes = array<i64: 0, 1>} : (tensor<16x20x33xf32>) -> tensor<33xf32>
    %4 = tcc.mul %h, %h : (tensor<2100x9xbf16>, tensor<2100x9xbf16>) -> tensor<2100x9xbf16>
    %5 = tcc.cast %4 : (tensor<2100x9xbf16>) -> tensor<2100x9xf32>
    %6 = tcc.reduce_sum %5 {axes = array<i64: 0>} : (tensor<2100x9xf32>) -> tensor<9xf32>
    %7 = tcc.tanh %u : (tensor<300x8xf32>) -> tensor<300x8xf32>
    %8 = tcc.mul %7, %u : (tensor<300x8xf32>, tensor<300x8xf32>) -> tensor<300x8xf32>
    %9 = tcc.reduce_sum %8 {axes = array<i64: 0>} : (tensor<300x8xf32>) -> tensor<8xf32>
    %10 = tcc.exp %w : (tensor<5x300xf32>) -> tensor<5x300xf32>
    %11 = tcc.reduce_sum %10 {axes = array<i64: 1>} : (tensor<5x300xf32>) -> tensor<5xf32>
    %12 = tcc.exp %v : (tensor<3x3000xf32>) -> tensor<3x3000xf32>
    %13 = tcc.reduce_max %12 {axes = array<i64: 1>} : (tensor<3x3000xf32>) -> tensor<3xf32>
    %14 = tcc.neg %s : (tensor<7x12xf32>) -> tensor<7x12xf32>
    %15 = tcc.reduce_min %14 {axes = array<i64: 1>} : (tensor<7x12xf32>) -> tensor<7xf32>
    %tq = tcc.transpose %gq {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x2x96x16xf32>) -> tensor<4x96x2x16xf32>
    %tk = tcc.transpose %gk {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x2x96x16xf32>) -> tensor<4x96x2x16xf32>
    %tv = tcc.transpose %gv {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x2x96x16xf32>) -> tensor<4x96x2x16xf32>
    %qr = tcc.reshape %tq : (tensor<4x96x2x16xf32>) -> tensor<4x96x32xf32>
    %kr = tcc.reshape %tk : (tensor<4x96x2x16xf32>) -> tensor<4x96x32xf32>
    %vr = tcc.reshape %tv : (tensor<4x96x2x16xf32>) -> tensor<4x96x32xf32>
    %16 = tcc.concat %qr, %kr, %vr {axis = 2 : i64} : (tensor<4x96x32xf32>, tensor<4x96x32xf32>, tensor<4x96x32xf32>) -> tensor<4x96x96xf32>
    %17 = tcc.reduce_sum %16 {axes = array<i64: 0, 1>} : (tensor<4x96x96xf32>) -> tensor<96xf32>
    %bq = tcc.transpose %hq {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x300x8xbf16>) -> tensor<2x300x2x8xbf16>
    %bk = tcc.transpose %hk {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x300x8xbf16>) -> tensor<2x300x2x8xbf16>
    %bqr = tcc.reshape %bq : (tensor<2x300x2x8xbf16>) -> tensor<2x300x16xbf16>
    %bkr = tcc.reshape %bk : (tensor<2x300x2x8xbf16>) -> tensor<2x300x16xbf16>
    %18 = tcc.concat %bqr, %bkr {axis = 2 : i64} : (tensor<2x300x16xbf16>, tensor<2x300x16xbf16>) -> tensor<2x300x32xbf16>
    %19 = tcc.cast %18 : (tensor<2x300x32xbf16>) -> tensor<2x300x32xf32>
    %20 = tcc.reduce_sum %19 {axes = array<i64: 0, 1>} : (tensor<2x300x32xf32>) -> tensor<32xf32>
    return %1, %0, %3, %2, %6, %4, %9, %7, %8, %11, %10, %13, %12, %15, %14, %17, %16, %20, %18
        : tensor<40xf32>, tensor<600x40xf32>, tensor<33xf32>,
          tensor<16x20x33xf32>, tensor<9xf32>, tensor<2100x9xbf16>,
          tensor<8xf32>, tensor<300x8xf32>, tensor<300x8xf32>,
          tensor<5xf32>, tensor<5x300xf32>, tensor<3xf32>, tensor<3x3000xf32>,
          tensor<7xf32>, tensor<7x12xf32>, tensor<96xf32>, tensor<4x96x96xf32>,
          tensor<32xf32>, tensor<2x300x32xbf16>
  }
)mlir";

// Siblings: layout chains of one result shape that read a common input, one
// launched right after the other, merge into one kernel of several results
// (tcc-fuse): the q/k/v head split's three chains (f32 and bf16) and two
// 1-D concats (the host's per-piece loop is for single-result kernels);
// two elementwise kernels of one input do not (their vector paths).
inline constexpr const char *kSiblings = R"mlir(
  func.func @siblings(%qkv: tensor<2x8x96xf32>, %h: tensor<2x8x96xbf16>,
                      %x: tensor<40x33xf32>, %a: tensor<5xf32>, %b: tensor<7xf32>)
      -> (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>,
          tensor<2x2x8x16xbf16>, tensor<2x2x8x16xbf16>, tensor<2x2x8x16xbf16>,
          tensor<40x33xf32>, tensor<40x33xf32>, tensor<12xf32>, tensor<12xf32>) {
    %0:3 = tcc.split %qkv {axis = 2 : i64, sizes = array<i64: 32, 32, 32>} : (tensor<2x8x96xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
    %1 = tcc.reshape %0#0 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
    %2 = tcc.transpose %1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
    %3 = tcc.reshape %0#1 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
    %4 = tcc.transpose %3 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
    %5 = tcc.reshape %0#2 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
    %6 = tcc.transpose %5 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
    %7:3 = tcc.split %h {axis = 2 : i64, sizes = array<i64: 32, 32, 32>} : (tensor<2x8x96xbf16>) -> (tensor<2x8x32xbf16>, tensor<2x8x32xbf16>, tensor<2x8x32xbf16>)
    %8 = tcc.reshape %7#0 : (tensor<2x8x32xbf16>) -> tensor<2x8x2x16xbf16>
    %9 = tcc.transpose %8 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xbf16>) -> tensor<2x2x8x16xbf16>
    %10 = tcc.reshape %7#1 : (tensor<2x8x32xbf16>) -> tensor<2x8x2x16xbf16>
    %11 = tcc.transpose %10 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xbf16>) -> tensor<2x2x8x16xbf16>
    %12 = tcc.reshape %7#2 : (tensor<2x8x32xbf16>) -> tensor<2x8x2x16xbf16>
    %13 = tcc.transpose %12 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xbf16>) -> tensor<2x2x8x16xbf16>
    %14 = tcc.exp %x : (tensor<40x33xf32>) -> tensor<40x33xf32>
    %15 = tcc.neg %x : (tensor<40x33xf32>) -> tensor<40x33xf32>
    %16 = tcc.concat %a, %b {axis = 0 : i64} : (tensor<5xf32>, tensor<7xf32>) -> tensor<12xf32>
    %17 = tcc.concat %b, %a {axis = 0 : i64} : (tensor<7xf32>, tensor<5xf32>) -> tensor<12xf32>
    return %2, %4, %6, %9, %11, %13, %14, %15, %16, %17
        : tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>,
          tensor<2x2x8x16xbf16>, tensor<2x2x8x16xbf16>, tensor<2x2x8x16xbf16>,
          tensor<40x33xf32>, tensor<40x33xf32>, tensor<12xf32>, tensor<12xf32>
  }
)mlir";

// GPT-2 124M's column reductions (8192 tokens; 768, 3072 and 2304
// columns): their launch shapes only.
inline constexpr const char *kColumnGpt2 = R"mlir(
  func.func @gpt2(%a: tensor<8192x768xf32>, %b: tensor<8192x3072xf32>,
                  %c: tensor<8192x2304xf32>)
      -> (tensor<768xf32>, tensor<3072xf32>, tensor<2304xf32>) {
    %0 = tcc.reduce_sum %a {axes = array<i64: 0>} : (tensor<8192x768xf32>) -> tensor<768xf32>
    %1 = tcc.reduce_sum %b {axes = array<i64: 0>} : (tensor<8192x3072xf32>) -> tensor<3072xf32>
    %2 = tcc.reduce_sum %c {axes = array<i64: 0>} : (tensor<8192x2304xf32>) -> tensor<2304xf32>
    return %0, %1, %2 : tensor<768xf32>, tensor<3072xf32>, tensor<2304xf32>
  }
)mlir";

// bf16 / f16 storage: elementwise chains with broadcasting, splat constants
// (rounded to the type; an infinity), f16 overflow, casts between f32, bf16,
// f16 and integers, compare/where; every reduction kind with a prologue and
// an epilogue; transpose, slice, concat, gather, gather_grad and slice_grad.
inline constexpr const char *kHalf = R"mlir(
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
inline constexpr const char *kVector = R"mlir(
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

} // namespace codegentest

#endif // TCC_TEST_UNIT_CODEGENTESTMODULES_H
