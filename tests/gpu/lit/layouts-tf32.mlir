// RUN: %kiln-opt %s --pass=kiln-gpu-layouts | FileCheck %s
// An f32 dot with the kiln.tf32 flag takes the mma layout (k blocks of 8: dot_op kWidth 1, one
// tf32 a register); the same dot without the flag stays on the FMA path (blocked layouts, no
// dot_op); a tf32 dot too small for mma.sync (8 rows) stays there too, its operands rounded to
// TF32 by elementwise ops (add 0x1000 to the bits, clear the 13 low ones, NaN kept) and the flag
// dropped.

// CHECK-LABEL: func.func @tf32_mma
// CHECK: "kiln.convert_layout"
// CHECK-SAME: -> tensor<64x16xf32, {kWidth = 1 : i32, kind = "dot_op", opIdx = 0 : i32
// CHECK: "kiln.convert_layout"
// CHECK-SAME: -> tensor<16x32xf32, {kWidth = 1 : i32, kind = "dot_op", opIdx = 1 : i32
// CHECK: "kiln.dot"
// CHECK-SAME: kiln.tf32
// CHECK-SAME: -> tensor<64x32xf32, {instrShape = array<i32: 16, 8>, kind = "mma"
// CHECK-LABEL: func.func @ieee_fma
// CHECK-NOT: dot_op
// CHECK: "kiln.dot"
// CHECK-NOT: kiln.tf32
// CHECK-SAME: kind = "blocked"
// CHECK-LABEL: func.func @tf32_fma
// CHECK-NOT: dot_op
// CHECK: arith.bitcast {{.*}} to tensor<8x16xi32
// CHECK: arith.addi
// CHECK: arith.andi
// CHECK: arith.cmpf uno
// CHECK: arith.select
// CHECK: arith.bitcast {{.*}} to tensor<16x32xi32
// CHECK: "kiln.dot"
// CHECK-NOT: kiln.tf32
// CHECK-SAME: kind = "blocked"
module {
  func.func @tf32_mma(%x: f32, %y: f32, %out: !kiln.ptr<f32>) attributes {kiln.kernel, kiln.num_stages = 1 : i32, kiln.num_warps = 4 : i32} {
    %z = arith.constant dense<0.0> : tensor<64x32xf32>
    %a = "kiln.splat"(%x) : (f32) -> tensor<64x16xf32>
    %b = "kiln.splat"(%y) : (f32) -> tensor<16x32xf32>
    %d = "kiln.dot"(%a, %b, %z) {kiln.tf32} : (tensor<64x16xf32>, tensor<16x32xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
    %p = "kiln.splat"(%out) : (!kiln.ptr<f32>) -> tensor<64x32x!kiln.ptr<f32>>
    %m = arith.constant dense<true> : tensor<64x32xi1>
    "kiln.store"(%p, %d, %m) : (tensor<64x32x!kiln.ptr<f32>>, tensor<64x32xf32>, tensor<64x32xi1>) -> ()
    return
  }
  func.func @ieee_fma(%x: f32, %y: f32, %out: !kiln.ptr<f32>) attributes {kiln.kernel, kiln.num_stages = 1 : i32, kiln.num_warps = 4 : i32} {
    %z = arith.constant dense<0.0> : tensor<64x32xf32>
    %a = "kiln.splat"(%x) : (f32) -> tensor<64x16xf32>
    %b = "kiln.splat"(%y) : (f32) -> tensor<16x32xf32>
    %d = "kiln.dot"(%a, %b, %z) : (tensor<64x16xf32>, tensor<16x32xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
    %p = "kiln.splat"(%out) : (!kiln.ptr<f32>) -> tensor<64x32x!kiln.ptr<f32>>
    %m = arith.constant dense<true> : tensor<64x32xi1>
    "kiln.store"(%p, %d, %m) : (tensor<64x32x!kiln.ptr<f32>>, tensor<64x32xf32>, tensor<64x32xi1>) -> ()
    return
  }
  func.func @tf32_fma(%x: f32, %y: f32, %out: !kiln.ptr<f32>) attributes {kiln.kernel, kiln.num_stages = 1 : i32, kiln.num_warps = 4 : i32} {
    %z = arith.constant dense<0.0> : tensor<8x32xf32>
    %a = "kiln.splat"(%x) : (f32) -> tensor<8x16xf32>
    %b = "kiln.splat"(%y) : (f32) -> tensor<16x32xf32>
    %d = "kiln.dot"(%a, %b, %z) {kiln.tf32} : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
    %p = "kiln.splat"(%out) : (!kiln.ptr<f32>) -> tensor<8x32x!kiln.ptr<f32>>
    %m = arith.constant dense<true> : tensor<8x32xi1>
    "kiln.store"(%p, %d, %m) : (tensor<8x32x!kiln.ptr<f32>>, tensor<8x32xf32>, tensor<8x32xi1>) -> ()
    return
  }
}
