// RUN: tcc-opt --tcc-merge-projections %s | FileCheck %s
// RUN: tcc-opt --tcc-merge-projections %s | tcc-opt | FileCheck %s
// RUN: tcc-opt --pass-pipeline='builtin.module(func.func(tcc-merge-projections{report}))' %s \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// BERT's self-attention as PyTorch exports it: three projections of one
// input, each bias added first and reshaped and transposed to heads. One
// matmul on the weights concatenated along their rows (q, k, v: the
// attention's operand order), the biases likewise, and a split of the
// result into the three projections' results, at the first matmul.
// CHECK-LABEL: func.func @self_attention
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x8x32xf32>, %[[WQ:[^:]*]]: tensor<32x32xf32>, %[[BQ:[^:]*]]: tensor<32xf32>, %[[WK:[^:]*]]: tensor<32x32xf32>, %[[BK:[^:]*]]: tensor<32xf32>, %[[WV:[^:]*]]: tensor<32x32xf32>, %[[BV:[^:]*]]: tensor<32xf32>)
// CHECK-NEXT: %[[W:.*]] = tcc.concat %[[WQ]], %[[WK]], %[[WV]] {axis = 0 : i64} : (tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<96x32xf32>
// CHECK-NEXT: %[[P:.*]] = tcc.matmul %[[X]], %[[W]] {transpose_rhs = true} : (tensor<2x8x32xf32>, tensor<96x32xf32>) -> tensor<2x8x96xf32>
// CHECK-NEXT: %[[B:.*]] = tcc.concat %[[BQ]], %[[BK]], %[[BV]] {axis = 0 : i64} : (tensor<32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<96xf32>
// CHECK-NEXT: %[[Y:.*]] = tcc.add %[[B]], %[[P]] : (tensor<96xf32>, tensor<2x8x96xf32>) -> tensor<2x8x96xf32>
// CHECK-NEXT: %[[S:.*]]:3 = tcc.split %[[Y]] {axis = 2 : i64, sizes = array<i64: 32, 32, 32>}
// CHECK-NEXT: tcc.reshape %[[S]]#0
// CHECK-NEXT: tcc.transpose
// CHECK-NEXT: tcc.reshape %[[S]]#1
// CHECK-NEXT: tcc.transpose
// CHECK-NEXT: tcc.reshape %[[S]]#2
// CHECK-NEXT: tcc.transpose
// CHECK-NEXT: tcc.attention
// CHECK-NOT: tcc.matmul
func.func @self_attention(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %bq: tensor<32xf32>,
                          %wk: tensor<32x32xf32>, %bk: tensor<32xf32>, %wv: tensor<32x32xf32>,
                          %bv: tensor<32xf32>) -> tensor<2x2x8x16xf32> {
  %0 = tcc.matmul %x, %wq {transpose_rhs = true} : (tensor<2x8x32xf32>, tensor<32x32xf32>) -> tensor<2x8x32xf32>
  %1 = tcc.add %bq, %0 : (tensor<32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %2 = tcc.reshape %1 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %3 = tcc.transpose %2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %4 = tcc.matmul %x, %wk {transpose_rhs = true} : (tensor<2x8x32xf32>, tensor<32x32xf32>) -> tensor<2x8x32xf32>
  %5 = tcc.add %4, %bk : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  %6 = tcc.reshape %5 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %7 = tcc.transpose %6 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %8 = tcc.matmul %x, %wv {transpose_rhs = true} : (tensor<2x8x32xf32>, tensor<32x32xf32>) -> tensor<2x8x32xf32>
  %9 = tcc.add %bv, %8 : (tensor<32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %10 = tcc.reshape %9 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %11 = tcc.transpose %10 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %12 = tcc.attention %3, %7, %11 {scale = 2.500000e-01 : f64} : (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x2x8x16xf32>
  return %12 : tensor<2x2x8x16xf32>
}

// Mixed precision: each weight and bias is a parameter's bf16 cast (its
// working copy), made just before its own matmul; those of k and v move up
// to the first matmul, where the concats read them.
// CHECK-LABEL: func.func @working_copies
// CHECK-NEXT: %[[WQ:.*]] = tcc.get_param @wq
// CHECK-NEXT: %[[WK:.*]] = tcc.get_param @wk
// CHECK-NEXT: %[[WV:.*]] = tcc.get_param @wv
// CHECK-NEXT: %[[CQ:.*]] = tcc.cast %[[WQ]]
// CHECK-NEXT: %[[CK:.*]] = tcc.cast %[[WK]]
// CHECK-NEXT: %[[CV:.*]] = tcc.cast %[[WV]]
// CHECK-NEXT: %[[W:.*]] = tcc.concat %[[CQ]], %[[CK]], %[[CV]] {axis = 0 : i64} : (tensor<32x32xbf16>, tensor<32x32xbf16>, tensor<32x32xbf16>) -> tensor<96x32xbf16>
// CHECK-NEXT: tcc.matmul %{{.*}}, %[[W]] {transpose_rhs = true} : (tensor<2x8x32xbf16>, tensor<96x32xbf16>) -> tensor<2x8x96xbf16>
// CHECK-NEXT: tcc.split
// CHECK-NOT: tcc.matmul
tcc.param @wq = dense<0.5> : tensor<32x32xf32>
tcc.param @wk = dense<0.25> : tensor<32x32xf32>
tcc.param @wv = dense<0.125> : tensor<32x32xf32>
func.func @working_copies(%x: tensor<2x8x32xbf16>) -> tensor<2x2x8x16xbf16> {
  %wq = tcc.get_param @wq : tensor<32x32xf32>
  %wk = tcc.get_param @wk : tensor<32x32xf32>
  %wv = tcc.get_param @wv : tensor<32x32xf32>
  %cq = tcc.cast %wq : (tensor<32x32xf32>) -> tensor<32x32xbf16>
  %0 = tcc.matmul %x, %cq {transpose_rhs = true} : (tensor<2x8x32xbf16>, tensor<32x32xbf16>) -> tensor<2x8x32xbf16>
  %1 = tcc.reshape %0 : (tensor<2x8x32xbf16>) -> tensor<2x8x2x16xbf16>
  %2 = tcc.transpose %1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xbf16>) -> tensor<2x2x8x16xbf16>
  %ck = tcc.cast %wk : (tensor<32x32xf32>) -> tensor<32x32xbf16>
  %3 = tcc.matmul %x, %ck {transpose_rhs = true} : (tensor<2x8x32xbf16>, tensor<32x32xbf16>) -> tensor<2x8x32xbf16>
  %4 = tcc.reshape %3 : (tensor<2x8x32xbf16>) -> tensor<2x8x2x16xbf16>
  %5 = tcc.transpose %4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xbf16>) -> tensor<2x2x8x16xbf16>
  %cv = tcc.cast %wv : (tensor<32x32xf32>) -> tensor<32x32xbf16>
  %6 = tcc.matmul %x, %cv {transpose_rhs = true} : (tensor<2x8x32xbf16>, tensor<32x32xbf16>) -> tensor<2x8x32xbf16>
  %7 = tcc.reshape %6 : (tensor<2x8x32xbf16>) -> tensor<2x8x2x16xbf16>
  %8 = tcc.transpose %7 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xbf16>) -> tensor<2x2x8x16xbf16>
  %9 = tcc.attention %2, %5, %8 {causal = true, scale = 2.500000e-01 : f64} : (tensor<2x2x8x16xbf16>, tensor<2x2x8x16xbf16>, tensor<2x2x8x16xbf16>) -> tensor<2x2x8x16xbf16>
  return %9 : tensor<2x2x8x16xbf16>
}

