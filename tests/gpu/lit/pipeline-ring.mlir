// RUN: %kiln-opt %s --pass=kiln-gpu-layouts --pass=kiln-gpu-pipeline --pass=kiln-gpu-smem-alloc | FileCheck %s
// kiln-gpu-pipeline on a K loop whose A (64x32) and B (32x64) f16 tiles feed a tensor-core dot
// (3 stages, 4 warps, unit-stride rows: 16-byte vectors): each load becomes a ring of 3 shared
// buffers (kiln.local_alloc; row-major staging, the swizzle in the encoding), a barrier, the
// copies of iterations 0 and 1 into slots 0 and 1 under `iv < ub` with a commit each; in the
// body the slots are two counters the loop carries (no division or remainder): the read slot
// b(i) from 0, stepped and wrapped at 3 with a select, and the write slot from 2, the previous
// read slot; wait {pending = 1}, barrier, the copy of iteration i + 2 into the write slot,
// commit, and the loads and their converts replaced by local_load of slot b(i); after the loop
// wait {pending = 0} and a barrier.
// kiln-gpu-smem-alloc interleaves the ring (A at 0, B at 4096, 8192 bytes a stage) and puts the
// arena inside the loop after it (kiln.arena_offset); in @two_loops the rings of two loops one
// after the other are never live together, so both start at byte 0.

// CHECK-LABEL: func.func @ring
// CHECK-SAME: kiln.smem_buffers = 24576
// CHECK: %[[A:.*]] = "kiln.local_alloc"() {offset = 0 : i32, stride = 8192 : i32} : () -> memref<3x64x32xf16, {kind = "shared", maxPhase = 4 : i32, order = array<i32: 1, 0>, perPhase = 2 : i32, vec = 8 : i32}>
// CHECK-NEXT: %[[B:.*]] = "kiln.local_alloc"() {offset = 4096 : i32, stride = 8192 : i32} : () -> memref<3x32x64xf16, {kind = "shared", maxPhase = 8 : i32, order = array<i32: 1, 0>, perPhase = 1 : i32, vec = 8 : i32}>
// CHECK-NEXT: "kiln.barrier"
// CHECK: scf.if
// CHECK: "kiln.async_copy"(%[[A]], %[[S0:[^,]*]], {{.*}}) {vec = 8 : i32}
// CHECK-NEXT: "kiln.async_copy"(%[[B]], %[[S0]], {{.*}}) {vec = 8 : i32}
// CHECK: "kiln.async_commit"
// CHECK: scf.if
// CHECK: "kiln.async_copy"(%[[A]], %[[S1:[^,]*]],
// CHECK-NEXT: "kiln.async_copy"(%[[B]], %[[S1]],
// CHECK: "kiln.async_commit"
// CHECK-NOT: "kiln.async_copy"
// CHECK: %[[Z:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[TWO:.*]] = arith.constant 2 : i32
// CHECK-NEXT: %{{.*}}:3 = scf.for %{{.*}} = {{.*}} iter_args(%{{.*}} = %{{.*}}, %[[CUR:.*]] = %[[Z]], %[[WR:.*]] = %[[TWO]]) -> (tensor<64x64xf32, {{.*}}>, i32, i32) : i32 {
// CHECK-NOT: arith.divsi
// CHECK-NOT: arith.remsi
// CHECK-NOT: "kiln.load"
// CHECK: "kiln.async_wait"() {pending = 1 : i32}
// CHECK-NEXT: "kiln.barrier"
// CHECK: scf.if
// CHECK: "kiln.async_copy"(%[[A]], %[[WR]],
// CHECK-NEXT: "kiln.async_copy"(%[[B]], %[[WR]],
// CHECK: "kiln.async_commit"
// CHECK-NEXT: "kiln.local_load"(%[[A]], %[[CUR]]) {{.*}} -> tensor<64x32xf16, {kWidth = 2 : i32, kind = "dot_op", opIdx = 0
// CHECK-NEXT: "kiln.local_load"(%[[B]], %[[CUR]]) {{.*}} -> tensor<32x64xf16, {kWidth = 2 : i32, kind = "dot_op", opIdx = 1
// CHECK-NEXT: %[[D:.*]] = "kiln.dot"
// CHECK: %[[INC:.*]] = arith.addi %[[CUR]], %{{.*}} : i32
// CHECK: %[[WRAP:.*]] = arith.cmpi eq, %[[INC]], %{{.*}} : i32
// CHECK: %[[NEXT:.*]] = arith.select %[[WRAP]], %{{.*}}, %[[INC]] : i32
// CHECK-NEXT: scf.yield %[[D]], %[[NEXT]], %[[CUR]] :
// CHECK-NEXT: } {kiln.arena_offset = 24576 : i32}
// CHECK-NEXT: "kiln.async_wait"() {pending = 0 : i32}
// CHECK-NEXT: "kiln.barrier"
// CHECK-NOT: "kiln.convert_layout"{{.*}}dot_op

