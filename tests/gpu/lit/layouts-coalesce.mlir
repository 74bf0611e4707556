// RUN: %kiln-opt %s --pass=kiln-gpu-layouts | FileCheck %s
// RUN: %kiln-opt %s --pass=kiln-gpu-layouts --num-warps=8 | FileCheck %s --check-prefix=W8
// Coalescing: a contiguous f16 tile from a 16-byte aligned kernel pointer gets 8 elements
// (128 bits) per thread along its only dim, lanes then warps after each other; the mask and the
// stored value share the layout, so no convert_layout is needed.

// CHECK-LABEL: func.func @copy
// CHECK: "kiln.load"{{.*}} -> tensor<1024xf16, {kind = "blocked", order = array<i32: 0>, sizePerThread = array<i32: 8>, threadsPerWarp = array<i32: 32>, warpsPerCTA = array<i32: 4>}>
// CHECK-NOT: kiln.convert_layout
// W8: sizePerThread = array<i32: 4>, threadsPerWarp = array<i32: 32>, warpsPerCTA = array<i32: 8>
module {
  func.func @copy(%x: !kiln.ptr<f16>, %y: !kiln.ptr<f16>, %n: i32) attributes {kiln.kernel, kiln.num_stages = 2 : i32, kiln.num_warps = 4 : i32} {
    %pid = "kiln.program_id"() {axis = 0 : i32} : () -> i32
    %c = arith.constant 1024 : i32
    %base = arith.muli %pid, %c : i32
    %bs = "kiln.splat"(%base) : (i32) -> tensor<1024xi32>
    %r = "kiln.range"() {start = 0 : i32, end = 1024 : i32} : () -> tensor<1024xi32>
    %offs = arith.addi %bs, %r : tensor<1024xi32>
    %ns = "kiln.splat"(%n) : (i32) -> tensor<1024xi32>
    %m = arith.cmpi slt, %offs, %ns : tensor<1024xi32>
    %xp = "kiln.splat"(%x) : (!kiln.ptr<f16>) -> tensor<1024x!kiln.ptr<f16>>
    %xa = "kiln.addptr"(%xp, %offs) : (tensor<1024x!kiln.ptr<f16>>, tensor<1024xi32>) -> tensor<1024x!kiln.ptr<f16>>
    %z = arith.constant dense<0.0> : tensor<1024xf16>
    %v = "kiln.load"(%xa, %m, %z) : (tensor<1024x!kiln.ptr<f16>>, tensor<1024xi1>, tensor<1024xf16>) -> tensor<1024xf16>
    %yp = "kiln.splat"(%y) : (!kiln.ptr<f16>) -> tensor<1024x!kiln.ptr<f16>>
    %ya = "kiln.addptr"(%yp, %offs) : (tensor<1024x!kiln.ptr<f16>>, tensor<1024xi32>) -> tensor<1024x!kiln.ptr<f16>>
    "kiln.store"(%ya, %v, %m) : (tensor<1024x!kiln.ptr<f16>>, tensor<1024xf16>, tensor<1024xi1>) -> ()
    return
  }
}
