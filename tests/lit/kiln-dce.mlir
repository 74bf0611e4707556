// RUN: %kiln-opt %s --pass=kiln-dce | %FileCheck %s
// Unused side-effect-free kiln ops (and chains of them) go; stores and atomics stay.

// CHECK-LABEL: func.func @k
func.func @k(%p: !kiln.ptr<i32>) attributes {kiln.kernel} {
  // CHECK-NOT: kiln.program_id
  %pid = "kiln.program_id"() {axis = 0 : i32} : () -> i32
  // CHECK: "kiln.range"() {end = 4 : i32, start = 0 : i32}
  // CHECK-NOT: end = 8
  %dead = "kiln.range"() {start = 0 : i32, end = 8 : i32} : () -> tensor<8xi32>
  %dead2 = "kiln.expand_dims"(%dead) {axis = 0 : i32} : (tensor<8xi32>) -> tensor<1x8xi32>
  %r = "kiln.range"() {start = 0 : i32, end = 4 : i32} : () -> tensor<4xi32>
  %ps = "kiln.splat"(%p) : (!kiln.ptr<i32>) -> tensor<4x!kiln.ptr<i32>>
  %pa = "kiln.addptr"(%ps, %r) : (tensor<4x!kiln.ptr<i32>>, tensor<4xi32>) -> tensor<4x!kiln.ptr<i32>>
  %m = arith.constant dense<true> : tensor<4xi1>
  // CHECK: "kiln.atomic_rmw"
  %old = "kiln.atomic_rmw"(%pa, %r, %m) {kind = "add"} : (tensor<4x!kiln.ptr<i32>>, tensor<4xi32>, tensor<4xi1>) -> tensor<4xi32>
  // CHECK: "kiln.store"
  "kiln.store"(%pa, %r, %m) : (tensor<4x!kiln.ptr<i32>>, tensor<4xi32>, tensor<4xi1>) -> ()
  return
}