// Cross-attention: q projects the decoder's states, k and v the encoder's
// output. k and v merge; q, of another input, stays its own matmul.
// CHECK-LABEL: func.func @cross_attention
// CHECK-SAME: (%[[H:[^:]*]]: tensor<2x8x32xf32>, %[[E:[^:]*]]: tensor<2x6x24xf32>, %[[WQ:[^:]*]]: tensor<32x32xf32>, %[[WK:[^:]*]]: tensor<32x24xf32>, %[[WV:[^:]*]]: tensor<32x24xf32>)
// CHECK: tcc.matmul %[[H]], %[[WQ]]
// CHECK: %[[W:.*]] = tcc.concat %[[WK]], %[[WV]] {axis = 0 : i64} : (tensor<32x24xf32>, tensor<32x24xf32>) -> tensor<64x24xf32>
// CHECK-NEXT: %[[P:.*]] = tcc.matmul %[[E]], %[[W]] {transpose_rhs = true} : (tensor<2x6x24xf32>, tensor<64x24xf32>) -> tensor<2x6x64xf32>
// CHECK-NEXT: tcc.split %[[P]] {axis = 2 : i64, sizes = array<i64: 32, 32>}
// CHECK-NOT: tcc.matmul
func.func @cross_attention(%h: tensor<2x8x32xf32>, %e: tensor<2x6x24xf32>, %wq: tensor<32x32xf32>,
                           %wk: tensor<32x24xf32>, %wv: tensor<32x24xf32>) -> tensor<2x2x8x16xf32> {
  %0 = tcc.matmul %h, %wq {transpose_rhs = true} : (tensor<2x8x32xf32>, tensor<32x32xf32>) -> tensor<2x8x32xf32>
  %1 = tcc.reshape %0 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %2 = tcc.transpose %1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %3 = tcc.matmul %e, %wk {transpose_rhs = true} : (tensor<2x6x24xf32>, tensor<32x24xf32>) -> tensor<2x6x32xf32>
  %4 = tcc.reshape %3 : (tensor<2x6x32xf32>) -> tensor<2x6x2x16xf32>
  %5 = tcc.transpose %4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x6x2x16xf32>) -> tensor<2x2x6x16xf32>
  %6 = tcc.matmul %e, %wv {transpose_rhs = true} : (tensor<2x6x24xf32>, tensor<32x24xf32>) -> tensor<2x6x32xf32>
  %7 = tcc.reshape %6 : (tensor<2x6x32xf32>) -> tensor<2x6x2x16xf32>
  %8 = tcc.transpose %7 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x6x2x16xf32>) -> tensor<2x2x6x16xf32>
  %9 = tcc.attention %2, %5, %8 {scale = 2.500000e-01 : f64} : (tensor<2x2x8x16xf32>, tensor<2x2x6x16xf32>, tensor<2x2x6x16xf32>) -> tensor<2x2x8x16xf32>
  return %9 : tensor<2x2x8x16xf32>
}

