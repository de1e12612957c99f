// RUN: tcc-opt --tcc-fuse %s | FileCheck %s
// RUN: tcc-opt --tcc-fuse %s | tcc-opt | FileCheck %s
// RUN: tcc-opt --tcc-fuse=report %s -mlir-pass-statistics -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=STATS

// Bias add + GELU after a matmul: one kernel reading the matmul output and
// the bias; the matmul stays a library call.
// CHECK-LABEL: func.func @bias_gelu
// CHECK-SAME: (%[[X:[^:]*]]: {{.*}}, %[[W:[^:]*]]: {{.*}}, %[[B:[^:]*]]: tensor<768xf32>)
// CHECK: %[[H:.*]] = tcc.matmul %[[X]], %[[W]]
// CHECK: %[[F:.*]] = exec.fusion "fused_0"(%[[H]], %[[B]]) : (tensor<4x768xf32>, tensor<768xf32>) -> tensor<4x768xf32> {
// CHECK-NEXT: ^bb0(%[[A0:.*]]: tensor<4x768xf32>, %[[A1:.*]]: tensor<768xf32>):
// CHECK-NEXT: %[[S:.*]] = tcc.add %[[A0]], %[[A1]]
// CHECK-NEXT: %[[G:.*]] = tcc.gelu %[[S]] {approximate = #tcc<gelu_approx tanh>}
// CHECK-NEXT: exec.yield %[[G]] : tensor<4x768xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[F]]
func.func @bias_gelu(%x: tensor<4x768xf32>, %w: tensor<768x768xf32>, %b: tensor<768xf32>) -> tensor<4x768xf32> {
  %h = tcc.matmul %x, %w : (tensor<4x768xf32>, tensor<768x768xf32>) -> tensor<4x768xf32>
  %0 = tcc.add %h, %b : (tensor<4x768xf32>, tensor<768xf32>) -> tensor<4x768xf32>
  %1 = tcc.gelu %0 {approximate = #tcc<gelu_approx tanh>} : (tensor<4x768xf32>) -> tensor<4x768xf32>
  return %1 : tensor<4x768xf32>
}

// The residual add is a kernel of its own; layer_norm (a row reduction)
// stays as is and reads the kernel's result.
// CHECK-LABEL: func.func @residual_layer_norm
// CHECK: %[[R:.*]] = exec.fusion "fused_1"
// CHECK: tcc.add
// CHECK: exec.yield
// CHECK: tcc.layer_norm %[[R]] scale
func.func @residual_layer_norm(%x: tensor<4x768xf32>, %y: tensor<4x768xf32>, %g: tensor<768xf32>, %b: tensor<768xf32>) -> tensor<4x768xf32> {
  %0 = tcc.add %x, %y : (tensor<4x768xf32>, tensor<4x768xf32>) -> tensor<4x768xf32>
  %1 = tcc.layer_norm %0 scale %g bias %b {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<4x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<4x768xf32>
  return %1 : tensor<4x768xf32>
}

// %0 is also returned, so absorbing it would compute it twice: it becomes
// its own kernel, which the neg/tanh kernel reads.
// CHECK-LABEL: func.func @outside_use
// CHECK: %[[E:.*]] = exec.fusion "fused_2"(%{{.*}}) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK: tcc.exp
// CHECK-NOT: tcc.neg
// CHECK: exec.yield
// CHECK: %[[T:.*]] = exec.fusion "fused_3"(%[[E]])
// CHECK: tcc.neg
// CHECK: tcc.tanh
// CHECK: return %[[E]], %[[T]]
func.func @outside_use(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = tcc.exp %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = tcc.neg %0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = tcc.tanh %1 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0, %2 : tensor<4x8xf32>, tensor<4x8xf32>
}

// A [768] computation feeding a [4,768] add runs over another iteration
// space, so it is a separate kernel.
// CHECK-LABEL: func.func @shape_change
// CHECK: %[[SQ:.*]] = exec.fusion "fused_4"(%{{.*}}) : (tensor<768xf32>) -> tensor<768xf32>
// CHECK: tcc.mul
// CHECK: exec.fusion "fused_5"(%{{.*}}, %[[SQ]]) : (tensor<4x768xf32>, tensor<768xf32>) -> tensor<4x768xf32>
// CHECK-NOT: tcc.mul
// CHECK: tcc.add
func.func @shape_change(%x: tensor<4x768xf32>, %b: tensor<768xf32>) -> tensor<4x768xf32> {
  %0 = tcc.mul %b, %b : (tensor<768xf32>, tensor<768xf32>) -> tensor<768xf32>
  %1 = tcc.add %x, %0 : (tensor<4x768xf32>, tensor<768xf32>) -> tensor<4x768xf32>
  return %1 : tensor<4x768xf32>
}

// Splat constants are cloned into the kernel, not passed in; the broadcast
// (same result shape) and the compare/where/cast chain with an i1 value in
// the middle are one kernel. A constant only kernels use is removed.
// CHECK-LABEL: func.func @splat_constants
// CHECK-NOT: tcc.constant
// CHECK: exec.fusion "fused_6"(%{{[^,]*}}, %{{[^,]*}}) : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xi32> {
// CHECK-DAG: tcc.constant dense<0.000000e+00> : tensor<f32>
// CHECK-DAG: tcc.constant dense<2.000000e+00> : tensor<f32>
// CHECK: tcc.broadcast
// CHECK: tcc.cmp
// CHECK: tcc.where
// CHECK: tcc.cast
// CHECK: exec.yield
func.func @splat_constants(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xi32> {
  %zero = tcc.constant dense<0.0> : tensor<f32>
  %two = tcc.constant dense<2.0> : tensor<f32>
  %0 = tcc.broadcast %b : (tensor<8xf32>) -> tensor<4x8xf32>
  %1 = tcc.cmp gt, %x, %zero : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xi1>
  %2 = tcc.mul %0, %two : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %3 = tcc.where %1, %2, %x : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = tcc.cast %3 : (tensor<4x8xf32>) -> tensor<4x8xi32>
  return %4 : tensor<4x8xi32>
}

// A constant with other users stays (and is still cloned into the kernel);
// a non-splat constant is a kernel operand.
// CHECK-LABEL: func.func @shared_constants
// CHECK: %[[C:.*]] = tcc.constant dense<3.000000e+00>
// CHECK: %[[T:.*]] = tcc.constant dense<[1.000000e+00, 2.000000e+00]>
// CHECK: exec.fusion "fused_7"(%{{.*}}, %[[T]]) : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32> {
// CHECK: tcc.constant dense<3.000000e+00>
// CHECK: return {{.*}}, %[[C]]
func.func @shared_constants(%x: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<f32>) {
  %c = tcc.constant dense<3.0> : tensor<f32>
  %t = tcc.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %0 = tcc.mul %x, %c : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>
  %1 = tcc.add %0, %t : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  return %1, %c : tensor<2x2xf32>, tensor<f32>
}

// The gradient norm of a clipped step: the square (prologue, evaluated per
// element of %g), the sum over all elements and the square root (epilogue)
// are one kernel reading %g once.
// CHECK-LABEL: func.func @grad_norm
// CHECK-SAME: (%[[G:[^:]*]]: tensor<32x16xf32>)
// CHECK: %[[N:.*]] = exec.fusion "fused_8"(%[[G]]) : (tensor<32x16xf32>) -> tensor<f32> {
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<32x16xf32>):
// CHECK-NEXT: %[[SQ:.*]] = tcc.mul %[[A]], %[[A]]
// CHECK-NEXT: %[[S:.*]] = tcc.reduce_sum %[[SQ]] {axes = array<i64: 0, 1>} : (tensor<32x16xf32>) -> tensor<f32>
// CHECK-NEXT: %[[R:.*]] = tcc.sqrt %[[S]]
// CHECK-NEXT: exec.yield %[[R]] : tensor<f32>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[N]]
func.func @grad_norm(%g: tensor<32x16xf32>) -> tensor<f32> {
  %0 = tcc.mul %g, %g : (tensor<32x16xf32>, tensor<32x16xf32>) -> tensor<32x16xf32>
  %1 = tcc.reduce_sum %0 {axes = array<i64: 0, 1>} : (tensor<32x16xf32>) -> tensor<f32>
  %2 = tcc.sqrt %1 : (tensor<f32>) -> tensor<f32>
  return %2 : tensor<f32>
}

// A bias gradient: the gelu_grad result is also read by the weight-gradient
// matmul, so it stays a kernel of its own and the reduction over the batch
// dims is a second kernel reading it; the mean's epilogue (a division by
// the splat 4) joins the reduce_mean kernel.
// CHECK-LABEL: func.func @bias_grad
// CHECK: %[[D:.*]] = exec.fusion "fused_9"({{.*}}) : (tensor<2x8x128xf32>, tensor<2x8x128xf32>) -> tensor<2x8x128xf32> {
// CHECK: tcc.gelu_grad
// CHECK: exec.yield
// CHECK: tcc.matmul %{{.*}}, %[[D]]
// CHECK: exec.fusion "fused_10"(%[[D]]) : (tensor<2x8x128xf32>) -> tensor<128xf32> {
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<2x8x128xf32>):
// CHECK-NEXT: %[[S:.*]] = tcc.reduce_sum %[[A]] {axes = array<i64: 0, 1>}
// CHECK-NEXT: exec.yield %[[S]] : tensor<128xf32>
// CHECK: exec.fusion "fused_11"(%[[D]]) : (tensor<2x8x128xf32>) -> tensor<2x1x128xf32> {
// CHECK: tcc.constant dense<4.000000e+00>
// CHECK: tcc.reduce_mean %{{.*}} {axes = array<i64: 1>, keepdims = true}
// CHECK: tcc.div
// CHECK: exec.yield
func.func @bias_grad(%h: tensor<2x8x128xf32>, %dy: tensor<2x8x128xf32>, %x: tensor<2x8x32xf32>)
    -> (tensor<2x32x128xf32>, tensor<128xf32>, tensor<2x1x128xf32>) {
  %four = tcc.constant dense<4.0> : tensor<f32>
  %0 = tcc.gelu_grad %h, %dy : (tensor<2x8x128xf32>, tensor<2x8x128xf32>) -> tensor<2x8x128xf32>
  %1 = tcc.matmul %x, %0 {transpose_lhs = true} : (tensor<2x8x32xf32>, tensor<2x8x128xf32>) -> tensor<2x32x128xf32>
  %2 = tcc.reduce_sum %0 {axes = array<i64: 0, 1>} : (tensor<2x8x128xf32>) -> tensor<128xf32>
  %3 = tcc.reduce_mean %0 {axes = array<i64: 1>, keepdims = true} : (tensor<2x8x128xf32>) -> tensor<2x1x128xf32>
  %4 = tcc.div %3, %four : (tensor<2x1x128xf32>, tensor<f32>) -> tensor<2x1x128xf32>
  return %1, %2, %4 : tensor<2x32x128xf32>, tensor<128xf32>, tensor<2x1x128xf32>
}

// The same after the reduction: where every other reader of the gelu_grad
// comes after the sum, the sum's kernel also stores it (a second result):
// one pass computes the gradient, writes it for the matmul and sums it.
// The residual sum under it, read again only by the matmul, joins as a
// second store; the mean reads the first store.
// CHECK-LABEL: func.func @bias_grad_store
// CHECK: %[[B:.*]]:3 = exec.fusion "fused_12"(%{{.*}}) : (tensor<2x8x128xf32>, tensor<2x8x128xf32>, tensor<2x8x128xf32>) -> (tensor<128xf32>, tensor<2x8x128xf32>, tensor<2x8x128xf32>) {
// CHECK-NEXT: ^bb0
// CHECK-NEXT: %[[R:.*]] = tcc.add
// CHECK-NEXT: %[[G:.*]] = tcc.gelu_grad %{{.*}}, %[[R]]
// CHECK-NEXT: %[[S:.*]] = tcc.reduce_sum %[[G]] {axes = array<i64: 0, 1>}
// CHECK-NEXT: exec.yield %[[S]], %[[G]], %[[R]] : tensor<128xf32>, tensor<2x8x128xf32>, tensor<2x8x128xf32>
// CHECK: exec.fusion "fused_13"(%[[B]]#1)
// CHECK: tcc.reduce_mean
// CHECK: tcc.matmul %{{.*}}, %[[B]]#1
// CHECK: tcc.matmul %{{.*}}, %[[B]]#2
func.func @bias_grad_store(%h: tensor<2x8x128xf32>, %dy: tensor<2x8x128xf32>, %r: tensor<2x8x128xf32>, %x: tensor<2x8x32xf32>)
    -> (tensor<2x32x128xf32>, tensor<2x32x128xf32>, tensor<128xf32>, tensor<2x1x128xf32>) {
  %sum = tcc.add %dy, %r : (tensor<2x8x128xf32>, tensor<2x8x128xf32>) -> tensor<2x8x128xf32>
  %0 = tcc.gelu_grad %h, %sum : (tensor<2x8x128xf32>, tensor<2x8x128xf32>) -> tensor<2x8x128xf32>
  %2 = tcc.reduce_sum %0 {axes = array<i64: 0, 1>} : (tensor<2x8x128xf32>) -> tensor<128xf32>
  %3 = tcc.reduce_mean %0 {axes = array<i64: 1>, keepdims = true} : (tensor<2x8x128xf32>) -> tensor<2x1x128xf32>
  %1 = tcc.matmul %x, %0 {transpose_lhs = true} : (tensor<2x8x32xf32>, tensor<2x8x128xf32>) -> tensor<2x32x128xf32>
  %5 = tcc.matmul %x, %sum {transpose_lhs = true} : (tensor<2x8x32xf32>, tensor<2x8x128xf32>) -> tensor<2x32x128xf32>
  return %1, %5, %2, %3 : tensor<2x32x128xf32>, tensor<2x32x128xf32>, tensor<128xf32>, tensor<2x1x128xf32>
}

// Attention's input layout: the fused qkv bias add, a split into q, k, v
// (one slice per result), reshapes and a transpose per head tensor. Each
// slice -> reshape -> transpose is one layout chain reading the bias add's
// result (which has three users, so it stays a kernel); the three chains
// are siblings (one result shape, a common input, launched one after
// another), so they are one kernel of three results.
// CHECK-LABEL: func.func @split_heads
// CHECK: %[[QKV:.*]] = exec.fusion "fused_14"
// CHECK: tcc.add
// CHECK: %[[H:.*]]:3 = exec.fusion "fused_15"(%[[QKV]]) : (tensor<2x8x96xf32>) -> (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) {
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<2x8x96xf32>):
// CHECK-NEXT: %[[S:.*]] = tcc.slice %[[A]] {limits = array<i64: 2, 8, 32>, starts = array<i64: 0, 0, 0>, strides = array<i64: 1, 1, 1>}
// CHECK-NEXT: %[[R:.*]] = tcc.reshape %[[S]] : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
// CHECK-NEXT: %[[T:.*]] = tcc.transpose %[[R]] {perm = array<i64: 0, 2, 1, 3>}
// CHECK-NEXT: tcc.slice %[[A]] {limits = array<i64: 2, 8, 64>, starts = array<i64: 0, 0, 32>
// CHECK-NEXT: tcc.reshape
// CHECK-NEXT: %[[T2:.*]] = tcc.transpose
// CHECK-NEXT: tcc.slice %[[A]] {limits = array<i64: 2, 8, 96>, starts = array<i64: 0, 0, 64>
// CHECK-NEXT: tcc.reshape
// CHECK-NEXT: %[[T3:.*]] = tcc.transpose
// CHECK-NEXT: exec.yield %[[T]], %[[T2]], %[[T3]]
// CHECK-NOT: tcc.split
// CHECK: tcc.attention %[[H]]#0, %[[H]]#1, %[[H]]#2
func.func @split_heads(%x: tensor<2x8x96xf32>, %b: tensor<96xf32>) -> tensor<2x2x8x16xf32> {
  %0 = tcc.add %x, %b : (tensor<2x8x96xf32>, tensor<96xf32>) -> tensor<2x8x96xf32>
  %1:3 = tcc.split %0 {axis = 2 : i64, sizes = array<i64: 32, 32, 32>} : (tensor<2x8x96xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
  %2 = tcc.reshape %1#0 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %3 = tcc.transpose %2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %4 = tcc.reshape %1#1 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %5 = tcc.transpose %4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %6 = tcc.reshape %1#2 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %7 = tcc.transpose %6 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %8 = tcc.attention %3, %5, %7 {causal = true, scale = 2.500000e-01 : f64} : (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x2x8x16xf32>
  return %8 : tensor<2x2x8x16xf32>
}

// Under its bias gradient: the concat of the q, k, v gradients is a layout
// chain kernel and the sum over the tokens reads it directly, launched right
// after it, so the chain joins the sum's kernel as its prologue and the
// concat is stored there for the matmul after it.
// CHECK-LABEL: func.func @qkv_grad_bias
// CHECK: %[[G:.*]]:2 = exec.fusion "fused_19"(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> (tensor<96xf32>, tensor<2x8x96xf32>) {
// CHECK: %[[C:.*]] = tcc.concat
// CHECK-NEXT: %[[S:.*]] = tcc.reduce_sum %[[C]] {axes = array<i64: 0, 1>}
// CHECK-NEXT: exec.yield %[[S]], %[[C]]
// CHECK: tcc.matmul %[[G]]#1
func.func @qkv_grad_bias(%q: tensor<2x2x8x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x8x16xf32>, %w: tensor<96x32xf32>)
    -> (tensor<96xf32>, tensor<2x8x32xf32>) {
  %0 = tcc.transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x8x16xf32>) -> tensor<2x8x2x16xf32>
  %1 = tcc.transpose %k {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x8x16xf32>) -> tensor<2x8x2x16xf32>
  %2 = tcc.transpose %v {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x8x16xf32>) -> tensor<2x8x2x16xf32>
  %3 = tcc.reshape %0 : (tensor<2x8x2x16xf32>) -> tensor<2x8x32xf32>
  %4 = tcc.reshape %1 : (tensor<2x8x2x16xf32>) -> tensor<2x8x32xf32>
  %5 = tcc.reshape %2 : (tensor<2x8x2x16xf32>) -> tensor<2x8x32xf32>
  %6 = tcc.concat %3, %4, %5 {axis = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x96xf32>
  %7 = tcc.reduce_sum %6 {axes = array<i64: 0, 1>} : (tensor<2x8x96xf32>) -> tensor<96xf32>
  %8 = tcc.matmul %6, %w : (tensor<2x8x96xf32>, tensor<96x32xf32>) -> tensor<2x8x32xf32>
  return %7, %8 : tensor<96xf32>, tensor<2x8x32xf32>
}

// The backward of the split: the q, k, v gradients concatenated into one
// kernel that reads the three reshaped gradients; the residual add that
// follows reads the concat's result at the same element, so it is the
// concat's epilogue.
// CHECK-LABEL: func.func @concat_grads
// CHECK: %[[Q:.*]] = tcc.reshape
// CHECK: %[[K:.*]] = tcc.reshape
// CHECK: %[[V:.*]] = tcc.reshape
// CHECK: exec.fusion "fused_20"(%[[Q]], %[[K]], %[[V]], %{{.*}}) : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x96xf32>) -> tensor<2x8x96xf32> {
// CHECK-NEXT: ^bb0(
// CHECK-NEXT: %[[C:.*]] = tcc.concat {{.*}} {axis = 2 : i64}
// CHECK-NEXT: %[[R:.*]] = tcc.add %[[C]], %{{.*}}
// CHECK-NEXT: exec.yield %[[R]]
func.func @concat_grads(%dq: tensor<2x8x2x16xf32>, %dk: tensor<2x8x2x16xf32>, %dv: tensor<2x8x2x16xf32>, %r: tensor<2x8x96xf32>) -> tensor<2x8x96xf32> {
  %0 = tcc.reshape %dq : (tensor<2x8x2x16xf32>) -> tensor<2x8x32xf32>
  %1 = tcc.reshape %dk : (tensor<2x8x2x16xf32>) -> tensor<2x8x32xf32>
  %2 = tcc.reshape %dv : (tensor<2x8x2x16xf32>) -> tensor<2x8x32xf32>
  %3 = tcc.concat %0, %1, %2 {axis = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x96xf32>
  %4 = tcc.add %3, %r : (tensor<2x8x96xf32>, tensor<2x8x96xf32>) -> tensor<2x8x96xf32>
  return %4 : tensor<2x8x96xf32>
}

// A gather off axis 0 and its gradient are kernels; gather_grad on axis 0
// (the embedding gradient) stays a library call.
// CHECK-LABEL: func.func @gathers
// CHECK: exec.fusion "fused_21"{{.*}} -> tensor<4x3xf32>
// CHECK: tcc.gather %{{.*}}, %{{.*}} {axis = 1 : i64}
// CHECK: exec.fusion "fused_22"{{.*}} -> tensor<4x6xf32>
// CHECK: tcc.gather_grad %{{.*}}, %{{.*}} {axis = 1 : i64}
// CHECK-NOT: exec.fusion
// CHECK: tcc.gather_grad %{{.*}}, %{{.*}} {axis = 0 : i64}
func.func @gathers(%x: tensor<4x6xf32>, %i: tensor<3xi64>, %g: tensor<3x6xf32>) -> (tensor<4x3xf32>, tensor<4x6xf32>, tensor<4x6xf32>) {
  %0 = tcc.gather %x, %i {axis = 1 : i64} : (tensor<4x6xf32>, tensor<3xi64>) -> tensor<4x3xf32>
  %1 = tcc.gather_grad %i, %0 {axis = 1 : i64} : (tensor<3xi64>, tensor<4x3xf32>) -> tensor<4x6xf32>
  %2 = tcc.gather_grad %i, %g {axis = 0 : i64} : (tensor<3xi64>, tensor<3x6xf32>) -> tensor<4x6xf32>
  return %0, %1, %2 : tensor<4x3xf32>, tensor<4x6xf32>, tensor<4x6xf32>
}

// A tied embedding's weight gradient: the lm-head part is reduced over the
// batch early in the backward pass, the embedding part arrives at its end.
// Fusing the add as the reduction's epilogue would run the kernel after the
// gather_grad and keep the [2, 64, 32] matmul result alive until then, so
// the reduction is a kernel of its own, in its place, and the add another.
// CHECK-LABEL: func.func @late_epilogue
// CHECK: %[[P:.*]] = tcc.matmul
// CHECK-NEXT: %[[R:.*]] = exec.fusion "fused_23"(%[[P]]) : (tensor<2x64x32xf32>) -> tensor<64x32xf32> {
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tcc.reduce_sum
// CHECK-NEXT: exec.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[E:.*]] = tcc.gather_grad
// CHECK-NEXT: exec.fusion "fused_24"(%[[R]], %[[E]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tcc.add
func.func @late_epilogue(%g: tensor<2x8x64xf32>, %h: tensor<2x8x32xf32>, %ids: tensor<2x8xi64>, %d: tensor<2x8x32xf32>) -> tensor<64x32xf32> {
  %0 = tcc.matmul %g, %h {transpose_lhs = true} : (tensor<2x8x64xf32>, tensor<2x8x32xf32>) -> tensor<2x64x32xf32>
  %1 = tcc.reduce_sum %0 {axes = array<i64: 0>} : (tensor<2x64x32xf32>) -> tensor<64x32xf32>
  %2 = tcc.gather_grad %ids, %d {axis = 0 : i64} : (tensor<2x8xi64>, tensor<2x8x32xf32>) -> tensor<64x32xf32>
  %3 = tcc.add %1, %2 : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
  return %3 : tensor<64x32xf32>
}

// The backward of the head split: each head gradient's transpose and
// reshape and the concat of the three are one layout chain, and the add
// reading the concat's result is its epilogue: four kernels become one.
// CHECK-LABEL: func.func @merge_heads
// CHECK: exec.fusion "fused_25"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x8x96xf32>) -> tensor<2x8x96xf32> {
// CHECK-NEXT: ^bb0(
// CHECK-NEXT: tcc.transpose
// CHECK-NEXT: tcc.reshape
// CHECK-NEXT: tcc.transpose
// CHECK-NEXT: tcc.reshape
// CHECK-NEXT: tcc.transpose
// CHECK-NEXT: tcc.reshape
// CHECK-NEXT: tcc.concat {{.*}} {axis = 2 : i64}
// CHECK-NEXT: tcc.add
// CHECK-NEXT: exec.yield
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @merge_heads(%dq: tensor<2x2x8x16xf32>, %dk: tensor<2x2x8x16xf32>, %dv: tensor<2x2x8x16xf32>, %r: tensor<2x8x96xf32>) -> tensor<2x8x96xf32> {
  %0 = tcc.transpose %dq {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x8x16xf32>) -> tensor<2x8x2x16xf32>
  %1 = tcc.reshape %0 : (tensor<2x8x2x16xf32>) -> tensor<2x8x32xf32>
  %2 = tcc.transpose %dk {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x8x16xf32>) -> tensor<2x8x2x16xf32>
  %3 = tcc.reshape %2 : (tensor<2x8x2x16xf32>) -> tensor<2x8x32xf32>
  %4 = tcc.transpose %dv {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x8x16xf32>) -> tensor<2x8x2x16xf32>
  %5 = tcc.reshape %4 : (tensor<2x8x2x16xf32>) -> tensor<2x8x32xf32>
  %6 = tcc.concat %1, %3, %5 {axis = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x96xf32>
  %7 = tcc.add %6, %r : (tensor<2x8x96xf32>, tensor<2x8x96xf32>) -> tensor<2x8x96xf32>
  return %7 : tensor<2x8x96xf32>
}

// Where a chain stops: a layout op whose result has another user (%0, also
// returned) stays a kernel of its own; an elementwise op between two layout
// ops (%3) is the upper chain's prologue, so the slice below it is a kernel
// of its own; a reshape of a kernel input (%6) stays a view outside; a
// reduction never chains (%8).
// CHECK-LABEL: func.func @chain_stops
// CHECK: %[[T:.*]] = exec.fusion "fused_26"(%{{.*}}) : (tensor<4x6xf32>) -> tensor<6x4xf32> {
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tcc.transpose
// CHECK-NEXT: exec.yield
// CHECK: exec.fusion "fused_27"(%[[T]]) : (tensor<6x4xf32>) -> tensor<2x12xf32> {
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tcc.slice
// CHECK-NEXT: tcc.reshape
// CHECK-NEXT: tcc.transpose
// CHECK-NEXT: exec.yield
// CHECK: %[[S:.*]] = exec.fusion "fused_28"(%{{.*}}) : (tensor<4x6xf32>) -> tensor<4x3xf32> {
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tcc.slice
// CHECK-NEXT: exec.yield
// CHECK: exec.fusion "fused_29"(%[[S]]) : (tensor<4x3xf32>) -> tensor<3x4xf32> {
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tcc.neg
// CHECK-NEXT: tcc.transpose
// CHECK-NEXT: exec.yield
// CHECK: %[[R:.*]] = tcc.reshape %{{.*}} : (tensor<4x6xf32>) -> tensor<6x4xf32>
// CHECK: exec.fusion "fused_30"(%[[R]]) : (tensor<6x4xf32>) -> tensor<4x6xf32> {
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tcc.transpose
// CHECK-NEXT: exec.yield
// CHECK: exec.fusion "fused_31"(%{{.*}}) : (tensor<4x6xf32>) -> tensor<6xf32> {
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tcc.reduce_sum
// CHECK-NEXT: exec.yield
func.func @chain_stops(%x: tensor<4x6xf32>) -> (tensor<6x4xf32>, tensor<2x12xf32>, tensor<3x4xf32>, tensor<4x6xf32>, tensor<6xf32>) {
  %0 = tcc.transpose %x {perm = array<i64: 1, 0>} : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %1 = tcc.slice %0 {starts = array<i64: 0, 0>, limits = array<i64: 6, 4>, strides = array<i64: 1, 1>} : (tensor<6x4xf32>) -> tensor<6x4xf32>
  %r = tcc.reshape %1 : (tensor<6x4xf32>) -> tensor<12x2xf32>
  %t = tcc.transpose %r {perm = array<i64: 1, 0>} : (tensor<12x2xf32>) -> tensor<2x12xf32>
  %2 = tcc.slice %x {starts = array<i64: 0, 0>, limits = array<i64: 4, 3>, strides = array<i64: 1, 1>} : (tensor<4x6xf32>) -> tensor<4x3xf32>
  %3 = tcc.neg %2 : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %4 = tcc.transpose %3 {perm = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %6 = tcc.reshape %x : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %7 = tcc.transpose %6 {perm = array<i64: 1, 0>} : (tensor<6x4xf32>) -> tensor<4x6xf32>
  %8 = tcc.reduce_sum %x {axes = array<i64: 0>} : (tensor<4x6xf32>) -> tensor<6xf32>
  return %0, %t, %4, %7, %8 : tensor<6x4xf32>, tensor<2x12xf32>, tensor<3x4xf32>, tensor<4x6xf32>, tensor<6xf32>
}

// BERT's head split: a projection's bias add, reshaped to heads and
// transposed. The add is the chain's prologue, read through the reshape at
// the transpose's source elements: one kernel.
// CHECK-LABEL: func.func @bias_heads
// CHECK: exec.fusion "fused_32"(%{{.*}}, %{{.*}}) : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x2x8x16xf32> {
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tcc.add
// CHECK-NEXT: tcc.reshape
// CHECK-NEXT: tcc.transpose
// CHECK-NEXT: exec.yield
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @bias_heads(%h: tensor<2x8x32xf32>, %b: tensor<32xf32>) -> tensor<2x2x8x16xf32> {
  %0 = tcc.add %h, %b : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  %1 = tcc.reshape %0 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %2 = tcc.transpose %1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  return %2 : tensor<2x2x8x16xf32>
}

// bf16 (after tcc-lower-precision): the chain computes in f32 registers.
// The 16-bit inputs are widened where they enter and the result is rounded
// once where it leaves (no rounding after the add and the gelu). The cast of
// the f32 parameter to bf16 (its working copy; a broadcast operand, so its
// own kernel) still rounds. A layout-only kernel stays 16-bit: moving
// elements loses nothing.
// CHECK-LABEL: func.func @bf16_chain
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4x8xbf16>, %[[P:[^:]*]]: tensor<8xf32>)
// CHECK: %[[P16:.*]] = exec.fusion "fused_{{[0-9]+}}"(%[[P]]) : (tensor<8xf32>) -> tensor<8xbf16> {
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<8xf32>):
// CHECK-NEXT: %[[C16:.*]] = tcc.cast %[[A]] : (tensor<8xf32>) -> tensor<8xbf16>
// CHECK-NEXT: exec.yield %[[C16]] : tensor<8xbf16>
// CHECK: exec.fusion "fused_{{[0-9]+}}"(%[[X]], %[[P16]]) : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16> {
// CHECK-NEXT: ^bb0(%[[A0:.*]]: tensor<4x8xbf16>, %[[A1:.*]]: tensor<8xbf16>):
// CHECK-NEXT: %[[W0:.*]] = tcc.cast %[[A0]] : (tensor<4x8xbf16>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[W1:.*]] = tcc.cast %[[A1]] : (tensor<8xbf16>) -> tensor<8xf32>
// CHECK-NEXT: %[[C:.*]] = tcc.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT: %[[S:.*]] = tcc.add %[[W0]], %[[W1]] : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[G:.*]] = tcc.gelu %[[S]] {{.*}} -> tensor<4x8xf32>
// CHECK-NEXT: %[[M:.*]] = tcc.mul %[[G]], %[[C]] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[R:.*]] = tcc.cast %[[M]] : (tensor<4x8xf32>) -> tensor<4x8xbf16>
// CHECK-NEXT: exec.yield %[[R]] : tensor<4x8xbf16>
// CHECK: exec.fusion {{.*}} -> tensor<8x4xbf16> {
// CHECK-NEXT: ^bb0(%[[T0:.*]]: tensor<4x8xbf16>):
// CHECK-NEXT: %[[T:.*]] = tcc.transpose %[[T0]] {{.*}} -> tensor<8x4xbf16>
// CHECK-NEXT: exec.yield %[[T]] : tensor<8x4xbf16>
func.func @bf16_chain(%x: tensor<4x8xbf16>, %p: tensor<8xf32>) -> (tensor<4x8xbf16>, tensor<8x4xbf16>) {
  %p16 = tcc.cast %p : (tensor<8xf32>) -> tensor<8xbf16>
  %0 = tcc.add %x, %p16 : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
  %1 = tcc.gelu %0 {approximate = #tcc<gelu_approx tanh>} : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %c = tcc.constant dense<0.5> : tensor<bf16>
  %2 = tcc.mul %1, %c : (tensor<4x8xbf16>, tensor<bf16>) -> tensor<4x8xbf16>
  %3 = tcc.transpose %x {perm = array<i64: 1, 0>} : (tensor<4x8xbf16>) -> tensor<8x4xbf16>
  return %2, %3 : tensor<4x8xbf16>, tensor<8x4xbf16>
}

// Unfused launches: matmul, add, gelu | add, layer_norm | exp, neg, tanh |
// mul, add | broadcast, cmp, mul, where, cast | mul, add | mul, reduce_sum,
// sqrt | gelu_grad, matmul, reduce_sum, reduce_mean, div | add, split,
// 3 transposes, attention | concat, add | gather, 2 gather_grads | matmul,
// reduce_sum, gather_grad, add | 3 transposes, concat, add | 4 transposes,
// 2 slices, neg, reduce_sum | add, transpose.
// Fused: matmul + 1 | 1 + layer_norm | 2 | 2 | 1 | 1 | 1 | 1 + matmul + 2 |
// 1 + 3 slice chains + attention | 1 | 2 + gather_grad |
// matmul + 1 + gather_grad + 1 | 1 | 6 | 1.
// STATS-DAG: remark: tcc-fuse: @bias_gelu: 3 kernels before fusion, 2 after
// STATS-DAG: remark: tcc-fuse: @residual_layer_norm: 2 kernels before fusion, 2 after
// STATS-DAG: remark: tcc-fuse: @outside_use: 3 kernels before fusion, 2 after
// STATS-DAG: remark: tcc-fuse: @shape_change: 2 kernels before fusion, 2 after
// STATS-DAG: remark: tcc-fuse: @splat_constants: 5 kernels before fusion, 1 after
// STATS-DAG: remark: tcc-fuse: @shared_constants: 2 kernels before fusion, 1 after
// STATS-DAG: remark: tcc-fuse: @grad_norm: 3 kernels before fusion, 1 after
// STATS-DAG: remark: tcc-fuse: @bias_grad: 5 kernels before fusion, 4 after
// STATS-DAG: remark: tcc-fuse: @split_heads: 6 kernels before fusion, 3 after
// STATS-DAG: remark: tcc-fuse: @qkv_grad_bias: 6 kernels before fusion, 2 after
// STATS-DAG: remark: tcc-fuse: @concat_grads: 2 kernels before fusion, 1 after
// STATS-DAG: remark: tcc-fuse: @gathers: 3 kernels before fusion, 3 after
// STATS-DAG: remark: tcc-fuse: @late_epilogue: 4 kernels before fusion, 4 after
// STATS-DAG: remark: tcc-fuse: @merge_heads: 5 kernels before fusion, 1 after
// STATS-DAG: remark: tcc-fuse: @chain_stops: 8 kernels before fusion, 6 after
// STATS-DAG: remark: tcc-fuse: @bias_heads: 2 kernels before fusion, 1 after
// STATS-DAG: remark: tcc-fuse: @bf16_chain: 5 kernels before fusion, 3 after
// STATS: Pass statistics report

// Over packed token rows (tcc-pack-tokens; BERT's GELU gradient under the
// MLP input's bias gradient): the sum over the tokens runs over every row,
// so it may store the gradient, computing it at every row (as any backend
// may run a step over packed rows). A row reduction over packed rows runs
// over the valid rows only: it would leave the other rows of a store
// unwritten, so its prologue value read elsewhere stays its own kernel.
// CHECK-LABEL: func.func @token_rows_store
// CHECK: %[[B:.*]]:2 = exec.fusion "{{fused_[0-9]+}}"(%{{.*}}, %{{.*}}) : (tensor<2x8x128xf32>, tensor<2x8x128xf32>) -> (tensor<128xf32>, tensor<2x8x128xf32>) {
// CHECK-NEXT: ^bb0
// CHECK-NEXT: %[[G:.*]] = tcc.gelu_grad %{{.*}}, %{{.*}} {tcc.token_rows = 16 : i64}
// CHECK-NEXT: %[[S:.*]] = tcc.reduce_sum %[[G]] {axes = array<i64: 0, 1>}
// CHECK-NEXT: exec.yield %[[S]], %[[G]] : tensor<128xf32>, tensor<2x8x128xf32>
// CHECK: tcc.matmul %{{.*}}, %[[B]]#1
// CHECK: %[[E:.*]] = exec.fusion "{{fused_[0-9]+}}"(%{{.*}}) : (tensor<2x8x128xf32>) -> tensor<2x8x128xf32> {
// CHECK: tcc.exp
// CHECK: exec.fusion "{{fused_[0-9]+}}"(%[[E]]) : (tensor<2x8x128xf32>) -> tensor<2x8x1xf32> {
// CHECK: tcc.reduce_max
// CHECK: tcc.matmul %{{.*}}, %[[E]]
func.func @token_rows_store(%h: tensor<2x8x128xf32>, %dy: tensor<2x8x128xf32>, %x: tensor<2x8x32xf32>)
    -> (tensor<2x32x128xf32>, tensor<128xf32>, tensor<2x8x1xf32>, tensor<2x32x128xf32>) {
  %0 = tcc.gelu_grad %h, %dy {tcc.token_rows = 16 : i64} : (tensor<2x8x128xf32>, tensor<2x8x128xf32>) -> tensor<2x8x128xf32>
  %1 = tcc.reduce_sum %0 {axes = array<i64: 0, 1>} : (tensor<2x8x128xf32>) -> tensor<128xf32>
  %2 = tcc.matmul %x, %0 {transpose_lhs = true} : (tensor<2x8x32xf32>, tensor<2x8x128xf32>) -> tensor<2x32x128xf32>
  %3 = tcc.exp %h {tcc.token_rows = 16 : i64} : (tensor<2x8x128xf32>) -> tensor<2x8x128xf32>
  %4 = tcc.reduce_max %3 {axes = array<i64: 2>, keepdims = true, tcc.token_rows = 16 : i64} : (tensor<2x8x128xf32>) -> tensor<2x8x1xf32>
  %5 = tcc.matmul %x, %3 {transpose_lhs = true} : (tensor<2x8x32xf32>, tensor<2x8x128xf32>) -> tensor<2x32x128xf32>
  return %2, %1, %4, %5 : tensor<2x32x128xf32>, tensor<128xf32>, tensor<2x8x1xf32>, tensor<2x32x128xf32>
}

// Contiguous pieces of a value the plan puts in the arena are views of its
// bytes, not kernels: a merged projection's weight gradient split along its
// rows, its bias gradient sliced. Left as kernels: pieces of an argument
// (outside the arena), a split along a later dim (not contiguous), and a
// piece starting at a byte that is not a multiple of the arena alignment.
// CHECK-LABEL: func.func @contiguous_views
// CHECK: %[[DW:.*]] = tcc.matmul
// CHECK-NEXT: exec.view %[[DW]][0] : tensor<96x32xf32> -> tensor<32x32xf32>
// CHECK-NEXT: exec.view %[[DW]][1024] : tensor<96x32xf32> -> tensor<32x32xf32>
// CHECK-NEXT: exec.view %[[DW]][2048] : tensor<96x32xf32> -> tensor<32x32xf32>
// CHECK: %[[DB:.*]] = exec.fusion
// CHECK: tcc.reduce_sum
// CHECK: exec.view %[[DB]][32] : tensor<96xf32> -> tensor<32xf32>
// CHECK: exec.fusion "{{fused_[0-9]+}}"(%arg0)
// CHECK: tcc.slice
// CHECK: exec.fusion "{{fused_[0-9]+}}"(%[[DW]])
// CHECK: tcc.slice
// CHECK: exec.fusion "{{fused_[0-9]+}}"(%[[DB]])
// CHECK: tcc.slice
// CHECK-NOT: exec.view
func.func @contiguous_views(%x: tensor<16x96xf32>, %h: tensor<16x32xf32>)
    -> (tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32xf32>,
        tensor<8x96xf32>, tensor<96x16xf32>, tensor<8xf32>) {
  %dw = tcc.matmul %x, %h {transpose_lhs = true} : (tensor<16x96xf32>, tensor<16x32xf32>) -> tensor<96x32xf32>
  %p:3 = tcc.split %dw {axis = 0 : i64, sizes = array<i64: 32, 32, 32>} : (tensor<96x32xf32>) -> (tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>)
  %db = tcc.reduce_sum %x {axes = array<i64: 0>} : (tensor<16x96xf32>) -> tensor<96xf32>
  %b = tcc.slice %db {limits = array<i64: 64>, starts = array<i64: 32>, strides = array<i64: 1>} : (tensor<96xf32>) -> tensor<32xf32>
  %a = tcc.slice %x {limits = array<i64: 8, 96>, starts = array<i64: 0, 0>, strides = array<i64: 1, 1>} : (tensor<16x96xf32>) -> tensor<8x96xf32>
  %c = tcc.slice %dw {limits = array<i64: 96, 16>, starts = array<i64: 0, 0>, strides = array<i64: 1, 1>} : (tensor<96x32xf32>) -> tensor<96x16xf32>
  %d = tcc.slice %db {limits = array<i64: 12>, starts = array<i64: 4>, strides = array<i64: 1>} : (tensor<96xf32>) -> tensor<8xf32>
  return %p#0, %p#1, %p#2, %b, %a, %c, %d : tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32xf32>,
      tensor<8x96xf32>, tensor<96x16xf32>, tensor<8xf32>
}
