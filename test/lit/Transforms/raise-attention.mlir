// RUN: tcc-opt --tcc-raise-attention %s | FileCheck %s

// The chains below mirror what torch 1.13 exports (opset 17) for the models
// in test/models, as the ONNX importer turns them into tcc ops one to one.
// Shapes: B = 2, H = 2, T = 4, head dim 16 (scale 1/sqrt(16) = 0.25).

// nanoGPT: k^T is Transpose(k, [0,2,3,1]) of the [B,T,H,D] reshape, scaled by
// Mul, masked by Where(Cast(mask[:T,:T] == 0), -inf, scores) with the
// comparison already folded by the exporter into a bool constant.
// CHECK-LABEL: func.func @gpt_causal
// CHECK-SAME: (%[[Q0:[^:]*]]: tensor<2x4x2x16xf32>, %[[K0:[^:]*]]: tensor<2x4x2x16xf32>, %[[V0:[^:]*]]: tensor<2x4x2x16xf32>)
// CHECK-DAG: %[[Q:.*]] = tcc.transpose %[[Q0]] {perm = array<i64: 0, 2, 1, 3>}
// CHECK-DAG: %[[V:.*]] = tcc.transpose %[[V0]] {perm = array<i64: 0, 2, 1, 3>}
// CHECK-DAG: %[[K:.*]] = tcc.transpose %[[K0]] {perm = array<i64: 0, 2, 1, 3>}
// CHECK: %[[O:.*]] = tcc.attention %[[Q]], %[[K]], %[[V]] {causal = true, scale = 2.500000e-01 : f64} : (tensor<2x2x4x16xf32>, tensor<2x2x4x16xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32>
// CHECK-NOT: tcc.softmax
// CHECK-NOT: tcc.where
// CHECK-NOT: tcc.matmul
// CHECK: return %[[O]]
func.func @gpt_causal(%q0: tensor<2x4x2x16xf32>, %k0: tensor<2x4x2x16xf32>, %v0: tensor<2x4x2x16xf32>) -> tensor<2x2x4x16xf32> {
  %q = tcc.transpose %q0 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x16xf32>) -> tensor<2x2x4x16xf32>
  %v = tcc.transpose %v0 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x16xf32>) -> tensor<2x2x4x16xf32>
  %kt = tcc.transpose %k0 {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x4x2x16xf32>) -> tensor<2x2x16x4xf32>
  %s = tcc.matmul %q, %kt : (tensor<2x2x4x16xf32>, tensor<2x2x16x4xf32>) -> tensor<2x2x4x4xf32>
  %c = tcc.constant dense<2.500000e-01> : tensor<f32>
  %t = tcc.mul %s, %c : (tensor<2x2x4x4xf32>, tensor<f32>) -> tensor<2x2x4x4xf32>
  %hide = tcc.constant dense<[[[[false, true, true, true], [false, false, true, true], [false, false, false, true], [false, false, false, false]]]]> : tensor<1x1x4x4xi1>
  %cond = tcc.cast %hide : (tensor<1x1x4x4xi1>) -> tensor<1x1x4x4xi1>
  %ninf = tcc.constant dense<0xFF800000> : tensor<f32>
  %m = tcc.where %cond, %ninf, %t : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = tcc.softmax %m {axis = 3 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %o = tcc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32>
  return %o : tensor<2x2x4x16xf32>
}

