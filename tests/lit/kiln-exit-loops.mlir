// RUN: %kiln-opt %s --pass=kiln-exit-loops | %FileCheck %s
// A loop marked kiln.exit_flag carries its break flag first: it becomes an scf.while that tests
// the flag (and, unless kiln.unbounded, its bound) before every iteration; the body moves into
// the while and yields the next induction value first.  Unmarked loops stay as they are.

// CHECK-LABEL: func.func @bounded
func.func @bounded(%lo: i32, %hi: i32, %x: f32) -> f32 {
  %c2 = arith.constant 2 : i32
  %false = arith.constant false
  // CHECK: [[W:%[0-9]+]]:3 = scf.while ([[I:%arg[0-9]+]] = %arg0, [[F:%arg[0-9]+]] = %false, [[A:%arg[0-9]+]] = %arg2) : (i32, i1, f32) -> (i32, i1, f32)
  // CHECK: [[GO:%[0-9]+]] = arith.xori [[F]], %true
  // CHECK: [[IN:%[0-9]+]] = arith.cmpi slt, [[I]], %arg1
  // CHECK: [[BOTH:%[0-9]+]] = arith.andi [[GO]], [[IN]]
  // CHECK: scf.condition([[BOTH]]) [[I]], [[F]], [[A]]
  // CHECK: } do {
  // CHECK: ^bb0([[I2:%arg[0-9]+]]: i32 {{.*}}, [[F2:%arg[0-9]+]]: i1 {{.*}}, [[A2:%arg[0-9]+]]: f32
  // CHECK: [[N:%[0-9]+]] = arith.addf [[A2]], [[A2]]
  // CHECK: [[NEXT:%[0-9]+]] = arith.addi [[I2]], %c2_i32
  // CHECK: scf.yield [[NEXT]], {{%[0-9]+}}, [[N]]
  // CHECK-NOT: scf.for
  // CHECK: return [[W]]#2
  %r:2 = scf.for %i = %lo to %hi step %c2 iter_args(%stop = %false, %a = %x) -> (i1, f32) : i32 {
    %n = arith.addf %a, %a : f32
    %t = arith.cmpf ogt, %n, %x : f32
    %s = arith.ori %stop, %t : i1
    scf.yield %s, %n : i1, f32
  } {kiln.exit_flag}
  return %r#1 : f32
}

// CHECK-LABEL: func.func @unbounded
func.func @unbounded(%x: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %max = arith.constant 2147483647 : i32
  %false = arith.constant false
  // CHECK: scf.while
  // CHECK: [[GO:%[0-9]+]] = arith.xori
  // CHECK-NOT: arith.cmpi
  // CHECK: scf.condition([[GO]])
  %r:2 = scf.for %i = %c0 to %max step %c1 iter_args(%stop = %false, %a = %x) -> (i1, i32) : i32 {
    %n = arith.addi %a, %c1 : i32
    %t = arith.cmpi sgt, %n, %x : i32
    scf.yield %t, %n : i1, i32
  } {kiln.exit_flag, kiln.unbounded}
  return %r#1 : i32
}

// CHECK-LABEL: func.func @unmarked
func.func @unmarked(%lo: i32, %hi: i32, %x: f32) -> f32 {
  %c1 = arith.constant 1 : i32
  // CHECK: scf.for
  // CHECK-NOT: scf.while
  %r = scf.for %i = %lo to %hi step %c1 iter_args(%a = %x) -> (f32) : i32 {
    %n = arith.addf %a, %a : f32
    scf.yield %n : f32
  }
  return %r : f32
}
