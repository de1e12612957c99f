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
