// RUN: tcc-opt %s -split-input-file -verify-diagnostics

func.func @arg_count(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{has 1 operands but its body has 2 arguments}}
  %0 = exec.fusion "k" (%x) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%a: tensor<2xf32>, %b: tensor<2xf32>):
    exec.yield %a : tensor<2xf32>
  }
  return %0 : tensor<2xf32>
}

// -----

func.func @arg_type(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{operand #0 has type 'tensor<2xf32>' but body argument #0 has type 'tensor<2xf64>'}}
  %0 = exec.fusion "k" (%x) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%a: tensor<2xf64>):
    %1 = tcc.cast %a : (tensor<2xf64>) -> tensor<2xf32>
    exec.yield %1 : tensor<2xf32>
  }
  return %0 : tensor<2xf32>
}

// -----

func.func @yield_type(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{yields 'tensor<2xf64>' as value #0 but its result #0 is 'tensor<2xf32>'}}
  %0 = exec.fusion "k" (%x) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%a: tensor<2xf32>):
    %1 = tcc.cast %a : (tensor<2xf32>) -> tensor<2xf64>
    exec.yield %1 : tensor<2xf64>
  }
  return %0 : tensor<2xf32>
}

// -----

func.func @not_fusible(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %0 = exec.fusion "k" (%x) : (tensor<2x2xf32>) -> tensor<2x2xf32> {
  ^bb0(%a: tensor<2x2xf32>):
    // expected-error @+1 {{'tcc.matmul' op cannot be fused into 'exec.fusion'}}
    %1 = tcc.matmul %a, %a : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
    exec.yield %1 : tensor<2x2xf32>
  }
  return %0 : tensor<2x2xf32>
}

// -----

func.func @dense_constant(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = exec.fusion "k" (%x) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%a: tensor<2xf32>):
    // expected-error @+1 {{'tcc.constant' op cannot be fused into 'exec.fusion'}}
    %c = tcc.constant dense<[1.0, 2.0]> : tensor<2xf32>
    %1 = tcc.add %a, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    exec.yield %1 : tensor<2xf32>
  }
  return %0 : tensor<2xf32>
}

// -----

func.func @wrong_terminator(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{body must end in 'exec.yield'}}
  %0 = exec.fusion "k" (%x) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%a: tensor<2xf32>):
    func.return %a : tensor<2xf32>
  }
  return %0 : tensor<2xf32>
}

// -----

func.func @captures(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-note @+1 {{required by region isolation constraints}}
  %0 = exec.fusion "k" () : () -> tensor<2xf32> {
    // expected-error @+1 {{using value defined outside the region}}
    %1 = tcc.neg %x : (tensor<2xf32>) -> tensor<2xf32>
    exec.yield %1 : tensor<2xf32>
  }
  return %0 : tensor<2xf32>
}

// -----

func.func @yield_outside(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'exec.yield' op expects parent op to be one of 'exec.fusion, exec.call'}}
  exec.yield %x : tensor<2xf32>
}

// -----

func.func @two_blocks(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{expects region #0 to have 0 or 1 blocks}}
  %0 = exec.fusion "k" (%x) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%a: tensor<2xf32>):
    exec.yield %a : tensor<2xf32>
  ^bb1:
    exec.yield %a : tensor<2xf32>
  }
  return %0 : tensor<2xf32>
}

// -----

