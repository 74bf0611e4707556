// RUN: %kiln-opt %s --pass=kiln-gpu-layouts --pass=kiln-gpu-pipeline --pass=kiln-gpu-smem-alloc | FileCheck %s
// A B operand that is trans(x) of a loaded tile x (K of S = Q K^T) is pipelined too: x (64x32,
// row-major) gets a ring staged as it is (order [1, 0]), and the trans and its convert become
// one local_load {transpose}, which reads the operand B = x^T (ldmatrix without .trans, as the
// operand staging of a folded trans does); no kiln.trans is left in the loop.

// CHECK-LABEL: func.func @k_trans
// CHECK: %[[A:.*]] = "kiln.local_alloc"() {offset = 0 : i32, stride = 8192 : i32} : () -> memref<2x64x32xf16, {kind = "shared", maxPhase = 4 : i32, order = array<i32: 1, 0>
// CHECK-NEXT: %[[X:.*]] = "kiln.local_alloc"() {offset = 4096 : i32, stride = 8192 : i32} : () -> memref<2x64x32xf16, {kind = "shared", maxPhase = 4 : i32, order = array<i32: 1, 0>
// CHECK: scf.for
// CHECK-NOT: "kiln.trans"
// CHECK: "kiln.async_wait"() {pending = 0 : i32}
// CHECK: "kiln.async_copy"(%[[X]],
// CHECK: "kiln.local_load"(%[[A]], {{.*}} -> tensor<64x32xf16, {kWidth = 2 : i32, kind = "dot_op", opIdx = 0
// CHECK-NEXT: "kiln.local_load"(%[[X]], {{.*}}) {transpose} : (memref<2x64x32xf16, {{.*}} -> tensor<32x64xf16, {kWidth = 2 : i32, kind = "dot_op", opIdx = 1
// CHECK-NEXT: "kiln.dot"
module {
  func.func @k_trans(%a: !kiln.ptr<f16>, %b: !kiln.ptr<f16>, %c: !kiln.ptr<f32>, %k: i32) attributes {kiln.kernel, kiln.num_stages = 2 : i32, kiln.num_warps = 4 : i32} {
    %c0 = arith.constant 0 : i32
    %c32 = arith.constant 32 : i32
    %z = arith.constant dense<0.0> : tensor<64x64xf32>
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
    %acc = scf.for %i = %c0 to %k step %c32 iter_args(%x = %z) -> (tensor<64x64xf32>) : i32 {
      %isa = "kiln.splat"(%i) : (i32) -> tensor<32xi32>
      %rka = "kiln.range"() {start = 0 : i32, end = 32 : i32} : () -> tensor<32xi32>
      %ka = arith.addi %isa, %rka : tensor<32xi32>
      %ka2 = "kiln.expand_dims"(%ka) {axis = 0 : i32} : (tensor<32xi32>) -> tensor<1x32xi32>
      %kab = "kiln.broadcast"(%ka2) : (tensor<1x32xi32>) -> tensor<64x32xi32>
      %pai = "kiln.addptr"(%pa, %kab) : (tensor<64x32x!kiln.ptr<f16>>, tensor<64x32xi32>) -> tensor<64x32x!kiln.ptr<f16>>
      %ta = "kiln.load"(%pai, %ma, %oa) : (tensor<64x32x!kiln.ptr<f16>>, tensor<64x32xi1>, tensor<64x32xf16>) -> tensor<64x32xf16>
      %pbi = "kiln.addptr"(%pb, %kab) : (tensor<64x32x!kiln.ptr<f16>>, tensor<64x32xi32>) -> tensor<64x32x!kiln.ptr<f16>>
      %tb = "kiln.load"(%pbi, %ma, %oa) : (tensor<64x32x!kiln.ptr<f16>>, tensor<64x32xi1>, tensor<64x32xf16>) -> tensor<64x32xf16>
      %tbt = "kiln.trans"(%tb) : (tensor<64x32xf16>) -> tensor<32x64xf16>
      %d = "kiln.dot"(%ta, %tbt, %x) : (tensor<64x32xf16>, tensor<32x64xf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
      scf.yield %d : tensor<64x64xf32>
    }
    %cm = "kiln.range"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
    %cm2 = "kiln.expand_dims"(%cm) {axis = 1 : i32} : (tensor<64xi32>) -> tensor<64x1xi32>
    %s64 = arith.constant dense<64> : tensor<64x1xi32>
    %cms = arith.muli %cm2, %s64 : tensor<64x1xi32>
    %cmb = "kiln.broadcast"(%cms) : (tensor<64x1xi32>) -> tensor<64x64xi32>
    %cn = "kiln.range"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
    %cn2 = "kiln.expand_dims"(%cn) {axis = 0 : i32} : (tensor<64xi32>) -> tensor<1x64xi32>
    %cnb = "kiln.broadcast"(%cn2) : (tensor<1x64xi32>) -> tensor<64x64xi32>
    %co = arith.addi %cmb, %cnb : tensor<64x64xi32>
    %pc0 = "kiln.splat"(%c) : (!kiln.ptr<f32>) -> tensor<64x64x!kiln.ptr<f32>>
    %pc = "kiln.addptr"(%pc0, %co) : (tensor<64x64x!kiln.ptr<f32>>, tensor<64x64xi32>) -> tensor<64x64x!kiln.ptr<f32>>
    %mc = arith.constant dense<true> : tensor<64x64xi1>
    "kiln.store"(%pc, %acc, %mc) : (tensor<64x64x!kiln.ptr<f32>>, tensor<64x64xf32>, tensor<64x64xi1>) -> ()
    return
  }
}
