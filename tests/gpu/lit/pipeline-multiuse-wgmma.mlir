// RUN: %kiln-opt %s --pass=kiln-gpu-layouts --pass=kiln-gpu-pipeline --pass=kiln-gpu-smem-alloc | FileCheck %s
// RUN: %kiln-opt %s --pass=kiln-gpu-layouts | FileCheck %s --check-prefix=LAYOUT
// A ring shared by several dots on sm_90's wgmma (pipeline_pass.c, header comment): the loop of
// pipeline-multiuse.mlir with kiln.wgmma = 1, its tile x B of S = A x^T through a trans view and
// B of O += S x as it is.
// @shared: both dots fit wgmma (64x64 tiles), so every reader of x's ring is a descriptor: the
// one ring is a wgmma buffer, copied once an iteration, read by both converts ({transpose} for
// the view), and both dots keep kiln.wgmma_dot.
// @narrow: x is 32 x 64, so S = A x^T is 64 x 32: N = 32 fits wgmma for a B read k-major
// through the view (rows n), and O += S x (N = 64, K = 32) too: x's ring is a wgmma buffer.
// @fallback: O += S x is 64 x 32 (N not a multiple of 64 for a B read as it is, n-major), so
// the layout pass marks only S (LAYOUT); x's ring then has a reader on mma.sync, and all of its
// readers stay on ldmatrix: S loses its mark and neither ring is a wgmma buffer (A's either: it
// was staged for S only).

// CHECK-LABEL: func.func @shared
// CHECK: %[[A:.*]] = "kiln.local_alloc"() {{.*}} -> memref<2x64x64xf16, {{.*}}wgmma = 1 : i32}>
// CHECK-NEXT: %[[X:.*]] = "kiln.local_alloc"() {{.*}} -> memref<2x64x64xf16, {{.*}}wgmma = 1 : i32}>
// CHECK-NOT: "kiln.local_alloc"
// CHECK: scf.for {{.*}} iter_args({{.*}}, %[[RD:.*]] = %{{.*}}, %[[WR:.*]] = %{{.*}})
// CHECK: "kiln.async_copy"(%[[A]], %[[WR]],
// CHECK-NEXT: "kiln.async_copy"(%[[X]], %[[WR]],
// CHECK-NOT: "kiln.async_copy"
// CHECK: "kiln.local_load"(%[[A]], %[[RD]]) :
// CHECK-NEXT: "kiln.local_load"(%[[X]], %[[RD]]) {transpose} :
// CHECK-NEXT: "kiln.dot"({{.*}}) {kiln.wgmma_dot} :
// CHECK-NOT: "kiln.async_
// CHECK: "kiln.local_load"(%[[X]], %[[RD]]) :
// CHECK-NEXT: "kiln.dot"({{.*}}) {kiln.wgmma_dot} :
// CHECK: scf.yield

// CHECK-LABEL: func.func @narrow
// CHECK: "kiln.local_alloc"() {{.*}} -> memref<2x64x64xf16, {{.*}}wgmma = 1 : i32}>
// CHECK-NEXT: %[[XN:.*]] = "kiln.local_alloc"() {{.*}} -> memref<2x32x64xf16, {{.*}}wgmma = 1 : i32}>
// CHECK: "kiln.local_load"(%[[XN]], %{{.*}}) {transpose} :
// CHECK-NEXT: "kiln.dot"({{.*}}) {kiln.wgmma_dot} : ({{.*}}) -> tensor<64x32xf32
// CHECK: "kiln.local_load"(%[[XN]], %{{.*}}) :
// CHECK-NEXT: "kiln.dot"({{.*}}) {kiln.wgmma_dot} : ({{.*}}) -> tensor<64x64xf32

// CHECK-LABEL: func.func @fallback
// CHECK: "kiln.local_alloc"() {{.*}} -> memref<2x64x32xf16, {kind = "shared", {{.*}}, vec = 8 : i32}>
// CHECK-NEXT: "kiln.local_alloc"() {{.*}} -> memref<2x64x32xf16, {kind = "shared", {{.*}}, vec = 8 : i32}>
// CHECK: "kiln.local_load"({{.*}}) {transpose} :
// CHECK-NEXT: "kiln.dot"({{.*}}) : (tensor<64x32xf16
// CHECK: "kiln.local_load"
// CHECK-NEXT: "kiln.dot"({{.*}}) : (tensor<64x64xf16
// CHECK-NOT: wgmma = 1 : i32}>
// CHECK-NOT: kiln.wgmma_dot

