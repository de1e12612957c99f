// RUN: tcc-opt --tcc-fold-attention-layout %s | FileCheck %s
// RUN: tcc-opt --tcc-fold-attention-layout %s | tcc-opt | FileCheck %s

// A fused q/k/v projection's output split in three, each reshaped and
// transposed to heads first; the result transposed back and reshaped for
// the output projection. Attention reads the projection's rows at columns
// 0, 32 and 64 and writes the projection's input: no split, no transpose.
// CHECK-LABEL: func.func @fused_qkv
// CHECK-SAME: (%[[QKV:[^:]*]]: tensor<2x8x96xf32>, %[[W:[^:]*]]: tensor<32x32xf32>)
// CHECK-NEXT: %[[A:.*]] = tcc.attention %[[QKV]], %[[QKV]], %[[QKV]] {causal = true, head_dim = 16 : i64, heads = 2 : i64, key_column = 32 : i64, scale = 2.500000e-01 : f64, value_column = 64 : i64} : (tensor<2x8x96xf32>, tensor<2x8x96xf32>, tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
// CHECK-NEXT: %[[Z:.*]] = tcc.matmul %[[A]], %[[W]]
// CHECK-NEXT: return %[[Z]]
func.func @fused_qkv(%qkv: tensor<2x8x96xf32>, %w: tensor<32x32xf32>) -> tensor<2x8x32xf32> {
  %s:3 = tcc.split %qkv {axis = 2 : i64, sizes = array<i64: 32, 32, 32>} : (tensor<2x8x96xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
  %q4 = tcc.reshape %s#0 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %k4 = tcc.reshape %s#1 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %v4 = tcc.reshape %s#2 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %q = tcc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %k = tcc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %v = tcc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %a = tcc.attention %q, %k, %v {causal = true, scale = 2.500000e-01 : f64} : (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x2x8x16xf32>
  %o = tcc.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x8x16xf32>) -> tensor<2x8x2x16xf32>
  %y = tcc.reshape %o : (tensor<2x8x2x16xf32>) -> tensor<2x8x32xf32>
  %z = tcc.matmul %y, %w : (tensor<2x8x32xf32>, tensor<32x32xf32>) -> tensor<2x8x32xf32>
  return %z : tensor<2x8x32xf32>
}

