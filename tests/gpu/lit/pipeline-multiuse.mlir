// RUN: %kiln-opt %s --pass=kiln-gpu-layouts --pass=kiln-gpu-pipeline --pass=kiln-gpu-smem-alloc | FileCheck %s
// A loaded tile x that feeds two dots (the FA2 backward's Q in dK/dV: B of S = A x^T through a
// trans view, and B of O += S x as it is) is staged once: one ring for x, one async_copy of it an
// iteration (after the one wait and barrier), and both converts read the same slot, the view's
// as local_load {transpose}; no kiln.trans is left in the loop.  A 1-D load in the same loop
// (lse-like: its user is no operand convert) stays a kiln.load.

// CHECK-LABEL: func.func @k_multiuse
// CHECK: %[[A:.*]] = "kiln.local_alloc"() {offset = 0 : i32, stride = 8192 : i32} : () -> memref<2x64x32xf16, {kind = "shared", maxPhase = 4 : i32, order = array<i32: 1, 0>
// CHECK-NEXT: %[[X:.*]] = "kiln.local_alloc"() {offset = 4096 : i32, stride = 8192 : i32} : () -> memref<2x64x32xf16, {kind = "shared", maxPhase = 4 : i32, order = array<i32: 1, 0>
// CHECK-NOT: "kiln.local_alloc"
// CHECK: "kiln.async_copy"(%[[A]],
// CHECK-NEXT: "kiln.async_copy"(%[[X]],
// CHECK: scf.for {{.*}} iter_args({{.*}}, %[[RD:.*]] = %{{.*}}, %[[WR:.*]] = %{{.*}})
// CHECK-NOT: "kiln.trans"
// CHECK: "kiln.load"({{.*}}) : (tensor<64x!kiln.ptr<f32>
// CHECK-NOT: "kiln.trans"
// CHECK: "kiln.async_wait"() {pending = 0 : i32}
// CHECK-NEXT: "kiln.barrier"
// CHECK-NOT: "kiln.async_wait"
// CHECK-NOT: "kiln.barrier"
// CHECK: "kiln.async_copy"(%[[A]], %[[WR]],
// CHECK-NEXT: "kiln.async_copy"(%[[X]], %[[WR]],
// CHECK-NOT: "kiln.async_copy"
// CHECK: "kiln.async_commit"
// CHECK-NOT: "kiln.async_
// CHECK-NOT: "kiln.barrier"
// CHECK: "kiln.local_load"(%[[A]], %[[RD]]) : {{.*}} -> tensor<64x32xf16, {kWidth = 2 : i32, kind = "dot_op", opIdx = 0
// CHECK-NEXT: "kiln.local_load"(%[[X]], %[[RD]]) {transpose} : (memref<2x64x32xf16, {{.*}} -> tensor<32x64xf16, {kWidth = 2 : i32, kind = "dot_op", opIdx = 1
// CHECK-NEXT: "kiln.dot"
// CHECK-NOT: "kiln.async_
// CHECK-NOT: "kiln.barrier"
// CHECK-NOT: "kiln.load"
// CHECK: "kiln.local_load"(%[[X]], %[[RD]]) : (memref<2x64x32xf16, {{.*}} -> tensor<64x32xf16, {kWidth = 2 : i32, kind = "dot_op", opIdx = 1
// CHECK-NEXT: "kiln.dot"
// CHECK-NOT: "kiln.async_
// CHECK: scf.yield
// CHECK: "kiln.async_wait"() {pending = 0 : i32}
module {
  func.func @k_multiuse(%a: !kiln.ptr<f16>, %b: !kiln.ptr<f16>, %l: !kiln.ptr<f32>, %c: !kiln.ptr<f32>, %k: i32) attributes {kiln.kernel, kiln.num_stages = 2 : i32, kiln.num_warps = 4 : i32} {
    %c0 = arith.constant 0 : i32
    %c32 = arith.constant 32 : i32
    %z = arith.constant dense<0.0> : tensor<64x64xf32>
    %zo = arith.constant dense<0.0> : tensor<64x32xf32>
    %ma = arith.constant dense<true> : tensor<64x32xi1>
    %oa = arith.constant dense<0.0> : tensor<64x32xf16>
    %ra = "kiln.range"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
    %ra2 = "kiln.expand_dims"(%ra) {axis = 1 : i32} : (tensor<64xi32>) -> tensor<64x1xi32>
    %s1024 = arith.constant dense<1024> : tensor<64x1xi32>
    %ras = arith.muli %ra2, %s1024 : tensor<64x1xi32>
    %rab = "kiln.broadcast"(%ras) : (tensor<64x1xi32>) -> tensor<64x32xi32>
    %pa0 = "kiln.splat"(%a) : (!kiln.ptr<f16>) -> tensor<64x32x!kiln.ptr<f16>>
    %pa = "kiln.addptr"(%pa0, %rab) : (tensor<64x32x!kiln.ptr<f16>>, tensor<64x32xi32>) -> tensor<64x32x!kiln.ptr<f16>>
    %pb0 = "kiln.splat"(%b) : (!kiln.ptr<f16>) -> tensor<64x32x!kiln.ptr<f16>>
    %pb = "kiln.addptr"(%pb0, %rab) : (tensor<64x32x!kiln.ptr<f16>>, tensor<64x32xi32>) -> tensor<64x32x!kiln.ptr<f16>>
    %pl0 = "kiln.splat"(%l) : (!kiln.ptr<f32>) -> tensor<64x!kiln.ptr<f32>>
    %ml = arith.constant dense<true> : tensor<64xi1>
    %ol = arith.constant dense<0.0> : tensor<64xf32>
    %acc = scf.for %i = %c0 to %k step %c32 iter_args(%x = %zo) -> (tensor<64x32xf32>) : i32 {
      %isa = "kiln.splat"(%i) : (i32) -> tensor<32xi32>
      %rka = "kiln.range"() {start = 0 : i32, end = 32 : i32} : () -> tensor<32xi32>
      %ka = arith.addi %isa, %rka : tensor<32xi32>
      %ka2 = "kiln.expand_dims"(%ka) {axis = 0 : i32} : (tensor<32xi32>) -> tensor<1x32xi32>
      %kab = "kiln.broadcast"(%ka2) : (tensor<1x32xi32>) -> tensor<64x32xi32>
      %pai = "kiln.addptr"(%pa, %kab) : (tensor<64x32x!kiln.ptr<f16>>, tensor<64x32xi32>) -> tensor<64x32x!kiln.ptr<f16>>
      %ta = "kiln.load"(%pai, %ma, %oa) : (tensor<64x32x!kiln.ptr<f16>>, tensor<64x32xi1>, tensor<64x32xf16>) -> tensor<64x32xf16>
      %pbi = "kiln.addptr"(%pb, %kab) : (tensor<64x32x!kiln.ptr<f16>>, tensor<64x32xi32>) -> tensor<64x32x!kiln.ptr<f16>>
      %tb = "kiln.load"(%pbi, %ma, %oa) : (tensor<64x32x!kiln.ptr<f16>>, tensor<64x32xi1>, tensor<64x32xf16>) -> tensor<64x32xf16>
      %isl = "kiln.splat"(%i) : (i32) -> tensor<64xi32>
      %rl = arith.addi %isl, %ra : tensor<64xi32>
      %pli = "kiln.addptr"(%pl0, %rl) : (tensor<64x!kiln.ptr<f32>>, tensor<64xi32>) -> tensor<64x!kiln.ptr<f32>>
      %tl = "kiln.load"(%pli, %ml, %ol) : (tensor<64x!kiln.ptr<f32>>, tensor<64xi1>, tensor<64xf32>) -> tensor<64xf32>
      %tl2 = "kiln.expand_dims"(%tl) {axis = 0 : i32} : (tensor<64xf32>) -> tensor<1x64xf32>
      %tlb = "kiln.broadcast"(%tl2) : (tensor<1x64xf32>) -> tensor<64x64xf32>
      %tbt = "kiln.trans"(%tb) : (tensor<64x32xf16>) -> tensor<32x64xf16>
      %s = "kiln.dot"(%ta, %tbt, %z) : (tensor<64x32xf16>, tensor<32x64xf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
      %sl = arith.subf %s, %tlb : tensor<64x64xf32>
      %sh = arith.truncf %sl : tensor<64x64xf32> to tensor<64x64xf16>
      %o = "kiln.dot"(%sh, %tb, %x) : (tensor<64x64xf16>, tensor<64x32xf16>, tensor<64x32xf32>) -> tensor<64x32xf32>
      scf.yield %o : tensor<64x32xf32>
    }
    %cm = "kiln.range"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
    %cm2 = "kiln.expand_dims"(%cm) {axis = 1 : i32} : (tensor<64xi32>) -> tensor<64x1xi32>
    %s32 = arith.constant dense<32> : tensor<64x1xi32>
    %cms = arith.muli %cm2, %s32 : tensor<64x1xi32>
    %cmb = "kiln.broadcast"(%cms) : (tensor<64x1xi32>) -> tensor<64x32xi32>
    %cn = "kiln.range"() {start = 0 : i32, end = 32 : i32} : () -> tensor<32xi32>
    %cn2 = "kiln.expand_dims"(%cn) {axis = 0 : i32} : (tensor<32xi32>) -> tensor<1x32xi32>
    %cnb = "kiln.broadcast"(%cn2) : (tensor<1x32xi32>) -> tensor<64x32xi32>
    %co = arith.addi %cmb, %cnb : tensor<64x32xi32>
    %pc0 = "kiln.splat"(%c) : (!kiln.ptr<f32>) -> tensor<64x32x!kiln.ptr<f32>>
    %pc = "kiln.addptr"(%pc0, %co) : (tensor<64x32x!kiln.ptr<f32>>, tensor<64x32xi32>) -> tensor<64x32x!kiln.ptr<f32>>
    %mc = arith.constant dense<true> : tensor<64x32xi1>
    "kiln.store"(%pc, %acc, %mc) : (tensor<64x32x!kiln.ptr<f32>>, tensor<64x32xf32>, tensor<64x32xi1>) -> ()
    return
  }
}
