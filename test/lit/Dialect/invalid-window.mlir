// Type-inference errors of the convolution and pooling ops
// (TccWindowOps.cpp), one case per message.
// RUN: tcc-opt %s -split-input-file -verify-diagnostics

func.func @conv_rank(%x: tensor<2x3x5xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{input must be [N, C, H, W] and weight [M, C/group, KH, KW], got 'tensor<2x3x5xf32>' and 'tensor<4x3x3xf32>'}}
  %0 = tcc.conv %x, %w : (tensor<2x3x5xf32>, tensor<4x3x3xf32>) -> tensor<2x4x3xf32>
  return
}

// -----

func.func @conv_group(%x: tensor<1x4x5x5xf32>, %w: tensor<6x3x3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{group 2 does not divide input channels 4 and output channels 6 with weight 'tensor<6x3x3x3xf32>'}}
  %0 = tcc.conv %x, %w {group = 2 : i64} : (tensor<1x4x5x5xf32>, tensor<6x3x3x3xf32>) -> tensor<1x6x3x3xf32>
  return
}

// -----

func.func @conv_bias(%x: tensor<1x3x5x5xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{bias must be [4] of 'f32', got 'tensor<3xf32>'}}
  %0 = tcc.conv %x, %w, %b : (tensor<1x3x5x5xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>) -> tensor<1x4x3x3xf32>
  return
}

// -----

func.func @conv_does_not_fit(%x: tensor<1x3x2x2xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{the 3x3 window (dilation 1x1) does not fit the padded 2x2 input}}
  %0 = tcc.conv %x, %w : (tensor<1x3x2x2xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x1x1xf32>
  return
}

// -----

func.func @pool_stride(%x: tensor<1x3x4x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{strides must be positive}}
  %0 = tcc.max_pool %x {kernel_h = 2 : i64, kernel_w = 2 : i64, stride_w = 0 : i64} : (tensor<1x3x4x4xf32>) -> tensor<1x3x3x3xf32>
  return
}

// -----

func.func @pool_grad_shape(%x: tensor<1x3x4x4xf32>, %g: tensor<1x3x2x2xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{result_grad must be 'tensor<1x3x3x3xf32>', got 'tensor<1x3x2x2xf32>'}}
  %0 = tcc.avg_pool_grad %x, %g {kernel_h = 2 : i64, kernel_w = 2 : i64} : (tensor<1x3x4x4xf32>, tensor<1x3x2x2xf32>) -> tensor<1x3x4x4xf32>
  return
}
