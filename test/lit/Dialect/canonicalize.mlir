// Folds of tcc ops, seen through the canonicalizer.
// RUN: tcc-opt %s --canonicalize | FileCheck %s

// CHECK-LABEL: func.func @identities
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @identities(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %zero = tcc.constant dense<0.0> : tensor<3xf32>
  %one = tcc.constant dense<1.0> : tensor<2x3xf32>
  %0 = tcc.add %x, %zero : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = tcc.mul %one, %0 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = tcc.cast %1 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = tcc.broadcast %2 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = tcc.transpose %3 {perm = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = tcc.reshape %4 : (tensor<2x3xf32>) -> tensor<6xf32>
  %6 = tcc.reshape %5 : (tensor<6xf32>) -> tensor<2x3xf32>
  return %6 : tensor<2x3xf32>
}

// A zero that broadcasts the other operand up is not an identity.
// CHECK-LABEL: func.func @broadcasting_zero
// CHECK: tcc.add
func.func @broadcasting_zero(%x: tensor<3xf32>) -> tensor<2x3xf32> {
  %zero = tcc.constant dense<0.0> : tensor<2x3xf32>
  %0 = tcc.add %x, %zero : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @reshape_chain
// CHECK-NEXT: %[[R:.*]] = tcc.reshape %arg0 : (tensor<2x3x4xf32>) -> tensor<4x6xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_chain(%x: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %0 = tcc.reshape %x : (tensor<2x3x4xf32>) -> tensor<24xf32>
  %1 = tcc.reshape %0 : (tensor<24xf32>) -> tensor<4x6xf32>
  return %1 : tensor<4x6xf32>
}

// CHECK-LABEL: func.func @reshape_constant
// CHECK-NEXT: %[[C:.*]] = tcc.constant dense<{{\[\[}}1, 2], [3, 4]]> : tensor<2x2xi64>
// CHECK-NEXT: return %[[C]]
func.func @reshape_constant() -> tensor<2x2xi64> {
  %c = tcc.constant dense<[1, 2, 3, 4]> : tensor<4xi64>
  %0 = tcc.reshape %c : (tensor<4xi64>) -> tensor<2x2xi64>
  return %0 : tensor<2x2xi64>
}

// A real transpose stays.
// CHECK-LABEL: func.func @real_transpose
// CHECK: tcc.transpose
func.func @real_transpose(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = tcc.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}