// CHECK-LABEL: func.func @two_loops
// CHECK: "kiln.local_alloc"() {offset = 0 : i32, stride = 8192 : i32}
// CHECK-NEXT: "kiln.local_alloc"() {offset = 4096 : i32, stride = 8192 : i32}
// CHECK: } {kiln.arena_offset = 24576 : i32}
// CHECK: "kiln.local_alloc"() {offset = 0 : i32, stride = 8192 : i32}
// CHECK-NEXT: "kiln.local_alloc"() {offset = 4096 : i32, stride = 8192 : i32}
// CHECK: } {kiln.arena_offset = 24576 : i32}
module {
  func.func @ring(%a: !kiln.ptr<f16>, %b: !kiln.ptr<f16>, %c: !kiln.ptr<f32>, %k: i32) attributes {kiln.kernel, kiln.num_stages = 3 : i32, kiln.num_warps = 4 : i32} {
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
  func.func @two_loops(%a: !kiln.ptr<f16>, %b: !kiln.ptr<f16>, %c: !kiln.ptr<f32>, %k: i32) attributes {kiln.kernel, kiln.num_stages = 3 : i32, kiln.num_warps = 4 : i32} {
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
    %acc1 = scf.for %i1 = %c0 to %k step %c32 iter_args(%x1 = %acc0) -> (tensor<64x64xf32>) : i32 {
      %isa1 = "kiln.splat"(%i1) : (i32) -> tensor<32xi32>
      %rka1 = "kiln.range"() {start = 0 : i32, end = 32 : i32} : () -> tensor<32xi32>
      %ka1 = arith.addi %isa1, %rka1 : tensor<32xi32>
      %ka21 = "kiln.expand_dims"(%ka1) {axis = 0 : i32} : (tensor<32xi32>) -> tensor<1x32xi32>
      %kab1 = "kiln.broadcast"(%ka21) : (tensor<1x32xi32>) -> tensor<64x32xi32>
      %pai1 = "kiln.addptr"(%pa, %kab1) : (tensor<64x32x!kiln.ptr<f16>>, tensor<64x32xi32>) -> tensor<64x32x!kiln.ptr<f16>>
      %ta1 = "kiln.load"(%pai1, %ma, %oa) : (tensor<64x32x!kiln.ptr<f16>>, tensor<64x32xi1>, tensor<64x32xf16>) -> tensor<64x32xf16>
      %isb1 = "kiln.splat"(%i1) : (i32) -> tensor<32xi32>
      %rkb1 = "kiln.range"() {start = 0 : i32, end = 32 : i32} : () -> tensor<32xi32>
      %kb1 = arith.addi %isb1, %rkb1 : tensor<32xi32>
      %kb21 = "kiln.expand_dims"(%kb1) {axis = 1 : i32} : (tensor<32xi32>) -> tensor<32x1xi32>
      %s641 = arith.constant dense<64> : tensor<32x1xi32>
      %kr1 = arith.muli %kb21, %s641 : tensor<32x1xi32>
      %krb1 = "kiln.broadcast"(%kr1) : (tensor<32x1xi32>) -> tensor<32x64xi32>
      %pbi1 = "kiln.addptr"(%pb, %krb1) : (tensor<32x64x!kiln.ptr<f16>>, tensor<32x64xi32>) -> tensor<32x64x!kiln.ptr<f16>>
      %tb1 = "kiln.load"(%pbi1, %mb, %ob) : (tensor<32x64x!kiln.ptr<f16>>, tensor<32x64xi1>, tensor<32x64xf16>) -> tensor<32x64xf16>
      %d1 = "kiln.dot"(%ta1, %tb1, %x1) : (tensor<64x32xf16>, tensor<32x64xf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
      scf.yield %d1 : tensor<64x64xf32>
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
    "kiln.store"(%pc, %acc1, %mc) : (tensor<64x64x!kiln.ptr<f32>>, tensor<64x64xf32>, tensor<64x64xi1>) -> ()
    return
  }
}
