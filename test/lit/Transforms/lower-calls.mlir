// RUN: tcc-opt %s --split-input-file --tcc-lower-calls --verify-diagnostics | FileCheck %s

// A library op becomes an exec.call running it on the body's arguments;
// kernels, views, constants and parameter reads stay as they are, and an
// absent optional operand stays absent.
// CHECK-LABEL: func.func @step
// CHECK:      %[[R:.*]] = tcc.reshape %arg0
// CHECK:      %[[M:.*]] = exec.call(%[[R]], %arg1) : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<2x4xf32>, %[[B:.*]]: tensor<4x3xf32>):
// CHECK-NEXT:   %[[P:.*]] = tcc.matmul %[[A]], %[[B]]
// CHECK-NEXT:   exec.yield %[[P]] : tensor<2x3xf32>
// CHECK-NEXT: }
// CHECK:      exec.fusion "fused_0"(%[[M]])
// CHECK:      exec.call(%{{.*}}, %arg2) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> {
// CHECK:        tcc.layer_norm %{{.*}} scale %{{.*}} {axis = 1 : i64, epsilon = 1.000000e-05 : f64}
// CHECK:      %[[G:.*]]:3 = exec.call(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) :
// CHECK:        tcc.adamw_update
// CHECK:      return
func.func @step(%x: tensor<8xf32>, %w: tensor<4x3xf32>, %s: tensor<3xf32>,
                %g: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>,
                %lr: tensor<f64>, %t: tensor<i64>) -> (tensor<2x3xf32>, tensor<3xf32>) {
  %r = tcc.reshape %x : (tensor<8xf32>) -> tensor<2x4xf32>
  %mm = tcc.matmul %r, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %e = exec.fusion "fused_0" (%mm) : (tensor<2x3xf32>) -> tensor<2x3xf32> {
  ^bb0(%a: tensor<2x3xf32>):
    %0 = tcc.exp %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
    exec.yield %0 : tensor<2x3xf32>
  }
  %n = tcc.layer_norm %e scale %s {axis = 1 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %p:3 = tcc.adamw_update %s, %g, %m, %v, %lr, %t : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<f64>, tensor<i64>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
  return %n, %p#0 : tensor<2x3xf32>, tensor<3xf32>
}

// -----

// Anything else at the top of a step function cannot run.
func.func @unfused(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{'tcc.exp' op has no kernel or library call in the runtime}}
  // expected-error @+1 {{failed to legalize operation 'tcc.exp'}}
  %0 = tcc.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// gather_grad is a library call only along axis 0 (the embedding gradient).
func.func @gather_grad_axis1(%i: tensor<2xi64>, %g: tensor<3x2xf32>) -> tensor<3x5xf32> {
  // expected-error @+2 {{'tcc.gather_grad' op has no kernel or library call in the runtime}}
  // expected-error @+1 {{failed to legalize operation 'tcc.gather_grad'}}
  %0 = tcc.gather_grad %i, %g {axis = 1 : i64} : (tensor<2xi64>, tensor<3x2xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}
