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

// Structured bodies: a reduction with an elementwise prologue (in the
// reduced input's space) and epilogue (in the result's), and one layout op
// of each kind on block arguments.
// CHECK-LABEL: func.func @structured
// CHECK: exec.fusion "norm"(%{{.*}}) : (tensor<4x8xf32>) -> tensor<f32> {
// CHECK-NEXT: ^bb0(%[[G:.*]]: tensor<4x8xf32>):
// CHECK-NEXT: %[[SQ:.*]] = tcc.mul %[[G]], %[[G]]
// CHECK-NEXT: %[[S:.*]] = tcc.reduce_sum %[[SQ]] {axes = array<i64: 0, 1>}
// CHECK-NEXT: %[[R:.*]] = tcc.sqrt %[[S]]
// CHECK-NEXT: exec.yield %[[R]] : tensor<f32>
// CHECK: exec.fusion "t"(%{{.*}}) : (tensor<4x8xf32>) -> tensor<8x4xf32> {
// CHECK: tcc.transpose
// CHECK: exec.fusion "s"(%{{.*}}) : (tensor<4x8xf32>) -> tensor<4x3xf32> {
// CHECK: tcc.slice
// CHECK: exec.fusion "sg"(%{{.*}}) : (tensor<4x3xf32>) -> tensor<4x8xf32> {
// CHECK: tcc.slice_grad
// CHECK: exec.fusion "c"(%{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<4x3xf32>) -> tensor<4x11xf32> {
// CHECK: tcc.concat
// CHECK: exec.fusion "g"(%{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<5xi32>) -> tensor<4x5xf32> {
// CHECK: tcc.gather
// CHECK: exec.fusion "gg"(%{{.*}}, %{{.*}}) : (tensor<5xi32>, tensor<4x5xf32>) -> tensor<4x8xf32> {
// CHECK: tcc.gather_grad
// CHECK: exec.fusion "mean"(%{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x1xf32> {
// CHECK: tcc.reduce_mean
// CHECK: tcc.sub
func.func @structured(%x: tensor<4x8xf32>, %i: tensor<5xi32>, %c: tensor<4x1xf32>) -> (tensor<f32>, tensor<8x4xf32>, tensor<4x3xf32>, tensor<4x8xf32>, tensor<4x11xf32>, tensor<4x5xf32>, tensor<4x8xf32>, tensor<4x1xf32>) {
  %0 = exec.fusion "norm" (%x) : (tensor<4x8xf32>) -> tensor<f32> {
  ^bb0(%g: tensor<4x8xf32>):
    %1 = tcc.mul %g, %g : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %2 = tcc.reduce_sum %1 {axes = array<i64: 0, 1>} : (tensor<4x8xf32>) -> tensor<f32>
    %3 = tcc.sqrt %2 : (tensor<f32>) -> tensor<f32>
    exec.yield %3 : tensor<f32>
  }
  %1 = exec.fusion "t" (%x) : (tensor<4x8xf32>) -> tensor<8x4xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %2 = tcc.transpose %a {perm = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
    exec.yield %2 : tensor<8x4xf32>
  }
  %2 = exec.fusion "s" (%x) : (tensor<4x8xf32>) -> tensor<4x3xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %3 = tcc.slice %a {starts = array<i64: 0, 1>, limits = array<i64: 4, 7>, strides = array<i64: 1, 2>} : (tensor<4x8xf32>) -> tensor<4x3xf32>
    exec.yield %3 : tensor<4x3xf32>
  }
  %3 = exec.fusion "sg" (%2) : (tensor<4x3xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x3xf32>):
    %4 = tcc.slice_grad %a {starts = array<i64: 0, 1>, limits = array<i64: 4, 7>, strides = array<i64: 1, 2>} : (tensor<4x3xf32>) -> tensor<4x8xf32>
    exec.yield %4 : tensor<4x8xf32>
  }
  %4 = exec.fusion "c" (%x, %2) : (tensor<4x8xf32>, tensor<4x3xf32>) -> tensor<4x11xf32> {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<4x3xf32>):
    %5 = tcc.concat %a, %b {axis = 1 : i64} : (tensor<4x8xf32>, tensor<4x3xf32>) -> tensor<4x11xf32>
    exec.yield %5 : tensor<4x11xf32>
  }
  %5 = exec.fusion "g" (%x, %i) : (tensor<4x8xf32>, tensor<5xi32>) -> tensor<4x5xf32> {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<5xi32>):
    %6 = tcc.gather %a, %b {axis = 1 : i64} : (tensor<4x8xf32>, tensor<5xi32>) -> tensor<4x5xf32>
    exec.yield %6 : tensor<4x5xf32>
  }
  %6 = exec.fusion "gg" (%i, %5) : (tensor<5xi32>, tensor<4x5xf32>) -> tensor<4x8xf32> {
  ^bb0(%b: tensor<5xi32>, %a: tensor<4x5xf32>):
    %7 = tcc.gather_grad %b, %a {axis = 1 : i64} : (tensor<5xi32>, tensor<4x5xf32>) -> tensor<4x8xf32>
    exec.yield %7 : tensor<4x8xf32>
  }
  %7 = exec.fusion "mean" (%x, %c) : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x1xf32> {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<4x1xf32>):
    %8 = tcc.reduce_mean %a {axes = array<i64: 1>, keepdims = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
    %9 = tcc.sub %8, %b : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
    exec.yield %9 : tensor<4x1xf32>
  }
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<f32>, tensor<8x4xf32>, tensor<4x3xf32>, tensor<4x8xf32>, tensor<4x11xf32>, tensor<4x5xf32>, tensor<4x8xf32>, tensor<4x1xf32>
}

