// RUN: %kiln-opt %s --pass=kiln-cpu-math | %FileCheck %s
// RUN: %kiln-opt %s --pass=kiln-cpu-math --pass=convert-math-to-llvm --pass=convert-math-to-libm | %FileCheck %s --check-prefix=CALLS
// kiln-cpu-math (mlir-dialect/cpu/cpu_math.c): scalar exp, exp2, erf and tanh of f32 become
// arithmetic (f16 through f32, rounded once), so no libm call is left in the nest; f64 and
// vector ops stay math ops for math-to-llvm and math-to-libm.

// CHECK-LABEL: func.func @f32_fns
// CHECK-NOT: math.exp
// CHECK-NOT: math.erf
// CHECK-NOT: math.tanh
// exp: 1.5 * 2^23 rounds x log2 e; its bit pattern less 0x4B400000 is n
// CHECK: arith.constant 0x4B400000 : f32
// CHECK: arith.bitcast %{{.*}} : f32 to i32
// CHECK: arith.constant 1262485504 : i32
// CHECK: arith.shrsi
// CHECK: arith.shli
// CHECK: arith.cmpf uno
// CHECK: math.copysign
// CHECK: return
// CALLS-LABEL: func.func @f32_fns
// CALLS-NOT: call @erff
// CALLS-NOT: call @tanhf
// CALLS-NOT: llvm.intr.exp
// CALLS: return
func.func @f32_fns(%x: f32) -> (f32, f32, f32, f32) {
  %0 = math.exp %x : f32
  %1 = math.exp2 %x : f32
  %2 = math.erf %x : f32
  %3 = math.tanh %x : f32
  return %0, %1, %2, %3 : f32, f32, f32, f32
}

// CHECK-LABEL: func.func @other_types
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: math.exp %{{.*}} : f64
// CHECK: math.erf %{{.*}} : vector<4xf32>
// CALLS-LABEL: func.func @other_types
// CALLS: llvm.intr.exp({{.*}}) : (f64) -> f64
// CALLS: call @erff
func.func @other_types(%h: f16, %d: f64, %v: vector<4xf32>) -> (f16, f64, vector<4xf32>) {
  %0 = math.exp %h : f16
  %1 = math.exp %d : f64
  %2 = math.erf %v : vector<4xf32>
  return %0, %1, %2 : f16, f64, vector<4xf32>
}
