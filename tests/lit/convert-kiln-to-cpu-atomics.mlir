// RUN: %kiln-opt %s --pass=convert-kiln-to-cpu | %FileCheck %s
// kiln.atomic_rmw's unsigned kinds (umax, umin: the IR's integers are signless, so u32/u64 cells
// need kinds of their own) and 64-bit cells become llvm.atomicrmw of that operation and width.

// CHECK-LABEL: func.func @kiln_cpu_kinds
// CHECK: llvm.atomicrmw umax {{.*}} i64
// CHECK: llvm.atomicrmw umin {{.*}} i32
// CHECK: llvm.atomicrmw max {{.*}} i64
// CHECK: llvm.atomicrmw fadd {{.*}} f64
func.func @kinds(%u: !kiln.ptr<i64>, %w: !kiln.ptr<i32>, %f: !kiln.ptr<f64>) attributes {kiln.kernel, kiln.num_warps = 4 : i32, kiln.num_stages = 2 : i32} {
  %r = "kiln.range"() {start = 0 : i32, end = 4 : i32} : () -> tensor<4xi32>
  %t = arith.constant dense<true> : tensor<4xi1>
  %us = "kiln.splat"(%u) : (!kiln.ptr<i64>) -> tensor<4x!kiln.ptr<i64>>
  %ua = "kiln.addptr"(%us, %r) : (tensor<4x!kiln.ptr<i64>>, tensor<4xi32>) -> tensor<4x!kiln.ptr<i64>>
  %ws = "kiln.splat"(%w) : (!kiln.ptr<i32>) -> tensor<4x!kiln.ptr<i32>>
  %wa = "kiln.addptr"(%ws, %r) : (tensor<4x!kiln.ptr<i32>>, tensor<4xi32>) -> tensor<4x!kiln.ptr<i32>>
  %fs = "kiln.splat"(%f) : (!kiln.ptr<f64>) -> tensor<4x!kiln.ptr<f64>>
  %fa = "kiln.addptr"(%fs, %r) : (tensor<4x!kiln.ptr<f64>>, tensor<4xi32>) -> tensor<4x!kiln.ptr<f64>>
  %v64 = arith.constant dense<5> : tensor<4xi64>
  %v32 = arith.constant dense<5> : tensor<4xi32>
  %vf = arith.constant dense<1.5> : tensor<4xf64>
  %a = "kiln.atomic_rmw"(%ua, %v64, %t) {kind = "umax"} : (tensor<4x!kiln.ptr<i64>>, tensor<4xi64>, tensor<4xi1>) -> tensor<4xi64>
  %b = "kiln.atomic_rmw"(%wa, %v32, %t) {kind = "umin"} : (tensor<4x!kiln.ptr<i32>>, tensor<4xi32>, tensor<4xi1>) -> tensor<4xi32>
  %c = "kiln.atomic_rmw"(%ua, %v64, %t) {kind = "max"} : (tensor<4x!kiln.ptr<i64>>, tensor<4xi64>, tensor<4xi1>) -> tensor<4xi64>
  %d = "kiln.atomic_rmw"(%fa, %vf, %t) {kind = "add"} : (tensor<4x!kiln.ptr<f64>>, tensor<4xf64>, tensor<4xi1>) -> tensor<4xf64>
  return
}
