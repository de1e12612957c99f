// RUN: tcc-opt %s --split-input-file --tcc-plan-memory | FileCheck %s
// RUN: tcc-opt %s --split-input-file --tcc-plan-memory=order=definition | FileCheck %s
// RUN: tcc-opt %s --split-input-file --tcc-plan-memory=report -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// A chain: %a dies at %b, so %c takes %a's bytes. 16 x f32 = 64 bytes each;
// %a and %b are live together at %b (an op never writes over its input).
// CHECK-LABEL: func.func @chain
// CHECK-SAME: attributes {exec.arena_bytes = 128 : i64}
// CHECK: tcc.exp %{{.*}} {exec.offset = 0 : i64}
// CHECK: tcc.neg %{{.*}} {exec.offset = 64 : i64}
// CHECK: tcc.exp %{{.*}} {exec.offset = 0 : i64}
// REPORT: remark: memory plan of @{{[a-z]*}}: 3 arena buffers, naive 192 bytes, planned 128 bytes
func.func @chain(%x: tensor<16xf32>) -> tensor<16xf32> {
  %a = tcc.exp %x : (tensor<16xf32>) -> tensor<16xf32>
  %b = tcc.neg %a : (tensor<16xf32>) -> tensor<16xf32>
  %c = tcc.exp %b : (tensor<16xf32>) -> tensor<16xf32>
  return %c : tensor<16xf32>
}

// -----

// Sizes round up to 64 bytes (20 x f32 = 80 -> 128, 20 x i1 = 20 -> 64).
// CHECK-LABEL: func.func @rounding
// CHECK-SAME: attributes {exec.arena_bytes = 192 : i64}
// CHECK: tcc.exp %{{.*}} {exec.offset = 0 : i64}
// CHECK: tcc.cmp lt, %{{.*}} {exec.offset = 128 : i64}
func.func @rounding(%x: tensor<20xf32>, %y: tensor<20xf32>) -> tensor<20xi1> {
  %a = tcc.exp %x : (tensor<20xf32>) -> tensor<20xf32>
  %b = tcc.cmp lt, %a, %y : (tensor<20xf32>, tensor<20xf32>) -> tensor<20xi1>
  return %b : tensor<20xi1>
}

// -----

// A reshape is its input's buffer: %a stays live through %r's use in %c, so
// %b cannot take its bytes, and %c (live with both) goes on top.
// CHECK-LABEL: func.func @alias
// CHECK-SAME: attributes {exec.arena_bytes = 192 : i64}
// CHECK: tcc.exp %{{.*}} {exec.offset = 0 : i64}
// CHECK: tcc.reshape %{{.*}} {exec.offset = 0 : i64}
// CHECK: tcc.neg %{{.*}} {exec.offset = 64 : i64}
// CHECK: tcc.reshape %{{.*}} {exec.offset = 64 : i64}
// CHECK: tcc.add %{{.*}} {exec.offset = 128 : i64}
// A reshape of an argument stays outside the arena.
// CHECK: tcc.reshape %{{.*}} {exec.region = "input"}
func.func @alias(%x: tensor<4x4xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %a = tcc.exp %x : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = tcc.reshape %a : (tensor<4x4xf32>) -> tensor<16xf32>
  %b = tcc.neg %x : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %rb = tcc.reshape %b : (tensor<4x4xf32>) -> tensor<16xf32>
  %c = tcc.add %r, %rb : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %rx = tcc.reshape %x : (tensor<4x4xf32>) -> tensor<16xf32>
  return %c, %rx : tensor<16xf32>, tensor<16xf32>
}

// -----

// Returned values live to the end: %c cannot reuse %a's bytes although
// nothing reads %a after %b.
// CHECK-LABEL: func.func @returned
// CHECK-SAME: attributes {exec.arena_bytes = 192 : i64}
// CHECK: tcc.exp %{{.*}} {exec.offset = 0 : i64}
// CHECK: tcc.neg %{{.*}} {exec.offset = 64 : i64}
// CHECK: tcc.exp %{{.*}} {exec.offset = 128 : i64}
func.func @returned(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %a = tcc.exp %x : (tensor<16xf32>) -> tensor<16xf32>
  %b = tcc.neg %x : (tensor<16xf32>) -> tensor<16xf32>
  %c = tcc.exp %b : (tensor<16xf32>) -> tensor<16xf32>
  return %a, %c : tensor<16xf32>, tensor<16xf32>
}

// -----

