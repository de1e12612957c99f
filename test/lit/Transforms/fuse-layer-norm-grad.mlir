// RUN: tcc-opt --tcc-fuse-layer-norm-grad %s | FileCheck %s
// RUN: tcc-opt --tcc-fuse-layer-norm-grad %s | tcc-opt | FileCheck %s
// RUN: tcc-opt --pass-pipeline='builtin.module(func.func(tcc-fuse-layer-norm-grad{report}))' %s \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// A pre-LN block's backward: the final layer norm's gradient %d1 is the
// stream's gradient; the Linear before it takes its sum over the tokens as
// its bias gradient; the block's layer norm gradient (computed from %d1
// through %w) is added to it, and that sum's sum (through the [16, 32]
// view) is the next bias gradient. Both sums become input_grad_sum results,
// the add the second gradient's residual_grad.
// CHECK-LABEL: func.func @pre_ln
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x8x32xf32>, %[[S:[^:]*]]: tensor<32xf32>, %[[DY:[^:]*]]: tensor<2x8x32xf32>, %[[W:[^:]*]]: tensor<32x32xf32>)
// CHECK-NEXT: %[[D1:.*]], %{{.*}}, %{{.*}}, %[[SUM1:.*]] = tcc.layer_norm_grad %[[X]] scale %[[S]] grad %[[DY]] {axis = 2 : i64, epsilon = 1.000000e-05 : f64} : (tensor<2x8x32xf32>, tensor<32xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>)
// CHECK-NEXT: %[[G:.*]] = tcc.matmul %[[D1]], %[[W]]
// CHECK-NEXT: %[[D2:.*]], %{{.*}}, %{{.*}}, %[[SUM2:.*]] = tcc.layer_norm_grad %[[X]] scale %[[S]] grad %[[G]] residual %[[D1]] {axis = 2 : i64, epsilon = 1.000000e-05 : f64} : (tensor<2x8x32xf32>, tensor<32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>)
// CHECK-NEXT: return %[[SUM1]], %[[D2]], %[[SUM2]]
func.func @pre_ln(%x: tensor<2x8x32xf32>, %s: tensor<32xf32>, %dy: tensor<2x8x32xf32>, %w: tensor<32x32xf32>) -> (tensor<32xf32>, tensor<2x8x32xf32>, tensor<32xf32>) {
  %d1, %ds1, %db1 = tcc.layer_norm_grad %x scale %s grad %dy {axis = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x8x32xf32>, tensor<32xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>)
  %b1 = tcc.reduce_sum %d1 {axes = array<i64: 0, 1>} : (tensor<2x8x32xf32>) -> tensor<32xf32>
  %g = tcc.matmul %d1, %w : (tensor<2x8x32xf32>, tensor<32x32xf32>) -> tensor<2x8x32xf32>
  %d2, %ds2, %db2 = tcc.layer_norm_grad %x scale %s grad %g {axis = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x8x32xf32>, tensor<32xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>)
  %r = tcc.add %d1, %d2 : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %v = tcc.reshape %r : (tensor<2x8x32xf32>) -> tensor<16x32xf32>
  %b2 = tcc.reduce_sum %v {axes = array<i64: 0>} : (tensor<16x32xf32>) -> tensor<32xf32>
  return %b1, %r, %b2 : tensor<32xf32>, tensor<2x8x32xf32>, tensor<32xf32>
}

