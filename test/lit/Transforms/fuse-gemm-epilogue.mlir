// RUN: tcc-opt --tcc-fuse-gemm-epilogue %s | FileCheck %s
// RUN: tcc-opt --tcc-fuse-gemm-epilogue %s | tcc-opt | FileCheck %s
// RUN: tcc-opt --pass-pipeline='builtin.module(func.func(tcc-fuse-gemm-epilogue{report}))' %s \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// A transformer projection: [B, T, K] x W^T plus a bias (the add's first
// operand here, as PyTorch exports it). One gemm on the [B*T, K] view with
// that bias, in the matmul's place (the bias is an argument), and a reshape
// back; the reshapes are views.
// CHECK-LABEL: func.func @projection
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x8x32xf32>, %[[W:[^:]*]]: tensor<96x32xf32>, %[[B:[^:]*]]: tensor<96xf32>)
// CHECK-NEXT: %[[A:.*]] = tcc.reshape %[[X]] : (tensor<2x8x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT: %[[G:.*]] = tcc.gemm %[[A]], %[[W]] bias %[[B]] {transpose_b = true} : (tensor<16x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> tensor<16x96xf32>
// CHECK-NEXT: %[[Y:.*]] = tcc.reshape %[[G]] : (tensor<16x96xf32>) -> tensor<2x8x96xf32>
// CHECK-NEXT: %[[N:.*]] = tcc.neg %[[Y]]
// CHECK-NEXT: return %[[N]]
func.func @projection(%x: tensor<2x8x32xf32>, %w: tensor<96x32xf32>, %b: tensor<96xf32>) -> tensor<2x8x96xf32> {
  %0 = tcc.matmul %x, %w {transpose_rhs = true} : (tensor<2x8x32xf32>, tensor<96x32xf32>) -> tensor<2x8x96xf32>
  %1 = tcc.add %b, %0 : (tensor<96xf32>, tensor<2x8x96xf32>) -> tensor<2x8x96xf32>
  %2 = tcc.neg %1 : (tensor<2x8x96xf32>) -> tensor<2x8x96xf32>
  return %2 : tensor<2x8x96xf32>
}

// Matrices need no reshape; a transposed lhs is transpose_a. A [1, N] bias
// becomes a [N] view; a scalar bias is C (beta 1) as it is. A bias
// computed after the matmul puts the gemm in the add's place.
// CHECK-LABEL: func.func @matrices
// CHECK: %[[C1:.*]] = tcc.reshape %{{.*}} : (tensor<1x6xf32>) -> tensor<6xf32>
// CHECK-NEXT: %[[G1:.*]] = tcc.gemm %{{.*}}, %{{.*}} bias %[[C1]] {transpose_a = true} : (tensor<5x4xf32>, tensor<5x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
// CHECK-NEXT: %[[E:.*]] = tcc.exp
// CHECK-NEXT: %[[G2:.*]] = tcc.gemm %{{.*}}, %{{.*}}, %[[E]] : (tensor<4x5xf32>, tensor<5x6xf32>, tensor<f32>) -> tensor<4x6xf32>
// CHECK-NEXT: return %[[G1]], %[[G2]]
func.func @matrices(%x: tensor<5x4xf32>, %y: tensor<4x5xf32>, %w: tensor<5x6xf32>, %b: tensor<1x6xf32>, %s: tensor<f32>) -> (tensor<4x6xf32>, tensor<4x6xf32>) {
  %0 = tcc.matmul %x, %w {transpose_lhs = true} : (tensor<5x4xf32>, tensor<5x6xf32>) -> tensor<4x6xf32>
  %1 = tcc.add %0, %b : (tensor<4x6xf32>, tensor<1x6xf32>) -> tensor<4x6xf32>
  %2 = tcc.matmul %y, %w : (tensor<4x5xf32>, tensor<5x6xf32>) -> tensor<4x6xf32>
  %e = tcc.exp %s : (tensor<f32>) -> tensor<f32>
  %3 = tcc.add %2, %e : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  return %1, %3 : tensor<4x6xf32>, tensor<4x6xf32>
}