// The optimizer writes into the dying parameter and state arguments (#0, #1,
// #2); the constant learning rate and the parameter live outside the arena,
// so only the gradient takes arena space.
// CHECK-LABEL: func.func @adamw
// CHECK-SAME: attributes {exec.arena_bytes = 64 : i64}
// CHECK: tcc.get_param @w {exec.region = "param"}
// CHECK: tcc.mul %{{.*}} {exec.offset = 0 : i64}
// CHECK: tcc.constant {exec.region = "constant"}
// CHECK: tcc.adamw_update {{.*}} {exec.inplace_of = array<i64: 0, 1, 2>, exec.region = ["inplace", "inplace", "inplace"]}
// REPORT: remark: memory plan of @{{[a-z]*}}: 1 arena buffers, naive 64 bytes, planned 64 bytes {{.*}}, 3 results in place
module {
  tcc.param @w = dense<2.0> : tensor<16xf32>
  func.func @adamw(%p: tensor<16xf32>, %m: tensor<16xf32>, %v: tensor<16xf32>, %step: tensor<i64>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
    %w = tcc.get_param @w : tensor<16xf32>
    %g = tcc.mul %p, %w : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %lr = tcc.constant dense<1.0e-3> : tensor<f64>
    %np, %nm, %nv = tcc.adamw_update %p, %g, %m, %v, %lr, %step : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<f64>, tensor<i64>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
    return %np, %nm, %nv : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
  }
}

// -----

// A working copy (mixed precision) is rewritten in place of its argument
// (#3) like the parameter (#0) and the momentum buffer (#2).
// CHECK-LABEL: func.func @working_copy
// CHECK-SAME: attributes {exec.arena_bytes = 0 : i64}
// CHECK: tcc.sgd_update {{.*}} {exec.inplace_of = array<i64: 0, 2, 3>, exec.region = ["inplace", "inplace", "inplace"], momentum = 9.000000e-01 : f64}
func.func @working_copy(%p: tensor<16xf32>, %g: tensor<16xf32>, %buf: tensor<16xf32>, %w: tensor<16xbf16>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xbf16>) {
  %lr = tcc.constant dense<1.0e-1> : tensor<f64>
  %np, %nb, %nw = tcc.sgd_update %p, %g, %lr, %buf working %w {momentum = 0.9 : f64} : (tensor<16xf32>, tensor<16xf32>, tensor<f64>, tensor<16xf32>, tensor<16xbf16>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xbf16>)
  return %np, %nb, %nw : tensor<16xf32>, tensor<16xf32>, tensor<16xbf16>
}

// -----

// The old parameter is still returned, so the update needs its own buffer.
// CHECK-LABEL: func.func @keep_old
// CHECK-SAME: attributes {exec.arena_bytes = 64 : i64}
// CHECK: tcc.sgd_update {{.*}} {exec.offset = 0 : i64}
func.func @keep_old(%p: tensor<16xf32>, %g: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %lr = tcc.constant dense<1.0e-1> : tensor<f64>
  %np = tcc.sgd_update %p, %g, %lr : (tensor<16xf32>, tensor<16xf32>, tensor<f64>) -> tensor<16xf32>
  return %np, %p : tensor<16xf32>, tensor<16xf32>
}

// -----

// Multi-result ops get one offset per result.
// CHECK-LABEL: func.func @split
// CHECK-SAME: attributes {exec.arena_bytes = 128 : i64}
// CHECK: tcc.split %{{.*}} {axis = 0 : i64, exec.offsets = array<i64: 0, 64>
func.func @split(%x: tensor<32xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %a:2 = tcc.split %x {axis = 0 : i64, sizes = array<i64: 16, 16>} : (tensor<32xf32>) -> (tensor<16xf32>, tensor<16xf32>)
  return %a#0, %a#1 : tensor<16xf32>, tensor<16xf32>
}

// -----