// bf16: the sum is f32, as the parameters' gradients; it replaces a bf16
// sum read only by its cast to f32 (the f32 master bias's gradient), which
// is then not rounded to bf16 first. A bf16 sum read as bf16 stays.
// CHECK-LABEL: func.func @bf16
// CHECK-NEXT: %{{.*}}, %{{.*}}, %{{.*}}, %[[SUM:.*]] = tcc.layer_norm_grad {{.*}} -> (tensor<4x8xbf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT: %[[D2:.*]], %{{.*}}, %{{.*}} = tcc.layer_norm_grad {{.*}} -> (tensor<4x8xbf16>, tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT: %[[KEPT:.*]] = tcc.reduce_sum %[[D2]]
// CHECK-NEXT: return %[[SUM]], %[[KEPT]]
func.func @bf16(%x: tensor<4x8xbf16>, %dy: tensor<4x8xbf16>) -> (tensor<8xf32>, tensor<8xbf16>) {
  %d, %ds, %db = tcc.layer_norm_grad %x grad %dy {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> (tensor<4x8xbf16>, tensor<8xf32>, tensor<8xf32>)
  %b = tcc.reduce_sum %d {axes = array<i64: 0>} : (tensor<4x8xbf16>) -> tensor<8xbf16>
  %c = tcc.cast %b : (tensor<8xbf16>) -> tensor<8xf32>
  %d2, %ds2, %db2 = tcc.layer_norm_grad %x grad %d {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> (tensor<4x8xbf16>, tensor<8xf32>, tensor<8xf32>)
  %b2 = tcc.reduce_sum %d2 {axes = array<i64: 0>} : (tensor<4x8xbf16>) -> tensor<8xbf16>
  return %c, %b2 : tensor<8xf32>, tensor<8xbf16>
}

// Left alone:
// - the sum of two gradients neither depends on (which one would take the
//   other would follow the op order);
// - an input gradient read by something besides the add;
// - sums that are not over all the rows: over some of them, with keepdims,
//   or over the normalised dim.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: residual
// CHECK: %[[SUM:.*]] = tcc.add
// CHECK-NOT: residual
// CHECK: tcc.layer_norm_grad %{{.*}} grad %[[SUM]] {{.*}} -> (tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>)
// CHECK-NEXT: tcc.add
// CHECK-NEXT: tcc.reduce_sum {{.*}}axes = array<i64: 0>}
// CHECK-NEXT: tcc.reduce_sum {{.*}}keepdims = true
// CHECK-NEXT: tcc.reduce_sum {{.*}}axes = array<i64: 0, 2>}
func.func @left_alone(%x: tensor<2x8x32xf32>, %dy: tensor<2x8x32xf32>, %dz: tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<8x32xf32>, tensor<1x1x32xf32>, tensor<8xf32>) {
  %a, %as, %ab = tcc.layer_norm_grad %x grad %dy {axis = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>)
  %b, %bs, %bb = tcc.layer_norm_grad %x grad %dz {axis = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>)
  %sum = tcc.add %a, %b : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %c, %cs, %cb = tcc.layer_norm_grad %x grad %sum {axis = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>)
  %twice = tcc.add %sum, %c : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %some = tcc.reduce_sum %c {axes = array<i64: 0>} : (tensor<2x8x32xf32>) -> tensor<8x32xf32>
  %kept = tcc.reduce_sum %c {axes = array<i64: 0, 1>, keepdims = true} : (tensor<2x8x32xf32>) -> tensor<1x1x32xf32>
  %inner = tcc.reduce_sum %c {axes = array<i64: 0, 2>} : (tensor<2x8x32xf32>) -> tensor<8xf32>
  return %sum, %twice, %c, %some, %kept, %inner : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<8x32xf32>, tensor<1x1x32xf32>, tensor<8xf32>
}

// A sum of the gradient before the add (in op order) folds; the add then
// stays: the folded sum is of the gradient without the residual.
// CHECK-LABEL: func.func @sum_first
// CHECK-NEXT: tcc.neg
// CHECK-NEXT: %[[D:.*]], %{{.*}}, %{{.*}}, %[[SUM:.*]] = tcc.layer_norm_grad
// CHECK-NEXT: %[[R:.*]] = tcc.add %[[D]], %{{.*}}
// CHECK-NEXT: return %[[SUM]], %[[R]]
func.func @sum_first(%x: tensor<4x8xf32>, %g: tensor<4x8xf32>) -> (tensor<8xf32>, tensor<4x8xf32>) {
  %dy = tcc.neg %g : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %d, %ds, %db = tcc.layer_norm_grad %x grad %dy {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %b = tcc.reduce_sum %d {axes = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<8xf32>
  %r = tcc.add %d, %g : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %b, %r : tensor<8xf32>, tensor<4x8xf32>
}

// REPORT: remark: tcc-fuse-layer-norm-grad: @pre_ln: 1 residual adds and 2 sums folded into layer_norm_grad
// REPORT: remark: tcc-fuse-layer-norm-grad: @bf16: 0 residual adds and 1 sums folded into layer_norm_grad
// REPORT: remark: tcc-fuse-layer-norm-grad: @left_alone: 0 residual adds and 0 sums folded into layer_norm_grad
// REPORT: remark: tcc-fuse-layer-norm-grad: @sum_first: 0 residual adds and 1 sums folded into layer_norm_grad
