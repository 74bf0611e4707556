// RUN: %kiln-opt %s --pass=convert-kiln-to-cpu | %FileCheck %s
// A dot's f16 operands are converted to f32 once per element, each into a buffer of its own
// before the product nest (which then has no arith.extf), not once per product.  The K loop's
// carried accumulator, read by the dot alone, takes the products in place: its one buffer
// (memref<4x2xf32>) and no other.  An accumulator read twice (@kiln_cpu_acc_twice) is copied
// into a second buffer first, so that its other reader sees the value before the products.

// CHECK-LABEL: func.func @kiln_cpu_kloop
// CHECK: memref.alloca() {{.*}} : memref<4x2xf32>
// CHECK-NOT: memref<4x2xf32>
// CHECK: memref.alloca() {{.*}} : memref<4x8xf32>
// CHECK-NOT: memref<4x2xf32>
// CHECK: memref.alloca() {{.*}} : memref<8x2xf32>
// CHECK-NOT: memref.alloca() {{.*}} : memref<4x2xf32>
// CHECK: scf.for
// CHECK: arith.extf
// CHECK: memref.store {{.*}} : memref<4x8xf32>
// CHECK: arith.extf
// CHECK: memref.store {{.*}} : memref<8x2xf32>
// CHECK-NOT: arith.extf
// CHECK: arith.mulf
// CHECK-NOT: arith.extf
// CHECK: arith.addf
// CHECK-NOT: arith.extf
// CHECK: return
func.func @kloop(%a: !kiln.ptr<f16>, %b: !kiln.ptr<f16>, %c: !kiln.ptr<f32>, %k: i32) attributes {kiln.kernel, kiln.num_stages = 2 : i32, kiln.num_warps = 4 : i32} {
  %rm = "kiln.range"() {end = 4 : i32, start = 0 : i32} : () -> tensor<4xi32>
  %rk = "kiln.range"() {end = 8 : i32, start = 0 : i32} : () -> tensor<8xi32>
  %rn = "kiln.range"() {end = 2 : i32, start = 0 : i32} : () -> tensor<2xi32>
  %zero = arith.constant dense<0.000000e+00> : tensor<4x2xf32>
  %c0 = arith.constant 0 : i32
  %c8 = arith.constant 8 : i32
  %acc = scf.for %i = %c0 to %k step %c8 iter_args(%x = %zero) -> (tensor<4x2xf32>) : i32 {
    %as = "kiln.splat"(%a) : (!kiln.ptr<f16>) -> tensor<4x8x!kiln.ptr<f16>>
    %ar = "kiln.expand_dims"(%rk) {axis = 0 : i32} : (tensor<8xi32>) -> tensor<1x8xi32>
    %ab = "kiln.broadcast"(%ar) : (tensor<1x8xi32>) -> tensor<4x8xi32>
    %ap = "kiln.addptr"(%as, %ab) : (tensor<4x8x!kiln.ptr<f16>>, tensor<4x8xi32>) -> tensor<4x8x!kiln.ptr<f16>>
    %am = arith.constant dense<true> : tensor<4x8xi1>
    %ao = arith.constant dense<0.000000e+00> : tensor<4x8xf16>
    %ta = "kiln.load"(%ap, %am, %ao) : (tensor<4x8x!kiln.ptr<f16>>, tensor<4x8xi1>, tensor<4x8xf16>) -> tensor<4x8xf16>
    %bs = "kiln.splat"(%b) : (!kiln.ptr<f16>) -> tensor<8x2x!kiln.ptr<f16>>
    %br = "kiln.expand_dims"(%rn) {axis = 0 : i32} : (tensor<2xi32>) -> tensor<1x2xi32>
    %bb = "kiln.broadcast"(%br) : (tensor<1x2xi32>) -> tensor<8x2xi32>
    %bp = "kiln.addptr"(%bs, %bb) : (tensor<8x2x!kiln.ptr<f16>>, tensor<8x2xi32>) -> tensor<8x2x!kiln.ptr<f16>>
    %bm = arith.constant dense<true> : tensor<8x2xi1>
    %bo = arith.constant dense<0.000000e+00> : tensor<8x2xf16>
    %tb = "kiln.load"(%bp, %bm, %bo) : (tensor<8x2x!kiln.ptr<f16>>, tensor<8x2xi1>, tensor<8x2xf16>) -> tensor<8x2xf16>
    %d = "kiln.dot"(%ta, %tb, %x) : (tensor<4x8xf16>, tensor<8x2xf16>, tensor<4x2xf32>) -> tensor<4x2xf32>
    scf.yield %d : tensor<4x2xf32>
  }
  %cs = "kiln.splat"(%c) : (!kiln.ptr<f32>) -> tensor<4x2x!kiln.ptr<f32>>
  %cr = "kiln.expand_dims"(%rn) {axis = 0 : i32} : (tensor<2xi32>) -> tensor<1x2xi32>
  %cb = "kiln.broadcast"(%cr) : (tensor<1x2xi32>) -> tensor<4x2xi32>
  %cp = "kiln.addptr"(%cs, %cb) : (tensor<4x2x!kiln.ptr<f32>>, tensor<4x2xi32>) -> tensor<4x2x!kiln.ptr<f32>>
  %cm = arith.constant dense<true> : tensor<4x2xi1>
  "kiln.store"(%cp, %acc, %cm) : (tensor<4x2x!kiln.ptr<f32>>, tensor<4x2xf32>, tensor<4x2xi1>) -> ()
  return
}

