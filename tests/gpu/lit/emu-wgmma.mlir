// RUN: %kiln-opt %s --target=emu --pass=kiln-gpu-to-emu | FileCheck %s
// RUN: sed -e 's/n8k16.f32.bf16.bf16/n8k16.f32.bf16.f16/' %s | %not %kiln-opt - --target=emu --pass=kiln-gpu-to-emu 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: sed -e 's/\$12, p, 1, 1, 1;/$12, p, 1, 1, 0, 1;/' %s | %not %kiln-opt - --target=emu --pass=kiln-gpu-to-emu 2>&1 | FileCheck %s --check-prefix=BAD-RS
// RUN: sed -e 's/%a3: i32/%a3: i64/; s/%a3, %db : (f32, f32, f32, f32, i32, i32, i32, i32/%a3, %db : (f32, f32, f32, f32, i32, i32, i32, i64/' %s | %not %kiln-opt - --target=emu --pass=kiln-gpu-to-emu 2>&1 | FileCheck %s --check-prefix=BAD-RS-TYPE
// The emu rewrite of sm_90's wgmma (the inline PTX of mlir-dialect/gpu/wgmma.c): the MMA
// becomes kiln_emu_wgmma with its accumulators through an entry alloca, the fence and the wait
// pass their registers through, the commit and the wait become kiln_emu_wgmma_commit and
// kiln_emu_wgmma_wait(K) (racecheck's pending reads), the async-proxy fence vanishes.  A wgmma text the
// writer would not produce (mixed operand types) is an error naming it.  The RS form (A from
// four i32 registers, B from its descriptor) becomes kiln_emu_wgmma_rs the same way; an
// immediate transpose of A in it, or an A register that is not i32, is an error.

// CHECK-DAG: llvm.func @kiln_emu_wgmma_rs(!llvm.ptr, i32, i32, i32, i32, i32, i32, i32, i64)
// CHECK-DAG: llvm.func @kiln_emu_wgmma(!llvm.ptr, i32, i32, i32, i32, i64, i64)
// CHECK-LABEL: llvm.func internal @wgmma_n8
// CHECK: %[[ACC:.*]] = llvm.alloca %{{.*}} x f32 {alignment = 16 : i64}
// CHECK-NOT: llvm.inline_asm
// CHECK: llvm.store %{{.*}}, %[[ACC]] : f32, !llvm.ptr
// CHECK: %[[S1:.*]] = llvm.getelementptr %[[ACC]][1] : (!llvm.ptr) -> !llvm.ptr, f32
// CHECK: llvm.store %{{.*}}, %[[S1]] : f32, !llvm.ptr
// CHECK: %[[N:.*]] = llvm.mlir.constant(8 : i32) : i32
// CHECK: %[[BF:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK: %[[TA:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK: %[[TB:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK: llvm.call @kiln_emu_wgmma(%[[ACC]], %[[N]], %[[BF]], %[[TA]], %[[TB]], %{{.*}}, %{{.*}}) : (!llvm.ptr, i32, i32, i32, i32, i64, i64) -> ()
// CHECK: %[[D0:.*]] = llvm.load %[[ACC]] : !llvm.ptr -> f32
// CHECK: llvm.load %[[S1]] : !llvm.ptr -> f32
// CHECK: %[[D:.*]] = llvm.insertvalue %{{.*}}, %{{.*}}[3] : !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NOT: llvm.inline_asm
// CHECK: llvm.call @kiln_emu_wgmma_commit() : () -> ()
// CHECK: %[[X:.*]] = llvm.extractvalue %[[D]][0]
// CHECK: %[[K:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK: llvm.call @kiln_emu_wgmma_wait(%[[K]]) : (i32) -> ()
// CHECK: llvm.insertvalue %[[X]], %{{.*}}[0]
// CHECK: %[[W:.*]] = llvm.insertvalue %{{.*}}, %{{.*}}[3]
// CHECK: %[[Y:.*]] = llvm.extractvalue %[[W]][0]
// CHECK: llvm.store %[[Y]], %arg0 : f32, !llvm.ptr

