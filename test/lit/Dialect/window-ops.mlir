// The convolution and pooling ops and their backward ops print in a form
// that parses back to the same IR, attributes at their defaults elided.
// RUN: tcc-opt %s | tcc-opt | FileCheck %s

// CHECK-LABEL: func.func @window_ops
func.func @window_ops(%x: tensor<2x4x7x6xf32>, %w: tensor<6x2x3x2xf32>, %b: tensor<6xf32>,
                      %gy: tensor<2x6x4x5xf32>, %gp: tensor<2x4x3x3xf32>) {
  // CHECK: tcc.conv %{{.*}}, %{{.*}}, %{{.*}} {dilation_w = 2 : i64, group = 2 : i64, pad_bottom = 2 : i64, pad_right = 1 : i64, pad_top = 1 : i64, stride_h = 2 : i64} : (tensor<2x4x7x6xf32>, tensor<6x2x3x2xf32>, tensor<6xf32>) -> tensor<2x6x4x5xf32>
  %0 = tcc.conv %x, %w, %b {stride_h = 2 : i64, pad_top = 1 : i64, pad_bottom = 2 : i64, pad_right = 1 : i64, dilation_w = 2 : i64, group = 2 : i64} : (tensor<2x4x7x6xf32>, tensor<6x2x3x2xf32>, tensor<6xf32>) -> tensor<2x6x4x5xf32>
  // CHECK: tcc.conv_grad %{{.*}}, %{{.*}}, %{{.*}} {dilation_w = 2 : i64, group = 2 : i64, pad_bottom = 2 : i64, pad_right = 1 : i64, pad_top = 1 : i64, stride_h = 2 : i64} : (tensor<2x4x7x6xf32>, tensor<6x2x3x2xf32>, tensor<2x6x4x5xf32>) -> (tensor<2x4x7x6xf32>, tensor<6x2x3x2xf32>, tensor<6xf32>)
  %1:3 = tcc.conv_grad %x, %w, %gy {stride_h = 2 : i64, pad_top = 1 : i64, pad_bottom = 2 : i64, pad_right = 1 : i64, dilation_w = 2 : i64, group = 2 : i64} : (tensor<2x4x7x6xf32>, tensor<6x2x3x2xf32>, tensor<2x6x4x5xf32>) -> (tensor<2x4x7x6xf32>, tensor<6x2x3x2xf32>, tensor<6xf32>)
  // CHECK: tcc.max_pool %{{.*}} {kernel_h = 3 : i64, kernel_w = 2 : i64, stride_h = 2 : i64, stride_w = 2 : i64} : (tensor<2x4x7x6xf32>) -> tensor<2x4x3x3xf32>
  %2 = tcc.max_pool %x {kernel_h = 3 : i64, kernel_w = 2 : i64, stride_h = 2 : i64, stride_w = 2 : i64} : (tensor<2x4x7x6xf32>) -> tensor<2x4x3x3xf32>
  // CHECK: tcc.max_pool_grad %{{.*}}, %{{.*}} {kernel_h = 3 : i64, kernel_w = 2 : i64, stride_h = 2 : i64, stride_w = 2 : i64} : (tensor<2x4x7x6xf32>, tensor<2x4x3x3xf32>) -> tensor<2x4x7x6xf32>
  %3 = tcc.max_pool_grad %x, %gp {kernel_h = 3 : i64, kernel_w = 2 : i64, stride_h = 2 : i64, stride_w = 2 : i64} : (tensor<2x4x7x6xf32>, tensor<2x4x3x3xf32>) -> tensor<2x4x7x6xf32>
  // CHECK: tcc.avg_pool %{{.*}} {count_include_pad = true, kernel_h = 3 : i64, kernel_w = 2 : i64, stride_h = 2 : i64, stride_w = 2 : i64} : (tensor<2x4x7x6xf32>) -> tensor<2x4x3x3xf32>
  %4 = tcc.avg_pool %x {kernel_h = 3 : i64, kernel_w = 2 : i64, stride_h = 2 : i64, stride_w = 2 : i64, count_include_pad = true} : (tensor<2x4x7x6xf32>) -> tensor<2x4x3x3xf32>
  // CHECK: tcc.avg_pool_grad %{{.*}}, %{{.*}} {kernel_h = 3 : i64, kernel_w = 2 : i64, stride_h = 2 : i64, stride_w = 2 : i64} : (tensor<2x4x7x6xf32>, tensor<2x4x3x3xf32>) -> tensor<2x4x7x6xf32>
  %5 = tcc.avg_pool_grad %x, %gp {kernel_h = 3 : i64, kernel_w = 2 : i64, stride_h = 2 : i64, stride_w = 2 : i64} : (tensor<2x4x7x6xf32>, tensor<2x4x3x3xf32>) -> tensor<2x4x7x6xf32>
  return
}