// A weight gradient made in two row blocks (tcc-rematerialize): the second
// block's update reads the first's results, which hold the arguments'
// storage, so both write in place of the parameter and its moments.
// CHECK-LABEL: func.func @block_updates
// CHECK-SAME: attributes {exec.arena_bytes = 64 : i64}
// CHECK: tcc.adamw_update {{.*}} {exec.inplace_of = array<i64: 0, 1, 2>, exec.region = ["inplace", "inplace", "inplace"]}
// CHECK: tcc.adamw_update {{.*}} {element_offset = 8 : i64, exec.inplace_of = array<i64: 0, 1, 2>, exec.region = ["inplace", "inplace", "inplace"]}
func.func @block_updates(%p: tensor<4x4xf32>, %m: tensor<4x4xf32>, %v: tensor<4x4xf32>, %step: tensor<i64>, %x: tensor<2x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %lr = tcc.constant dense<1.0e-3> : tensor<f64>
  %g0 = tcc.exp %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %p1, %m1, %v1 = tcc.adamw_update %p, %g0, %m, %v, %lr, %step : (tensor<4x4xf32>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<f64>, tensor<i64>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>)
  %g1 = tcc.neg %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %p2, %m2, %v2 = tcc.adamw_update %p1, %g1, %m1, %v1, %lr, %step {element_offset = 8 : i64} : (tensor<4x4xf32>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<f64>, tensor<i64>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>)
  return %p2, %m2, %v2 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// exec.reuse_operands (tcc-rematerialize under a budget): an elementwise
// kernel's result takes the bytes of an operand of its shape and width that
// dies at it (exec.reuses = N). %b takes %a's bytes (its other operand is
// broadcast) and %c %b's, so the chain needs 64 bytes, not 192; %d is a
// reduction and %e's operand %c is returned, so neither reuses.
// CHECK-LABEL: func.func @reuse
// CHECK-SAME: attributes {exec.arena_bytes = 192 : i64, exec.reuse_operands}
// CHECK: exec.fusion "a"(%{{.*}}) {exec.offset = 0 : i64}
// CHECK: exec.fusion "b"(%{{.*}}, %{{.*}}) {exec.offset = 0 : i64, exec.reuses = 0 : i64}
// CHECK: exec.fusion "c"(%{{.*}}) {exec.offset = 0 : i64, exec.reuses = 0 : i64}
// CHECK: exec.fusion "d"(%{{.*}}) {exec.offset = 64 : i64}
// CHECK: exec.fusion "e"(%{{.*}}) {exec.offset = 128 : i64}
func.func @reuse(%x: tensor<16xf32>, %s: tensor<f32>) -> (tensor<f32>, tensor<16xf32>, tensor<16xf32>) attributes {exec.reuse_operands} {
  %a = exec.fusion "a" (%x) : (tensor<16xf32>) -> tensor<16xf32> {
  ^bb0(%i: tensor<16xf32>):
    %0 = tcc.exp %i : (tensor<16xf32>) -> tensor<16xf32>
    exec.yield %0 : tensor<16xf32>
  }
  %b = exec.fusion "b" (%a, %s) : (tensor<16xf32>, tensor<f32>) -> tensor<16xf32> {
  ^bb0(%i: tensor<16xf32>, %t: tensor<f32>):
    %0 = tcc.broadcast %t : (tensor<f32>) -> tensor<16xf32>
    %1 = tcc.mul %i, %0 : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    exec.yield %1 : tensor<16xf32>
  }
  %c = exec.fusion "c" (%b) : (tensor<16xf32>) -> tensor<16xf32> {
  ^bb0(%i: tensor<16xf32>):
    %0 = tcc.neg %i : (tensor<16xf32>) -> tensor<16xf32>
    exec.yield %0 : tensor<16xf32>
  }
  %d = exec.fusion "d" (%c) : (tensor<16xf32>) -> tensor<f32> {
  ^bb0(%i: tensor<16xf32>):
    %0 = tcc.reduce_sum %i {axes = array<i64: 0>} : (tensor<16xf32>) -> tensor<f32>
    exec.yield %0 : tensor<f32>
  }
  %e = exec.fusion "e" (%c) : (tensor<16xf32>) -> tensor<16xf32> {
  ^bb0(%i: tensor<16xf32>):
    %0 = tcc.exp %i : (tensor<16xf32>) -> tensor<16xf32>
    exec.yield %0 : tensor<16xf32>
  }
  return %d, %c, %e : tensor<f32>, tensor<16xf32>, tensor<16xf32>
}

// -----

// A view is a piece of its source's buffer: %a (8 x 16 floats, 512 bytes)
// stays live through its views' uses, and each view's offset is %a's plus
// its first byte (row 2: 128, row 4: 256).
// CHECK-LABEL: func.func @views
// CHECK-SAME: attributes {exec.arena_bytes = 640 : i64}
// CHECK: tcc.exp %{{.*}} {exec.offset = 0 : i64}
// CHECK: exec.view %{{.*}}[32] {exec.offset = 128 : i64}
// CHECK: exec.view %{{.*}}[64] {exec.offset = 256 : i64}
// CHECK: tcc.add %{{.*}} {exec.offset = 512 : i64}
func.func @views(%x: tensor<8x16xf32>) -> tensor<2x16xf32> {
  %a = tcc.exp %x : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %v1 = exec.view %a[32] : tensor<8x16xf32> -> tensor<2x16xf32>
  %v2 = exec.view %a[64] : tensor<8x16xf32> -> tensor<2x16xf32>
  %c = tcc.add %v1, %v2 : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  return %c : tensor<2x16xf32>
}