// Layout chains: the q/k/v head split (slice -> reshape -> transpose) with
// a prologue, and its gradient (transpose -> reshape per piece -> concat)
// with an epilogue; reshapes inside a body are part of a chain.
// CHECK-LABEL: func.func @layout_chains
// CHECK: exec.fusion "heads"(%{{.*}}) : (tensor<2x8x96xf32>) -> tensor<2x2x8x16xf32> {
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<2x8x96xf32>):
// CHECK-NEXT: %[[N:.*]] = tcc.neg %[[A]]
// CHECK-NEXT: %[[S:.*]] = tcc.slice %[[N]]
// CHECK-NEXT: %[[R:.*]] = tcc.reshape %[[S]] : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
// CHECK-NEXT: %[[T:.*]] = tcc.transpose %[[R]] {perm = array<i64: 0, 2, 1, 3>}
// CHECK-NEXT: exec.yield %[[T]]
// CHECK: exec.fusion "merge"(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x8x32xf32>) -> tensor<2x8x96xf32> {
// CHECK: tcc.concat
// CHECK-NEXT: tcc.mul
func.func @layout_chains(%qkv: tensor<2x8x96xf32>, %dq: tensor<2x2x8x16xf32>, %dk: tensor<2x2x8x16xf32>, %rest: tensor<2x8x32xf32>) -> (tensor<2x2x8x16xf32>, tensor<2x8x96xf32>) {
  %0 = exec.fusion "heads" (%qkv) : (tensor<2x8x96xf32>) -> tensor<2x2x8x16xf32> {
  ^bb0(%a: tensor<2x8x96xf32>):
    %1 = tcc.neg %a : (tensor<2x8x96xf32>) -> tensor<2x8x96xf32>
    %2 = tcc.slice %1 {starts = array<i64: 0, 0, 0>, limits = array<i64: 2, 8, 32>, strides = array<i64: 1, 1, 1>} : (tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
    %3 = tcc.reshape %2 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
    %4 = tcc.transpose %3 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
    exec.yield %4 : tensor<2x2x8x16xf32>
  }
  %1 = exec.fusion "merge" (%dq, %dk, %rest) : (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x8x32xf32>) -> tensor<2x8x96xf32> {
  ^bb0(%a: tensor<2x2x8x16xf32>, %b: tensor<2x2x8x16xf32>, %c: tensor<2x8x32xf32>):
    %2 = tcc.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x8x16xf32>) -> tensor<2x8x2x16xf32>
    %3 = tcc.reshape %2 : (tensor<2x8x2x16xf32>) -> tensor<2x8x32xf32>
    %4 = tcc.transpose %b {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x8x16xf32>) -> tensor<2x8x2x16xf32>
    %5 = tcc.reshape %4 : (tensor<2x8x2x16xf32>) -> tensor<2x8x32xf32>
    %6 = tcc.concat %3, %5, %c {axis = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x96xf32>
    %7 = tcc.mul %6, %6 : (tensor<2x8x96xf32>, tensor<2x8x96xf32>) -> tensor<2x8x96xf32>
    exec.yield %7 : tensor<2x8x96xf32>
  }
  return %0, %1 : tensor<2x2x8x16xf32>, tensor<2x8x96xf32>
}

// A library call: the op with its operands as the body's arguments.
// CHECK-LABEL: func.func @call
// CHECK: %[[R:.*]]:3 = exec.call(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<2x4xf32>, tensor<4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) {
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<2x4xf32>, %[[S:.*]]: tensor<4xf32>, %[[G:.*]]: tensor<2x4xf32>):
// CHECK-NEXT: {{.*}} = tcc.layer_norm_grad %[[A]] scale %[[S]] grad %[[G]] {axis = 1 : i64, epsilon = 1.000000e-05 : f64}
// CHECK-NEXT: exec.yield
func.func @call(%x: tensor<2x4xf32>, %s: tensor<4xf32>, %g: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %0:3 = exec.call (%x, %s, %g) : (tensor<2x4xf32>, tensor<4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%a: tensor<2x4xf32>, %b: tensor<4xf32>, %c: tensor<2x4xf32>):
    %1:3 = tcc.layer_norm_grad %a scale %b grad %c {axis = 1 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x4xf32>, tensor<4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>)
    exec.yield %1#0, %1#1, %1#2 : tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>
  }
  return %0#0 : tensor<2x4xf32>
}

