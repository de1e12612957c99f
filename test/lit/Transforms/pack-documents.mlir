// RUN: tcc-opt --split-input-file --tcc-pack-documents --verify-diagnostics %s | FileCheck %s
// RUN: tcc-opt --split-input-file --tcc-pack-documents --verify-diagnostics %s | tcc-opt --split-input-file | FileCheck %s

// A GPT block's shape: token and position embeddings added, causal
// self-attention. @forward gets position_ids [B, T]; segment_index turns it
// into the documents' offsets [B*T + 1], the attention takes them as its
// key mask, and the position embedding reads position_ids instead of the
// constant 0 .. T-1 (which goes away).
// CHECK: tcc.param @wpe
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[IDX:[^:]*]]: tensor<2x4xi64> {tcc.name = "idx"}, %[[POS:[^:]*]]: tensor<2x4xi64> {tcc.name = "position_ids"})
// CHECK-NEXT: %[[CU:.*]] = tcc.segment_index %[[POS]] : (tensor<2x4xi64>) -> tensor<9xi32>
// CHECK-NOT: dense<[0, 1, 2, 3]>
// CHECK: %[[PE:.*]] = tcc.embedding %{{.*}}, %[[POS]] : (tensor<4x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
// CHECK: tcc.add %{{.*}}, %[[PE]] : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK: tcc.attention %{{.*}}, %{{.*}}, %{{.*}}, %[[CU]] {causal = true, scale = 5.000000e-01 : f64} : ({{.*}}, tensor<9xi32>) -> tensor<2x2x4x4xf32>
module {
  tcc.param @wte = dense<0.5> : tensor<16x8xf32>
  tcc.param @wpe = dense<0.25> : tensor<4x8xf32>
  func.func @forward(%idx: tensor<2x4xi64> {tcc.name = "idx"}) -> (tensor<2x4x8xf32> {tcc.name = "y"}) {
    %pos = tcc.constant dense<[0, 1, 2, 3]> : tensor<4xi64>
    %wte = tcc.get_param @wte : tensor<16x8xf32>
    %wpe = tcc.get_param @wpe : tensor<4x8xf32>
    %te = tcc.embedding %wte, %idx : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
    %pe = tcc.embedding %wpe, %pos : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<4x8xf32>
    %x = tcc.add %te, %pe : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
    %r = tcc.reshape %x : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
    %q = tcc.transpose %r {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
    %a = tcc.attention %q, %q, %q {causal = true, scale = 0.5 : f64} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
    %t = tcc.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x4x4xf32>) -> tensor<2x4x2x4xf32>
    %y = tcc.reshape %t : (tensor<2x4x2x4xf32>) -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// An existing position_ids input (a Hugging Face export) is used as it is;
// a model without a position embedding only gets the documents' offsets.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[IDS:[^:]*]]: tensor<1x4xi64> {tcc.name = "position_ids"}, %{{[^:]*}}: tensor<1x2x4x4xf32> {tcc.name = "q"})
// CHECK-NEXT: %[[CU:.*]] = tcc.segment_index %[[IDS]] : (tensor<1x4xi64>) -> tensor<5xi32>
// CHECK-NEXT: tcc.attention %{{.*}}, %[[CU]] {scale
module {
  func.func @forward(%ids: tensor<1x4xi64> {tcc.name = "position_ids"}, %q: tensor<1x2x4x4xf32> {tcc.name = "q"}) -> (tensor<1x2x4x4xf32> {tcc.name = "y"}) {
    %a = tcc.attention %q, %q, %q {scale = 0.5 : f64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    return %a : tensor<1x2x4x4xf32>
  }
}

// -----

// An attention that already has a key-padding mask is refused.
module {
  func.func @forward(%q: tensor<1x2x4x4xf32> {tcc.name = "q"}, %m: tensor<1x4xi1> {tcc.name = "mask"}) -> (tensor<1x2x4x4xf32> {tcc.name = "y"}) {
    // expected-error @+1 {{--pack-documents: this attention already takes a key mask}}
    %a = tcc.attention %q, %q, %q, %m {scale = 0.5 : f64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x4xi1>) -> tensor<1x2x4x4xf32>
    return %a : tensor<1x2x4x4xf32>
  }
}

// -----

// A model without attention has no documents to keep apart.
module {
  // expected-error @+1 {{--pack-documents: the model has no attention}}
  func.func @forward(%x: tensor<2x4xf32> {tcc.name = "x"}) -> (tensor<2x4xf32> {tcc.name = "y"}) {
    return %x : tensor<2x4xf32>
  }
}

// -----

// Positions 0 .. T-1 that reach something other than a position embedding
// stay as they are, with a warning.
module {
  func.func @forward(%q: tensor<1x2x4x4xf32> {tcc.name = "q"}) -> (tensor<1x2x4x4xf32> {tcc.name = "y"}, tensor<4xf32> {tcc.name = "p"}) {
    // expected-warning @+1 {{--pack-documents: the positions 0 .. 3 reach tcc.cast, not a position embedding}}
    %pos = tcc.constant dense<[0, 1, 2, 3]> : tensor<4xi64>
    %p = tcc.cast %pos : (tensor<4xi64>) -> tensor<4xf32>
    %a = tcc.attention %q, %q, %q {causal = true, scale = 0.5 : f64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    return %a, %p : tensor<1x2x4x4xf32>, tensor<4xf32>
  }
}
