// RUN: tcc-opt --tcc-lower-precision %s | FileCheck %s
// RUN: tcc-opt --tcc-lower-precision %s | tcc-opt | FileCheck %s
// RUN: tcc-opt '--tcc-lower-precision=precision=fp16 policy=layer_norm=fp32,softmax=fp32' %s \
// RUN:   | FileCheck %s --check-prefix=ISLANDS
// RUN: tcc-opt --tcc-lower-precision=precision=fp32 %s | FileCheck %s --check-prefix=FP32
// RUN: not tcc-opt --tcc-lower-precision=precision=fp8 %s 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not tcc-opt '--tcc-lower-precision=policy=layer_nrom=fp32' %s 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not tcc-opt '--tcc-lower-precision=policy=adamw_update=low' %s 2>&1 | FileCheck %s --check-prefix=FIXED
// RUN: not tcc-opt '--tcc-lower-precision=policy=matmul=half' %s 2>&1 | FileCheck %s --check-prefix=CLASS

// A transformer block: layer norm, projection with bias, attention, GELU,
// a second projection with the same (tied) weight, residual, a scaled
// softmax and a mean.
//
// bf16 by default: parameters stay fp32 and are cast at each use (the tied
// weight twice, so its two gradients return to fp32 separately); the input
// is cast once; everything stores bf16 but the mean, whose sum stays fp32.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: -> (tensor<2x4x8xbf16> {tcc.name = "y"}, tensor<f32> {tcc.name = "aux"})
// CHECK-NEXT: %[[X:.*]] = tcc.cast %arg0 : (tensor<2x4x8xf32>) -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[G:.*]] = tcc.get_param @ln.weight : tensor<8xf32>
// CHECK-NEXT: %[[B:.*]] = tcc.get_param @ln.bias : tensor<8xf32>
// CHECK-NEXT: %[[W:.*]] = tcc.get_param @fc.weight : tensor<8x8xf32>
// CHECK-NEXT: %[[WB:.*]] = tcc.get_param @fc.bias : tensor<8xf32>
// CHECK-NEXT: %[[G16:.*]] = tcc.cast %[[G]] : (tensor<8xf32>) -> tensor<8xbf16>
// CHECK-NEXT: %[[B16:.*]] = tcc.cast %[[B]] : (tensor<8xf32>) -> tensor<8xbf16>
// CHECK-NEXT: %[[H:.*]] = tcc.layer_norm %[[X]] scale %[[G16]] bias %[[B16]] {{.*}} -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[W16A:.*]] = tcc.cast %[[W]] : (tensor<8x8xf32>) -> tensor<8x8xbf16>
// CHECK-NEXT: %[[M:.*]] = tcc.matmul %[[H]], %[[W16A]] {transpose_rhs = true} : (tensor<2x4x8xbf16>, tensor<8x8xbf16>) -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[WB16:.*]] = tcc.cast %[[WB]] : (tensor<8xf32>) -> tensor<8xbf16>
// CHECK-NEXT: tcc.add %[[WB16]], %[[M]] : (tensor<8xbf16>, tensor<2x4x8xbf16>) -> tensor<2x4x8xbf16>
// CHECK-NEXT: tcc.reshape {{.*}} -> tensor<2x1x4x8xbf16>
// CHECK-NEXT: tcc.attention {{.*}} -> tensor<2x1x4x8xbf16>
// CHECK-NEXT: tcc.reshape {{.*}} -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[U:.*]] = tcc.gelu {{.*}} -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[W16B:.*]] = tcc.cast %[[W]] : (tensor<8x8xf32>) -> tensor<8x8xbf16>
// CHECK-NEXT: %[[V:.*]] = tcc.matmul %[[U]], %[[W16B]] : (tensor<2x4x8xbf16>, tensor<8x8xbf16>) -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[R:.*]] = tcc.add %[[X]], %[[V]] : {{.*}} -> tensor<2x4x8xbf16>
// The fp32 constant 0.1 is rounded to bf16 in place (0.1000976...).
// CHECK-NEXT: %[[C:.*]] = tcc.constant dense<1.000980e-01> : tensor<bf16>
// CHECK-NEXT: %[[S:.*]] = tcc.mul %[[R]], %[[C]] : (tensor<2x4x8xbf16>, tensor<bf16>) -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[P:.*]] = tcc.softmax %[[S]] {{.*}} -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[P32:.*]] = tcc.cast %[[P]] : (tensor<2x4x8xbf16>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[N:.*]] = tcc.reduce_mean %[[P32]] {{.*}} -> tensor<f32>
// CHECK-NEXT: return %[[P]], %[[N]] : tensor<2x4x8xbf16>, tensor<f32>

