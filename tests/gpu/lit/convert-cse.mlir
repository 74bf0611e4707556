// RUN: %kiln-opt %s --pass=kiln-gpu-convert-cse | FileCheck %s
// kiln-gpu-convert-cse keeps one convert_layout per value and layout: the second convert of %v
// to the 8-per-thread layout is the first one's result, also inside the loop (the outer convert
// dominates it); a convert of %v to another layout, and a convert of another value, stay; a
// convert inside the loop is not visible after it, so the one after the loop stays too.

// CHECK-LABEL: func.func @cse
// CHECK: %[[A:.*]] = "kiln.convert_layout"(%[[V:.*]]) : {{.*}}sizePerThread = array<i32: 4>{{.*}} -> {{.*}}sizePerThread = array<i32: 8>
// CHECK-NOT: "kiln.convert_layout"(%[[V]]) : {{.*}} -> {{.*}}sizePerThread = array<i32: 8>
// CHECK: "kiln.convert_layout"(%[[V]]) : {{.*}} -> {{.*}}sizePerThread = array<i32: 2>
// CHECK: arith.addf %[[A]], %[[A]]
// CHECK: scf.for
// CHECK: "kiln.convert_layout"(%[[W:.*]]) :
// CHECK: arith.mulf %[[A]], %{{.*}}
// CHECK: scf.yield
// CHECK: "kiln.convert_layout"(%[[W]]) :
// CHECK: return
#b4 = {kind = "blocked", order = array<i32: 0>, sizePerThread = array<i32: 4>, threadsPerWarp = array<i32: 32>, warpsPerCTA = array<i32: 4>}
#b8 = {kind = "blocked", order = array<i32: 0>, sizePerThread = array<i32: 8>, threadsPerWarp = array<i32: 32>, warpsPerCTA = array<i32: 4>}
#b2 = {kind = "blocked", order = array<i32: 0>, sizePerThread = array<i32: 2>, threadsPerWarp = array<i32: 32>, warpsPerCTA = array<i32: 4>}
module {
  func.func @cse(%n: i32) attributes {kiln.kernel, kiln.num_stages = 2 : i32, kiln.num_warps = 4 : i32} {
    %v = arith.constant dense<1.0> : tensor<1024xf32, #b4>
    %w = arith.constant dense<2.0> : tensor<1024xf32, #b4>
    %a = "kiln.convert_layout"(%v) : (tensor<1024xf32, #b4>) -> tensor<1024xf32, #b8>
    %b = "kiln.convert_layout"(%v) : (tensor<1024xf32, #b4>) -> tensor<1024xf32, #b8>
    %c = "kiln.convert_layout"(%v) : (tensor<1024xf32, #b4>) -> tensor<1024xf32, #b2>
    %s = arith.addf %a, %b : tensor<1024xf32, #b8>
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %s) -> (tensor<1024xf32, #b8>) : i32 {
      %d = "kiln.convert_layout"(%v) : (tensor<1024xf32, #b4>) -> tensor<1024xf32, #b8>
      %e = "kiln.convert_layout"(%w) : (tensor<1024xf32, #b4>) -> tensor<1024xf32, #b8>
      %f = arith.mulf %d, %e : tensor<1024xf32, #b8>
      %g = arith.addf %acc, %f : tensor<1024xf32, #b8>
      scf.yield %g : tensor<1024xf32, #b8>
    }
    %h = "kiln.convert_layout"(%w) : (tensor<1024xf32, #b4>) -> tensor<1024xf32, #b8>
    %k = arith.addf %r, %h : tensor<1024xf32, #b8>
    return
  }
}
