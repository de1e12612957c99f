// RUN: tcc-opt %s --split-input-file -verify-diagnostics
// The exec dialect verifies a memory plan wherever one is written: the
// exec.arena_bytes of a function vouches for the plan of its body, checked
// against liveness recomputed from the IR.

// A valid plan: %c reuses %a's bytes after %a died.
func.func @valid(%x: tensor<16xf32>) -> tensor<16xf32> attributes {exec.arena_bytes = 128 : i64} {
  %a = tcc.exp %x {exec.offset = 0 : i64} : (tensor<16xf32>) -> tensor<16xf32>
  %b = tcc.neg %a {exec.offset = 64 : i64} : (tensor<16xf32>) -> tensor<16xf32>
  %c = tcc.exp %b {exec.offset = 0 : i64} : (tensor<16xf32>) -> tensor<16xf32>
  return %c : tensor<16xf32>
}

// -----

// %a is still read by %b, which writes over it.
func.func @overlap(%x: tensor<16xf32>) -> tensor<16xf32> attributes {exec.arena_bytes = 128 : i64} {
  // expected-note @below {{overlapped buffer defined here}}
  %a = tcc.exp %x {exec.offset = 0 : i64} : (tensor<16xf32>) -> tensor<16xf32>
  // expected-error @below {{'tcc.neg' op result #0 of 'tcc.neg' at [0, 64) overlaps result #0 of 'tcc.exp' at [0, 64), which is still live}}
  %b = tcc.neg %a {exec.offset = 0 : i64} : (tensor<16xf32>) -> tensor<16xf32>
  return %b : tensor<16xf32>
}

// -----

