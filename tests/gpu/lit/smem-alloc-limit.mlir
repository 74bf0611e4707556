// RUN: %not %kiln-opt %s --pass=kiln-gpu-layouts --pass=kiln-gpu-pipeline --pass=kiln-gpu-smem-alloc 2>&1 | FileCheck %s
// A ring that does not fit the kernel's shared memory (kiln.smem_limit, written by the driver
// from the target) is an error at the loop, naming the stages and bytes: 4 stages of 8192 bytes
// (A 64x32 + B 32x64 f16) against 24576.  Never a silently shallower pipeline.

// CHECK: error: limit: shared memory: the 4-stage pipeline of this loop needs 4 x 8192 = 32768 bytes, more than the 24576 a program may have on this target (fewer num_stages or smaller tiles)
module {
  func.func @too_deep(%a: !kiln.ptr<f16>, %b: !kiln.ptr<f16>, %c: !kiln.ptr<f32>, %k: i32) attributes {kiln.kernel, kiln.num_stages = 4 : i32, kiln.smem_limit = 24576 : i32, kiln.num_warps = 4 : i32} {
    %c0 = arith.constant 0 : i32
    %c32 = arith.constant 32 : i32
    %z = arith.constant dense<0.0> : tensor<64x64xf32>
    %ma = arith.constant dense<true> : tensor<64x32xi1>
    %oa = arith.constant dense<0.0> : tensor<64x32xf16>
    %mb = arith.constant dense<true> : tensor<32x64xi1>
    %ob = arith.constant dense<0.0> : tensor<32x64xf16>
    %ra = "kiln.range"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
    %ra2 = "kiln.expand_dims"(%ra) {axis = 1 : i32} : (tensor<64xi32>) -> tensor<64x1xi32>
    %s1024 = arith.constant dense<1024> : tensor<64x1xi32>
    %ras = arith.muli %ra2, %s1024 : tensor<64x1xi32>
    %rab = "kiln.broadcast"(%ras) : (tensor<64x1xi32>) -> tensor<64x32xi32>
    %pa0 = "kiln.splat"(%a) : (!kiln.ptr<f16>) -> tensor<64x32x!kiln.ptr<f16>>
    %pa = "kiln.addptr"(%pa0, %rab) : (tensor<64x32x!kiln.ptr<f16>>, tensor<64x32xi32>) -> tensor<64x32x!kiln.ptr<f16>>
    %rn = "kiln.range"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
    %rn2 = "kiln.expand_dims"(%rn) {axis = 0 : i32} : (tensor<64xi32>) -> tensor<1x64xi32>
    %rnb = "kiln.broadcast"(%rn2) : (tensor<1x64xi32>) -> tensor<32x64xi32>
    %pb0 = "kiln.splat"(%b) : (!kiln.ptr<f16>) -> tensor<32x64x!kiln.ptr<f16>>
    %pb = "kiln.addptr"(%pb0, %rnb) : (tensor<32x64x!kiln.ptr<f16>>, tensor<32x64xi32>) -> tensor<32x64x!kiln.ptr<f16>>
    %acc0 = scf.for %i0 = %c0 to %k step %c32 iter_args(%x0 = %z) -> (tensor<64x64xf32>) : i32 {
      %isa0 = "kiln.splat"(%i0) : (i32) -> tensor<32xi32>
      %rka0 = "kiln.range"() {start = 0 : i32, end = 32 : i32} : () -> tensor<32xi32>
      %ka0 = arith.addi %isa0, %rka0 : tensor<32xi32>
      %ka20 = "kiln.expand_dims"(%ka0) {axis = 0 : i32} : (tensor<32xi32>) -> tensor<1x32xi32>
      %kab0 = "kiln.broadcast"(%ka20) : (tensor<1x32xi32>) -> tensor<64x32xi32>
      %pai0 = "kiln.addptr"(%pa, %kab0) : (tensor<64x32x!kiln.ptr<f16>>, tensor<64x32xi32>) -> tensor<64x32x!kiln.ptr<f16>>
      %ta0 = "kiln.load"(%pai0, %ma, %oa) : (tensor<64x32x!kiln.ptr<f16>>, tensor<64x32xi1>, tensor<64x32xf16>) -> tensor<64x32xf16>
      %isb0 = "kiln.splat"(%i0) : (i32) -> tensor<32xi32>
      %rkb0 = "kiln.range"() {start = 0 : i32, end = 32 : i32} : () -> tensor<32xi32>
      %kb0 = arith.addi %isb0, %rkb0 : tensor<32xi32>
      %kb20 = "kiln.expand_dims"(%kb0) {axis = 1 : i32} : (tensor<32xi32>) -> tensor<32x1xi32>
      %s640 = arith.constant dense<64> : tensor<32x1xi32>
      %kr0 = arith.muli %kb20, %s640 : tensor<32x1xi32>
      %krb0 = "kiln.broadcast"(%kr0) : (tensor<32x1xi32>) -> tensor<32x64xi32>
      %pbi0 = "kiln.addptr"(%pb, %krb0) : (tensor<32x64x!kiln.ptr<f16>>, tensor<32x64xi32>) -> tensor<32x64x!kiln.ptr<f16>>
      %tb0 = "kiln.load"(%pbi0, %mb, %ob) : (tensor<32x64x!kiln.ptr<f16>>, tensor<32x64xi1>, tensor<32x64xf16>) -> tensor<32x64xf16>
      %d0 = "kiln.dot"(%ta0, %tb0, %x0) : (tensor<64x32xf16>, tensor<32x64xf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
      scf.yield %d0 : tensor<64x64xf32>
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
    "kiln.store"(%pc, %acc0, %mc) : (tensor<64x64x!kiln.ptr<f32>>, tensor<64x64xf32>, tensor<64x64xi1>) -> ()
    return
  }
}