// (A layout chain under a reduction is its prologue; a layout op reading a
// reduction, or a reduction of a reduction, is a second structured op.)
func.func @two_structured(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = exec.fusion "k" (%x) : (tensor<2x3xf32>) -> tensor<2xf32> {
  ^bb0(%a: tensor<2x3xf32>):
    %1 = tcc.reduce_sum %a {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
    // expected-error @+1 {{'tcc.slice' op is a second layout or reduction op in one 'exec.fusion' (a kernel holds one, or a chain of transpose, slice and concat ops; the first is 'tcc.reduce_sum')}}
    %2 = tcc.slice %1 {starts = array<i64: 0>, limits = array<i64: 2>, strides = array<i64: 1>} : (tensor<2xf32>) -> tensor<2xf32>
    exec.yield %2 : tensor<2xf32>
  }
  return %0 : tensor<2xf32>
}

// -----

func.func @two_reductions(%x: tensor<2x3xf32>) -> tensor<f32> {
  %0 = exec.fusion "k" (%x) : (tensor<2x3xf32>) -> tensor<f32> {
  ^bb0(%a: tensor<2x3xf32>):
    %1 = tcc.reduce_sum %a {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
    // expected-error @+1 {{'tcc.reduce_max' op is a second layout or reduction op in one 'exec.fusion' (a kernel holds one, or a chain of transpose, slice and concat ops; the first is 'tcc.reduce_sum')}}
    %2 = tcc.reduce_max %1 {axes = array<i64: 0>} : (tensor<2xf32>) -> tensor<f32>
    exec.yield %2 : tensor<f32>
  }
  return %0 : tensor<f32>
}

// -----

// A reduction whose result is broadcast by the epilogue would be recomputed
// for every output element: the structured op must have the result shape.
func.func @structured_shape(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = exec.fusion "k" (%x) : (tensor<2x3xf32>) -> tensor<2x3xf32> {
  ^bb0(%a: tensor<2x3xf32>):
    // expected-error @+1 {{'tcc.reduce_sum' op has result type 'tensor<3xf32>', but the layout or reduction op of an 'exec.fusion' (of a chain: its last op) must have the kernel's result shape ('tensor<2x3xf32>')}}
    %1 = tcc.reduce_sum %a {axes = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<3xf32>
    %2 = tcc.add %a, %1 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    exec.yield %2 : tensor<2x3xf32>
  }
  return %0 : tensor<2x3xf32>
}

// -----

func.func @epilogue_shape(%x: tensor<2x3xf32>, %y: tensor<4x3xf32>) -> tensor<3xf32> {
  %0 = exec.fusion "k" (%x, %y) : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<3xf32> {
  ^bb0(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>):
    %1 = tcc.reduce_max %a {axes = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<3xf32>
    // expected-error @+1 {{'tcc.add' op reads the result of 'tcc.reduce_max' but has type 'tensor<4x3xf32>'; an epilogue op must have the kernel's result shape ('tensor<3xf32>')}}
    %2 = tcc.add %b, %1 : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %3 = tcc.neg %1 : (tensor<3xf32>) -> tensor<3xf32>
    exec.yield %3 : tensor<3xf32>
  }
  return %0 : tensor<3xf32>
}

// -----

// Inside a layout chain a value has one use, by the next op: a slice also
// read by an elementwise op would be evaluated at two elements.
func.func @chain_two_uses(%x: tensor<4x6xf32>) -> tensor<3x4xf32> {
  %0 = exec.fusion "k" (%x) : (tensor<4x6xf32>) -> tensor<3x4xf32> {
  ^bb0(%a: tensor<4x6xf32>):
    // expected-error @+1 {{'tcc.slice' op is read by the next op of its layout chain and by other ops; inside a chain each value has exactly one use}}
    %1 = tcc.slice %a {starts = array<i64: 0, 0>, limits = array<i64: 4, 3>, strides = array<i64: 1, 1>} : (tensor<4x6xf32>) -> tensor<4x3xf32>
    %2 = tcc.transpose %1 {perm = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
    %3 = tcc.neg %1 : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %4 = tcc.transpose %3 {perm = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
    %5 = tcc.add %2, %4 : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    exec.yield %5 : tensor<3x4xf32>
  }
  return %0 : tensor<3x4xf32>
}

// -----

// A chain's layout ops are connected directly (reshapes between them); an
// elementwise op in between splits it into two chains.
func.func @chain_broken(%x: tensor<4x6xf32>) -> tensor<3x4xf32> {
  %0 = exec.fusion "k" (%x) : (tensor<4x6xf32>) -> tensor<3x4xf32> {
  ^bb0(%a: tensor<4x6xf32>):
    %1 = tcc.slice %a {starts = array<i64: 0, 0>, limits = array<i64: 4, 3>, strides = array<i64: 1, 1>} : (tensor<4x6xf32>) -> tensor<4x3xf32>
    %2 = tcc.neg %1 : (tensor<4x3xf32>) -> tensor<4x3xf32>
    // expected-error @+1 {{'tcc.transpose' op ends a second layout chain in one 'exec.fusion' (the first ends at 'tcc.slice')}}
    %3 = tcc.transpose %2 {perm = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
    exec.yield %3 : tensor<3x4xf32>
  }
  return %0 : tensor<3x4xf32>
}

// -----

func.func @reshape_alone(%x: tensor<4x6xf32>) -> tensor<24xf32> {
  %0 = exec.fusion "k" (%x) : (tensor<4x6xf32>) -> tensor<24xf32> {
  ^bb0(%a: tensor<4x6xf32>):
    // expected-error @+1 {{'tcc.reshape' op in an 'exec.fusion' must be part of a chain of layout ops (transpose, slice, concat)}}
    %1 = tcc.reshape %a : (tensor<4x6xf32>) -> tensor<24xf32>
    %2 = tcc.neg %1 : (tensor<24xf32>) -> tensor<24xf32>
    exec.yield %2 : tensor<24xf32>
  }
  return %0 : tensor<24xf32>
}

// -----

func.func @split_in_body(%x: tensor<4xf32>) -> tensor<2xf32> {
  %0 = exec.fusion "k" (%x) : (tensor<4xf32>) -> tensor<2xf32> {
  ^bb0(%a: tensor<4xf32>):
    // expected-error @+1 {{'tcc.split' op cannot be fused into 'exec.fusion'}}
    %1:2 = tcc.split %a {axis = 0 : i64, sizes = array<i64: 2, 2>} : (tensor<4xf32>) -> (tensor<2xf32>, tensor<2xf32>)
    exec.yield %1#0 : tensor<2xf32>
  }
  return %0 : tensor<2xf32>
}

// -----

// gather_grad on axis 0 is the embedding-gradient library op, not a kernel.
func.func @library_in_body(%i: tensor<3xi64>, %g: tensor<3x2xf32>) -> tensor<5x2xf32> {
  %0 = exec.fusion "k" (%i, %g) : (tensor<3xi64>, tensor<3x2xf32>) -> tensor<5x2xf32> {
  ^bb0(%a: tensor<3xi64>, %b: tensor<3x2xf32>):
    // expected-error @+1 {{'tcc.gather_grad' op cannot be fused into 'exec.fusion'}}
    %1 = tcc.gather_grad %a, %b {axis = 0 : i64} : (tensor<3xi64>, tensor<3x2xf32>) -> tensor<5x2xf32>
    exec.yield %1 : tensor<5x2xf32>
  }
  return %0 : tensor<5x2xf32>
}

// -----

func.func @fusion_yields_two(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'exec.fusion' op yields 2 values but has 1 results}}
  %0 = exec.fusion "k" (%x) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%a: tensor<2xf32>):
    exec.yield %a, %a : tensor<2xf32>, tensor<2xf32>
  }
  return %0 : tensor<2xf32>
}

// -----

// Several results without a reduction: siblings, each computed from the
// ops it reads, all of the first result's shape; no op computes nothing.
func.func @siblings_dead_op(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %0:2 = exec.fusion "k" (%x) : (tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  ^bb0(%a: tensor<2xf32>):
    %1 = tcc.exp %a : (tensor<2xf32>) -> tensor<2xf32>
    // expected-error @+1 {{'tcc.sqrt' op computes no result of its 'exec.fusion'}}
    %2 = tcc.sqrt %a : (tensor<2xf32>) -> tensor<2xf32>
    %3 = tcc.neg %a : (tensor<2xf32>) -> tensor<2xf32>
    exec.yield %1, %3 : tensor<2xf32>, tensor<2xf32>
  }
  return %0#0, %0#1 : tensor<2xf32>, tensor<2xf32>
}

// -----

func.func @siblings_of_two_shapes(%x: tensor<2xf32>, %y: tensor<3xf32>) -> (tensor<2xf32>, tensor<3xf32>) {
  // expected-error @+1 {{'exec.fusion' op result #1 has type 'tensor<3xf32>'; the results of a kernel without a reduction have its first result's shape}}
  %0:2 = exec.fusion "k" (%x, %y) : (tensor<2xf32>, tensor<3xf32>) -> (tensor<2xf32>, tensor<3xf32>) {
  ^bb0(%a: tensor<2xf32>, %b: tensor<3xf32>):
    %1 = tcc.exp %a : (tensor<2xf32>) -> tensor<2xf32>
    %2 = tcc.neg %b : (tensor<3xf32>) -> tensor<3xf32>
    exec.yield %1, %2 : tensor<2xf32>, tensor<3xf32>
  }
  return %0#0, %0#1 : tensor<2xf32>, tensor<3xf32>
}

// -----

// A store is an elementwise prologue value of the reduction input's shape:
// not a block argument, not a value the reduction broadcasts.
func.func @store_argument(%x: tensor<4x2xf32>) -> (tensor<2xf32>, tensor<4x2xf32>) {
  // expected-error @+1 {{'exec.fusion' op result #1 must be an elementwise prologue value of the reduction, of its input's shape}}
  %0:2 = exec.fusion "k" (%x) : (tensor<4x2xf32>) -> (tensor<2xf32>, tensor<4x2xf32>) {
  ^bb0(%a: tensor<4x2xf32>):
    %1 = tcc.reduce_sum %a {axes = array<i64: 0>} : (tensor<4x2xf32>) -> tensor<2xf32>
    exec.yield %1, %a : tensor<2xf32>, tensor<4x2xf32>
  }
  return %0#0, %0#1 : tensor<2xf32>, tensor<4x2xf32>
}

// -----

func.func @store_broadcast(%x: tensor<4x2xf32>, %b: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  // expected-error @+1 {{'exec.fusion' op result #1 must be an elementwise prologue value of the reduction, of its input's shape}}
  %0:2 = exec.fusion "k" (%x, %b) : (tensor<4x2xf32>, tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  ^bb0(%a: tensor<4x2xf32>, %c: tensor<2xf32>):
    %1 = tcc.exp %c : (tensor<2xf32>) -> tensor<2xf32>
    %2 = tcc.mul %a, %1 : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
    %3 = tcc.reduce_sum %2 {axes = array<i64: 0>} : (tensor<4x2xf32>) -> tensor<2xf32>
    exec.yield %3, %1 : tensor<2xf32>, tensor<2xf32>
  }
  return %0#0, %0#1 : tensor<2xf32>, tensor<2xf32>
}

// -----

func.func @call_not_library(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'exec.call' op runs 'tcc.exp', which is not a library call}}
  %0 = exec.call (%x) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%a: tensor<2xf32>):
    %1 = tcc.exp %a : (tensor<2xf32>) -> tensor<2xf32>
    exec.yield %1 : tensor<2xf32>
  }
  return %0 : tensor<2xf32>
}

