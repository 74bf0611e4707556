// RUN: %kiln-opt %s --pass=kiln-gpu-layouts --pass=kiln-gpu-pipeline --pass=kiln-gpu-smem-alloc | FileCheck %s
// kiln-gpu-pipeline on a K loop of an f32 dot without tf32 (the FMA path, blocked layouts): its
// loaded operands are pipelined into rings of the `fma` encoding (no swizzle: the dot reads
// elements), each staged as the operand's own row-major tile. A (64x32, k contiguous) is
// staged as it is, by 16-byte copies; B = trans(x) of a loaded 64x32 x is staged transposed
// (order [0, 1]: the operand's k rows), so x's contiguous rows are scattered one element a
// copy. The view goes; local_load hands the dot each slot as a blocked tile of the operand's
// type (the dot reads the slot itself: lower_shared.c). In @fma_over_limit the two rings (16 KiB
// each at 2 stages) would pass three quarters of a 16 KiB kiln.smem_limit: the loads stay.

// CHECK-LABEL: func.func @fma_view
// CHECK: %[[A:.*]] = "kiln.local_alloc"() {offset = 0 : i32, stride = 16384 : i32} : () -> memref<2x64x32xf32, {fma = 1 : i32, kind = "shared", maxPhase = 1 : i32, order = array<i32: 1, 0>, perPhase = 1 : i32, vec = 1 : i32}>
// CHECK-NEXT: %[[B:.*]] = "kiln.local_alloc"() {offset = 8192 : i32, stride = 16384 : i32} : () -> memref<2x64x32xf32, {fma = 1 : i32, kind = "shared", maxPhase = 1 : i32, order = array<i32: 0, 1>, perPhase = 1 : i32, vec = 1 : i32}>
// CHECK-NEXT: "kiln.barrier"
// CHECK: "kiln.async_copy"(%[[A]], %[[S0:[^,]*]], {{.*}}) {vec = 4 : i32}
// CHECK-NEXT: "kiln.async_copy"(%[[B]], %[[S0]], {{.*}}) {vec = 1 : i32}
// CHECK: "kiln.async_commit"
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}, %[[CUR:.*]] = %{{.*}}, %[[WR:.*]] = %{{.*}})
// CHECK-NOT: "kiln.load"
// CHECK-NOT: "kiln.trans"
// CHECK: "kiln.async_wait"() {pending = 0 : i32}
// CHECK-NEXT: "kiln.barrier"
// CHECK: "kiln.async_copy"(%[[A]], %[[WR]], {{.*}}) {vec = 4 : i32}
// CHECK-NEXT: "kiln.async_copy"(%[[B]], %[[WR]], {{.*}}) {vec = 1 : i32}
// CHECK: "kiln.async_commit"
// CHECK-NEXT: %[[LA:.*]] = "kiln.local_load"(%[[A]], %[[CUR]]) {{.*}} -> tensor<64x32xf32, {kind = "blocked"
// CHECK-NEXT: %[[LB:.*]] = "kiln.local_load"(%[[B]], %[[CUR]]) {{.*}} -> tensor<32x64xf32, {kind = "blocked"
// CHECK-NEXT: "kiln.dot"(%[[LA]], %[[LB]], %{{.*}})
// CHECK-NOT: "kiln.barrier"
// CHECK: } {kiln.arena_offset = 32768 : i32}
// CHECK-NEXT: "kiln.async_wait"() {pending = 0 : i32}
// CHECK-NEXT: "kiln.barrier"

// CHECK-LABEL: func.func @fma_over_limit
// CHECK-NOT: "kiln.local_alloc"
// CHECK: scf.for
// CHECK: "kiln.load"
// CHECK: "kiln.load"
// CHECK-NEXT: "kiln.trans"
// CHECK-NEXT: "kiln.dot"
// CHECK-NOT: "kiln.async_copy"