// LAYOUT-LABEL: func.func @fallback
// LAYOUT: "kiln.dot"({{.*}}) {kiln.wgmma_dot} : (tensor<64x32xf16
// LAYOUT: "kiln.dot"({{.*}}) : (tensor<64x64xf16
module {
  func.func @shared(%a: !kiln.ptr<f16>, %b: !kiln.ptr<f16>, %l: !kiln.ptr<f32>, %c: !kiln.ptr<f32>, %k: i32) attributes {kiln.kernel, kiln.num_stages = 2 : i32, kiln.num_warps = 4 : i32, kiln.sm = 90 : i32, kiln.wgmma = 1 : i32} {
    %c0 = arith.constant 0 : i32
    %c64 = arith.constant 64 : i32
    %z = arith.constant dense<0.0> : tensor<64x64xf32>
    %ma = arith.constant dense<true> : tensor<64x64xi1>
    %oa = arith.constant dense<0.0> : tensor<64x64xf16>
    %ra = "kiln.range"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
    %ra2 = "kiln.expand_dims"(%ra) {axis = 1 : i32} : (tensor<64xi32>) -> tensor<64x1xi32>
    %s1024 = arith.constant dense<1024> : tensor<64x1xi32>
    %ras = arith.muli %ra2, %s1024 : tensor<64x1xi32>
    %rab = "kiln.broadcast"(%ras) : (tensor<64x1xi32>) -> tensor<64x64xi32>
    %pa0 = "kiln.splat"(%a) : (!kiln.ptr<f16>) -> tensor<64x64x!kiln.ptr<f16>>
    %pa = "kiln.addptr"(%pa0, %rab) : (tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi32>) -> tensor<64x64x!kiln.ptr<f16>>
    %pb0 = "kiln.splat"(%b) : (!kiln.ptr<f16>) -> tensor<64x64x!kiln.ptr<f16>>
    %pb = "kiln.addptr"(%pb0, %rab) : (tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi32>) -> tensor<64x64x!kiln.ptr<f16>>
    %pl0 = "kiln.splat"(%l) : (!kiln.ptr<f32>) -> tensor<64x!kiln.ptr<f32>>
    %ml = arith.constant dense<true> : tensor<64xi1>
    %ol = arith.constant dense<0.0> : tensor<64xf32>
    %acc = scf.for %i = %c0 to %k step %c64 iter_args(%x = %z) -> (tensor<64x64xf32>) : i32 {
      %isa = "kiln.splat"(%i) : (i32) -> tensor<64xi32>
      %rka = "kiln.range"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
      %ka = arith.addi %isa, %rka : tensor<64xi32>
      %ka2 = "kiln.expand_dims"(%ka) {axis = 0 : i32} : (tensor<64xi32>) -> tensor<1x64xi32>
      %kab = "kiln.broadcast"(%ka2) : (tensor<1x64xi32>) -> tensor<64x64xi32>
      %pai = "kiln.addptr"(%pa, %kab) : (tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi32>) -> tensor<64x64x!kiln.ptr<f16>>
      %ta = "kiln.load"(%pai, %ma, %oa) : (tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi1>, tensor<64x64xf16>) -> tensor<64x64xf16>
      %pbi = "kiln.addptr"(%pb, %kab) : (tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi32>) -> tensor<64x64x!kiln.ptr<f16>>
      %tb = "kiln.load"(%pbi, %ma, %oa) : (tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi1>, tensor<64x64xf16>) -> tensor<64x64xf16>
      %isl = "kiln.splat"(%i) : (i32) -> tensor<64xi32>
      %rl = arith.addi %isl, %ra : tensor<64xi32>
      %pli = "kiln.addptr"(%pl0, %rl) : (tensor<64x!kiln.ptr<f32>>, tensor<64xi32>) -> tensor<64x!kiln.ptr<f32>>
      %tl = "kiln.load"(%pli, %ml, %ol) : (tensor<64x!kiln.ptr<f32>>, tensor<64xi1>, tensor<64xf32>) -> tensor<64xf32>
      %tl2 = "kiln.expand_dims"(%tl) {axis = 0 : i32} : (tensor<64xf32>) -> tensor<1x64xf32>
      %tlb = "kiln.broadcast"(%tl2) : (tensor<1x64xf32>) -> tensor<64x64xf32>
      %tbt = "kiln.trans"(%tb) : (tensor<64x64xf16>) -> tensor<64x64xf16>
      %s = "kiln.dot"(%ta, %tbt, %z) : (tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
      %sl = arith.subf %s, %tlb : tensor<64x64xf32>
      %sh = arith.truncf %sl : tensor<64x64xf32> to tensor<64x64xf16>
      %o = "kiln.dot"(%sh, %tb, %x) : (tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
      scf.yield %o : tensor<64x64xf32>
    }
    %cm = "kiln.range"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
    %cm2 = "kiln.expand_dims"(%cm) {axis = 1 : i32} : (tensor<64xi32>) -> tensor<64x1xi32>
    %s32 = arith.constant dense<64> : tensor<64x1xi32>
    %cms = arith.muli %cm2, %s32 : tensor<64x1xi32>
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
  func.func @narrow(%a: !kiln.ptr<f16>, %b: !kiln.ptr<f16>, %c: !kiln.ptr<f32>, %k: i32) attributes {kiln.kernel, kiln.num_stages = 2 : i32, kiln.num_warps = 4 : i32, kiln.sm = 90 : i32, kiln.wgmma = 1 : i32} {
    %c0 = arith.constant 0 : i32
    %c64 = arith.constant 64 : i32
    %z = arith.constant dense<0.0> : tensor<64x64xf32>
    %zs = arith.constant dense<0.0> : tensor<64x32xf32>
    %ma = arith.constant dense<true> : tensor<64x64xi1>
    %oa = arith.constant dense<0.0> : tensor<64x64xf16>
    %mx = arith.constant dense<true> : tensor<32x64xi1>
    %ox = arith.constant dense<0.0> : tensor<32x64xf16>
    %ra = "kiln.range"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
    %ra2 = "kiln.expand_dims"(%ra) {axis = 1 : i32} : (tensor<64xi32>) -> tensor<64x1xi32>
    %s1024 = arith.constant dense<1024> : tensor<64x1xi32>
    %ras = arith.muli %ra2, %s1024 : tensor<64x1xi32>
    %rab = "kiln.broadcast"(%ras) : (tensor<64x1xi32>) -> tensor<64x64xi32>
    %pa0 = "kiln.splat"(%a) : (!kiln.ptr<f16>) -> tensor<64x64x!kiln.ptr<f16>>
    %pa = "kiln.addptr"(%pa0, %rab) : (tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi32>) -> tensor<64x64x!kiln.ptr<f16>>
    %rx = "kiln.range"() {start = 0 : i32, end = 32 : i32} : () -> tensor<32xi32>
    %rx2 = "kiln.expand_dims"(%rx) {axis = 1 : i32} : (tensor<32xi32>) -> tensor<32x1xi32>
    %x1024 = arith.constant dense<1024> : tensor<32x1xi32>
    %rxs = arith.muli %rx2, %x1024 : tensor<32x1xi32>
    %rxb = "kiln.broadcast"(%rxs) : (tensor<32x1xi32>) -> tensor<32x64xi32>
    %pb0 = "kiln.splat"(%b) : (!kiln.ptr<f16>) -> tensor<32x64x!kiln.ptr<f16>>
    %pb = "kiln.addptr"(%pb0, %rxb) : (tensor<32x64x!kiln.ptr<f16>>, tensor<32x64xi32>) -> tensor<32x64x!kiln.ptr<f16>>
    %acc = scf.for %i = %c0 to %k step %c64 iter_args(%x = %z) -> (tensor<64x64xf32>) : i32 {
      %isa = "kiln.splat"(%i) : (i32) -> tensor<64xi32>
      %rka = "kiln.range"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
      %ka = arith.addi %isa, %rka : tensor<64xi32>
      %ka2 = "kiln.expand_dims"(%ka) {axis = 0 : i32} : (tensor<64xi32>) -> tensor<1x64xi32>
      %kab = "kiln.broadcast"(%ka2) : (tensor<1x64xi32>) -> tensor<64x64xi32>
      %pai = "kiln.addptr"(%pa, %kab) : (tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi32>) -> tensor<64x64x!kiln.ptr<f16>>
      %ta = "kiln.load"(%pai, %ma, %oa) : (tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi1>, tensor<64x64xf16>) -> tensor<64x64xf16>
      %kxb = "kiln.broadcast"(%ka2) : (tensor<1x64xi32>) -> tensor<32x64xi32>
      %pbi = "kiln.addptr"(%pb, %kxb) : (tensor<32x64x!kiln.ptr<f16>>, tensor<32x64xi32>) -> tensor<32x64x!kiln.ptr<f16>>
      %tb = "kiln.load"(%pbi, %mx, %ox) : (tensor<32x64x!kiln.ptr<f16>>, tensor<32x64xi1>, tensor<32x64xf16>) -> tensor<32x64xf16>
      %tbt = "kiln.trans"(%tb) : (tensor<32x64xf16>) -> tensor<64x32xf16>
      %s = "kiln.dot"(%ta, %tbt, %zs) : (tensor<64x64xf16>, tensor<64x32xf16>, tensor<64x32xf32>) -> tensor<64x32xf32>
      %sh = arith.truncf %s : tensor<64x32xf32> to tensor<64x32xf16>
      %o = "kiln.dot"(%sh, %tb, %x) : (tensor<64x32xf16>, tensor<32x64xf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
      scf.yield %o : tensor<64x64xf32>
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
  func.func @fallback(%a: !kiln.ptr<f16>, %b: !kiln.ptr<f16>, %l: !kiln.ptr<f32>, %c: !kiln.ptr<f32>, %k: i32) attributes {kiln.kernel, kiln.num_stages = 2 : i32, kiln.num_warps = 4 : i32, kiln.sm = 90 : i32, kiln.wgmma = 1 : i32} {
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