// The backward: the result gradient's head split and the gradients'
// merges fold too, and the concat of the three gradients (the fused
// projection's gradient) is written by one tcc.attention_qkv_grad, each
// gradient at its operand's columns of the q/k/v tensor's layout.
// CHECK-LABEL: func.func @grad
// CHECK-SAME: (%[[QKV:[^:]*]]: tensor<2x8x96xf32>, %[[G:[^:]*]]: tensor<2x8x32xf32>)
// CHECK-NEXT: %[[D:.*]] = tcc.attention_qkv_grad %[[QKV]], %[[G]] {causal = true, head_dim = 16 : i64, heads = 2 : i64, key_column = 32 : i64, scale = 2.500000e-01 : f64, value_column = 64 : i64} : (tensor<2x8x96xf32>, tensor<2x8x32xf32>) -> tensor<2x8x96xf32>
// CHECK-NEXT: return %[[D]]
func.func @grad(%qkv: tensor<2x8x96xf32>, %g: tensor<2x8x32xf32>) -> tensor<2x8x96xf32> {
  %s:3 = tcc.split %qkv {axis = 2 : i64, sizes = array<i64: 32, 32, 32>} : (tensor<2x8x96xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
  %q4 = tcc.reshape %s#0 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %k4 = tcc.reshape %s#1 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %v4 = tcc.reshape %s#2 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %q = tcc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %k = tcc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %v = tcc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %g4 = tcc.reshape %g : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %gt = tcc.transpose %g4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %dq, %dk, %dv = tcc.attention_grad %q, %k, %v, %gt {causal = true, scale = 2.500000e-01 : f64} : (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>)
  %tq = tcc.transpose %dq {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x8x16xf32>) -> tensor<2x8x2x16xf32>
  %tk = tcc.transpose %dk {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x8x16xf32>) -> tensor<2x8x2x16xf32>
  %tv = tcc.transpose %dv {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x8x16xf32>) -> tensor<2x8x2x16xf32>
  %rq = tcc.reshape %tq : (tensor<2x8x2x16xf32>) -> tensor<2x8x32xf32>
  %rk = tcc.reshape %tk : (tensor<2x8x2x16xf32>) -> tensor<2x8x32xf32>
  %rv = tcc.reshape %tv : (tensor<2x8x2x16xf32>) -> tensor<2x8x32xf32>
  %c = tcc.concat %rq, %rk, %rv {axis = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x96xf32>
  return %c : tensor<2x8x96xf32>
}

// A concat of the gradients in another order than their columns (or with a
// gradient read elsewhere too) is no q/k/v tensor's gradient: it stays.
// CHECK-LABEL: func.func @grad_other_order
// CHECK: tcc.attention_grad
// CHECK-NEXT: tcc.concat
// CHECK-LABEL: func.func @grad_read_elsewhere
// CHECK: tcc.attention_grad
// CHECK-NEXT: tcc.concat
func.func @grad_other_order(%qkv: tensor<2x8x96xf32>, %g: tensor<2x8x32xf32>) -> tensor<2x8x96xf32> {
  %s:3 = tcc.split %qkv {axis = 2 : i64, sizes = array<i64: 32, 32, 32>} : (tensor<2x8x96xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
  %q4 = tcc.reshape %s#0 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %k4 = tcc.reshape %s#1 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %v4 = tcc.reshape %s#2 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %q = tcc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %k = tcc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %v = tcc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %g4 = tcc.reshape %g : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %gt = tcc.transpose %g4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %dq, %dk, %dv = tcc.attention_grad %q, %k, %v, %gt {scale = 2.500000e-01 : f64} : (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>)
  %tq = tcc.transpose %dq {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x8x16xf32>) -> tensor<2x8x2x16xf32>
  %tk = tcc.transpose %dk {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x8x16xf32>) -> tensor<2x8x2x16xf32>
  %tv = tcc.transpose %dv {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x8x16xf32>) -> tensor<2x8x2x16xf32>
  %rq = tcc.reshape %tq : (tensor<2x8x2x16xf32>) -> tensor<2x8x32xf32>
  %rk = tcc.reshape %tk : (tensor<2x8x2x16xf32>) -> tensor<2x8x32xf32>
  %rv = tcc.reshape %tv : (tensor<2x8x2x16xf32>) -> tensor<2x8x32xf32>
  %c = tcc.concat %rk, %rq, %rv {axis = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x96xf32>
  return %c : tensor<2x8x96xf32>
}
func.func @grad_read_elsewhere(%qkv: tensor<2x8x96xf32>, %g: tensor<2x8x32xf32>) -> (tensor<2x8x96xf32>, tensor<2x8x32xf32>) {
  %s:3 = tcc.split %qkv {axis = 2 : i64, sizes = array<i64: 32, 32, 32>} : (tensor<2x8x96xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
  %q4 = tcc.reshape %s#0 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %k4 = tcc.reshape %s#1 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %v4 = tcc.reshape %s#2 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %q = tcc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %k = tcc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %v = tcc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %g4 = tcc.reshape %g : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %gt = tcc.transpose %g4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %dq, %dk, %dv = tcc.attention_grad %q, %k, %v, %gt {scale = 2.500000e-01 : f64} : (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>)
  %tq = tcc.transpose %dq {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x8x16xf32>) -> tensor<2x8x2x16xf32>
  %tk = tcc.transpose %dk {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x8x16xf32>) -> tensor<2x8x2x16xf32>
  %tv = tcc.transpose %dv {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x8x16xf32>) -> tensor<2x8x2x16xf32>
  %rq = tcc.reshape %tq : (tensor<2x8x2x16xf32>) -> tensor<2x8x32xf32>
  %rk = tcc.reshape %tk : (tensor<2x8x2x16xf32>) -> tensor<2x8x32xf32>
  %rv = tcc.reshape %tv : (tensor<2x8x2x16xf32>) -> tensor<2x8x32xf32>
  %c = tcc.concat %rq, %rk, %rv {axis = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x96xf32>
  return %c, %rk : tensor<2x8x96xf32>, tensor<2x8x32xf32>
}

// Separate projections (BERT): each operand is its own rows at column 0.
// The key mask and the packed-token marking carry over; a result swap read
// as [B, T, H, D] becomes a view of the rows.
// CHECK-LABEL: func.func @separate
// CHECK-SAME: (%[[XQ:[^:]*]]: tensor<2x8x32xf32>, %[[XK:[^:]*]]: tensor<2x8x32xf32>, %[[XV:[^:]*]]: tensor<2x8x32xf32>, %[[M:[^:]*]]: tensor<2x8xi1>)
// CHECK-NEXT: %[[A:.*]] = tcc.attention %[[XQ]], %[[XK]], %[[XV]], %[[M]] {head_dim = 16 : i64, heads = 2 : i64, scale = 2.500000e-01 : f64, tcc.token_rows = 16 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8xi1>) -> tensor<2x8x32xf32>
// CHECK-NEXT: %[[R:.*]] = tcc.reshape %[[A]] : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
// CHECK-NEXT: return %[[R]]
func.func @separate(%xq: tensor<2x8x32xf32>, %xk: tensor<2x8x32xf32>, %xv: tensor<2x8x32xf32>, %m: tensor<2x8xi1>) -> tensor<2x8x2x16xf32> {
  %q4 = tcc.reshape %xq : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %k4 = tcc.reshape %xk : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %v4 = tcc.reshape %xv : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %q = tcc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %k = tcc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %v = tcc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %a = tcc.attention %q, %k, %v, %m {scale = 2.500000e-01 : f64, tcc.token_rows = 16 : i64} : (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x8xi1>) -> tensor<2x2x8x16xf32>
  %o = tcc.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x8x16xf32>) -> tensor<2x8x2x16xf32>
  return %o : tensor<2x8x2x16xf32>
}

// A unit-stride slice of the last dim gives its start as the column.
// CHECK-LABEL: func.func @sliced
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x8x64xf32>)
// CHECK-NEXT: tcc.attention %[[X]], %[[X]], %[[X]] {head_dim = 16 : i64, heads = 2 : i64, key_column = 32 : i64, query_column = 32 : i64, scale = 2.500000e-01 : f64, value_column = 32 : i64}
func.func @sliced(%x: tensor<2x8x64xf32>) -> tensor<2x8x2x16xf32> {
  %s = tcc.slice %x {starts = array<i64: 0, 0, 32>, limits = array<i64: 2, 8, 64>, strides = array<i64: 1, 1, 1>} : (tensor<2x8x64xf32>) -> tensor<2x8x32xf32>
  %q4 = tcc.reshape %s : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %q = tcc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %a = tcc.attention %q, %q, %q {scale = 2.500000e-01 : f64} : (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x2x8x16xf32>
  %o = tcc.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x8x16xf32>) -> tensor<2x8x2x16xf32>
  return %o : tensor<2x8x2x16xf32>
}

// Left heads first: the result is read as [B, H, T, D].
// CHECK-LABEL: func.func @result_read_heads_first
// CHECK-NEXT: tcc.transpose
// CHECK-NEXT: tcc.attention %{{.*}} {scale = 2.500000e-01 : f64} :
func.func @result_read_heads_first(%q: tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32> {
  %t = tcc.transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %a = tcc.attention %t, %t, %t {scale = 2.500000e-01 : f64} : (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x2x8x16xf32>
  return %a : tensor<2x2x8x16xf32>
}

// Left heads first: an operand is not a head swap of token rows.
// CHECK-LABEL: func.func @operand_heads_first
// CHECK-NEXT: tcc.attention %{{.*}} {scale = 2.500000e-01 : f64} :
// CHECK-NEXT: tcc.transpose
func.func @operand_heads_first(%q: tensor<2x2x8x16xf32>) -> tensor<2x8x2x16xf32> {
  %a = tcc.attention %q, %q, %q {scale = 2.500000e-01 : f64} : (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x2x8x16xf32>
  %o = tcc.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x8x16xf32>) -> tensor<2x8x2x16xf32>
  return %o : tensor<2x8x2x16xf32>
}

// Left heads first: token rows need the values' head dim to be the keys'.
// CHECK-LABEL: func.func @value_dim_differs
// CHECK-NEXT: tcc.transpose
// CHECK-NEXT: tcc.transpose
// CHECK-NEXT: tcc.attention %{{.*}} {scale = 2.500000e-01 : f64} :
func.func @value_dim_differs(%q: tensor<2x8x2x16xf32>, %v: tensor<2x8x2x8xf32>) -> tensor<2x8x2x8xf32> {
  %t = tcc.transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %tv = tcc.transpose %v {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x8xf32>) -> tensor<2x2x8x8xf32>
  %a = tcc.attention %t, %t, %tv {scale = 2.500000e-01 : f64} : (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
  %o = tcc.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x8x8xf32>) -> tensor<2x8x2x8xf32>
  return %o : tensor<2x8x2x8xf32>
}
