// Every tcc op prints in a form that parses back to the same IR.
// RUN: tcc-opt %s | tcc-opt | FileCheck %s

// CHECK: tcc.param @h.0.attn.weight = dense<{{.*}}> : tensor<2x2xf32>
// CHECK: tcc.param @frozen_table frozen = dense<{{.*}}> : tensor<4x2xf32>
tcc.param @"h.0.attn.weight" = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
tcc.param @frozen_table frozen = dense<0.5> : tensor<4x2xf32>

// CHECK-LABEL: func.func @all_ops
func.func @all_ops(%x: tensor<2x2xf32> {tcc.name = "x"}, %ids: tensor<3xi64>,
                   %b: tensor<2x2xi1>) -> (tensor<2x2xf32> {tcc.name = "y"}) {
  // CHECK: tcc.get_param @h.0.attn.weight : tensor<2x2xf32>
  %w = tcc.get_param @"h.0.attn.weight" : tensor<2x2xf32>
  // CHECK: tcc.constant dense<2.000000e+00> : tensor<2xf32>
  %c = tcc.constant dense<2.0> : tensor<2xf32>
  // CHECK: tcc.add %{{.*}}, %{{.*}} : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %0 = tcc.add %x, %c : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %1 = tcc.sub %0, %x : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %2 = tcc.mul %1, %w : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %3 = tcc.div %2, %c : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %4 = tcc.pow %3, %c : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %5 = tcc.max %4, %x : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %6 = tcc.min %5, %x : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  // CHECK: tcc.and
  %7 = tcc.and %b, %b : (tensor<2x2xi1>, tensor<2x2xi1>) -> tensor<2x2xi1>
  %8 = tcc.or %7, %b : (tensor<2x2xi1>, tensor<2x2xi1>) -> tensor<2x2xi1>
  %9 = tcc.not %8 : (tensor<2x2xi1>) -> tensor<2x2xi1>
  // CHECK: tcc.cmp le, %{{.*}}, %{{.*}} : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xi1>
  %10 = tcc.cmp le, %6, %c : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xi1>
  %11 = tcc.where %10, %6, %x : (tensor<2x2xi1>, tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %12 = tcc.neg %11 : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %13 = tcc.abs %12 : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %14 = tcc.exp %13 : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %15 = tcc.log %14 : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %16 = tcc.sqrt %15 : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %17 = tcc.rsqrt %16 : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %18 = tcc.tanh %17 : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %19 = tcc.erf %18 : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %20 = tcc.sigmoid %19 : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %21 = tcc.relu %20 : (tensor<2x2xf32>) -> tensor<2x2xf32>
  // CHECK: tcc.gelu %{{.*}} {approximate = #tcc<gelu_approx tanh>}
  %22 = tcc.gelu %21 {approximate = #tcc<gelu_approx tanh>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %23 = tcc.cast %22 : (tensor<2x2xf32>) -> tensor<2x2xf64>
  %24 = tcc.broadcast %c : (tensor<2xf32>) -> tensor<3x2xf32>
  %25 = tcc.reshape %24 : (tensor<3x2xf32>) -> tensor<6xf32>
  %26 = tcc.transpose %24 {perm = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  // CHECK: tcc.slice %{{.*}} {limits = array<i64: -1>, starts = array<i64: 5>, strides = array<i64: -2>} : (tensor<6xf32>) -> tensor<3xf32>
  %27 = tcc.slice %25 {starts = array<i64: 5>, limits = array<i64: -1>, strides = array<i64: -2>} : (tensor<6xf32>) -> tensor<3xf32>
  %28 = tcc.concat %27, %27 {axis = 0 : i64} : (tensor<3xf32>, tensor<3xf32>) -> tensor<6xf32>
  // CHECK: tcc.split %{{.*}} {axis = 0 : i64, sizes = array<i64: 2, 4>} : (tensor<6xf32>) -> (tensor<2xf32>, tensor<4xf32>)
  %29:2 = tcc.split %28 {axis = 0 : i64, sizes = array<i64: 2, 4>} : (tensor<6xf32>) -> (tensor<2xf32>, tensor<4xf32>)
  %30 = tcc.gather %26, %ids {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<2x3xf32>
  %t = tcc.get_param @frozen_table : tensor<4x2xf32>
  %31 = tcc.embedding %t, %ids : (tensor<4x2xf32>, tensor<3xi64>) -> tensor<3x2xf32>
  %32 = tcc.reduce_sum %31 {axes = array<i64: 0>} : (tensor<3x2xf32>) -> tensor<2xf32>
  %33 = tcc.reduce_mean %31 {axes = array<i64: 1>, keepdims = true} : (tensor<3x2xf32>) -> tensor<3x1xf32>
  %34 = tcc.reduce_max %31 {axes = array<i64: 0, 1>} : (tensor<3x2xf32>) -> tensor<f32>
  %35 = tcc.reduce_min %31 {axes = array<i64: 0>} : (tensor<3x2xf32>) -> tensor<2xf32>
  %36 = tcc.softmax %31 {axis = 1 : i64} : (tensor<3x2xf32>) -> tensor<3x2xf32>
  %37 = tcc.log_softmax %36 {axis = 0 : i64} : (tensor<3x2xf32>) -> tensor<3x2xf32>
  // CHECK: tcc.layer_norm %{{.*}} scale %{{.*}} bias %{{.*}} {axis = 1 : i64, epsilon = 1.000000e-05 : f64}
  %38 = tcc.layer_norm %37 scale %32 bias %35 {axis = 1 : i64, epsilon = 1.0e-5 : f64} : (tensor<3x2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  %39:2 = tcc.dropout %38 {ratio = 0.1 : f64, seed = 7 : i64} : (tensor<3x2xf32>) -> (tensor<3x2xf32>, tensor<3x2xi1>)
  // CHECK: tcc.dropout %{{.*}} offset %{{.*}} {ratio = 1.000000e-01 : f64, seed = 7 : i64} : (tensor<3x2xf32>, tensor<i64>)
  %step = tcc.constant dense<3> : tensor<i64>
  %drop:2 = tcc.dropout %38 offset %step {ratio = 0.1 : f64, seed = 7 : i64} : (tensor<3x2xf32>, tensor<i64>) -> (tensor<3x2xf32>, tensor<3x2xi1>)
  %40 = tcc.matmul %39#0, %x {transpose_rhs = true} : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  // CHECK: tcc.gemm %{{.*}}, %{{.*}}, %{{.*}} {alpha = 5.000000e-01 : f64, transpose_a = true}
  %41 = tcc.gemm %40, %40, %x {alpha = 0.5 : f64, transpose_a = true} : (tensor<3x2xf32>, tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  // CHECK: tcc.gemm %{{.*}}, %{{.*}}, %{{.*}} bias %{{.*}} {transpose_b = true} : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  %gb = tcc.gemm %40, %x, %40 bias %32 {transpose_b = true} : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  %q = tcc.reshape %40 : (tensor<3x2xf32>) -> tensor<1x1x3x2xf32>
  %m = tcc.constant dense<[[true, true, false]]> : tensor<1x3xi1>
  // CHECK: tcc.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {causal = true, scale = 0.70710678118654746 : f64}
  %42 = tcc.attention %q, %q, %q, %m {scale = 0.70710678118654746 : f64, causal = true} : (tensor<1x1x3x2xf32>, tensor<1x1x3x2xf32>, tensor<1x1x3x2xf32>, tensor<1x3xi1>) -> tensor<1x1x3x2xf32>
  return %41 : tensor<2x2xf32>
}