module {
  func.func @fma_view(%a: !kiln.ptr<f32>, %b: !kiln.ptr<f32>, %c: !kiln.ptr<f32>, %k: i32) attributes {kiln.kernel, kiln.num_stages = 2 : i32, kiln.num_warps = 4 : i32} {
    %c0 = arith.constant 0 : i32
    %c32 = arith.constant 32 : i32
    %z = arith.constant dense<0.0> : tensor<64x64xf32>
    %ma = arith.constant dense<true> : tensor<64x32xi1>
    %oa = arith.constant dense<0.0> : tensor<64x32xf32>
    %ra = "kiln.range"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
    %ra2 = "kiln.expand_dims"(%ra) {axis = 1 : i32} : (tensor<64xi32>) -> tensor<64x1xi32>
    %s1024 = arith.constant dense<1024> : tensor<64x1xi32>
    %ras = arith.muli %ra2, %s1024 : tensor<64x1xi32>
    %rab = "kiln.broadcast"(%ras) : (tensor<64x1xi32>) -> tensor<64x32xi32>
    %pa0 = "kiln.splat"(%a) : (!kiln.ptr<f32>) -> tensor<64x32x!kiln.ptr<f32>>
    %pa = "kiln.addptr"(%pa0, %rab) : (tensor<64x32x!kiln.ptr<f32>>, tensor<64x32xi32>) -> tensor<64x32x!kiln.ptr<f32>>
    %pb0 = "kiln.splat"(%b) : (!kiln.ptr<f32>) -> tensor<64x32x!kiln.ptr<f32>>
    %pb = "kiln.addptr"(%pb0, %rab) : (tensor<64x32x!kiln.ptr<f32>>, tensor<64x32xi32>) -> tensor<64x32x!kiln.ptr<f32>>
    %acc = scf.for %i = %c0 to %k step %c32 iter_args(%x = %z) -> (tensor<64x64xf32>) : i32 {
      %isa = "kiln.splat"(%i) : (i32) -> tensor<32xi32>
      %rka = "kiln.range"() {start = 0 : i32, end = 32 : i32} : () -> tensor<32xi32>
      %ka = arith.addi %isa, %rka : tensor<32xi32>
      %ka2 = "kiln.expand_dims"(%ka) {axis = 0 : i32} : (tensor<32xi32>) -> tensor<1x32xi32>
      %kab = "kiln.broadcast"(%ka2) : (tensor<1x32xi32>) -> tensor<64x32xi32>
      %pai = "kiln.addptr"(%pa, %kab) : (tensor<64x32x!kiln.ptr<f32>>, tensor<64x32xi32>) -> tensor<64x32x!kiln.ptr<f32>>
      %ta = "kiln.load"(%pai, %ma, %oa) : (tensor<64x32x!kiln.ptr<f32>>, tensor<64x32xi1>, tensor<64x32xf32>) -> tensor<64x32xf32>
      %pbi = "kiln.addptr"(%pb, %kab) : (tensor<64x32x!kiln.ptr<f32>>, tensor<64x32xi32>) -> tensor<64x32x!kiln.ptr<f32>>
      %tb = "kiln.load"(%pbi, %ma, %oa) : (tensor<64x32x!kiln.ptr<f32>>, tensor<64x32xi1>, tensor<64x32xf32>) -> tensor<64x32xf32>
      %tbt = "kiln.trans"(%tb) : (tensor<64x32xf32>) -> tensor<32x64xf32>
      %d = "kiln.dot"(%ta, %tbt, %x) : (tensor<64x32xf32>, tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
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
  func.func @fma_over_limit(%a: !kiln.ptr<f32>, %b: !kiln.ptr<f32>, %c: !kiln.ptr<f32>, %k: i32) attributes {kiln.kernel, kiln.num_stages = 2 : i32, kiln.num_warps = 4 : i32, kiln.smem_limit = 16384 : i32} {
    %c0 = arith.constant 0 : i32
    %c32 = arith.constant 32 : i32
    %z = arith.constant dense<0.0> : tensor<64x64xf32>
    %ma = arith.constant dense<true> : tensor<64x32xi1>
    %oa = arith.constant dense<0.0> : tensor<64x32xf32>
    %ra = "kiln.range"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
    %ra2 = "kiln.expand_dims"(%ra) {axis = 1 : i32} : (tensor<64xi32>) -> tensor<64x1xi32>
    %s1024 = arith.constant dense<1024> : tensor<64x1xi32>
    %ras = arith.muli %ra2, %s1024 : tensor<64x1xi32>
    %rab = "kiln.broadcast"(%ras) : (tensor<64x1xi32>) -> tensor<64x32xi32>
    %pa0 = "kiln.splat"(%a) : (!kiln.ptr<f32>) -> tensor<64x32x!kiln.ptr<f32>>
    %pa = "kiln.addptr"(%pa0, %rab) : (tensor<64x32x!kiln.ptr<f32>>, tensor<64x32xi32>) -> tensor<64x32x!kiln.ptr<f32>>
    %pb0 = "kiln.splat"(%b) : (!kiln.ptr<f32>) -> tensor<64x32x!kiln.ptr<f32>>
    %pb = "kiln.addptr"(%pb0, %rab) : (tensor<64x32x!kiln.ptr<f32>>, tensor<64x32xi32>) -> tensor<64x32x!kiln.ptr<f32>>
    %acc = scf.for %i = %c0 to %k step %c32 iter_args(%x = %z) -> (tensor<64x64xf32>) : i32 {
      %isa = "kiln.splat"(%i) : (i32) -> tensor<32xi32>
      %rka = "kiln.range"() {start = 0 : i32, end = 32 : i32} : () -> tensor<32xi32>
      %ka = arith.addi %isa, %rka : tensor<32xi32>
      %ka2 = "kiln.expand_dims"(%ka) {axis = 0 : i32} : (tensor<32xi32>) -> tensor<1x32xi32>
      %kab = "kiln.broadcast"(%ka2) : (tensor<1x32xi32>) -> tensor<64x32xi32>
      %pai = "kiln.addptr"(%pa, %kab) : (tensor<64x32x!kiln.ptr<f32>>, tensor<64x32xi32>) -> tensor<64x32x!kiln.ptr<f32>>
      %ta = "kiln.load"(%pai, %ma, %oa) : (tensor<64x32x!kiln.ptr<f32>>, tensor<64x32xi1>, tensor<64x32xf32>) -> tensor<64x32xf32>
      %pbi = "kiln.addptr"(%pb, %kab) : (tensor<64x32x!kiln.ptr<f32>>, tensor<64x32xi32>) -> tensor<64x32x!kiln.ptr<f32>>
      %tb = "kiln.load"(%pbi, %ma, %oa) : (tensor<64x32x!kiln.ptr<f32>>, tensor<64x32xi1>, tensor<64x32xf32>) -> tensor<64x32xf32>
      %tbt = "kiln.trans"(%tb) : (tensor<64x32xf32>) -> tensor<32x64xf32>
      %d = "kiln.dot"(%ta, %tbt, %x) : (tensor<64x32xf32>, tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
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
