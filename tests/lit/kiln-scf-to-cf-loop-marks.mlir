// RUN: %kiln-opt %s --pass=kiln-scf-to-cf | %FileCheck %s
// RUN: %kiln-opt %s --full | %FileCheck %s --check-prefix=LLVM
// A loop's attributes from the llvm dialect (the unroll mark the CPU lowering puts on the outer
// loops of a tile's nest) go on the branch that closes the loop, where LLVM reads a loop's
// metadata, and stay there down to the llvm dialect; other attributes stay behind.

// CHECK-LABEL: func.func @marked
// CHECK: cf.cond_br
// CHECK: arith.addi
// CHECK: cf.br ^bb1({{.*}}) {loop_annotation = #{{.*}}}
// CHECK-NOT: kiln.other
// LLVM: llvm.br ^bb1({{.*}}) {loop_annotation = #{{.*}}}
func.func @marked(%lo: index, %hi: index, %p: memref<8xf32>, %x: f32) {
  %c1 = arith.constant 1 : index
  scf.for %i = %lo to %hi step %c1 {
    memref.store %x, %p[%i] : memref<8xf32>
  } {loop_annotation = #llvm.loop_annotation<unroll = <disable = true>>, kiln.other}
  return
}
