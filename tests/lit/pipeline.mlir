// RUN: %kiln-opt %s --full | %FileCheck %s --check-prefix=LLVM
// RUN: %kiln-opt %s --full --emit=llvm | %FileCheck %s --check-prefix=IR
// RUN: %kiln-opt %s --full --dump-after=kiln-dce | %FileCheck %s --check-prefix=DUMP
// RUN: %not %kiln-opt %s --full --dump-after=nope 2>&1 | %FileCheck %s --check-prefix=BADSTAGE
// RUN: %kiln-opt %s --full --target=sm_90 | %FileCheck %s --check-prefix=GPU
// RUN: %kiln-opt %s --full --target=emu --stop-after=kiln-gpu-layouts | %FileCheck %s --check-prefix=LAYOUTS
// RUN: %kiln-opt --list-stages --target=emu | %FileCheck %s --check-prefix=EMUSTAGES
// RUN: %not %kiln-opt %s --full --target=sm_42 2>&1 | %FileCheck %s --check-prefix=TARGET
// RUN: %kiln-opt %s --pipeline=canonicalize,cse | %FileCheck %s --check-prefix=UPSTREAM

// LLVM: llvm.func @kiln_cpu_neg(%arg0: !llvm.ptr
// LLVM-NOT: memref.
// LLVM-NOT: scf.
// IR: define void @kiln_cpu_neg(ptr %0, i32 %1, i32 %2, i32 %3, i32 %4, i32 %5, i32 %6)
// DUMP: // -----// IR Dump After kiln-dce //----- //
// DUMP: func.func @neg
// DUMP: llvm.func @kiln_cpu_neg
// BADSTAGE: error: unknown pipeline stage 'nope'; valid stages: verify, widen-offsets, kiln-dce, canonicalize, cse, convert-kiln-to-cpu
// GPU: llvm.func @neg(%arg0: !llvm.ptr<1>
// GPU-SAME: nvvm.kernel
// LAYOUTS: "kiln.load"{{.*}}kind = "blocked"
// LAYOUTS-NOT: llvm.func
// EMUSTAGES: verify
// EMUSTAGES-NEXT: widen-offsets
// EMUSTAGES-NEXT: kiln-dce
// EMUSTAGES-NEXT: kiln-gpu-layouts
// EMUSTAGES-NEXT: kiln-gpu-convert-cse
// EMUSTAGES: canonicalize
// EMUSTAGES-NEXT: kiln-gpu-to-emu
// TARGET: kiln-opt: error: unknown target 'sm_42' (known: cpu, emu, sm_80, sm_90)
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
