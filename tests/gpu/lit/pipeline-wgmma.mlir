// RUN: %kiln-opt %s --pass=kiln-gpu-layouts --pass=kiln-gpu-pipeline --pass=kiln-gpu-smem-alloc | FileCheck %s
// wgmma (docs/gpu-lowering.md, "wgmma on sm_90"): the K loop of pipeline-ring.mlir with
// kiln.wgmma = 1 on sm_90.  The layout pass gives the dot wgmma's accumulator layout (warps
// along rows: warpsPerCTA [4, 1]) and marks it; the pipeliner stages both operands in rings
// whose encoding says wgmma = 1.  With 4 stages the last wgmma group stays in flight: the dot
// is marked kiln.wgmma_pending, the copies run 2 iterations ahead (the write slot starts at 2
// and steps like the read slot, the wait keeps 1 group pending), and after the loop
// kiln.wgmma_wait {pending = 0} retires the last group before anything reads the result.  With
// 3 stages the schedule is the plain one (the write slot is the previous read slot).  On sm_80
// the config's wgmma is ignored: mma layout [2, 2], no wgmma buffers.

// CHECK-LABEL: func.func @wgmma4
// CHECK: "kiln.local_alloc"() {offset = 0 : i32, stride = 8192 : i32} : () -> memref<4x64x32xf16, {kind = "shared", maxPhase = 4 : i32, order = array<i32: 1, 0>, perPhase = 2 : i32, vec = 8 : i32, wgmma = 1 : i32}>
// CHECK-NEXT: "kiln.local_alloc"() {offset = 4096 : i32, stride = 8192 : i32} : () -> memref<4x32x64xf16, {kind = "shared", maxPhase = 8 : i32, order = array<i32: 1, 0>, perPhase = 1 : i32, vec = 8 : i32, wgmma = 1 : i32}>
// CHECK: %[[LOOP:.*]]:3 = scf.for %{{.*}} = {{.*}} iter_args(%{{.*}} = %{{.*}}, %[[CUR:.*]] = %{{.*}}, %[[WR:.*]] = %c2_i32{{.*}})
// CHECK: "kiln.async_wait"() {pending = 1 : i32}
// CHECK: %[[D:.*]] = "kiln.dot"{{.*}} {kiln.wgmma_dot, kiln.wgmma_pending}
// CHECK-SAME: warpsPerCTA = array<i32: 4, 1>
// CHECK: %[[WINC:.*]] = arith.addi %[[WR]], %{{.*}} : i32
// CHECK: %[[WNEXT:.*]] = arith.select %{{.*}}, %{{.*}}, %[[WINC]] : i32
// CHECK-NEXT: scf.yield %[[D]], %{{.*}}, %[[WNEXT]] :
// CHECK: %[[W:.*]] = "kiln.wgmma_wait"(%[[LOOP]]#0) {pending = 0 : i32}
// CHECK-NEXT: "kiln.async_wait"() {pending = 0 : i32}
// CHECK: "kiln.convert_layout"(%[[W]])

// CHECK-LABEL: func.func @wgmma3
// CHECK: wgmma = 1 : i32}>
// CHECK: "kiln.async_wait"() {pending = 1 : i32}
// CHECK: "kiln.dot"{{.*}} {kiln.wgmma_dot}
// CHECK: scf.yield %{{.*}}, %{{.*}}, %[[CUR3:.*]] :
// CHECK-NOT: kiln.wgmma_wait
// CHECK-LABEL: func.func @sm80
// CHECK-NOT: wgmma = 1 : i32}>
// CHECK-NOT: kiln.wgmma_dot
// CHECK: "kiln.dot"({{.*}}) : {{.*}}warpsPerCTA = array<i32: 2, 2>
// CHECK-NOT: kiln.wgmma_wait
module {
  func.func @wgmma4(%a: !kiln.ptr<f16>, %b: !kiln.ptr<f16>, %c: !kiln.ptr<f32>, %k: i32) attributes {kiln.kernel, kiln.num_stages = 4 : i32, kiln.num_warps = 4 : i32, kiln.sm = 90 : i32, kiln.wgmma = 1 : i32} {
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
  func.func @wgmma3(%a: !kiln.ptr<f16>, %b: !kiln.ptr<f16>, %c: !kiln.ptr<f32>, %k: i32) attributes {kiln.kernel, kiln.num_stages = 3 : i32, kiln.num_warps = 4 : i32, kiln.sm = 90 : i32, kiln.wgmma = 1 : i32} {
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
  func.func @sm80(%a: !kiln.ptr<f16>, %b: !kiln.ptr<f16>, %c: !kiln.ptr<f32>, %k: i32) attributes {kiln.kernel, kiln.num_stages = 4 : i32, kiln.num_warps = 4 : i32, kiln.sm = 80 : i32, kiln.wgmma = 1 : i32} {
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
