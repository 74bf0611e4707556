// widen-offsets: with --index-bits=64 the offsets that feed kiln.addptr are rebuilt in i64
// (through muli/addi/splat/broadcast/expand_dims, leaves sign-extended); data and masks keep
// i32.  With 32 (the default) nothing changes and the module records the promise.
// RUN: %kiln-opt %s --index-bits=64 --pass=widen-offsets | %FileCheck %s --check-prefix=WIDE
// RUN: %kiln-opt %s --pass=widen-offsets | %FileCheck %s --check-prefix=NARROW
// RUN: %not %kiln-opt %s --index-bits=48 --pass=widen-offsets 2>&1 | %FileCheck %s --check-prefix=BAD

// WIDE: module attributes {kiln.arg_elem_bytes = {rows = array<i32: 4, 0>}, kiln.index_bits = 64 : i32}
// WIDE-DAG: %[[PID:.*]] = arith.extsi %{{.*}} : i32 to i64
// WIDE-DAG: %[[N:.*]] = arith.extsi %arg1 : i32 to i64
// WIDE: %[[ROW:.*]] = arith.muli %[[PID]], %[[N]] : i64
// WIDE: %[[RS:.*]] = "kiln.splat"(%[[ROW]]) : (i64) -> tensor<8xi64>
// WIDE: %[[C:.*]] = arith.extsi %{{.*}} : tensor<8xi32> to tensor<8xi64>
// WIDE: %[[OFF:.*]] = arith.addi %[[RS]], %[[C]] : tensor<8xi64>
// WIDE: "kiln.addptr"(%{{.*}}, %[[OFF]]) : (tensor<8x!kiln.ptr<f32>>, tensor<8xi64>)
// WIDE: arith.cmpi slt, %{{.*}} : tensor<8xi32>
// NARROW: module attributes {kiln.arg_elem_bytes = {rows = array<i32: 4, 0>}, kiln.index_bits = 32 : i32}
// NARROW-NOT: i64
// BAD: --index-bits wants 32 or 64, not '48'
func.func @rows(%x: !kiln.ptr<f32>, %n: i32) attributes {kiln.kernel, kiln.num_warps = 1 : i32, kiln.num_stages = 1 : i32} {
  %pid = "kiln.program_id"() {axis = 0 : i32} : () -> i32
  %row = arith.muli %pid, %n : i32
  %r = "kiln.range"() {start = 0 : i32, end = 8 : i32} : () -> tensor<8xi32>
  %rs = "kiln.splat"(%row) : (i32) -> tensor<8xi32>
  %off = arith.addi %rs, %r : tensor<8xi32>
  %ps = "kiln.splat"(%x) : (!kiln.ptr<f32>) -> tensor<8x!kiln.ptr<f32>>
  %pa = "kiln.addptr"(%ps, %off) : (tensor<8x!kiln.ptr<f32>>, tensor<8xi32>) -> tensor<8x!kiln.ptr<f32>>
  %ns = "kiln.splat"(%n) : (i32) -> tensor<8xi32>
  %m = arith.cmpi slt, %r, %ns : tensor<8xi32>
  %z = arith.constant dense<0.0> : tensor<8xf32>
  %v = "kiln.load"(%pa, %m, %z) : (tensor<8x!kiln.ptr<f32>>, tensor<8xi1>, tensor<8xf32>) -> tensor<8xf32>
  "kiln.store"(%pa, %v, %m) : (tensor<8x!kiln.ptr<f32>>, tensor<8xf32>, tensor<8xi1>) -> ()
  return
}
