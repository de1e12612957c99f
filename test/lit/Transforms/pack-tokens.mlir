// RUN: tcc-opt --split-input-file --tcc-pack-tokens %s | FileCheck %s
// RUN: tcc-opt --split-input-file --tcc-pack-tokens %s | tcc-opt --split-input-file | FileCheck %s
// RUN: tcc-opt --split-input-file --pass-pipeline='builtin.module(func.func(tcc-pack-tokens{report}))' %s \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// An encoder layer with BERT's additive mask and a loss over its tokens,
// and the gradient of its input: the mask's computation moves to the top
// and feeds pack_index; the input and the labels are packed (the labels
// with ignore_index and the run-time check); layer norm, both matmuls and
// the loss run over the valid rows; attention reads cu_seqlens; the input
// gradient, zero at padding, is unpacked. Shapes do not change.
// CHECK-LABEL: func.func @encoder
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x4x8xf32>, %[[MASK:[^:]*]]: tensor<2x4xi64>, %[[LABELS:[^:]*]]: tensor<2x4xi64>
// CHECK: %[[BIAS:.*]] = tcc.mul
// CHECK-NEXT: %[[ROWS:.*]], %[[CU:.*]] = tcc.pack_index %[[BIAS]] : (tensor<2x4xf32>) -> (tensor<8xi32>, tensor<3xi32>)
// CHECK-NEXT: %[[PX:.*]] = tcc.pack %[[X]], %[[ROWS]] : (tensor<2x4x8xf32>, tensor<8xi32>) -> tensor<2x4x8xf32>
// CHECK: tcc.layer_norm %[[PX]] {{.*}}tcc.token_rows = 8 : i64
// CHECK: tcc.matmul {{.*}}{tcc.token_rows = 8 : i64} : (tensor<2x4x8xf32>, tensor<8x8xf32>)
// CHECK: %[[Q:.*]] = tcc.transpose
// CHECK-NEXT: tcc.attention %[[Q]], %[[Q]], %[[Q]], %[[CU]] {scale = 5.000000e-01 : f64} : ({{.*}}, tensor<3xi32>)
// CHECK: %[[L:.*]] = tcc.reshape %[[LABELS]]
// CHECK-NEXT: %[[PL:.*]] = tcc.pack %[[L]], %[[ROWS]] {check_fill = true, fill = -1.000000e+02 : f64}
// CHECK-NEXT: tcc.cross_entropy %{{.*}}, %[[PL]] {tcc.token_rows = 8 : i64}
// CHECK-NEXT: tcc.cross_entropy_grad %{{.*}}, %[[PL]], %{{.*}} {tcc.token_rows = 8 : i64}
// CHECK-NEXT: tcc.matmul {{.*}}{tcc.token_rows = 8 : i64}
// CHECK-NEXT: %[[DX:.*]] = tcc.reshape
// CHECK-NEXT: %[[U:.*]] = tcc.unpack %[[DX]], %[[ROWS]] : (tensor<2x4x8xf32>, tensor<8xi32>) -> tensor<2x4x8xf32>
// CHECK: return %{{.*}}, %[[U]]
// REPORT: remark: tcc-pack-tokens: @encoder: packed 11 ops (2 GEMMs, 1 attention) over 8 token rows; 2 packs, 1 unpacks
func.func @encoder(%x: tensor<2x4x8xf32>, %mask: tensor<2x4xi64>, %labels: tensor<2x4xi64>,
                   %s: tensor<8xf32>, %w: tensor<8x8xf32>) -> (tensor<f32>, tensor<2x4x8xf32>) {
  %one = tcc.constant dense<1.0> : tensor<f32>
  %big = tcc.constant dense<-10000.0> : tensor<f32>
  %h = tcc.layer_norm %x scale %s {axis = 2 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %mf = tcc.cast %mask : (tensor<2x4xi64>) -> tensor<2x4xf32>
  %nm = tcc.sub %one, %mf : (tensor<f32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %bias = tcc.mul %nm, %big : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %p = tcc.matmul %h, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %r = tcc.reshape %p : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %q = tcc.transpose %r {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %a = tcc.attention %q, %q, %q, %bias {scale = 0.5 : f64} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x4xf32>) -> tensor<2x2x4x4xf32>
  %t = tcc.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x4x4xf32>) -> tensor<2x4x2x4xf32>
  %y = tcc.reshape %t : (tensor<2x4x2x4xf32>) -> tensor<8x8xf32>
  %l = tcc.reshape %labels : (tensor<2x4xi64>) -> tensor<8xi64>
  %sum, %count = tcc.cross_entropy %y, %l : (tensor<8x8xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<f32>)
  %g = tcc.cross_entropy_grad %y, %l, %one : (tensor<8x8xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x8xf32>
  %dx = tcc.matmul %g, %w : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %dx3 = tcc.reshape %dx : (tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %loss = tcc.div %sum, %count : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %loss, %dx3 : tensor<f32>, tensor<2x4x8xf32>
}

// -----

// eval_step's count of the labels predicted right (TrainLoss.cpp's
// buildCorrectCount): the comparison with ignore_index packs the labels
// with -100 at padding, which the loss's run-time check shares, so the
// comparison is false there and the sum over every token may run packed;
// the one-hot side packs the reshaped labels with 0, unchecked (its rows
// at padding are and-ed with false).
// CHECK-LABEL: func.func @accuracy
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x4x8xf32>, %[[MASK:[^:]*]]: tensor<2x4xi64>, %[[LABELS:[^:]*]]: tensor<2x4xi64>
// CHECK: tcc.pack_index
// CHECK-DAG: %[[PL:.*]] = tcc.pack %[[LABELS]], %{{.*}} {check_fill = true, fill = -1.000000e+02 : f64}
// CHECK-DAG: %[[PC:.*]] = tcc.pack %{{.*}}, %{{.*}} : (tensor<2x4x1xi64>, tensor<8xi32>)
// CHECK: tcc.cmp  eq, %{{.*}}, %[[PC]] {tcc.token_rows = 8 : i64}
// CHECK: tcc.cmp  ne, %[[PL]], %{{.*}} {tcc.token_rows = 8 : i64}
// CHECK: %[[AND:.*]] = tcc.and {{.*}}tcc.token_rows = 8
// CHECK: %[[ONES:.*]] = tcc.cast %[[AND]] {tcc.token_rows = 8 : i64}
// CHECK: tcc.reduce_sum %[[ONES]] {axes = array<i64: 0, 1>}
// CHECK-NOT: tcc.unpack
// REPORT: remark: tcc-pack-tokens: @accuracy: packed 16 ops (1 GEMMs, 1 attention) over 8 token rows; 3 packs, 0 unpacks
func.func @accuracy(%x: tensor<2x4x8xf32>, %mask: tensor<2x4xi64>, %labels: tensor<2x4xi64>,
                    %w: tensor<8x8xf32>) -> (tensor<f32>, tensor<f32>) {
  %one = tcc.constant dense<1.0> : tensor<f32>
  %big = tcc.constant dense<-10000.0> : tensor<f32>
  %zero = tcc.constant dense<0.0> : tensor<f32>
  %ignore = tcc.constant dense<-100> : tensor<i64>
  %ids = tcc.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : tensor<8xi64>
  %mf = tcc.cast %mask : (tensor<2x4xi64>) -> tensor<2x4xf32>
  %nm = tcc.sub %one, %mf : (tensor<f32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %bias = tcc.mul %nm, %big : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %r = tcc.reshape %x : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %q = tcc.transpose %r {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %a = tcc.attention %q, %q, %q, %bias {scale = 0.5 : f64} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x4xf32>) -> tensor<2x2x4x4xf32>
  %t = tcc.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x4x4xf32>) -> tensor<2x4x2x4xf32>
  %h = tcc.reshape %t : (tensor<2x4x2x4xf32>) -> tensor<2x4x8xf32>
  %y = tcc.matmul %h, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %sum, %count = tcc.cross_entropy %y, %labels : (tensor<2x4x8xf32>, tensor<2x4xi64>) -> (tensor<f32>, tensor<f32>)
  %loss = tcc.div %sum, %count : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %col = tcc.reshape %labels : (tensor<2x4xi64>) -> tensor<2x4x1xi64>
  %hot = tcc.cmp eq, %ids, %col : (tensor<8xi64>, tensor<2x4x1xi64>) -> tensor<2x4x8xi1>
  %sel = tcc.where %hot, %y, %zero : (tensor<2x4x8xi1>, tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %picked = tcc.reduce_sum %sel {axes = array<i64: 2>} : (tensor<2x4x8xf32>) -> tensor<2x4xf32>
  %best = tcc.reduce_max %y {axes = array<i64: 2>} : (tensor<2x4x8xf32>) -> tensor<2x4xf32>
  %counted = tcc.cmp ne, %labels, %ignore : (tensor<2x4xi64>, tensor<i64>) -> tensor<2x4xi1>
  %top = tcc.cmp ge, %picked, %best : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xi1>
  %right = tcc.and %top, %counted : (tensor<2x4xi1>, tensor<2x4xi1>) -> tensor<2x4xi1>
  %ones = tcc.cast %right : (tensor<2x4xi1>) -> tensor<2x4xf32>
  %n = tcc.reduce_sum %ones {axes = array<i64: 0, 1>} : (tensor<2x4xf32>) -> tensor<f32>
  return %loss, %n : tensor<f32>, tensor<f32>
}

// -----

// Per-token outputs of a forward pass: unpacking them would give zeros
// where the unpacked model computes values at padded positions, so the
// region shrinks to nothing and the function is left as it is.
// CHECK-LABEL: func.func @per_token_outputs
// CHECK-NOT: tcc.pack
// CHECK: tcc.attention %{{.*}}, %{{.*}}, %{{.*}}, %arg1
// REPORT: remark: tcc-pack-tokens: @per_token_outputs: nothing packed: no attention can run packed
func.func @per_token_outputs(%x: tensor<2x4x2x4xf32>, %keep: tensor<2x4xi1>) -> tensor<2x4x2x4xf32> {
  %q = tcc.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %a = tcc.attention %q, %q, %q, %keep {scale = 0.5 : f64} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x4xi1>) -> tensor<2x2x4x4xf32>
  %t = tcc.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x4x4xf32>) -> tensor<2x4x2x4xf32>
  return %t : tensor<2x4x2x4xf32>
}

// -----

// CHECK-LABEL: func.func @no_mask
// CHECK-NOT: tcc.pack
// REPORT: remark: tcc-pack-tokens: @no_mask: nothing packed: no attention with a key-padding mask
func.func @no_mask(%q: tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32> {
  %a = tcc.attention %q, %q, %q {scale = 0.5 : f64, causal = true} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  return %a : tensor<2x2x4x4xf32>
}

// -----

// --pad-skip=off: the driver marks the module, and the pass leaves it.
// CHECK-LABEL: func.func @off
// CHECK-NOT: tcc.pack
module attributes {tcc.pad_skip = "off"} {
  func.func @off(%x: tensor<2x4x8xf32>, %keep: tensor<2x4xi1>, %labels: tensor<8xi64>) -> tensor<f32> {
    %r = tcc.reshape %x : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
    %q = tcc.transpose %r {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
    %a = tcc.attention %q, %q, %q, %keep {scale = 0.5 : f64} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x4xi1>) -> tensor<2x2x4x4xf32>
    %t = tcc.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x4x4xf32>) -> tensor<2x4x2x4xf32>
    %y = tcc.reshape %t : (tensor<2x4x2x4xf32>) -> tensor<8x8xf32>
    %sum, %count = tcc.cross_entropy %y, %labels : (tensor<8x8xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<f32>)
    return %sum : tensor<f32>
  }
}
