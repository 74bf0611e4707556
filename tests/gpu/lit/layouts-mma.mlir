// RUN: %kiln-opt %s --pass=kiln-gpu-layouts | FileCheck %s
// A 64x32 f16 dot with an f32 accumulator over 4 warps runs on tensor cores: the accumulator
// (here a loop-carried constant) and the dot take the mma layout, the 4 warps along the rows
// (rows per warp stay >= columns per warp: 16x32 each, one ldmatrix.x4 of A feeds 4 mma); a and b are
// converted to the dot-operand layouts of that mma parent (opIdx 0 and 1, two f16 per
// register); the cast after the loop stays in the mma layout and only the narrowed f16 tile is
// converted to the store's blocked layout.

// CHECK-LABEL: func.func @mma_dot
// CHECK: arith.constant dense<0.000000e+00> : tensor<64x32xf32, {instrShape = array<i32: 16, 8>, kind = "mma", versionMajor = 2 : i32, warpsPerCTA = array<i32: 4, 1>}>
// CHECK: scf.for
// CHECK-SAME: -> (tensor<64x32xf32, {instrShape = array<i32: 16, 8>, kind = "mma", versionMajor = 2 : i32, warpsPerCTA = array<i32: 4, 1>}>)
// CHECK: "kiln.convert_layout"
// CHECK-SAME: -> tensor<64x16xf16, {kWidth = 2 : i32, kind = "dot_op", opIdx = 0 : i32, parent = {instrShape = array<i32: 16, 8>, kind = "mma", versionMajor = 2 : i32, warpsPerCTA = array<i32: 4, 1>}}>
// CHECK: "kiln.convert_layout"
// CHECK-SAME: -> tensor<16x32xf16, {kWidth = 2 : i32, kind = "dot_op", opIdx = 1 : i32, parent = {instrShape = array<i32: 16, 8>, kind = "mma", versionMajor = 2 : i32, warpsPerCTA = array<i32: 4, 1>}}>
// CHECK: "kiln.dot"
// CHECK-SAME: -> tensor<64x32xf32, {instrShape = array<i32: 16, 8>, kind = "mma", versionMajor = 2 : i32, warpsPerCTA = array<i32: 4, 1>}>
// CHECK: arith.truncf
// CHECK-SAME: to tensor<64x32xf16, {instrShape = array<i32: 16, 8>, kind = "mma"
// CHECK: "kiln.convert_layout"
// CHECK-SAME: -> tensor<64x32xf16, {kind = "blocked"
// CHECK: "kiln.store"
// CHECK-NOT: "kiln.convert_layout"
module {
  func.func @mma_dot(%x: f16, %y: f16, %out: !kiln.ptr<f16>, %n: i32) attributes {kiln.kernel, kiln.num_stages = 2 : i32, kiln.num_warps = 4 : i32} {
    %z = arith.constant dense<0.0> : tensor<64x32xf32>
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %acc = scf.for %i = %c0 to %n step %c1 iter_args(%a0 = %z) -> (tensor<64x32xf32>) : i32 {
      %a = "kiln.splat"(%x) : (f16) -> tensor<64x16xf16>
      %b = "kiln.splat"(%y) : (f16) -> tensor<16x32xf16>
      %d = "kiln.dot"(%a, %b, %a0) : (tensor<64x16xf16>, tensor<16x32xf16>, tensor<64x32xf32>) -> tensor<64x32xf32>
      scf.yield %d : tensor<64x32xf32>
    }
    %h = arith.truncf %acc : tensor<64x32xf32> to tensor<64x32xf16>
    %rows = "kiln.range"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
    %cols = "kiln.range"() {start = 0 : i32, end = 32 : i32} : () -> tensor<32xi32>
    %r2 = "kiln.expand_dims"(%rows) {axis = 1 : i32} : (tensor<64xi32>) -> tensor<64x1xi32>
    %c32 = arith.constant dense<32> : tensor<64x1xi32>
    %ro = arith.muli %r2, %c32 : tensor<64x1xi32>
    %rb = "kiln.broadcast"(%ro) : (tensor<64x1xi32>) -> tensor<64x32xi32>
    %c2 = "kiln.expand_dims"(%cols) {axis = 0 : i32} : (tensor<32xi32>) -> tensor<1x32xi32>
    %cb = "kiln.broadcast"(%c2) : (tensor<1x32xi32>) -> tensor<64x32xi32>
    %off = arith.addi %rb, %cb : tensor<64x32xi32>
    %op = "kiln.splat"(%out) : (!kiln.ptr<f16>) -> tensor<64x32x!kiln.ptr<f16>>
    %oa = "kiln.addptr"(%op, %off) : (tensor<64x32x!kiln.ptr<f16>>, tensor<64x32xi32>) -> tensor<64x32x!kiln.ptr<f16>>
    %m = arith.constant dense<true> : tensor<64x32xi1>
    "kiln.store"(%oa, %h, %m) : (tensor<64x32x!kiln.ptr<f16>>, tensor<64x32xf16>, tensor<64x32xi1>) -> ()
    return
  }
}
