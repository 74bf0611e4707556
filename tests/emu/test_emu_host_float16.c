/* test_emu_host_float16.c - host code keeps 16-bit floats out of registers across blocks and calls
 * (kiln_host_float16_fixup, mlir-dialect/host_float16.c).
 *
 * Why: the emu target's sanitizer hooks put calls and branches between a load and its use. LLVM's
 * x86 back end holds a bf16 value that lives across them in an f32 register and rounds it back
 * with vcvtneps2bf16 on AVX-512 BF16 hosts, flushing subnormals; numeric.emu.float_convert caught
 * that, but only on such a host. This test checks the property the fix gives on any host: after
 * the fixup, every f16/bf16 value (scalar or vector) is used only in its own block, with no call
 * between it and its use, and no f32 <-> bf16 conversion instruction is left for the back end to
 * choose. The module mixes the cases: a bf16 load used across a call and a branch, lane moves, a
 * phi, an f16 value used by arithmetic, conversions both ways; and a loop whose body is laid out
 * before its header (a bf16 max reduction). It must also still verify. */
#include "kiln_mlir_internal.h"

#include "llvm-c/Analysis.h"
#include "llvm-c/Core.h"
#include "llvm-c/IRReader.h"

#include <stdio.h>

#include "../common/check.h"

static const char module_ir[] =
    "declare void @hook(ptr)\n"
    "define void @k(ptr %in, ptr %out, ptr %out32, i1 %c) {\n"
    "entry:\n"
    "  %v = load bfloat, ptr %in, align 2\n"
    "  %h = load half, ptr %in, align 2\n"
    "  %vv = load <4 x bfloat>, ptr %in, align 8\n"
    "  call void @hook(ptr %in)\n"
    "  br i1 %c, label %a, label %b\n"
    "a:\n"
    "  %vec = insertelement <2 x bfloat> undef, bfloat %v, i32 0\n"
    "  %e = extractelement <2 x bfloat> %vec, i32 0\n"
    "  %w = fpext bfloat %e to float\n"
    "  store float %w, ptr %out32, align 4\n"
    "  %t = fptrunc float %w to bfloat\n"
    "  call void @hook(ptr %out)\n"
    "  %n = fneg bfloat %t\n"
    "  br label %b\n"
    "b:\n"
    "  %p = phi bfloat [ %v, %entry ], [ %n, %a ]\n"
    "  %sh = shufflevector <4 x bfloat> %vv, <4 x bfloat> undef, <4 x i32> <i32 3, i32 2, i32 1, "
    "i32 0>\n"
    "  %wx = fpext <4 x bfloat> %sh to <4 x float>\n"
    "  store <4 x float> %wx, ptr %out32, align 16\n"
    "  %s = fadd half %h, %h\n"
    "  store half %s, ptr %out, align 2\n"
    "  store bfloat %p, ptr %out, align 2\n"
    "  ret void\n"
    "}\n"
    /* a max reduction's loop laid out body first, as LLVM's loop rotation leaves it: the
     * fixup meets the select before the phi it feeds back into (it mirrored the select twice
     * and erased it twice: a crash) */
    "define void @loop(ptr %in, ptr %out, i32 %n) {\n"
    "entry:\n"
    "  %x0 = load bfloat, ptr %in, align 2\n"
    "  br label %head\n"
    "body:\n"
    "  %g = fcmp ugt bfloat %acc, %x0\n"
    "  %sel = select i1 %g, bfloat %acc, bfloat %x0\n"
    "  %i2 = add i32 %i, 1\n"
    "  br label %head\n"
    "head:\n"
    "  %acc = phi bfloat [ %x0, %entry ], [ %sel, %body ]\n"
    "  %i = phi i32 [ 0, %entry ], [ %i2, %body ]\n"
    "  %more = icmp slt i32 %i, %n\n"
    "  br i1 %more, label %body, label %exit\n"
    "exit:\n"
    "  store bfloat %acc, ptr %out, align 2\n"
    "  ret void\n"
    "}\n";

static LLVMTypeKind elem_kind(LLVMTypeRef t) {
  LLVMTypeKind k = LLVMGetTypeKind(t);
  return k == LLVMVectorTypeKind ? LLVMGetTypeKind(LLVMGetElementType(t)) : k;
}

static bool is_float16(LLVMTypeRef t) {
  LLVMTypeKind k = elem_kind(t);
  return k == LLVMHalfTypeKind || k == LLVMBFloatTypeKind;
}

/* Whether user u of `def` sits later in def's block with no call in between. */
static bool used_nearby(LLVMValueRef def, LLVMValueRef u) {
  if (LLVMGetInstructionParent(u) != LLVMGetInstructionParent(def)) return false;
  for (LLVMValueRef in = LLVMGetNextInstruction(def); in; in = LLVMGetNextInstruction(in)) {
    if (in == u) return true;
    if (LLVMIsACallInst(in)) return false;
  }
  return false;
}

static void check_function(LLVMValueRef fn) {
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in)) {
      LLVMOpcode op = LLVMGetInstructionOpcode(in);
      bool conv = (op == LLVMFPTrunc || op == LLVMFPExt) &&
                  (elem_kind(LLVMTypeOf(in)) == LLVMBFloatTypeKind ||
                   elem_kind(LLVMTypeOf(LLVMGetOperand(in, 0))) == LLVMBFloatTypeKind);
      char *text = LLVMPrintValueToString(in);
      CHECK(!conv, "a bf16 conversion is left to the back end: %s", text);
      CHECK(op != LLVMPHI || !is_float16(LLVMTypeOf(in)), "a 16-bit float phi: %s", text);
      if (is_float16(LLVMTypeOf(in)))
        for (LLVMUseRef u = LLVMGetFirstUse(in); u; u = LLVMGetNextUse(u)) {
          char *ut = LLVMPrintValueToString(LLVMGetUser(u));
          CHECK(used_nearby(in, LLVMGetUser(u)),
                "16-bit float %s lives across a block or a call to its use %s", text, ut);
          LLVMDisposeMessage(ut);
        }
      LLVMDisposeMessage(text);
    }
}

int main(void) {
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMMemoryBufferRef buf =
      LLVMCreateMemoryBufferWithMemoryRangeCopy(module_ir, sizeof module_ir - 1, "t");
  LLVMModuleRef mod = NULL;
  char *msg = NULL;
  if (LLVMParseIRInContext(ctx, buf, &mod, &msg)) {
    fprintf(stderr, "test module: %s\n", msg ? msg : "parse error");
    LLVMDisposeMessage(msg);
    LLVMContextDispose(ctx);
    return 1;
  }
  char err[256];
  CHECK(kiln_host_builtins_link(mod, err, sizeof err), "builtins: %s", err);
  kiln_host_float16_fixup(mod);
  char *vmsg = NULL;
  CHECK(!LLVMVerifyModule(mod, LLVMReturnStatusAction, &vmsg), "the fixed module: %s", vmsg);
  LLVMDisposeMessage(vmsg);
  check_function(LLVMGetNamedFunction(mod, "k"));
  check_function(LLVMGetNamedFunction(mod, "loop"));
  LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  if (!failures) printf("host float16: no 16-bit float crosses a block or a call\n");
  return kiln_check_result("test_emu_host_float16");
}