// Left alone: a projection with a bias beside two without (they merge, it
// stays), a product read by something besides its bias add, and a weight
// stored [K, N] (not transposed); the one projection left of the second
// attention has nothing to merge with.
// CHECK-LABEL: func.func @left_alone
// CHECK: %[[W:.*]] = tcc.concat %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<64x32xf32>
// CHECK-NEXT: tcc.matmul %{{.*}}, %[[W]]
// CHECK-NEXT: tcc.split
// CHECK-COUNT-3: tcc.matmul
// CHECK-NOT: tcc.concat
// CHECK: return
func.func @left_alone(%x: tensor<2x8x32xf32>, %w: tensor<32x32xf32>, %b: tensor<32xf32>,
                      %wn: tensor<32x32xf32>) -> (tensor<2x2x8x16xf32>, tensor<2x8x32xf32>, tensor<2x2x8x16xf32>, tensor<2x8x32xf32>) {
  %0 = tcc.matmul %x, %w {transpose_rhs = true} : (tensor<2x8x32xf32>, tensor<32x32xf32>) -> tensor<2x8x32xf32>
  %1 = tcc.add %b, %0 : (tensor<32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %2 = tcc.reshape %1 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %3 = tcc.transpose %2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %4 = tcc.matmul %x, %w {transpose_rhs = true} : (tensor<2x8x32xf32>, tensor<32x32xf32>) -> tensor<2x8x32xf32>
  %5 = tcc.reshape %4 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %6 = tcc.transpose %5 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %7 = tcc.matmul %x, %wn {transpose_rhs = true} : (tensor<2x8x32xf32>, tensor<32x32xf32>) -> tensor<2x8x32xf32>
  %8 = tcc.reshape %7 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %9 = tcc.transpose %8 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %10 = tcc.attention %3, %6, %9 {scale = 2.500000e-01 : f64} : (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x2x8x16xf32>
  // Its product read again (by the return): the add cannot go.
  %11 = tcc.matmul %x, %w {transpose_rhs = true} : (tensor<2x8x32xf32>, tensor<32x32xf32>) -> tensor<2x8x32xf32>
  %12 = tcc.add %b, %11 : (tensor<32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %13 = tcc.reshape %12 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %14 = tcc.transpose %13 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  // Not transposed: W as [K, N].
  %15 = tcc.matmul %x, %wn : (tensor<2x8x32xf32>, tensor<32x32xf32>) -> tensor<2x8x32xf32>
  %16 = tcc.reshape %15 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %17 = tcc.transpose %16 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %18 = tcc.matmul %x, %w {transpose_rhs = true} : (tensor<2x8x32xf32>, tensor<32x32xf32>) -> tensor<2x8x32xf32>
  %19 = tcc.reshape %18 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %20 = tcc.transpose %19 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %21 = tcc.attention %14, %17, %20 {scale = 2.500000e-01 : f64} : (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x2x8x16xf32>
  return %10, %11, %21, %x : tensor<2x2x8x16xf32>, tensor<2x8x32xf32>, tensor<2x2x8x16xf32>, tensor<2x8x32xf32>
}

// REPORT-DAG: remark: tcc-merge-projections: @self_attention: 3 projections merged
// REPORT-DAG: remark: tcc-merge-projections: @working_copies: 3 projections merged
// REPORT-DAG: remark: tcc-merge-projections: @cross_attention: 2 projections merged
// REPORT-DAG: remark: tcc-merge-projections: @left_alone: 2 projections merged