// -----

func.func @call_gather_grad_axis1(%i: tensor<2xi64>, %g: tensor<3x2xf32>) -> tensor<3x5xf32> {
  // expected-error @+1 {{runs 'tcc.gather_grad', which is not a library call}}
  %0 = exec.call (%i, %g) : (tensor<2xi64>, tensor<3x2xf32>) -> tensor<3x5xf32> {
  ^bb0(%a: tensor<2xi64>, %b: tensor<3x2xf32>):
    %1 = tcc.gather_grad %a, %b {axis = 1 : i64} : (tensor<2xi64>, tensor<3x2xf32>) -> tensor<3x5xf32>
    exec.yield %1 : tensor<3x5xf32>
  }
  return %0 : tensor<3x5xf32>
}

// -----

func.func @call_two_ops(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'exec.call' op body holds 2 ops; a call runs exactly one library op}}
  %0 = exec.call (%x) : (tensor<2x2xf32>) -> tensor<2x2xf32> {
  ^bb0(%a: tensor<2x2xf32>):
    %1 = tcc.matmul %a, %a : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
    %2 = tcc.matmul %1, %a : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
    exec.yield %2 : tensor<2x2xf32>
  }
  return %0 : tensor<2x2xf32>
}

// -----

func.func @call_operand_order(%x: tensor<2x2xf32>, %y: tensor<2x2xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'exec.call' op body op must take the body arguments in order as its operands}}
  %0 = exec.call (%x, %y) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32> {
  ^bb0(%a: tensor<2x2xf32>, %b: tensor<2x2xf32>):
    %1 = tcc.matmul %b, %a : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
    exec.yield %1 : tensor<2x2xf32>
  }
  return %0 : tensor<2x2xf32>
}

