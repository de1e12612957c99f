// RUN: tcc-opt %s | FileCheck %s
// RUN: tcc-opt %s | tcc-opt | FileCheck %s
// RUN: tcc-opt -mlir-print-op-generic %s | tcc-opt | FileCheck %s

// CHECK-LABEL: func.func @kernel
// CHECK: %[[R:.*]] = exec.fusion "fused_0"(%{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8xf32>):
// CHECK-NEXT: %[[C:.*]] = tcc.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT: %[[S:.*]] = tcc.add %[[A]], %[[B]]
// CHECK-NEXT: %[[M:.*]] = tcc.mul %[[S]], %[[C]]
// CHECK-NEXT: %[[G:.*]] = tcc.gelu %[[M]]
// CHECK-NEXT: exec.yield %[[G]] : tensor<4x8xf32>
// CHECK-NEXT: }
// CHECK: return %[[R]]
func.func @kernel(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = exec.fusion "fused_0" (%x, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>, %c: tensor<8xf32>):
    %half = tcc.constant dense<0.5> : tensor<f32>
    %1 = tcc.add %a, %c : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %2 = tcc.mul %1, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %3 = tcc.gelu %2 : (tensor<4x8xf32>) -> tensor<4x8xf32>
    exec.yield %3 : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// A kernel without parameters (a fill) and one changing the element type.
// CHECK-LABEL: func.func @no_inputs
// CHECK: exec.fusion "fill"() : () -> tensor<2xi1> {
// CHECK: exec.fusion "to_f32"(%{{.*}}) : (tensor<2xi1>) -> tensor<2xf32> {
// CHECK: tcc.cast
func.func @no_inputs() -> tensor<2xf32> {
  %0 = exec.fusion "fill" () : () -> tensor<2xi1> {
    %t = tcc.constant dense<true> : tensor<i1>
    %1 = tcc.broadcast %t : (tensor<i1>) -> tensor<2xi1>
    exec.yield %1 : tensor<2xi1>
  }
  %1 = exec.fusion "to_f32" (%0) : (tensor<2xi1>) -> tensor<2xf32> {
  ^bb0(%a: tensor<2xi1>):
    %2 = tcc.cast %a : (tensor<2xi1>) -> tensor<2xf32>
    exec.yield %2 : tensor<2xf32>
  }
  return %1 : tensor<2xf32>
}