// Collectives: a bucket of gradients summed over the ranks on the
// communication stream, and ZeRO's scatter and gather over 4 ranks.
// CHECK-LABEL: func.func @collectives
// CHECK: %{{.*}}:2 = exec.all_reduce %{{.*}}, %{{.*}} {bucket = 3 : i64} : (tensor<8x2xf32>, tensor<2xf32>) -> (tensor<8x2xf32>, tensor<2xf32>)
// CHECK: exec.all_reduce %{{.*}} {reduction = #exec<reduction mean>, stream = 0 : i64} : (tensor<f32>) -> tensor<f32>
// CHECK: exec.reduce_scatter %{{.*}} {world_size = 4 : i64} : (tensor<8x2xf32>) -> tensor<2x2xf32>
// CHECK: exec.all_gather %{{.*}} {world_size = 4 : i64} : (tensor<2x2xf32>) -> tensor<8x2xf32>
func.func @collectives(%g: tensor<8x2xf32>, %b: tensor<2xf32>, %loss: tensor<f32>) -> (tensor<8x2xf32>, tensor<2xf32>, tensor<f32>, tensor<8x2xf32>) {
  %0:2 = exec.all_reduce %g, %b {bucket = 3 : i64} : (tensor<8x2xf32>, tensor<2xf32>) -> (tensor<8x2xf32>, tensor<2xf32>)
  %1 = exec.all_reduce %loss {reduction = #exec<reduction mean>, stream = 0 : i64} : (tensor<f32>) -> tensor<f32>
  %2 = exec.reduce_scatter %g {world_size = 4 : i64} : (tensor<8x2xf32>) -> tensor<2x2xf32>
  %3 = exec.all_gather %2 {world_size = 4 : i64} : (tensor<2x2xf32>) -> tensor<8x2xf32>
  return %0#0, %0#1, %1, %3 : tensor<8x2xf32>, tensor<2xf32>, tensor<f32>, tensor<8x2xf32>
}

// CHECK-LABEL: func.func @view
// CHECK: exec.view %{{.*}}[32] : tensor<96x32xf32> -> tensor<32x32xf32>
func.func @view(%w: tensor<96x32xf32>) -> tensor<32x32xf32> {
  %0 = exec.view %w[32] : tensor<96x32xf32> -> tensor<32x32xf32>
  return %0 : tensor<32x32xf32>
}
