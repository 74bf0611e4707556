// RUN: %kiln-opt %s --pass=convert-kiln-to-cpu | %FileCheck %s
// A kernel becomes kiln_cpu_<name>(void **args, pid x3, nprog x3); tiles read more than once
// become entry-block allocas (the range stays deferred: its elements are computed where read),
// elementwise ops scalar ops inside loop nests.  A load or store through contiguous pointers
// (@scale: x + range) moves 16 elements at a time: a masked vector access at the address of the
// chunk's first element, its mask read as bytes from the mask's buffer (bools are bytes there)
// and compared with zero.  Through other pointers (@strided: x + 2 range) each element is an
// scf.if around a scalar access.  A load through pointers that run along another dim than the
// last (@columns: a transposed operand, x + r[:, None] + c[None, :] ld) moves a column chunk
// with one masked load, its mask and the result's elements taken lane by lane; the store of
// such a tile keeps the element path.

// CHECK-LABEL: func.func @kiln_cpu_scale(%arg0: !llvm.ptr
// CHECK-SAME: i32{{.*}}i32{{.*}}i32{{.*}}i32{{.*}}i32{{.*}}i32
// CHECK-NOT: kiln.
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<16xi8>
// CHECK: llvm.getelementptr %arg0[1]
// CHECK: scf.for
// CHECK: arith.cmpi slt
// CHECK: arith.extui {{.*}} : i1 to i8
// CHECK: memref.store
// CHECK: scf.for %[[J:[^ ]*]] = %{{.*}} to %c16{{[_0-9]*}} step %c16
// CHECK: llvm.inttoptr
// CHECK: vector.load %{{.*}}[%[[J]]] : memref<16xi8>, vector<16xi8>
// CHECK: arith.cmpi ne, {{.*}} : vector<16xi8>
// CHECK: llvm.intr.masked.load {{.*}} {alignment = 4 : i32} : (!llvm.ptr, vector<16xi1>, vector<16xf32>) -> vector<16xf32>
// CHECK: vector.store
// CHECK: arith.mulf {{.*}} : f32
// CHECK: llvm.intr.masked.store {{.*}} : vector<16xf32>, vector<16xi1> into !llvm.ptr
// CHECK-NOT: scf.if
// CHECK: return

// CHECK-LABEL: func.func @kiln_cpu_strided
// CHECK-NOT: masked
// CHECK: scf.if
// CHECK: llvm.inttoptr
// CHECK: llvm.load {{.*}} -> f32
// CHECK: scf.if
// CHECK: llvm.store
// CHECK-NOT: masked
// CHECK-LABEL: func.func @kiln_cpu_columns
// CHECK: scf.for %[[I:[^ ]*]] = %{{.*}} to %c8{{[_0-9]*}} step %c8
// CHECK: scf.for %[[C:[^ ]*]] = %{{.*}} to %c4{{[_0-9]*}} step %c1
// CHECK: memref.load %{{.*}}[%[[I]], %[[C]]] : memref<8x4xi8>
// CHECK: vector.insertelement {{.*}} : vector<8xi8>
// CHECK: arith.cmpi ne, {{.*}} : vector<8xi8>
// CHECK: llvm.intr.masked.load {{.*}} -> vector<8xf32>
// CHECK: vector.extractelement {{.*}} : vector<8xf32>
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[I]], %[[C]]] : memref<8x4xf32>
// CHECK: vector.extractelement {{.*}} : vector<8xf32>
// CHECK-NOT: masked.store
// CHECK: scf.if
// CHECK: llvm.store
// CHECK-NOT: masked
// CHECK-NOT: func.func @scale
func.func @scale(%x: !kiln.ptr<f32>, %n: i32) attributes {kiln.kernel, kiln.num_warps = 4 : i32, kiln.num_stages = 2 : i32} {
  %r = "kiln.range"() {start = 0 : i32, end = 16 : i32} : () -> tensor<16xi32>
  %ns = "kiln.splat"(%n) : (i32) -> tensor<16xi32>
  %m = arith.cmpi slt, %r, %ns : tensor<16xi32>
  %ps = "kiln.splat"(%x) : (!kiln.ptr<f32>) -> tensor<16x!kiln.ptr<f32>>
  %pa = "kiln.addptr"(%ps, %r) : (tensor<16x!kiln.ptr<f32>>, tensor<16xi32>) -> tensor<16x!kiln.ptr<f32>>
  %z = arith.constant dense<0.0> : tensor<16xf32>
  %v = "kiln.load"(%pa, %m, %z) : (tensor<16x!kiln.ptr<f32>>, tensor<16xi1>, tensor<16xf32>) -> tensor<16xf32>
  %two = arith.constant dense<2.0> : tensor<16xf32>
  %s = arith.mulf %v, %two : tensor<16xf32>
  "kiln.store"(%pa, %s, %m) : (tensor<16x!kiln.ptr<f32>>, tensor<16xf32>, tensor<16xi1>) -> ()
  return
}