// fp16 with layer norm and softmax as fp32 islands: they read fp32 (the
// layer norm the input itself, the softmax a cast up) and what follows
// them is cast down again.
// ISLANDS-LABEL: func.func @forward
// ISLANDS-SAME: -> (tensor<2x4x8xf32> {tcc.name = "y"}, tensor<f32> {tcc.name = "aux"})
// ISLANDS: %[[H:.*]] = tcc.layer_norm %arg0 scale %{{.*}} bias %{{.*}} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
// ISLANDS-NEXT: %[[H16:.*]] = tcc.cast %[[H]] : (tensor<2x4x8xf32>) -> tensor<2x4x8xf16>
// ISLANDS: tcc.matmul %[[H16]], {{.*}} -> tensor<2x4x8xf16>
// ISLANDS: tcc.attention {{.*}} -> tensor<2x1x4x8xf16>
// ISLANDS: %[[S:.*]] = tcc.mul {{.*}} : (tensor<2x4x8xf16>, tensor<f16>) -> tensor<2x4x8xf16>
// ISLANDS-NEXT: %[[S32:.*]] = tcc.cast %[[S]] : (tensor<2x4x8xf16>) -> tensor<2x4x8xf32>
// ISLANDS-NEXT: %[[P:.*]] = tcc.softmax %[[S32]] {{.*}} -> tensor<2x4x8xf32>
// ISLANDS-NEXT: %[[N:.*]] = tcc.reduce_mean %[[P]] {{.*}} -> tensor<f32>
// ISLANDS-NEXT: return %[[P]], %[[N]]

// fp32 changes nothing.
// FP32-LABEL: func.func @forward
// FP32-NOT: tcc.cast
// FP32-NOT: bf16

// BAD: error: --precision 'fp8': expected fp32, bf16 or fp16
// UNKNOWN: error: --precision-policy 'layer_nrom=fp32': 'layer_nrom' is not a tcc op kind
// FIXED: error: --precision-policy 'adamw_update=low': the precision of adamw_update is fixed by the lowering
// CLASS: error: --precision-policy 'matmul=half': expected low or fp32, not 'half'

module {
  tcc.param @ln.weight = dense<1.0> : tensor<8xf32>
  tcc.param @ln.bias = dense<0.0> : tensor<8xf32>
  tcc.param @fc.weight = dense<0.5> : tensor<8x8xf32>
  tcc.param @fc.bias = dense<0.25> : tensor<8xf32>
  func.func @forward(%x: tensor<2x4x8xf32> {tcc.name = "x"}) -> (tensor<2x4x8xf32> {tcc.name = "y"}, tensor<f32> {tcc.name = "aux"}) {
    %g = tcc.get_param @ln.weight : tensor<8xf32>
    %b = tcc.get_param @ln.bias : tensor<8xf32>
    %w = tcc.get_param @fc.weight : tensor<8x8xf32>
    %wb = tcc.get_param @fc.bias : tensor<8xf32>
    %h = tcc.layer_norm %x scale %g bias %b {axis = 2 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    %m = tcc.matmul %h, %w {transpose_rhs = true} : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %a = tcc.add %wb, %m : (tensor<8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %q = tcc.reshape %a : (tensor<2x4x8xf32>) -> tensor<2x1x4x8xf32>
    %t = tcc.attention %q, %q, %q {causal = true, scale = 0.35 : f64} : (tensor<2x1x4x8xf32>, tensor<2x1x4x8xf32>, tensor<2x1x4x8xf32>) -> tensor<2x1x4x8xf32>
    %o = tcc.reshape %t : (tensor<2x1x4x8xf32>) -> tensor<2x4x8xf32>
    %u = tcc.gelu %o {approximate = #tcc<gelu_approx tanh>} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %v = tcc.matmul %u, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %r = tcc.add %x, %v : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %c = tcc.constant dense<0.1> : tensor<f32>
    %s = tcc.mul %r, %c : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
    %p = tcc.softmax %s {axis = 2 : i64} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %n = tcc.reduce_mean %p {axes = array<i64: 0, 1, 2>} : (tensor<2x4x8xf32>) -> tensor<f32>
    return %p, %n : tensor<2x4x8xf32>, tensor<f32>
  }
}