// A gemm without C (the ONNX importer's form) takes the bias; its alpha
// and transposes stay.
// CHECK-LABEL: func.func @gemm_without_c
// CHECK-NEXT: %[[G:.*]] = tcc.gemm %{{.*}}, %{{.*}} bias %{{.*}} {alpha = 5.000000e-01 : f64, transpose_b = true} : (tensor<4x5xf32>, tensor<6x5xf32>, tensor<6xf32>) -> tensor<4x6xf32>
// CHECK-NEXT: return %[[G]]
func.func @gemm_without_c(%x: tensor<4x5xf32>, %w: tensor<6x5xf32>, %b: tensor<6xf32>) -> tensor<4x6xf32> {
  %0 = tcc.gemm %x, %w {alpha = 0.5 : f64, transpose_b = true} : (tensor<4x5xf32>, tensor<6x5xf32>) -> tensor<4x6xf32>
  %1 = tcc.add %0, %b : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  return %1 : tensor<4x6xf32>
}

// A pre-LN transformer's output projection and residual: x + (h W^T + b)
// with h computed from x. The bias add folds first; then the residual, read
// through the reshape back, is the gemm's C ([B*T, N] view, beta 1). Either
// operand order; without a bias the product's own add folds the same way.
// CHECK-LABEL: func.func @residual
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x8x32xf32>, %[[W:[^:]*]]: tensor<32x32xf32>, %[[B:[^:]*]]: tensor<32xf32>)
// CHECK-NEXT: %[[H:.*]] = tcc.tanh %[[X]]
// CHECK-NEXT: %[[A:.*]] = tcc.reshape %[[H]] : (tensor<2x8x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT: %[[C:.*]] = tcc.reshape %[[X]] : (tensor<2x8x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT: %[[G:.*]] = tcc.gemm %[[A]], %[[W]], %[[C]] bias %[[B]] {transpose_b = true} : (tensor<16x32xf32>, tensor<32x32xf32>, tensor<16x32xf32>, tensor<32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT: %[[Y:.*]] = tcc.reshape %[[G]] : (tensor<16x32xf32>) -> tensor<2x8x32xf32>
// CHECK-NEXT: %[[A2:.*]] = tcc.reshape %[[Y]] : (tensor<2x8x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT: %[[C2:.*]] = tcc.reshape %[[Y]] : (tensor<2x8x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT: %[[G2:.*]] = tcc.gemm %[[A2]], %[[W]], %[[C2]] : (tensor<16x32xf32>, tensor<32x32xf32>, tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT: %[[Y2:.*]] = tcc.reshape %[[G2]] : (tensor<16x32xf32>) -> tensor<2x8x32xf32>
// CHECK-NEXT: return %[[Y2]]
func.func @residual(%x: tensor<2x8x32xf32>, %w: tensor<32x32xf32>, %b: tensor<32xf32>) -> tensor<2x8x32xf32> {
  %h = tcc.tanh %x : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %0 = tcc.matmul %h, %w {transpose_rhs = true} : (tensor<2x8x32xf32>, tensor<32x32xf32>) -> tensor<2x8x32xf32>
  %1 = tcc.add %b, %0 : (tensor<32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %2 = tcc.add %x, %1 : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %3 = tcc.matmul %2, %w : (tensor<2x8x32xf32>, tensor<32x32xf32>) -> tensor<2x8x32xf32>
  %4 = tcc.add %3, %2 : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  return %4 : tensor<2x8x32xf32>
}

// A chain of input-gradient contributions (BERT's separate q, k and v
// projections): the residual gradient plus each projection's product. The
// first add's GEMM depends on its addend (C by the residual rule); each
// later product takes the running sum as C because that sum is already a
// GEMM with a C (it cannot take another), whatever the op order, in either
// operand order. No add is left.
// CHECK-LABEL: func.func @gradient_chain
// CHECK-SAME: (%[[G:[^:]*]]: tensor<2x8x32xf32>, %[[WV:[^:]*]]: tensor<32x32xf32>, %[[WK:[^:]*]]: tensor<32x32xf32>, %[[WQ:[^:]*]]: tensor<32x32xf32>)
// CHECK-NOT: tcc.add
// CHECK: %[[S1:.*]] = tcc.gemm %{{.*}}, %[[WV]], %{{.*}} : (tensor<16x32xf32>, tensor<32x32xf32>, tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT: %[[R1:.*]] = tcc.reshape %[[S1]]
// CHECK-NOT: tcc.add
// CHECK: %[[C2:.*]] = tcc.reshape %[[R1]] : (tensor<2x8x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT: %[[S2:.*]] = tcc.gemm %{{.*}}, %[[WK]], %[[C2]] :
// CHECK-NEXT: %[[R2:.*]] = tcc.reshape %[[S2]]
// CHECK-NOT: tcc.add
// CHECK: %[[C3:.*]] = tcc.reshape %[[R2]] : (tensor<2x8x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT: %[[S3:.*]] = tcc.gemm %{{.*}}, %[[WQ]], %[[C3]] :
// CHECK-NEXT: %[[R3:.*]] = tcc.reshape %[[S3]]
// CHECK-NEXT: return %[[R3]]
func.func @gradient_chain(%g: tensor<2x8x32xf32>, %wv: tensor<32x32xf32>, %wk: tensor<32x32xf32>,
                          %wq: tensor<32x32xf32>) -> tensor<2x8x32xf32> {
  %dv = tcc.tanh %g : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %dk = tcc.exp %g : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %dq = tcc.neg %g : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %0 = tcc.matmul %dv, %wv : (tensor<2x8x32xf32>, tensor<32x32xf32>) -> tensor<2x8x32xf32>
  %1 = tcc.add %g, %0 : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %2 = tcc.matmul %dk, %wk : (tensor<2x8x32xf32>, tensor<32x32xf32>) -> tensor<2x8x32xf32>
  %3 = tcc.add %1, %2 : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %4 = tcc.matmul %dq, %wq : (tensor<2x8x32xf32>, tensor<32x32xf32>) -> tensor<2x8x32xf32>
  %5 = tcc.add %4, %3 : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  return %5 : tensor<2x8x32xf32>
}

// Left alone: a sum of two plain products, neither of which the other
// depends on. Which product would take the other as C, or whether the GEMM
// would move down to an add computed after it, depends on the op order, which
// rematerialisation and micro-batch interleaving change; the rounding must
// not. Here the second product is computed first: folding it would be
// order-dependent (and the first GEMM would move down to the add).
// CHECK-LABEL: func.func @unrelated_sum
// CHECK-COUNT-2: tcc.matmul
// CHECK-NEXT: tcc.add
// CHECK-NEXT: tcc.add
// CHECK-NEXT: return
func.func @unrelated_sum(%x: tensor<4x5xf32>, %y: tensor<4x5xf32>, %w: tensor<5x6xf32>, %r: tensor<4x6xf32>)
    -> (tensor<4x6xf32>, tensor<4x6xf32>) {
  %0 = tcc.matmul %x, %w : (tensor<4x5xf32>, tensor<5x6xf32>) -> tensor<4x6xf32>
  %1 = tcc.matmul %y, %w : (tensor<4x5xf32>, tensor<5x6xf32>) -> tensor<4x6xf32>
  %2 = tcc.add %1, %0 : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %3 = tcc.add %r, %2 : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  return %2, %3 : tensor<4x6xf32>, tensor<4x6xf32>
}

// Left alone: a product with another use (it would be computed twice), a
// column bias, a bias of higher rank (the add broadcasts the product), a
// batched weight (not one GEMM), a transposed batched lhs, a gemm that has
// a C already (a bias, or a residual: no second of either), and a residual
// added to a product with another use.
// CHECK-LABEL: func.func @left_alone
// CHECK-COUNT-5: tcc.matmul
// CHECK: tcc.gemm %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x5xf32>, tensor<5x6xf32>, tensor<6xf32>)
// CHECK-NEXT: tcc.add
// CHECK-NEXT: tcc.gemm %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x5xf32>, tensor<5x6xf32>, tensor<4x6xf32>)
// CHECK-NEXT: tcc.add
// CHECK-NEXT: tcc.gemm %{{.*}}, %{{.*}} bias %{{.*}} : (tensor<4x5xf32>, tensor<5x6xf32>, tensor<6xf32>)
// CHECK-NEXT: tcc.add
// CHECK-NEXT: tcc.neg
// CHECK-NEXT: return
func.func @left_alone(%x: tensor<4x5xf32>, %w: tensor<5x6xf32>, %b: tensor<6xf32>, %r: tensor<4x6xf32>,
                      %c: tensor<4x1xf32>, %big: tensor<3x1x6xf32>, %x3: tensor<3x4x5xf32>,
                      %w3: tensor<3x5x6xf32>, %t3: tensor<3x5x4xf32>)
    -> (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<3x4x6xf32>,
        tensor<3x4x6xf32>, tensor<3x4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>,
        tensor<4x6xf32>) {
  %0 = tcc.matmul %x, %w : (tensor<4x5xf32>, tensor<5x6xf32>) -> tensor<4x6xf32>
  %1 = tcc.add %0, %b : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  %2 = tcc.sub %0, %b : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  %5 = tcc.matmul %x, %w : (tensor<4x5xf32>, tensor<5x6xf32>) -> tensor<4x6xf32>
  %6 = tcc.add %5, %c : (tensor<4x6xf32>, tensor<4x1xf32>) -> tensor<4x6xf32>
  %7 = tcc.matmul %x, %w : (tensor<4x5xf32>, tensor<5x6xf32>) -> tensor<4x6xf32>
  %8 = tcc.add %7, %big : (tensor<4x6xf32>, tensor<3x1x6xf32>) -> tensor<3x4x6xf32>
  %9 = tcc.matmul %x3, %w3 : (tensor<3x4x5xf32>, tensor<3x5x6xf32>) -> tensor<3x4x6xf32>
  %10 = tcc.add %9, %b : (tensor<3x4x6xf32>, tensor<6xf32>) -> tensor<3x4x6xf32>
  %11 = tcc.matmul %t3, %w {transpose_lhs = true} : (tensor<3x5x4xf32>, tensor<5x6xf32>) -> tensor<3x4x6xf32>
  %12 = tcc.add %11, %b : (tensor<3x4x6xf32>, tensor<6xf32>) -> tensor<3x4x6xf32>
  %13 = tcc.gemm %x, %w, %b : (tensor<4x5xf32>, tensor<5x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  %14 = tcc.add %13, %b : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  %15 = tcc.gemm %x, %w, %r : (tensor<4x5xf32>, tensor<5x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %16 = tcc.add %15, %r : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %17 = tcc.gemm %x, %w bias %b : (tensor<4x5xf32>, tensor<5x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  %18 = tcc.add %17, %r : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %19 = tcc.neg %17 : (tensor<4x6xf32>) -> tensor<4x6xf32>
  return %1, %2, %6, %8, %10, %12, %14, %16, %18, %19 : tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>,
      tensor<3x4x6xf32>, tensor<3x4x6xf32>, tensor<3x4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>,
      tensor<4x6xf32>
}

// REPORT-DAG: remark: tcc-fuse-gemm-epilogue: @projection: 1 bias adds and 0 residual adds folded into GEMMs, 0 bias gradients into weight-gradient GEMMs
// REPORT-DAG: remark: tcc-fuse-gemm-epilogue: @matrices: 2 bias adds and 0 residual adds folded into GEMMs, 0 bias gradients into weight-gradient GEMMs
// REPORT-DAG: remark: tcc-fuse-gemm-epilogue: @gemm_without_c: 1 bias adds and 0 residual adds folded into GEMMs, 0 bias gradients into weight-gradient GEMMs
// REPORT-DAG: remark: tcc-fuse-gemm-epilogue: @residual: 1 bias adds and 2 residual adds folded into GEMMs, 0 bias gradients into weight-gradient GEMMs
// REPORT-DAG: remark: tcc-fuse-gemm-epilogue: @gradient_chain: 0 bias adds and 3 residual adds folded into GEMMs, 0 bias gradients into weight-gradient GEMMs
// REPORT-DAG: remark: tcc-fuse-gemm-epilogue: @unrelated_sum: 0 bias adds and 0 residual adds folded into GEMMs, 0 bias gradients into weight-gradient GEMMs
// REPORT-DAG: remark: tcc-fuse-gemm-epilogue: @left_alone: 0 bias adds and 0 residual adds folded into GEMMs, 0 bias gradients into weight-gradient GEMMs

// A Linear's bias gradient beside its weight gradient: the sum of dY over
// every row and the GEMM reading dY as op(a) = dY^T become one gemm with
// a bias_grad result. The sum is read (by the neg) before the GEMM, so the
// gemm moves up to the sum; the [rows, M] view of dY is made again there.
// CHECK-LABEL: func.func @bias_grad
// CHECK-SAME: (%[[DY:[^:]*]]: tensor<2x8x96xf32>, %[[X:[^:]*]]: tensor<16x32xf32>)
// CHECK-NEXT: %[[V:.*]] = tcc.reshape %[[DY]] : (tensor<2x8x96xf32>) -> tensor<16x96xf32>
// CHECK-NEXT: %[[G:[^ ]*]], %[[BG:[^ ]*]] = tcc.gemm %[[V]], %[[X]] {transpose_a = true, with_bias_grad = true} : (tensor<16x96xf32>, tensor<16x32xf32>) -> (tensor<96x32xf32>, tensor<96xf32>)
// CHECK-NEXT: %[[N:.*]] = tcc.neg %[[BG]]
// CHECK-NEXT: return %[[N]], %[[G]]
func.func @bias_grad(%dy: tensor<2x8x96xf32>, %x: tensor<16x32xf32>) -> (tensor<96xf32>, tensor<96x32xf32>) {
  %s = tcc.reduce_sum %dy {axes = array<i64: 0, 1>} : (tensor<2x8x96xf32>) -> tensor<96xf32>
  %n = tcc.neg %s : (tensor<96xf32>) -> tensor<96xf32>
  %v = tcc.reshape %dy : (tensor<2x8x96xf32>) -> tensor<16x96xf32>
  %w = tcc.matmul %v, %x {transpose_lhs = true} : (tensor<16x96xf32>, tensor<16x32xf32>) -> tensor<96x32xf32>
  return %n, %w : tensor<96xf32>, tensor<96x32xf32>
}

// Nothing reads the sum before the GEMM: the gemm stays where the GEMM was
// (a 2-D dY; a tcc.gemm with a C keeps its C and alpha). When the sum is
// read before and the GEMM's other operand is made after the sum, both
// are left alone.
// CHECK-LABEL: func.func @bias_grad_later
// CHECK-NEXT: %[[E:.*]] = tcc.exp
// CHECK-NEXT: %[[G:[^ ]*]], %[[BG:[^ ]*]] = tcc.gemm %{{.*}}, %[[E]], %{{.*}} {alpha = 2.000000e+00 : f64, transpose_a = true, with_bias_grad = true} : (tensor<16x96xf32>, tensor<16x32xf32>, tensor<96x32xf32>) -> (tensor<96x32xf32>, tensor<96xf32>)
// CHECK-NEXT: return %[[BG]], %[[G]]
// CHECK-LABEL: func.func @bias_grad_left_alone
// CHECK-NEXT: tcc.reduce_sum
// CHECK-NEXT: tcc.neg
// CHECK-NEXT: tcc.exp
// CHECK-NEXT: tcc.matmul
// CHECK-NEXT: tcc.reduce_sum %{{.*}} {axes = array<i64: 0>}
// CHECK-NEXT: tcc.matmul
func.func @bias_grad_later(%dy: tensor<16x96xf32>, %x: tensor<16x32xf32>, %c: tensor<96x32xf32>) -> (tensor<96xf32>, tensor<96x32xf32>) {
  %s = tcc.reduce_sum %dy {axes = array<i64: 0>} : (tensor<16x96xf32>) -> tensor<96xf32>
  %e = tcc.exp %x : (tensor<16x32xf32>) -> tensor<16x32xf32>
  %w = tcc.gemm %dy, %e, %c {alpha = 2.0 : f64, transpose_a = true} : (tensor<16x96xf32>, tensor<16x32xf32>, tensor<96x32xf32>) -> tensor<96x32xf32>
  return %s, %w : tensor<96xf32>, tensor<96x32xf32>
}
// Also left alone: a sum over some rows only, and a GEMM reading dY as it
// is (an input gradient dY @ W).
func.func @bias_grad_left_alone(%dy: tensor<16x96xf32>, %x: tensor<16x32xf32>, %dz: tensor<2x8x96xf32>, %w: tensor<96x32xf32>) -> (tensor<96xf32>, tensor<96x32xf32>, tensor<8x96xf32>, tensor<2x8x32xf32>) {
  %s = tcc.reduce_sum %dy {axes = array<i64: 0>} : (tensor<16x96xf32>) -> tensor<96xf32>
  %n = tcc.neg %s : (tensor<96xf32>) -> tensor<96xf32>
  %e = tcc.exp %x : (tensor<16x32xf32>) -> tensor<16x32xf32>
  %g = tcc.matmul %dy, %e {transpose_lhs = true} : (tensor<16x96xf32>, tensor<16x32xf32>) -> tensor<96x32xf32>
  %t = tcc.reduce_sum %dz {axes = array<i64: 0>} : (tensor<2x8x96xf32>) -> tensor<8x96xf32>
  %i = tcc.matmul %dz, %w : (tensor<2x8x96xf32>, tensor<96x32xf32>) -> tensor<2x8x32xf32>
  return %n, %g, %t, %i : tensor<96xf32>, tensor<96x32xf32>, tensor<8x96xf32>, tensor<2x8x32xf32>
}
// REPORT-DAG: remark: tcc-fuse-gemm-epilogue: @bias_grad: 0 bias adds and 0 residual adds folded into GEMMs, 1 bias gradients into weight-gradient GEMMs
// REPORT-DAG: remark: tcc-fuse-gemm-epilogue: @bias_grad_later: 0 bias adds and 0 residual adds folded into GEMMs, 1 bias gradients into weight-gradient GEMMs
// REPORT-DAG: remark: tcc-fuse-gemm-epilogue: @bias_grad_left_alone: 0 bias adds and 0 residual adds folded into GEMMs, 0 bias gradients into weight-gradient GEMMs
