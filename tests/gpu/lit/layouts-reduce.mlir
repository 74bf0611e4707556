// RUN: %kiln-opt %s --pass=kiln-gpu-layouts | FileCheck %s
// A row reduction of a 2-D tile yields slice{dim = 1} of the tile's layout; the column tile
// feeding the 2-D pointer arithmetic through expand_dims takes slice{dim = 0} of the same layout;
// the rows are contiguous along dim 1, so lanes run along dim 1 (coalescing), but with an unknown
// row stride no row start is known to be aligned, so nothing is vectorized.  The reduced column
// is stored in a blocked layout of its own: one convert_layout.

// CHECK-LABEL: func.func @rowsum
// CHECK: "kiln.range"{{.*}} -> tensor<64xi32, {dim = 0 : i32, kind = "slice", parent = {kind = "blocked", order = array<i32: 1, 0>, sizePerThread = array<i32: 1, 1>
// CHECK: "kiln.load"{{.*}} -> tensor<4x64xf32, {kind = "blocked", order = array<i32: 1, 0>, sizePerThread = array<i32: 1, 1>, threadsPerWarp = array<i32: 1, 32>, warpsPerCTA = array<i32: 2, 1>}>
// CHECK: "kiln.reduce"{{.*}} -> tensor<4xf32, {dim = 1 : i32, kind = "slice"
// CHECK: "kiln.convert_layout"
// CHECK-SAME: -> tensor<4xf32, {kind = "blocked"
// CHECK: "kiln.store"
module {
  func.func @rowsum(%x: !kiln.ptr<f32>, %out: !kiln.ptr<f32>, %stride: i32) attributes {kiln.kernel, kiln.num_stages = 2 : i32, kiln.num_warps = 2 : i32} {
    %rows = "kiln.range"() {start = 0 : i32, end = 4 : i32} : () -> tensor<4xi32>
    %cols = "kiln.range"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
    %r2 = "kiln.expand_dims"(%rows) {axis = 1 : i32} : (tensor<4xi32>) -> tensor<4x1xi32>
    %ss = "kiln.splat"(%stride) : (i32) -> tensor<4x1xi32>
    %ro = arith.muli %r2, %ss : tensor<4x1xi32>
    %rb = "kiln.broadcast"(%ro) : (tensor<4x1xi32>) -> tensor<4x64xi32>
    %c2 = "kiln.expand_dims"(%cols) {axis = 0 : i32} : (tensor<64xi32>) -> tensor<1x64xi32>
    %cb = "kiln.broadcast"(%c2) : (tensor<1x64xi32>) -> tensor<4x64xi32>
    %off = arith.addi %rb, %cb : tensor<4x64xi32>
    %xp = "kiln.splat"(%x) : (!kiln.ptr<f32>) -> tensor<4x64x!kiln.ptr<f32>>
    %xa = "kiln.addptr"(%xp, %off) : (tensor<4x64x!kiln.ptr<f32>>, tensor<4x64xi32>) -> tensor<4x64x!kiln.ptr<f32>>
    %m = arith.constant dense<true> : tensor<4x64xi1>
    %z = arith.constant dense<0.0> : tensor<4x64xf32>
    %v = "kiln.load"(%xa, %m, %z) : (tensor<4x64x!kiln.ptr<f32>>, tensor<4x64xi1>, tensor<4x64xf32>) -> tensor<4x64xf32>
    %s = "kiln.reduce"(%v) {kind = "sum", axis = 1 : i32} : (tensor<4x64xf32>) -> tensor<4xf32>
    %op = "kiln.splat"(%out) : (!kiln.ptr<f32>) -> tensor<4x!kiln.ptr<f32>>
    %oa = "kiln.addptr"(%op, %rows) : (tensor<4x!kiln.ptr<f32>>, tensor<4xi32>) -> tensor<4x!kiln.ptr<f32>>
    %m1 = arith.constant dense<true> : tensor<4xi1>
    "kiln.store"(%oa, %s, %m1) : (tensor<4x!kiln.ptr<f32>>, tensor<4xf32>, tensor<4xi1>) -> ()
    return
  }
}
