// RUN: %not %kiln-opt %s --pass=verify 2>&1 | %FileCheck %s
// The verifier reports shape and type errors at the op's source location, in user terms.

func.func @bad(%p: !kiln.ptr<f32>, %q: !kiln.ptr<f16>, %a: tensor<16x8xf16>, %b: tensor<4x16xf16>, %acc: tensor<16x16xf32>, %x: tensor<4x8xf32>) attributes {kiln.kernel} {
  // CHECK: k.kiln:10:5: error: dot: inner dimensions differ: a is [16,8], b is [4,16]
  %d = "kiln.dot"(%a, %b, %acc) : (tensor<16x8xf16>, tensor<4x16xf16>, tensor<16x16xf32>) -> tensor<16x16xf32> loc("k.kiln":10:5)
  %ps = "kiln.splat"(%p) : (!kiln.ptr<f32>) -> tensor<32x!kiln.ptr<f32>>
  %m = arith.constant dense<true> : tensor<64xi1>
  %o = arith.constant dense<0.0> : tensor<32xf32>
  // CHECK: k.kiln:11:7: error: load: mask shape [64] does not match pointer shape [32]
  %l = "kiln.load"(%ps, %m, %o) : (tensor<32x!kiln.ptr<f32>>, tensor<64xi1>, tensor<32xf32>) -> tensor<32xf32> loc("k.kiln":11:7)
  // CHECK: k.kiln:12:3: error: reduction: axis 2 is out of range for a 2-D tile
  %r = "kiln.reduce"(%x) {kind = "sum", axis = 2 : i32} : (tensor<4x8xf32>) -> tensor<4xf32> loc("k.kiln":12:3)
  // CHECK: k.kiln:13:9: error: arange: end (4) must be greater than start (4)
  %e = "kiln.range"() {start = 4 : i32, end = 4 : i32} : () -> tensor<1xi32> loc("k.kiln":13:9)
  // CHECK: k.kiln:14:2: error: broadcast: shape [4,8] cannot be broadcast to [8,8]
  %bc = "kiln.broadcast"(%x) : (tensor<4x8xf32>) -> tensor<8x8xf32> loc("k.kiln":14:2)
  %fo = arith.constant dense<1.0> : tensor<32xf32>
  // CHECK: k.kiln:15:4: error: pointer arithmetic: offsets must be i32 or i64
  %ap = "kiln.addptr"(%ps, %fo) : (tensor<32x!kiln.ptr<f32>>, tensor<32xf32>) -> tensor<32x!kiln.ptr<f32>> loc("k.kiln":15:4)
  %qs = "kiln.splat"(%q) : (!kiln.ptr<f16>) -> tensor<32x!kiln.ptr<f16>>
  %m32 = arith.constant dense<true> : tensor<32xi1>
  // CHECK: k.kiln:16:6: error: load: loaded value element type f32 does not match the pointer's element type f16
  %l2 = "kiln.load"(%qs, %m32, %o) : (tensor<32x!kiln.ptr<f16>>, tensor<32xi1>, tensor<32xf32>) -> tensor<32xf32> loc("k.kiln":16:6)
  // CHECK: k.kiln:17:1: error: program_id: axis must be 0, 1 or 2 (got 3)
  %pid = "kiln.program_id"() {axis = 3 : i32} : () -> i32 loc("k.kiln":17:1)
  // CHECK: k.kiln:18:1: error: expand_dims: axis 3 is out of range for a 2-D tile
  %ed = "kiln.expand_dims"(%x) {axis = 3 : i32} : (tensor<4x8xf32>) -> tensor<4x8x1xf32> loc("k.kiln":18:1)
  // CHECK: k.kiln:19:3: error: reduction: an i1 tile is reduced in i32: widen it first
  %rb = "kiln.reduce"(%m32) {kind = "sum", axis = 0 : i32} : (tensor<32xi1>) -> i1 loc("k.kiln":19:3)
  return
}