// CHECK-LABEL: llvm.func internal @wgmma_rs_n8
// CHECK-SAME: (%[[OUT:[^:]*]]: !llvm.ptr {{.*}}, %[[A0:[^:]*]]: i32 {{.*}}, %[[A1:[^:]*]]: i32 {{.*}}, %[[A2:[^:]*]]: i32 {{.*}}, %[[A3:[^:]*]]: i32 {{.*}}, %[[DB:[^:]*]]: i64
// CHECK: %[[RACC:.*]] = llvm.alloca %{{.*}} x f32 {alignment = 16 : i64}
// CHECK-NOT: llvm.inline_asm
// CHECK: llvm.store %{{.*}}, %[[RACC]] : f32, !llvm.ptr
// CHECK: %[[R3:.*]] = llvm.getelementptr %[[RACC]][3] : (!llvm.ptr) -> !llvm.ptr, f32
// CHECK: llvm.store %{{.*}}, %[[R3]] : f32, !llvm.ptr
// CHECK: %[[RN:.*]] = llvm.mlir.constant(8 : i32) : i32
// CHECK: %[[RBF:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK: %[[RTB:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK: llvm.call @kiln_emu_wgmma_rs(%[[RACC]], %[[RN]], %[[RBF]], %[[RTB]], %[[A0]], %[[A1]], %[[A2]], %[[A3]], %[[DB]]) : (!llvm.ptr, i32, i32, i32, i32, i32, i32, i32, i64) -> ()
// CHECK: llvm.load %[[RACC]] : !llvm.ptr -> f32
// CHECK: %[[L3:.*]] = llvm.load %[[R3]] : !llvm.ptr -> f32
// CHECK: %[[RD:.*]] = llvm.insertvalue %[[L3]], %{{.*}}[3] : !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NOT: llvm.inline_asm
// CHECK: %[[Z:.*]] = llvm.extractvalue %[[RD]][3]
// CHECK: llvm.store %[[Z]], %[[OUT]] : f32, !llvm.ptr

// BAD-RS: error: emu lowering: unsupported wgmma inline PTX '{
// BAD-RS: wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {$0, $1, $2, $3}, {$8, $9, $10, $11}, $12, p, 1, 1, 0, 1;
// BAD-RS-TYPE: error: emu lowering: wgmma m64n8k16 with A from registers needs 4 f32 accumulators, four i32 A registers and an i64 descriptor

// BAD: error: emu lowering: unsupported wgmma inline PTX '{
// BAD: wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.f16 {$0, $1, $2, $3}

module {
  llvm.func @wgmma_n8(%out: !llvm.ptr<1>, %da: i64, %db: i64) attributes {nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>} {
    %z = llvm.mlir.constant(0.0 : f32) : f32
    llvm.inline_asm has_side_effects asm_dialect = att "fence.proxy.async.shared::cta;", "" : () -> ()
    %f = llvm.inline_asm has_side_effects asm_dialect = att "wgmma.fence.sync.aligned;", "=f,=f,=f,=f,0,1,2,3" %z, %z, %z, %z : (f32, f32, f32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
    %f0 = llvm.extractvalue %f[0] : !llvm.struct<(f32, f32, f32, f32)>
    %f1 = llvm.extractvalue %f[1] : !llvm.struct<(f32, f32, f32, f32)>
    %f2 = llvm.extractvalue %f[2] : !llvm.struct<(f32, f32, f32, f32)>
    %f3 = llvm.extractvalue %f[3] : !llvm.struct<(f32, f32, f32, f32)>
    %m = llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p;\0Asetp.eq.u32 p, 1, 1;\0Awgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {$0, $1, $2, $3}, $8, $9, p, 1, 1, 0, 1;\0A}", "=f,=f,=f,=f,0,1,2,3,l,l" %f0, %f1, %f2, %f3, %da, %db : (f32, f32, f32, f32, i64, i64) -> !llvm.struct<(f32, f32, f32, f32)>
    llvm.inline_asm has_side_effects asm_dialect = att "wgmma.commit_group.sync.aligned;", "" : () -> ()
    %m0 = llvm.extractvalue %m[0] : !llvm.struct<(f32, f32, f32, f32)>
    %m1 = llvm.extractvalue %m[1] : !llvm.struct<(f32, f32, f32, f32)>
    %m2 = llvm.extractvalue %m[2] : !llvm.struct<(f32, f32, f32, f32)>
    %m3 = llvm.extractvalue %m[3] : !llvm.struct<(f32, f32, f32, f32)>
    %w = llvm.inline_asm has_side_effects asm_dialect = att "wgmma.wait_group.sync.aligned 0;", "=f,=f,=f,=f,0,1,2,3" %m0, %m1, %m2, %m3 : (f32, f32, f32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
    %x = llvm.extractvalue %w[0] : !llvm.struct<(f32, f32, f32, f32)>
    llvm.store %x, %out : f32, !llvm.ptr<1>
    llvm.return
  }
  llvm.func @wgmma_rs_n8(%out: !llvm.ptr<1>, %a0: i32, %a1: i32, %a2: i32, %a3: i32, %db: i64) attributes {nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>} {
    %z = llvm.mlir.constant(0.0 : f32) : f32
    %m = llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p;\0Asetp.eq.u32 p, 1, 1;\0Awgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {$0, $1, $2, $3}, {$8, $9, $10, $11}, $12, p, 1, 1, 1;\0A}", "=f,=f,=f,=f,0,1,2,3,r,r,r,r,l" %z, %z, %z, %z, %a0, %a1, %a2, %a3, %db : (f32, f32, f32, f32, i32, i32, i32, i32, i64) -> !llvm.struct<(f32, f32, f32, f32)>
    %m3 = llvm.extractvalue %m[3] : !llvm.struct<(f32, f32, f32, f32)>
    llvm.store %m3, %out : f32, !llvm.ptr<1>
    llvm.return
  }
}
