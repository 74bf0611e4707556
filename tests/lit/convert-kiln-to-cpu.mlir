// RUN: %kiln-opt %s --pass=convert-kiln-to-cpu | %FileCheck %s
// A kernel becomes kiln_cpu_<name>(void **args, pid x3, nprog x3); tiles read more than once
// become entry-block allocas (the range stays deferred: its elements are computed where read),
// elementwise ops scalar ops inside loop nests, masked loads an scf.if per element.

// CHECK-LABEL: func.func @kiln_cpu_scale(%arg0: !llvm.ptr
// CHECK-SAME: i32{{.*}}i32{{.*}}i32{{.*}}i32{{.*}}i32{{.*}}i32
// CHECK-NOT: kiln.
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<16xi1>
// CHECK: llvm.getelementptr %arg0[1]
// CHECK: scf.for
// CHECK: arith.index_cast
// CHECK: scf.if
// CHECK: llvm.inttoptr
// CHECK: llvm.load {{.*}} -> f32
// CHECK: arith.mulf {{.*}} : f32
// CHECK: llvm.store
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
