// RUN: %kiln-opt %s --pass=convert-kiln-to-cpu | %FileCheck %s
// Index remaps and pure elementwise ops are deferred into the loop nest that reads them: after
// a load, flip -> cmpf -> select is one loop nest (the flip's index arithmetic, the compare and
// the select in one body), computed into a buffer that the store's nest reads (arithmetic is not
// fused into a nest of loads or stores: they read their operands from buffers as vectors).  A
// tile that costs arithmetic and is read twice (%twice) is computed once, by a nest of its own.

// CHECK-LABEL: func.func @kiln_cpu_chain
// CHECK: llvm.intr.masked.load
// CHECK: arith.subi {{.*}} : index
// CHECK-NOT: scf.for
// CHECK: arith.cmpf olt
// CHECK-NOT: scf.for
// CHECK: arith.select
// CHECK-NOT: scf.for
// CHECK: memref.store
// CHECK: scf.for
// CHECK-NOT: scf.for
// CHECK: llvm.intr.masked.store
// CHECK-NOT: scf.for
// CHECK: return
func.func @chain(%x: !kiln.ptr<f32>, %y: !kiln.ptr<f32>) attributes {kiln.kernel, kiln.num_warps = 4 : i32, kiln.num_stages = 2 : i32} {
  %r = "kiln.range"() {start = 0 : i32, end = 16 : i32} : () -> tensor<16xi32>
  %t = arith.constant dense<true> : tensor<16xi1>
  %z = arith.constant dense<0.0> : tensor<16xf32>
  %xs = "kiln.splat"(%x) : (!kiln.ptr<f32>) -> tensor<16x!kiln.ptr<f32>>
  %xa = "kiln.addptr"(%xs, %r) : (tensor<16x!kiln.ptr<f32>>, tensor<16xi32>) -> tensor<16x!kiln.ptr<f32>>
  %v = "kiln.load"(%xa, %t, %z) : (tensor<16x!kiln.ptr<f32>>, tensor<16xi1>, tensor<16xf32>) -> tensor<16xf32>
  %p = "kiln.flip"(%v) {axis = 0 : i32} : (tensor<16xf32>) -> tensor<16xf32>
  %lt = arith.cmpf olt, %p, %v : tensor<16xf32>
  %s = arith.select %lt, %p, %v : tensor<16xi1>, tensor<16xf32>
  %ys = "kiln.splat"(%y) : (!kiln.ptr<f32>) -> tensor<16x!kiln.ptr<f32>>
  %ya = "kiln.addptr"(%ys, %r) : (tensor<16x!kiln.ptr<f32>>, tensor<16xi32>) -> tensor<16x!kiln.ptr<f32>>
  "kiln.store"(%ya, %s, %t) : (tensor<16x!kiln.ptr<f32>>, tensor<16xf32>, tensor<16xi1>) -> ()
  return
}

// CHECK-LABEL: func.func @kiln_cpu_twice
// CHECK: llvm.intr.masked.load
// CHECK: scf.for
// CHECK: math.exp
// CHECK: memref.store
// CHECK: scf.for
// CHECK-NOT: math.exp
// CHECK: arith.addf
// CHECK-NOT: math.exp
// CHECK: memref.store
// CHECK: scf.for
// CHECK-NOT: math.exp
// CHECK: llvm.intr.masked.store
// CHECK-NOT: scf.for
// CHECK: return
func.func @twice(%x: !kiln.ptr<f32>) attributes {kiln.kernel, kiln.num_warps = 4 : i32, kiln.num_stages = 2 : i32} {
  %r = "kiln.range"() {start = 0 : i32, end = 16 : i32} : () -> tensor<16xi32>
  %t = arith.constant dense<true> : tensor<16xi1>
  %z = arith.constant dense<0.0> : tensor<16xf32>
  %xs = "kiln.splat"(%x) : (!kiln.ptr<f32>) -> tensor<16x!kiln.ptr<f32>>
  %xa = "kiln.addptr"(%xs, %r) : (tensor<16x!kiln.ptr<f32>>, tensor<16xi32>) -> tensor<16x!kiln.ptr<f32>>
  %v = "kiln.load"(%xa, %t, %z) : (tensor<16x!kiln.ptr<f32>>, tensor<16xi1>, tensor<16xf32>) -> tensor<16xf32>
  %twice = math.exp %v : tensor<16xf32>
  %s = arith.addf %twice, %twice : tensor<16xf32>
  "kiln.store"(%xa, %s, %t) : (tensor<16x!kiln.ptr<f32>>, tensor<16xf32>, tensor<16xi1>) -> ()
  return
}