// -----

func.func @call_partial_yield(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'exec.call' op must yield the results of 'tcc.dropout' in order}}
  %0 = exec.call (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %1:2 = tcc.dropout %a {ratio = 1.0e-1 : f64, seed = 1 : i64} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>)
    exec.yield %1#0 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @all_reduce_types(%x: tensor<4xf32>) -> tensor<4xf64> {
  // expected-error @+1 {{'exec.all_reduce' op result #0 has element type 'f64' but its operand 'f32'}}
  %0 = exec.all_reduce %x : (tensor<4xf32>) -> tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

func.func @all_reduce_count(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'exec.all_reduce' op has 2 operands but 1 results; each operand has its result}}
  %0 = exec.all_reduce %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @all_reduce_shape(%x: tensor<4xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'exec.all_reduce' op result #0 has type 'tensor<2xf32>', expected 'tensor<4xf32>'}}
  %0 = exec.all_reduce %x : (tensor<4xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @all_reduce_stream(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'exec.all_reduce' op bucket and stream are non-negative}}
  %0 = exec.all_reduce %x {stream = -1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @all_reduce_gradients(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'exec.all_reduce' op gradients 2 is not a count of its 1 operands}}
  %0 = exec.all_reduce %x {gradients = 2 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @all_reduce_scattered_gradients(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'exec.all_reduce' op reduces gradients and partial sums of them at once; gradients and scattered_only exclude each other}}
  %0 = exec.all_reduce %x {gradients = 1 : i64, scattered_only} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @all_reduce_scattered_mean(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'exec.all_reduce' op scattered_only sums partial sums; its reduction is sum}}
  %0 = exec.all_reduce %x {scattered_only, reduction = #exec<reduction mean>} : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @reduce_scatter_divides(%x: tensor<6x2xf32>) -> tensor<1x2xf32> {
  // expected-error @+1 {{'exec.reduce_scatter' op operand #0 has leading dimension 6, which world_size 4 does not divide}}
  %0 = exec.reduce_scatter %x {world_size = 4 : i64} : (tensor<6x2xf32>) -> tensor<1x2xf32>
  return %0 : tensor<1x2xf32>
}

// -----

func.func @reduce_scatter_shape(%x: tensor<8x2xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'exec.reduce_scatter' op result #0 has type 'tensor<4x2xf32>', expected 'tensor<2x2xf32>'}}
  %0 = exec.reduce_scatter %x {world_size = 4 : i64} : (tensor<8x2xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @all_gather_scalar(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'exec.all_gather' op operand #0 is a scalar; it needs a leading dimension to split}}
  %0 = exec.all_gather %x {world_size = 2 : i64} : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @all_gather_world(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'exec.all_gather' op world_size 0 is not positive}}
  %0 = exec.all_gather %x {world_size = 0 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @view_past_end(%x: tensor<4x16xf32>) -> tensor<16xf32> {
  // expected-error @below {{elements [56, 72) are not within the source's 64}}
  %v = exec.view %x[56] : tensor<4x16xf32> -> tensor<16xf32>
  return %v : tensor<16xf32>
}

// -----

func.func @view_element_type(%x: tensor<4x16xf32>) -> tensor<16xf16> {
  // expected-error @below {{result element type 'f16' is not the source's 'f32'}}
  %v = exec.view %x[0] : tensor<4x16xf32> -> tensor<16xf16>
  return %v : tensor<16xf16>
}
