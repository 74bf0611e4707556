// RUN: %kiln-opt %s --pass=kiln-scf-to-cf | %FileCheck %s
// RUN: %kiln-opt %s --pass=kiln-scf-to-cf --pass=convert-scf-to-cf --pipeline=canonicalize > %t.ours
// RUN: %kiln-opt %s --pass=convert-scf-to-cf --pipeline=canonicalize > %t.upstream
// RUN: diff %t.ours %t.upstream
// kiln-scf-to-cf makes the CFG upstream's convert-scf-to-cf makes (the last three lines: the same
// IR once canonicalized), in linear time: scf.if becomes a cond_br to its then and else blocks,
// which branch to a continuation that takes its results; scf.for a test block on its arguments, a
// body whose latch steps the induction variable, and an exit (the loop's llvm.* attributes move
// to the latch: kiln-scf-to-cf-loop-marks.mlir).  Ops inside an op it does not lower (scf.while) stay for upstream.

// CHECK-LABEL: func.func @if_else
// CHECK: cf.cond_br %arg0, ^[[THEN:bb[0-9]+]], ^[[ELSE:bb[0-9]+]]
// CHECK: ^[[THEN]]:
// CHECK: [[A:%[0-9]+]] = arith.addf %arg1, %arg1
// CHECK: cf.br ^[[CONT:bb[0-9]+]]([[A]] : f32)
// CHECK: ^[[ELSE]]:
// CHECK: cf.br ^[[CONT]](%arg1 : f32)
// CHECK: ^[[CONT]]([[R:%[0-9]+]]: f32
// CHECK: [[M:%[0-9]+]] = arith.mulf [[R]], [[R]]
// CHECK: return [[M]]
// CHECK-NOT: scf.
func.func @if_else(%c: i1, %x: f32) -> f32 {
  %r = scf.if %c -> f32 {
    %a = arith.addf %x, %x : f32
    scf.yield %a : f32
  } else {
    scf.yield %x : f32
  }
  %m = arith.mulf %r, %r : f32
  return %m : f32
}

// Two ifs in one block and no else: the false edge goes straight to the continuation.
// CHECK-LABEL: func.func @two_ifs
// CHECK: cf.cond_br %arg0, ^[[T1:bb[0-9]+]], ^[[C1:bb[0-9]+]]
// CHECK: ^[[T1]]:
// CHECK: memref.store %arg2, %arg3[]
// CHECK: cf.br ^[[C1]]
// CHECK: ^[[C1]]:
// CHECK: cf.cond_br %arg1, ^[[T2:bb[0-9]+]], ^[[C2:bb[0-9]+]]
// CHECK: ^[[T2]]:
// CHECK: memref.store %arg2, %arg4[]
// CHECK: cf.br ^[[C2]]
// CHECK: ^[[C2]]:
// CHECK-NEXT: return
func.func @two_ifs(%a: i1, %b: i1, %x: f32, %p: memref<f32>, %q: memref<f32>) {
  scf.if %a {
    memref.store %x, %p[] : memref<f32>
  }
  scf.if %b {
    memref.store %x, %q[] : memref<f32>
  }
  return
}

// A loop with an if inside.
// CHECK-LABEL: func.func @loop
// CHECK: cf.br ^[[COND:bb[0-9]+]](%arg0, %arg3 : i32, f32)
// CHECK: ^[[COND]]([[I:%[0-9]+]]: i32 {{.*}}, [[ACC:%[0-9]+]]: f32
// CHECK: [[GO:%[0-9]+]] = arith.cmpi slt, [[I]], %arg1
// CHECK: cf.cond_br [[GO]], ^[[BODY:bb[0-9]+]], ^[[END:bb[0-9]+]]
// CHECK: ^[[BODY]]:
// CHECK: [[POS:%[0-9]+]] = arith.cmpi sgt, [[I]], %arg0
// CHECK: cf.cond_br [[POS]]
// CHECK: [[NEXT:%[0-9]+]] = arith.addi [[I]], %arg2
// CHECK: cf.br ^[[COND]]([[NEXT]], {{%[0-9]+}} : i32, f32)
// CHECK: ^[[END]]:
// CHECK: return [[ACC]]
// CHECK-NOT: scf.
func.func @loop(%lo: i32, %hi: i32, %step: i32, %x: f32) -> f32 {
  %r = scf.for %i = %lo to %hi step %step iter_args(%acc = %x) -> (f32) : i32 {
    %pos = arith.cmpi sgt, %i, %lo : i32
    %n = scf.if %pos -> f32 {
      %d = arith.addf %acc, %acc : f32
      scf.yield %d : f32
    } else {
      scf.yield %acc : f32
    }
    scf.yield %n : f32
  }
  return %r : f32
}

// An if inside an scf.while is upstream's (the while's regions keep one block each).
// CHECK-LABEL: func.func @in_while
// CHECK: scf.while
// CHECK: scf.if
func.func @in_while(%x: i32, %n: i32) -> i32 {
  %c1 = arith.constant 1 : i32
  %r = scf.while (%a = %x) : (i32) -> i32 {
    %go = arith.cmpi slt, %a, %n : i32
    scf.condition(%go) %a : i32
  } do {
  ^bb0(%a: i32):
    %odd = arith.trunci %a : i32 to i1
    %b = scf.if %odd -> i32 {
      %s = arith.addi %a, %c1 : i32
      scf.yield %s : i32
    } else {
      %s = arith.addi %a, %a : i32
      scf.yield %s : i32
    }
    scf.yield %b : i32
  }
  return %r : i32
}
