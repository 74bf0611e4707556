// RUN: %kiln-opt %s --full | %FileCheck %s --check-prefix=LLVM
// RUN: %kiln-opt %s --full --emit=llvm | %FileCheck %s --check-prefix=IR
// RUN: %kiln-opt %s --full --dump-after=kiln-dce | %FileCheck %s --check-prefix=DUMP
// RUN: %not %kiln-opt %s --full --dump-after=nope 2>&1 | %FileCheck %s --check-prefix=BADSTAGE
// RUN: %not %kiln-opt %s --full --target=sm_90 2>&1 | %FileCheck %s --check-prefix=TARGET
// RUN: %kiln-opt %s --pipeline=canonicalize,cse | %FileCheck %s --check-prefix=UPSTREAM

// LLVM: llvm.func @kiln_cpu_neg(%arg0: !llvm.ptr
// LLVM-NOT: memref.
// LLVM-NOT: scf.
// IR: define void @kiln_cpu_neg(ptr %0, i32 %1, i32 %2, i32 %3, i32 %4, i32 %5, i32 %6)
// DUMP: // -----// IR Dump After kiln-dce //----- //
// DUMP: func.func @neg
// DUMP: llvm.func @kiln_cpu_neg
// BADSTAGE: error: unknown pipeline stage 'nope'; valid stages: verify, kiln-dce, canonicalize, cse, convert-kiln-to-cpu
// TARGET: error: target 'sm_90' is lowered by the GPU pipeline (kiln_gpu_pipeline_run); this one is the cpu's
// UPSTREAM: "kiln.store"
func.func @neg(%x: !kiln.ptr<i32>) attributes {kiln.kernel, kiln.num_warps = 1 : i32, kiln.num_stages = 1 : i32} {
  %pid = "kiln.program_id"() {axis = 0 : i32} : () -> i32
  %r = "kiln.range"() {start = 0 : i32, end = 8 : i32} : () -> tensor<8xi32>
  %ps = "kiln.splat"(%x) : (!kiln.ptr<i32>) -> tensor<8x!kiln.ptr<i32>>
  %pa = "kiln.addptr"(%ps, %r) : (tensor<8x!kiln.ptr<i32>>, tensor<8xi32>) -> tensor<8x!kiln.ptr<i32>>
  %m = arith.constant dense<true> : tensor<8xi1>
  %z = arith.constant dense<0> : tensor<8xi32>
  %v = "kiln.load"(%pa, %m, %z) : (tensor<8x!kiln.ptr<i32>>, tensor<8xi1>, tensor<8xi32>) -> tensor<8xi32>
  %n = arith.subi %z, %v : tensor<8xi32>
  "kiln.store"(%pa, %n, %m) : (tensor<8x!kiln.ptr<i32>>, tensor<8xi32>, tensor<8xi1>) -> ()
  return
}