// CHECK-LABEL: func.func @kiln_cpu_acc_twice
// CHECK: memref.alloca() {{.*}} : memref<4x2xf32>
// CHECK: memref.alloca() {{.*}} : memref<4x2xf32>
// CHECK: return
func.func @acc_twice(%c: !kiln.ptr<f32>, %u: !kiln.ptr<f32>) attributes {kiln.kernel, kiln.num_stages = 2 : i32, kiln.num_warps = 4 : i32} {
  %rn = "kiln.range"() {end = 2 : i32, start = 0 : i32} : () -> tensor<2xi32>
  %cs = "kiln.splat"(%c) : (!kiln.ptr<f32>) -> tensor<4x2x!kiln.ptr<f32>>
  %cr = "kiln.expand_dims"(%rn) {axis = 0 : i32} : (tensor<2xi32>) -> tensor<1x2xi32>
  %cb = "kiln.broadcast"(%cr) : (tensor<1x2xi32>) -> tensor<4x2xi32>
  %cp = "kiln.addptr"(%cs, %cb) : (tensor<4x2x!kiln.ptr<f32>>, tensor<4x2xi32>) -> tensor<4x2x!kiln.ptr<f32>>
  %cm = arith.constant dense<true> : tensor<4x2xi1>
  %co = arith.constant dense<0.000000e+00> : tensor<4x2xf32>
  %acc = "kiln.load"(%cp, %cm, %co) : (tensor<4x2x!kiln.ptr<f32>>, tensor<4x2xi1>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %ta = arith.constant dense<1.000000e+00> : tensor<4x8xf32>
  %tb = arith.constant dense<2.000000e+00> : tensor<8x2xf32>
  %d = "kiln.dot"(%ta, %tb, %acc) : (tensor<4x8xf32>, tensor<8x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  "kiln.store"(%cp, %d, %cm) : (tensor<4x2x!kiln.ptr<f32>>, tensor<4x2xf32>, tensor<4x2xi1>) -> ()
  %us = "kiln.splat"(%u) : (!kiln.ptr<f32>) -> tensor<4x2x!kiln.ptr<f32>>
  %up = "kiln.addptr"(%us, %cb) : (tensor<4x2x!kiln.ptr<f32>>, tensor<4x2xi32>) -> tensor<4x2x!kiln.ptr<f32>>
  "kiln.store"(%up, %acc, %cm) : (tensor<4x2x!kiln.ptr<f32>>, tensor<4x2xf32>, tensor<4x2xi1>) -> ()
  return
}

// The register-blocked form (@blocked: an 8x32 f32 result, K = 4): per block of 4 rows by one
// 64-byte segment (16 f32), the 4 row segments are loaded from the accumulator's buffer into
// vectors, a k loop carries them (4 vector iter_args) and adds, per k, the product of b's
// segment (one vector load) and a's element broadcast, in the nest's order (mulf, then addf
// onto the carried sum: the same bits), and they are stored back once.  A result whose rows are
// not a multiple of 4 (@unblocked: 2x32) keeps the scalar nest.

// CHECK-LABEL: func.func @kiln_cpu_blocked
// CHECK: scf.for %[[I:[^ ]*]] = %{{.*}} to %c8{{[_0-9]*}} step %c4{{[_0-9]*}} {
// CHECK: scf.for %[[J:[^ ]*]] = %{{.*}} to %{{.*}} step %c16{{[_0-9]*}} {
// CHECK: vector.load %{{.*}}[%[[I]], %[[J]]] : memref<8x32xf32>, vector<16xf32>
// CHECK-COUNT-3: vector.load %{{.*}} : memref<8x32xf32>, vector<16xf32>
// CHECK: scf.for %[[K:[^ ]*]] = {{.*}} iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK: vector.load %{{.*}}[%[[K]], %[[J]]] : memref<4x32xf32>, vector<16xf32>
// CHECK-COUNT-4: vector.broadcast
// CHECK: scf.yield %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>
// CHECK-COUNT-4: vector.store %{{.*}} : memref<8x32xf32>, vector<16xf32>
// CHECK: return

// CHECK-LABEL: func.func @kiln_cpu_unblocked
// CHECK-NOT: iter_args
// CHECK: arith.mulf {{.*}} : f32
// CHECK-NOT: iter_args
// CHECK: return
func.func @blocked(%a: !kiln.ptr<f32>, %b: !kiln.ptr<f32>, %c: !kiln.ptr<f32>) attributes {kiln.kernel, kiln.num_stages = 2 : i32, kiln.num_warps = 4 : i32} {
  %cr = "kiln.range"() {end = 32 : i32, start = 0 : i32} : () -> tensor<32xi32>
  %cs = "kiln.splat"(%c) : (!kiln.ptr<f32>) -> tensor<8x32x!kiln.ptr<f32>>
  %ce = "kiln.expand_dims"(%cr) {axis = 0 : i32} : (tensor<32xi32>) -> tensor<1x32xi32>
  %cb = "kiln.broadcast"(%ce) : (tensor<1x32xi32>) -> tensor<8x32xi32>
  %cp = "kiln.addptr"(%cs, %cb) : (tensor<8x32x!kiln.ptr<f32>>, tensor<8x32xi32>) -> tensor<8x32x!kiln.ptr<f32>>
  %cm = arith.constant dense<true> : tensor<8x32xi1>
  %co = arith.constant dense<0.000000e+00> : tensor<8x32xf32>
  %acc = "kiln.load"(%cp, %cm, %co) : (tensor<8x32x!kiln.ptr<f32>>, tensor<8x32xi1>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %ar = "kiln.range"() {end = 4 : i32, start = 0 : i32} : () -> tensor<4xi32>
  %as = "kiln.splat"(%a) : (!kiln.ptr<f32>) -> tensor<8x4x!kiln.ptr<f32>>
  %ae = "kiln.expand_dims"(%ar) {axis = 0 : i32} : (tensor<4xi32>) -> tensor<1x4xi32>
  %ab = "kiln.broadcast"(%ae) : (tensor<1x4xi32>) -> tensor<8x4xi32>
  %ap = "kiln.addptr"(%as, %ab) : (tensor<8x4x!kiln.ptr<f32>>, tensor<8x4xi32>) -> tensor<8x4x!kiln.ptr<f32>>
  %am = arith.constant dense<true> : tensor<8x4xi1>
  %ao = arith.constant dense<0.000000e+00> : tensor<8x4xf32>
  %ta = "kiln.load"(%ap, %am, %ao) : (tensor<8x4x!kiln.ptr<f32>>, tensor<8x4xi1>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %br = "kiln.range"() {end = 32 : i32, start = 0 : i32} : () -> tensor<32xi32>
  %bs = "kiln.splat"(%b) : (!kiln.ptr<f32>) -> tensor<4x32x!kiln.ptr<f32>>
  %be = "kiln.expand_dims"(%br) {axis = 0 : i32} : (tensor<32xi32>) -> tensor<1x32xi32>
  %bb = "kiln.broadcast"(%be) : (tensor<1x32xi32>) -> tensor<4x32xi32>
  %bp = "kiln.addptr"(%bs, %bb) : (tensor<4x32x!kiln.ptr<f32>>, tensor<4x32xi32>) -> tensor<4x32x!kiln.ptr<f32>>
  %bm = arith.constant dense<true> : tensor<4x32xi1>
  %bo = arith.constant dense<0.000000e+00> : tensor<4x32xf32>
  %tb = "kiln.load"(%bp, %bm, %bo) : (tensor<4x32x!kiln.ptr<f32>>, tensor<4x32xi1>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %d = "kiln.dot"(%ta, %tb, %acc) : (tensor<8x4xf32>, tensor<4x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  "kiln.store"(%cp, %d, %cm) : (tensor<8x32x!kiln.ptr<f32>>, tensor<8x32xf32>, tensor<8x32xi1>) -> ()
  return
}

func.func @unblocked(%a: !kiln.ptr<f32>, %b: !kiln.ptr<f32>, %c: !kiln.ptr<f32>) attributes {kiln.kernel, kiln.num_stages = 2 : i32, kiln.num_warps = 4 : i32} {
  %cr = "kiln.range"() {end = 32 : i32, start = 0 : i32} : () -> tensor<32xi32>
  %cs = "kiln.splat"(%c) : (!kiln.ptr<f32>) -> tensor<2x32x!kiln.ptr<f32>>
  %ce = "kiln.expand_dims"(%cr) {axis = 0 : i32} : (tensor<32xi32>) -> tensor<1x32xi32>
  %cb = "kiln.broadcast"(%ce) : (tensor<1x32xi32>) -> tensor<2x32xi32>
  %cp = "kiln.addptr"(%cs, %cb) : (tensor<2x32x!kiln.ptr<f32>>, tensor<2x32xi32>) -> tensor<2x32x!kiln.ptr<f32>>
  %cm = arith.constant dense<true> : tensor<2x32xi1>
  %co = arith.constant dense<0.000000e+00> : tensor<2x32xf32>
  %acc = "kiln.load"(%cp, %cm, %co) : (tensor<2x32x!kiln.ptr<f32>>, tensor<2x32xi1>, tensor<2x32xf32>) -> tensor<2x32xf32>
  %ar = "kiln.range"() {end = 4 : i32, start = 0 : i32} : () -> tensor<4xi32>
  %as = "kiln.splat"(%a) : (!kiln.ptr<f32>) -> tensor<2x4x!kiln.ptr<f32>>
  %ae = "kiln.expand_dims"(%ar) {axis = 0 : i32} : (tensor<4xi32>) -> tensor<1x4xi32>
  %ab = "kiln.broadcast"(%ae) : (tensor<1x4xi32>) -> tensor<2x4xi32>
  %ap = "kiln.addptr"(%as, %ab) : (tensor<2x4x!kiln.ptr<f32>>, tensor<2x4xi32>) -> tensor<2x4x!kiln.ptr<f32>>
  %am = arith.constant dense<true> : tensor<2x4xi1>
  %ao = arith.constant dense<0.000000e+00> : tensor<2x4xf32>
  %ta = "kiln.load"(%ap, %am, %ao) : (tensor<2x4x!kiln.ptr<f32>>, tensor<2x4xi1>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %br = "kiln.range"() {end = 32 : i32, start = 0 : i32} : () -> tensor<32xi32>
  %bs = "kiln.splat"(%b) : (!kiln.ptr<f32>) -> tensor<4x32x!kiln.ptr<f32>>
  %be = "kiln.expand_dims"(%br) {axis = 0 : i32} : (tensor<32xi32>) -> tensor<1x32xi32>
  %bb = "kiln.broadcast"(%be) : (tensor<1x32xi32>) -> tensor<4x32xi32>
  %bp = "kiln.addptr"(%bs, %bb) : (tensor<4x32x!kiln.ptr<f32>>, tensor<4x32xi32>) -> tensor<4x32x!kiln.ptr<f32>>
  %bm = arith.constant dense<true> : tensor<4x32xi1>
  %bo = arith.constant dense<0.000000e+00> : tensor<4x32xf32>
  %tb = "kiln.load"(%bp, %bm, %bo) : (tensor<4x32x!kiln.ptr<f32>>, tensor<4x32xi1>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %d = "kiln.dot"(%ta, %tb, %acc) : (tensor<2x4xf32>, tensor<4x32xf32>, tensor<2x32xf32>) -> tensor<2x32xf32>
  "kiln.store"(%cp, %d, %cm) : (tensor<2x32x!kiln.ptr<f32>>, tensor<2x32xf32>, tensor<2x32xi1>) -> ()
  return
}