// BERT: Div by sqrt(hd) and the HF extended mask (1 - mask) * -10000 of shape
// [B,1,1,T], computed from a graph input and shared by two layers.
// CHECK-LABEL: func.func @bert_padding
// CHECK-SAME: (%{{[^:]*}}: tensor<2x4xi64>, %[[Q0:[^:]*]]: tensor<2x4x2x16xf32>, %[[K0:[^:]*]]: tensor<2x4x2x16xf32>, %[[V:[^:]*]]: tensor<2x2x4x16xf32>)
// CHECK: %[[BIAS:.*]] = tcc.mul
// CHECK: %[[Q:.*]] = tcc.transpose %[[Q0]] {perm = array<i64: 0, 2, 1, 3>}
// CHECK-DAG: %[[KM1:.*]] = tcc.reshape %[[BIAS]] : (tensor<2x1x1x4xf32>) -> tensor<2x4xf32>
// CHECK-DAG: %[[K:.*]] = tcc.transpose %[[K0]] {perm = array<i64: 0, 2, 1, 3>}
// CHECK: %[[O1:.*]] = tcc.attention %[[Q]], %[[K]], %[[V]], %[[KM1]] {scale = 2.500000e-01 : f64}
// CHECK: %[[KM2:.*]] = tcc.reshape %[[BIAS]] : (tensor<2x1x1x4xf32>) -> tensor<2x4xf32>
// CHECK: %[[O2:.*]] = tcc.attention %[[O1]], %[[Q]], %[[V]], %[[KM2]] {scale = 2.500000e-01 : f64}
// CHECK-NOT: tcc.softmax
// CHECK: return %[[O1]], %[[O2]]
func.func @bert_padding(%mask: tensor<2x4xi64>, %q0: tensor<2x4x2x16xf32>, %k0: tensor<2x4x2x16xf32>, %v: tensor<2x2x4x16xf32>) -> (tensor<2x2x4x16xf32>, tensor<2x2x4x16xf32>) {
  %m4 = tcc.reshape %mask : (tensor<2x4xi64>) -> tensor<2x1x1x4xi64>
  %mf = tcc.cast %m4 : (tensor<2x1x1x4xi64>) -> tensor<2x1x1x4xf32>
  %one = tcc.constant dense<1.000000e+00> : tensor<f32>
  %inv = tcc.sub %one, %mf : (tensor<f32>, tensor<2x1x1x4xf32>) -> tensor<2x1x1x4xf32>
  %big = tcc.constant dense<-1.000000e+04> : tensor<f32>
  %bias = tcc.mul %inv, %big : (tensor<2x1x1x4xf32>, tensor<f32>) -> tensor<2x1x1x4xf32>
  %q = tcc.transpose %q0 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x16xf32>) -> tensor<2x2x4x16xf32>
  %kt = tcc.transpose %k0 {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x4x2x16xf32>) -> tensor<2x2x16x4xf32>
  %s = tcc.matmul %q, %kt : (tensor<2x2x4x16xf32>, tensor<2x2x16x4xf32>) -> tensor<2x2x4x4xf32>
  %c = tcc.constant dense<4.000000e+00> : tensor<f32>
  %t = tcc.div %s, %c : (tensor<2x2x4x4xf32>, tensor<f32>) -> tensor<2x2x4x4xf32>
  %a = tcc.add %t, %bias : (tensor<2x2x4x4xf32>, tensor<2x1x1x4xf32>) -> tensor<2x2x4x4xf32>
  %p = tcc.softmax %a {axis = 3 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %o = tcc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32>
  // Second layer: same bias, bias first in the Add.
  %s2 = tcc.matmul %o, %q {transpose_rhs = true} : (tensor<2x2x4x16xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x4xf32>
  %t2 = tcc.div %s2, %c : (tensor<2x2x4x4xf32>, tensor<f32>) -> tensor<2x2x4x4xf32>
  %a2 = tcc.add %bias, %t2 : (tensor<2x1x1x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p2 = tcc.softmax %a2 {axis = 3 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %o2 = tcc.matmul %p2, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32>
  return %o, %o2 : tensor<2x2x4x16xf32>, tensor<2x2x4x16xf32>
}

// Key already [B,H,T,D] with transpose_rhs on the scores matmul; Div scale;
// v stored as [B,H,D,T] and read through transpose_rhs, which needs a
// transpose for tcc.attention's value operand.
// CHECK-LABEL: func.func @div_scale_transpose_rhs
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<2x2x4x16xf32>, %[[K:[^:]*]]: tensor<2x2x4x16xf32>, %[[VT:[^:]*]]: tensor<2x2x16x4xf32>)
// CHECK: %[[V:.*]] = tcc.transpose %[[VT]] {perm = array<i64: 0, 1, 3, 2>}
// CHECK: tcc.attention %[[Q]], %[[K]], %[[V]] {scale = 1.250000e-01 : f64}
// CHECK-NOT: tcc.softmax
func.func @div_scale_transpose_rhs(%q: tensor<2x2x4x16xf32>, %k: tensor<2x2x4x16xf32>, %vt: tensor<2x2x16x4xf32>) -> tensor<2x2x4x16xf32> {
  %s = tcc.matmul %q, %k {transpose_rhs = true} : (tensor<2x2x4x16xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x4xf32>
  %c = tcc.constant dense<8.000000e+00> : tensor<1xf32>
  %t = tcc.div %s, %c : (tensor<2x2x4x4xf32>, tensor<1xf32>) -> tensor<2x2x4x4xf32>
  %p = tcc.softmax %t {axis = 3 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %o = tcc.matmul %p, %vt {transpose_rhs = true} : (tensor<2x2x4x4xf32>, tensor<2x2x16x4xf32>) -> tensor<2x2x4x16xf32>
  return %o : tensor<2x2x4x16xf32>
}

// k.transpose(-2, -1) of a [B,H,T,D] key: the transposes cancel, no scaling.
// CHECK-LABEL: func.func @transpose_k_unscaled
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<2x2x4x16xf32>, %[[K:[^:]*]]: tensor<2x2x4x16xf32>, %[[V:[^:]*]]: tensor<2x2x4x16xf32>)
// CHECK-NEXT: %[[O:.*]] = tcc.attention %[[Q]], %[[K]], %[[V]] {scale = 1.000000e+00 : f64}
// CHECK-NEXT: return %[[O]]
func.func @transpose_k_unscaled(%q: tensor<2x2x4x16xf32>, %k: tensor<2x2x4x16xf32>, %v: tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32> {
  %kt = tcc.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x2x4x16xf32>) -> tensor<2x2x16x4xf32>
  %s = tcc.matmul %q, %kt : (tensor<2x2x4x16xf32>, tensor<2x2x16x4xf32>) -> tensor<2x2x4x4xf32>
  %p = tcc.softmax %s {axis = 3 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %o = tcc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32>
  return %o : tensor<2x2x4x16xf32>
}

// where(keep, scores, fill) with a rank-2 keep mask, the scale constant first
// in the Mul, in bf16, where -10000 rounds to -9984.
// CHECK-LABEL: func.func @keep_form_bf16
// CHECK: tcc.attention %{{.*}}, %{{.*}}, %{{.*}} {causal = true, scale = 2.500000e-01 : f64} : (tensor<2x2x4x16xbf16>
// CHECK-NOT: tcc.softmax
func.func @keep_form_bf16(%q: tensor<2x2x4x16xbf16>, %k: tensor<2x2x4x16xbf16>, %v: tensor<2x2x4x16xbf16>) -> tensor<2x2x4x16xbf16> {
  %s = tcc.matmul %q, %k {transpose_rhs = true} : (tensor<2x2x4x16xbf16>, tensor<2x2x4x16xbf16>) -> tensor<2x2x4x4xbf16>
  %c = tcc.constant dense<2.500000e-01> : tensor<bf16>
  %t = tcc.mul %c, %s : (tensor<bf16>, tensor<2x2x4x4xbf16>) -> tensor<2x2x4x4xbf16>
  %keep = tcc.constant dense<[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]> : tensor<4x4xi1>
  %fill = tcc.constant dense<-1.000000e+04> : tensor<bf16>
  %m = tcc.where %keep, %t, %fill : (tensor<4x4xi1>, tensor<2x2x4x4xbf16>, tensor<bf16>) -> tensor<2x2x4x4xbf16>
  %p = tcc.softmax %m {axis = 3 : i64} : (tensor<2x2x4x4xbf16>) -> tensor<2x2x4x4xbf16>
  %o = tcc.matmul %p, %v : (tensor<2x2x4x4xbf16>, tensor<2x2x4x16xbf16>) -> tensor<2x2x4x16xbf16>
  return %o : tensor<2x2x4x16xbf16>
}

// masked_fill(buffer[:, :, :T, :T] == 0, -inf) without exporter folding: the
// mask is sliced from a [1,1,8,8] tril buffer and compared at compile time.
// CHECK-LABEL: func.func @sliced_buffer_eq_zero
// CHECK: tcc.attention %{{.*}}, %{{.*}}, %{{.*}} {causal = true, scale = 2.500000e-01 : f64}
// CHECK-NOT: tcc.softmax
func.func @sliced_buffer_eq_zero(%q: tensor<2x2x4x16xf32>, %k: tensor<2x2x4x16xf32>, %v: tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32> {
  %s = tcc.matmul %q, %k {transpose_rhs = true} : (tensor<2x2x4x16xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x4xf32>
  %c = tcc.constant dense<2.500000e-01> : tensor<f32>
  %t = tcc.mul %s, %c : (tensor<2x2x4x4xf32>, tensor<f32>) -> tensor<2x2x4x4xf32>
  %buf = tcc.constant dense<[[[[1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]]]]> : tensor<1x1x8x8xf32>
  %sl = tcc.slice %buf {starts = array<i64: 0, 0, 0, 0>, limits = array<i64: 1, 1, 4, 4>, strides = array<i64: 1, 1, 1, 1>} : (tensor<1x1x8x8xf32>) -> tensor<1x1x4x4xf32>
  %zero = tcc.constant dense<0.000000e+00> : tensor<f32>
  %hide = tcc.cmp eq, %sl, %zero : (tensor<1x1x4x4xf32>, tensor<f32>) -> tensor<1x1x4x4xi1>
  %ninf = tcc.constant dense<0xFF800000> : tensor<f32>
  %m = tcc.where %hide, %ninf, %t : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = tcc.softmax %m {axis = 3 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %o = tcc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32>
  return %o : tensor<2x2x4x16xf32>
}

// The same with the buffer a dense resource, as the importer keeps a large
// constant: its bytes are read from the blob.
// CHECK-LABEL: func.func @resource_buffer_eq_zero
// CHECK: tcc.attention %{{.*}}, %{{.*}}, %{{.*}} {causal = true, scale = 2.500000e-01 : f64}
// CHECK-NOT: tcc.softmax
func.func @resource_buffer_eq_zero(%q: tensor<2x2x4x16xf32>, %k: tensor<2x2x4x16xf32>, %v: tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32> {
  %s = tcc.matmul %q, %k {transpose_rhs = true} : (tensor<2x2x4x16xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x4xf32>
  %c = tcc.constant dense<2.500000e-01> : tensor<f32>
  %t = tcc.mul %s, %c : (tensor<2x2x4x4xf32>, tensor<f32>) -> tensor<2x2x4x4xf32>
  %buf = tcc.constant dense_resource<tril4> : tensor<1x1x4x4xf32>
  %zero = tcc.constant dense<0.000000e+00> : tensor<f32>
  %hide = tcc.cmp eq, %buf, %zero : (tensor<1x1x4x4xf32>, tensor<f32>) -> tensor<1x1x4x4xi1>
  %ninf = tcc.constant dense<0xFF800000> : tensor<f32>
  %m = tcc.where %hide, %ninf, %t : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = tcc.softmax %m {axis = 3 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %o = tcc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32>
  return %o : tensor<2x2x4x16xf32>
}

// where(not(keep), -inf, scores).
// CHECK-LABEL: func.func @not_keep
// CHECK: tcc.attention %{{.*}}, %{{.*}}, %{{.*}} {causal = true, scale = 1.000000e+00 : f64}
// CHECK-NOT: tcc.softmax
func.func @not_keep(%q: tensor<2x2x4x16xf32>, %k: tensor<2x2x4x16xf32>, %v: tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32> {
  %s = tcc.matmul %q, %k {transpose_rhs = true} : (tensor<2x2x4x16xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x4xf32>
  %keep = tcc.constant dense<[[[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]]]> : tensor<1x1x4x4xi1>
  %hide = tcc.not %keep : (tensor<1x1x4x4xi1>) -> tensor<1x1x4x4xi1>
  %ninf = tcc.constant dense<0xFF800000> : tensor<f32>
  %m = tcc.where %hide, %ninf, %s : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = tcc.softmax %m {axis = 3 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %o = tcc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32>
  return %o : tensor<2x2x4x16xf32>
}

// Additive causal mask: 0 on and below the diagonal, -inf or -1e4 above.
// CHECK-LABEL: func.func @additive_causal
// CHECK: tcc.attention %{{.*}}, %{{.*}}, %{{.*}} {causal = true, scale = 2.500000e-01 : f64}
// CHECK-NOT: tcc.softmax
func.func @additive_causal(%q: tensor<2x2x4x16xf32>, %k: tensor<2x2x4x16xf32>, %v: tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32> {
  %s = tcc.matmul %q, %k {transpose_rhs = true} : (tensor<2x2x4x16xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x4xf32>
  %c = tcc.constant dense<2.500000e-01> : tensor<f32>
  %t = tcc.mul %s, %c : (tensor<2x2x4x4xf32>, tensor<f32>) -> tensor<2x2x4x4xf32>
  %mask = tcc.constant dense<[[0.0, 0xFF800000, 0xFF800000, -1.0e+04], [0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, -3.0e+38], [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32>
  %m = tcc.add %mask, %t : (tensor<4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = tcc.softmax %m {axis = 3 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %o = tcc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32>
  return %o : tensor<2x2x4x16xf32>
}

// Causal and key padding together; the [T] bias is shared by the batch, so
// the key mask is broadcast to [B, T].
// CHECK-LABEL: func.func @causal_and_padding
// CHECK-SAME: %[[BIAS:[^:]*]]: tensor<4xf32>
// CHECK: %[[R:.*]] = tcc.reshape %[[BIAS]] : (tensor<4xf32>) -> tensor<1x4xf32>
// CHECK: %[[KM:.*]] = tcc.broadcast %[[R]] : (tensor<1x4xf32>) -> tensor<2x4xf32>
// CHECK: tcc.attention %{{.*}}, %{{.*}}, %{{.*}}, %[[KM]] {causal = true, scale = 2.500000e-01 : f64}
// CHECK-NOT: tcc.softmax
func.func @causal_and_padding(%q: tensor<2x2x4x16xf32>, %k: tensor<2x2x4x16xf32>, %v: tensor<2x2x4x16xf32>, %bias: tensor<4xf32>) -> tensor<2x2x4x16xf32> {
  %s = tcc.matmul %q, %k {transpose_rhs = true} : (tensor<2x2x4x16xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x4xf32>
  %c = tcc.constant dense<2.500000e-01> : tensor<f32>
  %t = tcc.mul %s, %c : (tensor<2x2x4x4xf32>, tensor<f32>) -> tensor<2x2x4x4xf32>
  %hide = tcc.constant dense<[[[[false, true, true, true], [false, false, true, true], [false, false, false, true], [false, false, false, false]]]]> : tensor<1x1x4x4xi1>
  %ninf = tcc.constant dense<0xFF800000> : tensor<f32>
  %m = tcc.where %hide, %ninf, %t : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %a = tcc.add %m, %bias : (tensor<2x2x4x4xf32>, tensor<4xf32>) -> tensor<2x2x4x4xf32>
  %p = tcc.softmax %a {axis = 3 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %o = tcc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32>
  return %o : tensor<2x2x4x16xf32>
}

// q and k^T each pre-scaled by sqrt(scale), as torch's SDPA decomposition does.
// CHECK-LABEL: func.func @prescaled_q_k
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<2x2x4x16xf32>, %[[K:[^:]*]]: tensor<2x2x4x16xf32>, %[[V:[^:]*]]: tensor<2x2x4x16xf32>)
// CHECK: tcc.attention %[[Q]], %[[K]], %[[V]] {scale = 2.500000e-01 : f64}
// CHECK-NOT: tcc.softmax
func.func @prescaled_q_k(%q: tensor<2x2x4x16xf32>, %k: tensor<2x2x4x16xf32>, %v: tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32> {
  %c = tcc.constant dense<5.000000e-01> : tensor<f32>
  %qs = tcc.mul %q, %c : (tensor<2x2x4x16xf32>, tensor<f32>) -> tensor<2x2x4x16xf32>
  %kt = tcc.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x2x4x16xf32>) -> tensor<2x2x16x4xf32>
  %ks = tcc.mul %kt, %c : (tensor<2x2x16x4xf32>, tensor<f32>) -> tensor<2x2x16x4xf32>
  %s = tcc.matmul %qs, %ks : (tensor<2x2x4x16xf32>, tensor<2x2x16x4xf32>) -> tensor<2x2x4x4xf32>
  %p = tcc.softmax %s {axis = 3 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %o = tcc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32>
  return %o : tensor<2x2x4x16xf32>
}

//===----------------------------------------------------------------------===//
// Chains that must stay as they are
//===----------------------------------------------------------------------===//

// One element above the diagonal is kept: not causal.
// CHECK-LABEL: func.func @mask_not_triangular
// CHECK-NOT: tcc.attention
// CHECK: tcc.where
// CHECK: tcc.softmax
// CHECK-NOT: tcc.attention
func.func @mask_not_triangular(%q: tensor<2x2x4x16xf32>, %k: tensor<2x2x4x16xf32>, %v: tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32> {
  %s = tcc.matmul %q, %k {transpose_rhs = true} : (tensor<2x2x4x16xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x4xf32>
  %hide = tcc.constant dense<[[[[false, true, true, true], [false, false, false, true], [false, false, false, true], [false, false, false, false]]]]> : tensor<1x1x4x4xi1>
  %ninf = tcc.constant dense<0xFF800000> : tensor<f32>
  %m = tcc.where %hide, %ninf, %s : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = tcc.softmax %m {axis = 3 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %o = tcc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32>
  return %o : tensor<2x2x4x16xf32>
}

// A bottom-right aligned mask (queries are the last 2 of 4 positions) is not
// tcc.attention's top-left `causal`.
// CHECK-LABEL: func.func @mask_bottom_right
// CHECK-NOT: tcc.attention
// CHECK: tcc.softmax
// CHECK-NOT: tcc.attention
func.func @mask_bottom_right(%q: tensor<2x2x2x16xf32>, %k: tensor<2x2x4x16xf32>, %v: tensor<2x2x4x16xf32>) -> tensor<2x2x2x16xf32> {
  %s = tcc.matmul %q, %k {transpose_rhs = true} : (tensor<2x2x2x16xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x2x4xf32>
  %keep = tcc.constant dense<[[true, true, true, false], [true, true, true, true]]> : tensor<2x4xi1>
  %ninf = tcc.constant dense<0xFF800000> : tensor<f32>
  %m = tcc.where %keep, %s, %ninf : (tensor<2x4xi1>, tensor<2x2x2x4xf32>, tensor<f32>) -> tensor<2x2x2x4xf32>
  %p = tcc.softmax %m {axis = 3 : i64} : (tensor<2x2x2x4xf32>) -> tensor<2x2x2x4xf32>
  %o = tcc.matmul %p, %v : (tensor<2x2x2x4xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x2x16xf32>
  return %o : tensor<2x2x2x16xf32>
}

// Masked positions set to -1, not to -inf or a large negative value.
// CHECK-LABEL: func.func @fill_not_negative_enough
// CHECK-NOT: tcc.attention
// CHECK: tcc.softmax
// CHECK-NOT: tcc.attention
func.func @fill_not_negative_enough(%q: tensor<2x2x4x16xf32>, %k: tensor<2x2x4x16xf32>, %v: tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32> {
  %s = tcc.matmul %q, %k {transpose_rhs = true} : (tensor<2x2x4x16xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x4xf32>
  %hide = tcc.constant dense<[[[[false, true, true, true], [false, false, true, true], [false, false, false, true], [false, false, false, false]]]]> : tensor<1x1x4x4xi1>
  %fill = tcc.constant dense<-1.000000e+00> : tensor<f32>
  %m = tcc.where %hide, %fill, %s : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = tcc.softmax %m {axis = 3 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %o = tcc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32>
  return %o : tensor<2x2x4x16xf32>
}

// A per-(head, query, key) bias (relative position, ALiBi) is no key mask.
// CHECK-LABEL: func.func @full_bias
// CHECK-NOT: tcc.attention
// CHECK: tcc.softmax
// CHECK-NOT: tcc.attention
func.func @full_bias(%q: tensor<2x2x4x16xf32>, %k: tensor<2x2x4x16xf32>, %v: tensor<2x2x4x16xf32>, %bias: tensor<1x2x4x4xf32>) -> tensor<2x2x4x16xf32> {
  %s = tcc.matmul %q, %k {transpose_rhs = true} : (tensor<2x2x4x16xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x4xf32>
  %m = tcc.add %s, %bias : (tensor<2x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = tcc.softmax %m {axis = 3 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %o = tcc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32>
  return %o : tensor<2x2x4x16xf32>
}

// Softmax over the queries, not the keys.
// CHECK-LABEL: func.func @softmax_other_axis
// CHECK-NOT: tcc.attention
// CHECK: tcc.softmax %{{.*}} {axis = 2 : i64}
// CHECK-NOT: tcc.attention
func.func @softmax_other_axis(%q: tensor<2x2x4x16xf32>, %k: tensor<2x2x4x16xf32>, %v: tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32> {
  %s = tcc.matmul %q, %k {transpose_rhs = true} : (tensor<2x2x4x16xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x4xf32>
  %p = tcc.softmax %s {axis = 2 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %o = tcc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32>
  return %o : tensor<2x2x4x16xf32>
}

// The scaled scores are also returned: raising would have to keep them alive.
// CHECK-LABEL: func.func @scores_second_use
// CHECK-NOT: tcc.attention
// CHECK: tcc.softmax
// CHECK-NOT: tcc.attention
func.func @scores_second_use(%q: tensor<2x2x4x16xf32>, %k: tensor<2x2x4x16xf32>, %v: tensor<2x2x4x16xf32>) -> (tensor<2x2x4x16xf32>, tensor<2x2x4x4xf32>) {
  %s = tcc.matmul %q, %k {transpose_rhs = true} : (tensor<2x2x4x16xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x4xf32>
  %c = tcc.constant dense<2.500000e-01> : tensor<f32>
  %t = tcc.mul %s, %c : (tensor<2x2x4x4xf32>, tensor<f32>) -> tensor<2x2x4x4xf32>
  %p = tcc.softmax %t {axis = 3 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %o = tcc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32>
  return %o, %t : tensor<2x2x4x16xf32>, tensor<2x2x4x4xf32>
}

// The attention probabilities are also returned (e.g. output_attentions).
// CHECK-LABEL: func.func @probs_second_use
// CHECK-NOT: tcc.attention
// CHECK: tcc.softmax
// CHECK-NOT: tcc.attention
func.func @probs_second_use(%q: tensor<2x2x4x16xf32>, %k: tensor<2x2x4x16xf32>, %v: tensor<2x2x4x16xf32>) -> (tensor<2x2x4x16xf32>, tensor<2x2x4x4xf32>) {
  %s = tcc.matmul %q, %k {transpose_rhs = true} : (tensor<2x2x4x16xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x4xf32>
  %p = tcc.softmax %s {axis = 3 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %o = tcc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32>
  return %o, %p : tensor<2x2x4x16xf32>, tensor<2x2x4x4xf32>
}

// A per-key scale is no scalar softmax temperature.
// CHECK-LABEL: func.func @non_splat_scale
// CHECK-NOT: tcc.attention
// CHECK: tcc.softmax
// CHECK-NOT: tcc.attention
func.func @non_splat_scale(%q: tensor<2x2x4x16xf32>, %k: tensor<2x2x4x16xf32>, %v: tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32> {
  %s = tcc.matmul %q, %k {transpose_rhs = true} : (tensor<2x2x4x16xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x4xf32>
  %c = tcc.constant dense<[2.500000e-01, 5.000000e-01, 2.500000e-01, 2.500000e-01]> : tensor<4xf32>
  %t = tcc.mul %s, %c : (tensor<2x2x4x4xf32>, tensor<4xf32>) -> tensor<2x2x4x4xf32>
  %p = tcc.softmax %t {axis = 3 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %o = tcc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32>
  return %o : tensor<2x2x4x16xf32>
}

{-#
  dialect_resources: {
    builtin: {
      tril4: "0x040000000000803F0000000000000000000000000000803F0000803F00000000000000000000803F0000803F0000803F000000000000803F0000803F0000803F0000803F"
    }
  }
#-}

// torch 2.x's dynamo export of scaled_dot_product_attention (Hugging Face
// GPT-2): q and k pre-scaled by sqrt(0.25), k^T as a batched 3-D transpose
// (reshape to [B*H, T, D], transpose [0,2,1], reshape back), a constant
// additive causal mask with a batch dim, and the NaN guard where(p != p, 0, p)
// on the probabilities (dropped: no row of a causal mask is fully masked).
// CHECK-LABEL: func.func @sdpa_dynamo
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<2x2x4x16xf32>, %[[K:[^:]*]]: tensor<2x2x4x16xf32>, %[[V:[^:]*]]: tensor<2x2x4x16xf32>)
// CHECK: %[[O:.*]] = tcc.attention %[[Q]], %[[K]], %[[V]] {causal = true, scale = 2.500000e-01 : f64}
// CHECK-NOT: tcc.softmax
// CHECK-NOT: tcc.cmp
// CHECK: return %[[O]]
func.func @sdpa_dynamo(%q: tensor<2x2x4x16xf32>, %k: tensor<2x2x4x16xf32>, %v: tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32> {
  %k3 = tcc.reshape %k : (tensor<2x2x4x16xf32>) -> tensor<4x4x16xf32>
  %kt3 = tcc.transpose %k3 {perm = array<i64: 0, 2, 1>} : (tensor<4x4x16xf32>) -> tensor<4x16x4xf32>
  %kt = tcc.reshape %kt3 : (tensor<4x16x4xf32>) -> tensor<2x2x16x4xf32>
  %c = tcc.constant dense<5.000000e-01> : tensor<f32>
  %qs = tcc.mul %q, %c : (tensor<2x2x4x16xf32>, tensor<f32>) -> tensor<2x2x4x16xf32>
  %ks = tcc.mul %kt, %c : (tensor<2x2x16x4xf32>, tensor<f32>) -> tensor<2x2x16x4xf32>
  %s = tcc.matmul %qs, %ks : (tensor<2x2x4x16xf32>, tensor<2x2x16x4xf32>) -> tensor<2x2x4x4xf32>
  %mask = tcc.constant dense<[[[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, 0.0, -3.40282347E+38], [0.0, 0.0, 0.0, 0.0]]], [[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, 0.0, -3.40282347E+38], [0.0, 0.0, 0.0, 0.0]]]]> : tensor<2x1x4x4xf32>
  %m = tcc.add %s, %mask : (tensor<2x2x4x4xf32>, tensor<2x1x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = tcc.softmax %m {axis = 3 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %nan = tcc.cmp ne, %p, %p : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xi1>
  %zero = tcc.constant dense<0.000000e+00> : tensor<f32>
  %g = tcc.where %nan, %zero, %p : (tensor<2x2x4x4xi1>, tensor<f32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %o = tcc.matmul %g, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32>
  return %o : tensor<2x2x4x16xf32>
}