// A partial overlap with a buffer kept alive by its reshape alias.
func.func @overlap_alias(%x: tensor<4x4xf32>, %y: tensor<32xf32>) -> (tensor<16xf32>, tensor<32xf32>) attributes {exec.arena_bytes = 256 : i64} {
  // expected-note @below {{overlapped buffer defined here}}
  %a = tcc.exp %x {exec.offset = 64 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = tcc.reshape %a {exec.offset = 64 : i64} : (tensor<4x4xf32>) -> tensor<16xf32>
  // expected-error @below {{result #0 of 'tcc.exp' at [0, 128) overlaps result #0 of 'tcc.exp' at [64, 128)}}
  %b = tcc.exp %y {exec.offset = 0 : i64} : (tensor<32xf32>) -> tensor<32xf32>
  return %r, %b : tensor<16xf32>, tensor<32xf32>
}

// -----

func.func @missing_offset(%x: tensor<16xf32>) -> tensor<16xf32> attributes {exec.arena_bytes = 128 : i64} {
  %a = tcc.exp %x {exec.offset = 0 : i64} : (tensor<16xf32>) -> tensor<16xf32>
  // expected-error @below {{result #0 needs an arena buffer but has no exec.offset}}
  %b = tcc.neg %a : (tensor<16xf32>) -> tensor<16xf32>
  return %b : tensor<16xf32>
}

// -----

func.func @missing_multi_offset(%x: tensor<32xf32>) -> (tensor<16xf32>, tensor<16xf32>) attributes {exec.arena_bytes = 128 : i64} {
  // expected-error @below {{result #1 needs an arena buffer but has no exec.offset}}
  %a:2 = tcc.split %x {axis = 0 : i64, sizes = array<i64: 16, 16>, exec.offsets = array<i64: 0, -1>} : (tensor<32xf32>) -> (tensor<16xf32>, tensor<16xf32>)
  return %a#0, %a#1 : tensor<16xf32>, tensor<16xf32>
}

// -----

func.func @exceeds(%x: tensor<16xf32>) -> tensor<16xf32> attributes {exec.arena_bytes = 64 : i64} {
  %a = tcc.exp %x {exec.offset = 0 : i64} : (tensor<16xf32>) -> tensor<16xf32>
  // expected-error @below {{result #0 of 'tcc.neg' at [64, 128) exceeds exec.arena_bytes = 64}}
  %b = tcc.neg %a {exec.offset = 64 : i64} : (tensor<16xf32>) -> tensor<16xf32>
  return %b : tensor<16xf32>
}

// -----

func.func @no_arena_size(%x: tensor<16xf32>) -> tensor<16xf32> {
  // expected-error @below {{'exec.offset' is in a function without exec.arena_bytes}}
  %a = tcc.exp %x {exec.offset = 0 : i64} : (tensor<16xf32>) -> tensor<16xf32>
  return %a : tensor<16xf32>
}

// -----

func.func @misaligned(%x: tensor<16xf32>) -> tensor<16xf32> attributes {exec.arena_bytes = 128 : i64} {
  // expected-error @below {{result #0 has offset 32, not a multiple of 64}}
  %a = tcc.exp %x {exec.offset = 32 : i64} : (tensor<16xf32>) -> tensor<16xf32>
  return %a : tensor<16xf32>
}

// -----

// The parameter is returned as well, so writing the update into it would
// clobber a live value.
func.func @inplace_live(%p: tensor<16xf32>, %g: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) attributes {exec.arena_bytes = 0 : i64} {
  %lr = tcc.constant {exec.region = "constant"} dense<1.0e-1> : tensor<f64>
  // expected-error @below {{result #0 is in place of argument #0, which is still used after 'tcc.sgd_update'}}
  %np = tcc.sgd_update %p, %g, %lr {exec.region = "inplace", exec.inplace_of = 0 : i64} : (tensor<16xf32>, tensor<16xf32>, tensor<f64>) -> tensor<16xf32>
  return %np, %p : tensor<16xf32>, tensor<16xf32>
}

// -----

func.func @inplace_unread(%p: tensor<16xf32>, %g: tensor<16xf32>, %q: tensor<16xf32>) -> tensor<16xf32> attributes {exec.arena_bytes = 0 : i64} {
  %lr = tcc.constant {exec.region = "constant"} dense<1.0e-1> : tensor<f64>
  // expected-error @below {{result #0 is in place of argument #2, which it does not read}}
  %np = tcc.sgd_update %p, %g, %lr {exec.region = "inplace", exec.inplace_of = 2 : i64} : (tensor<16xf32>, tensor<16xf32>, tensor<f64>) -> tensor<16xf32>
  return %np : tensor<16xf32>
}

// -----

func.func @stale_reshape(%x: tensor<4x4xf32>) -> tensor<16xf32> attributes {exec.arena_bytes = 64 : i64} {
  %a = tcc.exp %x {exec.offset = 0 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  // expected-error @below {{aliases result #0 of 'tcc.exp' but has a different exec.offset}}
  %r = tcc.reshape %a {exec.offset = 64 : i64} : (tensor<4x4xf32>) -> tensor<16xf32>
  return %r : tensor<16xf32>
}

// -----

// A chain of block updates of one parameter: the second reads the first's
// result, which holds argument #0's storage, so it is in place of #0 too.
func.func @inplace_chain(%p: tensor<4xf32>, %g: tensor<2xf32>) -> tensor<4xf32> attributes {exec.arena_bytes = 0 : i64} {
  %lr = tcc.constant {exec.region = "constant"} dense<1.0e-1> : tensor<f64>
  %p1 = tcc.sgd_update %p, %g, %lr {exec.region = "inplace", exec.inplace_of = 0 : i64} : (tensor<4xf32>, tensor<2xf32>, tensor<f64>) -> tensor<4xf32>
  %p2 = tcc.sgd_update %p1, %g, %lr {element_offset = 2 : i64, exec.region = "inplace", exec.inplace_of = 0 : i64} : (tensor<4xf32>, tensor<2xf32>, tensor<f64>) -> tensor<4xf32>
  return %p2 : tensor<4xf32>
}

// -----

// ... but not two updates that both read the argument: the first would
// clobber what the second reads.
func.func @inplace_chain_skips(%p: tensor<4xf32>, %g: tensor<2xf32>) -> (tensor<4xf32>, tensor<4xf32>) attributes {exec.arena_bytes = 0 : i64} {
  %lr = tcc.constant {exec.region = "constant"} dense<1.0e-1> : tensor<f64>
  // expected-error @below {{result #0 is in place of argument #0, which is still used after 'tcc.sgd_update'}}
  %p1 = tcc.sgd_update %p, %g, %lr {exec.region = "inplace", exec.inplace_of = 0 : i64} : (tensor<4xf32>, tensor<2xf32>, tensor<f64>) -> tensor<4xf32>
  %p2 = tcc.sgd_update %p, %g, %lr {element_offset = 2 : i64, exec.region = "inplace", exec.inplace_of = 0 : i64} : (tensor<4xf32>, tensor<2xf32>, tensor<f64>) -> tensor<4xf32>
  return %p1, %p2 : tensor<4xf32>, tensor<4xf32>
}

// -----

// An elementwise kernel may write over an operand that dies at it
// (exec.reuses, under --memory-budget): element i is read before it is
// written.
func.func @reuse(%x: tensor<16xf32>) -> tensor<16xf32> attributes {exec.arena_bytes = 64 : i64} {
  %a = exec.fusion "a" (%x) {exec.offset = 0 : i64} : (tensor<16xf32>) -> tensor<16xf32> {
  ^bb0(%i: tensor<16xf32>):
    %0 = tcc.exp %i : (tensor<16xf32>) -> tensor<16xf32>
    exec.yield %0 : tensor<16xf32>
  }
  %b = exec.fusion "b" (%a) {exec.offset = 0 : i64, exec.reuses = 0 : i64} : (tensor<16xf32>) -> tensor<16xf32> {
  ^bb0(%i: tensor<16xf32>):
    %0 = tcc.neg %i : (tensor<16xf32>) -> tensor<16xf32>
    exec.yield %0 : tensor<16xf32>
  }
  return %b : tensor<16xf32>
}

// -----

// A kernel that reads other elements of the operand (a reversal) may not.
func.func @reuse_not_elementwise(%x: tensor<16xf32>) -> tensor<16xf32> attributes {exec.arena_bytes = 64 : i64} {
  // expected-note @below {{overlapped buffer defined here}}
  %a = exec.fusion "a" (%x) {exec.offset = 0 : i64} : (tensor<16xf32>) -> tensor<16xf32> {
  ^bb0(%i: tensor<16xf32>):
    %0 = tcc.exp %i : (tensor<16xf32>) -> tensor<16xf32>
    exec.yield %0 : tensor<16xf32>
  }
  // expected-error @below {{overlaps result #0 of 'exec.fusion' at [0, 64), which is still live}}
  %b = exec.fusion "b" (%a) {exec.offset = 0 : i64, exec.reuses = 0 : i64} : (tensor<16xf32>) -> tensor<16xf32> {
  ^bb0(%i: tensor<16xf32>):
    %0 = tcc.slice %i {starts = array<i64: 15>, limits = array<i64: -1>, strides = array<i64: -1>} : (tensor<16xf32>) -> tensor<16xf32>
    exec.yield %0 : tensor<16xf32>
  }
  return %b : tensor<16xf32>
}

// -----

// A view is a piece of its source's bytes: its offset is the source's plus
// the piece's first byte (16 floats in: 64).
func.func @stale_view(%x: tensor<4x16xf32>) -> tensor<16xf32> attributes {exec.arena_bytes = 256 : i64} {
  %a = tcc.exp %x {exec.offset = 0 : i64} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  // expected-error @below {{aliases result #0 of 'tcc.exp' but has a different exec.offset (the alias starts at byte 64 of it)}}
  %v = exec.view %a[16] {exec.offset = 0 : i64} : tensor<4x16xf32> -> tensor<16xf32>
  return %v : tensor<16xf32>
}
