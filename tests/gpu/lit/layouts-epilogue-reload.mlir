// RUN: %kiln-opt %s --pass=kiln-gpu-layouts | FileCheck %s
// An epilogue's operand tile (a GEMM's residual: loaded after the K loop and added to the
// accumulator) is loaded again in the accumulator's mma layout, so that no convert_layout (a
// trip through shared memory between two barriers, the whole tile held beside the
// accumulators) goes between the load and the add: the one convert left is the store's.  The
// same load inside the loop (@in_loop) keeps its coalesced blocked layout and a convert.

// CHECK-LABEL: func.func @epilogue
// CHECK: scf.for
// CHECK: "kiln.dot"
// CHECK: "kiln.load"
// CHECK-SAME: -> tensor<64x32xf16, {instrShape = array<i32: 16, 8>, kind = "mma"
// CHECK-NOT: "kiln.convert_layout"
// CHECK: arith.extf
// CHECK-NOT: "kiln.convert_layout"
// CHECK: arith.addf
// CHECK: arith.truncf
// CHECK: "kiln.convert_layout"
// CHECK-SAME: -> tensor<64x32xf16, {kind = "blocked"
// CHECK: "kiln.store"
// CHECK-NOT: "kiln.convert_layout"

// CHECK-LABEL: func.func @in_loop
// CHECK: scf.for
// CHECK: "kiln.load"
// CHECK-SAME: -> tensor<64x32xf16, {kind = "blocked"
// CHECK: "kiln.convert_layout"
// CHECK-SAME: kind = "mma"
module {
  func.func @epilogue(%x: f16, %y: f16, %res: !kiln.ptr<f16>, %out: !kiln.ptr<f16>, %n: i32) attributes {kiln.kernel, kiln.num_stages = 2 : i32, kiln.num_warps = 4 : i32} {
    %z = arith.constant dense<0.0> : tensor<64x32xf32>
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %acc = scf.for %i = %c0 to %n step %c1 iter_args(%a0 = %z) -> (tensor<64x32xf32>) : i32 {
      %a = "kiln.splat"(%x) : (f16) -> tensor<64x16xf16>
      %b = "kiln.splat"(%y) : (f16) -> tensor<16x32xf16>
      %d = "kiln.dot"(%a, %b, %a0) : (tensor<64x16xf16>, tensor<16x32xf16>, tensor<64x32xf32>) -> tensor<64x32xf32>
      scf.yield %d : tensor<64x32xf32>
    }
    %rows = "kiln.range"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
    %cols = "kiln.range"() {start = 0 : i32, end = 32 : i32} : () -> tensor<32xi32>
    %r2 = "kiln.expand_dims"(%rows) {axis = 1 : i32} : (tensor<64xi32>) -> tensor<64x1xi32>
    %c32 = arith.constant dense<32> : tensor<64x1xi32>
    %ro = arith.muli %r2, %c32 : tensor<64x1xi32>
    %rb = "kiln.broadcast"(%ro) : (tensor<64x1xi32>) -> tensor<64x32xi32>
    %c2 = "kiln.expand_dims"(%cols) {axis = 0 : i32} : (tensor<32xi32>) -> tensor<1x32xi32>
    %cb = "kiln.broadcast"(%c2) : (tensor<1x32xi32>) -> tensor<64x32xi32>
    %off = arith.addi %rb, %cb : tensor<64x32xi32>
    %m = arith.constant dense<true> : tensor<64x32xi1>
    %zero = arith.constant dense<0.0> : tensor<64x32xf16>
    %rp = "kiln.splat"(%res) : (!kiln.ptr<f16>) -> tensor<64x32x!kiln.ptr<f16>>
    %ra = "kiln.addptr"(%rp, %off) : (tensor<64x32x!kiln.ptr<f16>>, tensor<64x32xi32>) -> tensor<64x32x!kiln.ptr<f16>>
    %r = "kiln.load"(%ra, %m, %zero) : (tensor<64x32x!kiln.ptr<f16>>, tensor<64x32xi1>, tensor<64x32xf16>) -> tensor<64x32xf16>
    %rf = arith.extf %r : tensor<64x32xf16> to tensor<64x32xf32>
    %s = arith.addf %acc, %rf : tensor<64x32xf32>
    %h = arith.truncf %s : tensor<64x32xf32> to tensor<64x32xf16>
    %op = "kiln.splat"(%out) : (!kiln.ptr<f16>) -> tensor<64x32x!kiln.ptr<f16>>
    %oa = "kiln.addptr"(%op, %off) : (tensor<64x32x!kiln.ptr<f16>>, tensor<64x32xi32>) -> tensor<64x32x!kiln.ptr<f16>>
    "kiln.store"(%oa, %h, %m) : (tensor<64x32x!kiln.ptr<f16>>, tensor<64x32xf16>, tensor<64x32xi1>) -> ()
    return
  }
  func.func @in_loop(%x: f16, %y: f16, %res: !kiln.ptr<f16>, %out: !kiln.ptr<f16>, %n: i32) attributes {kiln.kernel, kiln.num_stages = 2 : i32, kiln.num_warps = 4 : i32} {
    %z = arith.constant dense<0.0> : tensor<64x32xf32>
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %rows = "kiln.range"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
    %cols = "kiln.range"() {start = 0 : i32, end = 32 : i32} : () -> tensor<32xi32>
    %r2 = "kiln.expand_dims"(%rows) {axis = 1 : i32} : (tensor<64xi32>) -> tensor<64x1xi32>
    %c32 = arith.constant dense<32> : tensor<64x1xi32>
    %ro = arith.muli %r2, %c32 : tensor<64x1xi32>
    %rb = "kiln.broadcast"(%ro) : (tensor<64x1xi32>) -> tensor<64x32xi32>
    %c2 = "kiln.expand_dims"(%cols) {axis = 0 : i32} : (tensor<32xi32>) -> tensor<1x32xi32>
    %cb = "kiln.broadcast"(%c2) : (tensor<1x32xi32>) -> tensor<64x32xi32>
    %off = arith.addi %rb, %cb : tensor<64x32xi32>
    %m = arith.constant dense<true> : tensor<64x32xi1>
    %zero = arith.constant dense<0.0> : tensor<64x32xf16>
    %rp = "kiln.splat"(%res) : (!kiln.ptr<f16>) -> tensor<64x32x!kiln.ptr<f16>>
    %ra = "kiln.addptr"(%rp, %off) : (tensor<64x32x!kiln.ptr<f16>>, tensor<64x32xi32>) -> tensor<64x32x!kiln.ptr<f16>>
    %acc = scf.for %i = %c0 to %n step %c1 iter_args(%a0 = %z) -> (tensor<64x32xf32>) : i32 {
      %a = "kiln.splat"(%x) : (f16) -> tensor<64x16xf16>
      %b = "kiln.splat"(%y) : (f16) -> tensor<16x32xf16>
      %d = "kiln.dot"(%a, %b, %a0) : (tensor<64x16xf16>, tensor<16x32xf16>, tensor<64x32xf32>) -> tensor<64x32xf32>
      %r = "kiln.load"(%ra, %m, %zero) : (tensor<64x32x!kiln.ptr<f16>>, tensor<64x32xi1>, tensor<64x32xf16>) -> tensor<64x32xf16>
      %rf = arith.extf %r : tensor<64x32xf16> to tensor<64x32xf32>
      %s = arith.addf %d, %rf : tensor<64x32xf32>
      scf.yield %s : tensor<64x32xf32>
    }
    %h = arith.truncf %acc : tensor<64x32xf32> to tensor<64x32xf16>
    %op = "kiln.splat"(%out) : (!kiln.ptr<f16>) -> tensor<64x32x!kiln.ptr<f16>>
    %oa = "kiln.addptr"(%op, %off) : (tensor<64x32x!kiln.ptr<f16>>, tensor<64x32xi32>) -> tensor<64x32x!kiln.ptr<f16>>
    "kiln.store"(%oa, %h, %m) : (tensor<64x32x!kiln.ptr<f16>>, tensor<64x32xf16>, tensor<64x32xi1>) -> ()
    return
  }
}
