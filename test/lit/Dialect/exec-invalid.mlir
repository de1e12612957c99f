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
  // expected-error @+1 {{yields 'tensor<2xf64>' but its result is 'tensor<2xf32>'}}
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
  // expected-error @+1 {{'exec.yield' op expects parent op 'exec.fusion'}}
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

func.func @two_structured(%x: tensor<2x3xf32>) -> tensor<3xf32> {
  %0 = exec.fusion "k" (%x) : (tensor<2x3xf32>) -> tensor<3xf32> {
  ^bb0(%a: tensor<2x3xf32>):
    %1 = tcc.transpose %a {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
    // expected-error @+1 {{'tcc.reduce_sum' op is a second layout or reduction op in one 'exec.fusion' (a kernel holds one, or a chain of transpose, slice and concat ops; the first is 'tcc.transpose')}}
    %2 = tcc.reduce_sum %1 {axes = array<i64: 1>} : (tensor<3x2xf32>) -> tensor<3xf32>
    exec.yield %2 : tensor<3xf32>
  }
  return %0 : tensor<3xf32>
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
