// RUN: %kiln-opt %s --pass=kiln-gpu-layouts | FileCheck %s
// The FA2 layout rules on an online-softmax loop over 4 warps (64x64 tiles): S = a b is reduced
// along rows and feeds the next dot as A, so its warps split along rows only ([4, 1]; a plain
// 64x64 dot would take [2, 2]); the row max is a slice of that mma layout, carried by the loop
// in it (the store after the loop converts once); exp(S - m) stays mma and its f16 cast is
// converted straight from mma to the A operand (no blocked tile, no shared memory in between);
// O += P V has the same rows-only mma, its accumulator loop-carried in it; the loop-invariant a
// is converted to its operand layout before the loop.

// CHECK-LABEL: func.func @online_softmax
// CHECK: "kiln.convert_layout"(%{{.*}}) : (tensor<64x64xf16, {kind = "blocked"{{.*}}) -> tensor<64x64xf16, {kWidth = 2 : i32, kind = "dot_op", opIdx = 0 : i32, parent = {instrShape = array<i32: 16, 8>, kind = "mma", versionMajor = 2 : i32, warpsPerCTA = array<i32: 4, 1>}}>
// CHECK: scf.for
// CHECK-SAME: -> (tensor<64xf32, {dim = 1 : i32, kind = "slice", parent = {instrShape = array<i32: 16, 8>, kind = "mma", versionMajor = 2 : i32, warpsPerCTA = array<i32: 4, 1>}}>, tensor<64x64xf32, {instrShape = array<i32: 16, 8>, kind = "mma", versionMajor = 2 : i32, warpsPerCTA = array<i32: 4, 1>}>)
// CHECK: "kiln.dot"
// CHECK-SAME: -> tensor<64x64xf32, {instrShape = array<i32: 16, 8>, kind = "mma", versionMajor = 2 : i32, warpsPerCTA = array<i32: 4, 1>}>
// CHECK: "kiln.reduce"
// CHECK-SAME: -> tensor<64xf32, {dim = 1 : i32, kind = "slice", parent = {instrShape = array<i32: 16, 8>, kind = "mma"
// CHECK: "kiln.expand_dims"
// CHECK-SAME: -> tensor<64x1xf32, {instrShape = array<i32: 16, 8>, kind = "mma"
// CHECK: math.exp
// CHECK-SAME: tensor<64x64xf32, {instrShape = array<i32: 16, 8>, kind = "mma"
// CHECK: arith.truncf
// CHECK-SAME: to tensor<64x64xf16, {instrShape = array<i32: 16, 8>, kind = "mma"
// CHECK: "kiln.convert_layout"
// CHECK-SAME: (tensor<64x64xf16, {instrShape = array<i32: 16, 8>, kind = "mma", versionMajor = 2 : i32, warpsPerCTA = array<i32: 4, 1>}>) -> tensor<64x64xf16, {kWidth = 2 : i32, kind = "dot_op", opIdx = 0 : i32
// CHECK: "kiln.dot"
// CHECK-SAME: -> tensor<64x64xf32, {instrShape = array<i32: 16, 8>, kind = "mma", versionMajor = 2 : i32, warpsPerCTA = array<i32: 4, 1>}>
// CHECK: scf.yield
// CHECK: "kiln.convert_layout"
// CHECK-SAME: -> tensor<64xf32, {kind = "blocked"
// CHECK: "kiln.store"
module {
  func.func @online_softmax(%x: !kiln.ptr<f16>, %y: f16, %out: !kiln.ptr<f32>, %n: i32) attributes {kiln.kernel, kiln.num_stages = 2 : i32, kiln.num_warps = 4 : i32} {
    %r = "kiln.range"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
    %r2 = "kiln.expand_dims"(%r) {axis = 1 : i32} : (tensor<64xi32>) -> tensor<64x1xi32>
    %c64 = arith.constant dense<64> : tensor<64x1xi32>
    %ro = arith.muli %r2, %c64 : tensor<64x1xi32>
    %rb = "kiln.broadcast"(%ro) : (tensor<64x1xi32>) -> tensor<64x64xi32>
    %cc = "kiln.expand_dims"(%r) {axis = 0 : i32} : (tensor<64xi32>) -> tensor<1x64xi32>
    %cb = "kiln.broadcast"(%cc) : (tensor<1x64xi32>) -> tensor<64x64xi32>
    %off = arith.addi %rb, %cb : tensor<64x64xi32>
    %xp = "kiln.splat"(%x) : (!kiln.ptr<f16>) -> tensor<64x64x!kiln.ptr<f16>>
    %xa = "kiln.addptr"(%xp, %off) : (tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi32>) -> tensor<64x64x!kiln.ptr<f16>>
    %t = arith.constant dense<true> : tensor<64x64xi1>
    %zero16 = arith.constant dense<0.0> : tensor<64x64xf16>
    %a = "kiln.load"(%xa, %t, %zero16) : (tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi1>, tensor<64x64xf16>) -> tensor<64x64xf16>
    %m0 = arith.constant dense<-3.0e38> : tensor<64xf32>
    %o0 = arith.constant dense<0.0> : tensor<64x64xf32>
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %res:2 = scf.for %i = %c0 to %n step %c1 iter_args(%m = %m0, %o = %o0) -> (tensor<64xf32>, tensor<64x64xf32>) : i32 {
      %b = "kiln.splat"(%y) : (f16) -> tensor<64x64xf16>
      %s = "kiln.dot"(%a, %b, %o0) : (tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
      %mx = "kiln.reduce"(%s) {axis = 1 : i32, kind = "max"} : (tensor<64x64xf32>) -> tensor<64xf32>
      %mn = arith.maximumf %m, %mx : tensor<64xf32>
      %me = "kiln.expand_dims"(%mn) {axis = 1 : i32} : (tensor<64xf32>) -> tensor<64x1xf32>
      %mb = "kiln.broadcast"(%me) : (tensor<64x1xf32>) -> tensor<64x64xf32>
      %d = arith.subf %s, %mb : tensor<64x64xf32>
      %p = math.exp %d : tensor<64x64xf32>
      %ph = arith.truncf %p : tensor<64x64xf32> to tensor<64x64xf16>
      %v = "kiln.splat"(%y) : (f16) -> tensor<64x64xf16>
      %o1 = "kiln.dot"(%ph, %v, %o) : (tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
      scf.yield %mn, %o1 : tensor<64xf32>, tensor<64x64xf32>
    }
    %op = "kiln.splat"(%out) : (!kiln.ptr<f32>) -> tensor<64x!kiln.ptr<f32>>
    %oa = "kiln.addptr"(%op, %r) : (tensor<64x!kiln.ptr<f32>>, tensor<64xi32>) -> tensor<64x!kiln.ptr<f32>>
    %tm = arith.constant dense<true> : tensor<64xi1>
    "kiln.store"(%oa, %res#0, %tm) : (tensor<64x!kiln.ptr<f32>>, tensor<64xf32>, tensor<64xi1>) -> ()
    return
  }
}