func.func @strided(%x: !kiln.ptr<f32>, %n: i32) attributes {kiln.kernel, kiln.num_warps = 4 : i32, kiln.num_stages = 2 : i32} {
  %r = "kiln.range"() {start = 0 : i32, end = 16 : i32} : () -> tensor<16xi32>
  %two_i = arith.constant dense<2> : tensor<16xi32>
  %r2 = arith.muli %r, %two_i : tensor<16xi32>
  %ns = "kiln.splat"(%n) : (i32) -> tensor<16xi32>
  %m = arith.cmpi slt, %r2, %ns : tensor<16xi32>
  %ps = "kiln.splat"(%x) : (!kiln.ptr<f32>) -> tensor<16x!kiln.ptr<f32>>
  %pa = "kiln.addptr"(%ps, %r2) : (tensor<16x!kiln.ptr<f32>>, tensor<16xi32>) -> tensor<16x!kiln.ptr<f32>>
  %z = arith.constant dense<0.0> : tensor<16xf32>
  %v = "kiln.load"(%pa, %m, %z) : (tensor<16x!kiln.ptr<f32>>, tensor<16xi1>, tensor<16xf32>) -> tensor<16xf32>
  "kiln.store"(%pa, %v, %m) : (tensor<16x!kiln.ptr<f32>>, tensor<16xf32>, tensor<16xi1>) -> ()
  return
}

func.func @columns(%arg0: !kiln.ptr<f32>, %arg1: !kiln.ptr<f32>, %arg2: i32, %arg3: i32) attributes {kiln.kernel, kiln.num_stages = 2 : i32, kiln.num_warps = 4 : i32} {
  %0 = "kiln.range"() {end = 8 : i32, start = 0 : i32} : () -> tensor<8xi32>
  %1 = "kiln.range"() {end = 4 : i32, start = 0 : i32} : () -> tensor<4xi32>
  %2 = "kiln.expand_dims"(%0) {axis = 1 : i32} : (tensor<8xi32>) -> tensor<8x1xi32>
  %3 = "kiln.broadcast"(%2) : (tensor<8x1xi32>) -> tensor<8x4xi32>
  %4 = "kiln.expand_dims"(%1) {axis = 0 : i32} : (tensor<4xi32>) -> tensor<1x4xi32>
  %5 = "kiln.splat"(%arg2) : (i32) -> tensor<1x4xi32>
  %6 = arith.muli %4, %5 : tensor<1x4xi32>
  %7 = "kiln.broadcast"(%6) : (tensor<1x4xi32>) -> tensor<8x4xi32>
  %8 = arith.addi %3, %7 : tensor<8x4xi32>
  %9 = "kiln.splat"(%arg0) : (!kiln.ptr<f32>) -> tensor<8x4x!kiln.ptr<f32>>
  %10 = "kiln.addptr"(%9, %8) : (tensor<8x4x!kiln.ptr<f32>>, tensor<8x4xi32>) -> tensor<8x4x!kiln.ptr<f32>>
  %11 = "kiln.splat"(%arg3) : (i32) -> tensor<8x1xi32>
  %12 = arith.cmpi slt, %2, %11 : tensor<8x1xi32>
  %13 = "kiln.broadcast"(%12) : (tensor<8x1xi1>) -> tensor<8x4xi1>
  %cst = arith.constant dense<0.000000e+00> : tensor<8x4xf32>
  %14 = "kiln.load"(%10, %13, %cst) : (tensor<8x4x!kiln.ptr<f32>>, tensor<8x4xi1>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %15 = "kiln.splat"(%arg1) : (!kiln.ptr<f32>) -> tensor<8x4x!kiln.ptr<f32>>
  %16 = "kiln.addptr"(%15, %8) : (tensor<8x4x!kiln.ptr<f32>>, tensor<8x4xi32>) -> tensor<8x4x!kiln.ptr<f32>>
  %cst_0 = arith.constant dense<2.000000e+00> : tensor<8x4xf32>
  %17 = arith.mulf %14, %cst_0 : tensor<8x4xf32>
  "kiln.store"(%16, %17, %13) : (tensor<8x4x!kiln.ptr<f32>>, tensor<8x4xf32>, tensor<8x4xi1>) -> ()
  return
}
