/* host_float16.c - 16-bit floats (f16, bf16) in host objects, made to behave the same on every
 * x86-64 and aarch64 CPU, bit for bit as the plain C conversions the tests use as references
 * (tests/numeric/reference.c), for every non-NaN value; NaNs stay NaNs.
 *
 * Two things LLVM's code generator does with them had to be kept out:
 *
 * 1. Runtime-library calls. Where a CPU has no instruction for a conversion, the code generator
 *    calls a compiler runtime function: __truncsfbf2 (f32 -> bf16), __truncsfhf2 and
 *    __extendhfsf2 (f32 <-> f16 without F16C). GCC's libgcc has the f16 pair from GCC 12 but
 *    __truncsfbf2 only from GCC 13, and Debian 12 ships GCC 12, so an object built for a CPU
 *    without AVX-512 BF16 did not load there. Each object therefore carries its own definitions
 *    (kiln_host_builtins_link): weak (a runtime library's copy may win; both compute the same),
 *    hidden (never exported from the shared object the object becomes), written in LLVM IR so
 *    that the code generator compiles them for the same CPU and calling convention as the calls.
 *    They round to nearest, ties to even, keep the sign and infinities, turn NaNs into quiet
 *    NaNs with their top payload bits, and handle f16 subnormals exactly. Branch-free: every
 *    case is computed, then selected; shift amounts are clamped first so that no selected value
 *    is poison.
 *
 * 2. Moves through f32. A 16-bit float that is only moved (a masked load's phi, a select) is
 *    promoted to f32 and rounded back; on a CPU with AVX-512 BF16 the rounding back is
 *    vcvtneps2bf16, which flushes subnormals to zero, so a masked load turned bf16 subnormals
 *    into zeros. kiln_host_float16_fixup rewrites every phi and select of f16/bf16 (scalar or
 *    vector) to the same operation on 16-bit integers with bitcasts around it, after LLVM's
 *    optimizations (which would fold the bitcasts back) and before code generation. For the
 *    same reason an f32 -> bf16 conversion (the emu target's; the cpu target's are integer code
 *    from MLIR's arith-expand) becomes a call of the module's own __truncsfbf2 everywhere, as
 *    a GPU's cvt.rn.bf16.f32 keeps subnormals too. */
#include "kiln_mlir_internal.h"

#include "llvm-c/Core.h"
#include "llvm-c/IRReader.h"
#include "llvm-c/Linker.h"

#include <stdio.h>

static const char builtins_ir[] =
    /* f32 -> bf16: bf16 is the top half of f32; add 0x7fff plus the kept half's lowest bit and
     * truncate (a carry correctly reaches the exponent, up to inf). NaN: top half | quiet bit. */
    "define weak hidden bfloat @__truncsfbf2(float %f) {\n"
    "  %x = bitcast float %f to i32\n"
    "  %mag = and i32 %x, 2147483647\n"
    "  %nan = icmp ugt i32 %mag, 2139095040\n"
    "  %top = lshr i32 %x, 16\n"
    "  %odd = and i32 %top, 1\n"
    "  %bias = add i32 %odd, 32767\n"
    "  %sum = add i32 %x, %bias\n"
    "  %rounded = lshr i32 %sum, 16\n"
    "  %quiet = or i32 %top, 64\n"
    "  %r = select i1 %nan, i32 %quiet, i32 %rounded\n"
    "  %h = trunc i32 %r to i16\n"
    "  %b = bitcast i16 %h to bfloat\n"
    "  ret bfloat %b\n"
    "}\n"
    /* f32 -> f16. exp = f32 biased exponent, e = exp - 112 the f16 one.
     *   exp 255: inf, or a NaN with its top payload and the quiet bit
     *   e >= 31: overflow to inf
     *   e <= 0: subnormal (or zero): (man | 1 << 23) >> (126 - exp) rounded; zero past 25
     *   else: (e << 10 | man >> 13) rounded on the 13 dropped bits (a carry may reach inf) */
    "define weak hidden half @__truncsfhf2(float %f) {\n"
    "  %x = bitcast float %f to i32\n"
    "  %hi = lshr i32 %x, 16\n"
    "  %sign = and i32 %hi, 32768\n"
    "  %exp0 = lshr i32 %x, 23\n"
    "  %exp = and i32 %exp0, 255\n"
    "  %man = and i32 %x, 8388607\n"
    /* inf / NaN */
    "  %isinfnan = icmp eq i32 %exp, 255\n"
    "  %hasman = icmp ne i32 %man, 0\n"
    "  %payload = lshr i32 %man, 13\n"
    "  %qpayload = or i32 %payload, 512\n"
    "  %nanbits = select i1 %hasman, i32 %qpayload, i32 0\n"
    "  %special0 = or i32 %sign, 31744\n"
    "  %special = or i32 %special0, %nanbits\n"
    /* overflow */
    "  %e = sub i32 %exp, 112\n"
    "  %over = icmp sge i32 %e, 31\n"
    "  %inf = or i32 %sign, 31744\n"
    /* subnormal: shift = 126 - exp, in 14..25 where used */
    "  %sub = icmp sle i32 %e, 0\n"
    "  %shift0 = sub i32 126, %exp\n"
    "  %tiny = icmp ugt i32 %shift0, 25\n"
    "  %shift1 = select i1 %tiny, i32 25, i32 %shift0\n"
    "  %big = icmp ult i32 %shift1, 14\n"
    "  %shift = select i1 %big, i32 14, i32 %shift1\n"
    "  %m = or i32 %man, 8388608\n"
    "  %sq = lshr i32 %m, %shift\n"
    "  %one = shl i32 1, %shift\n"
    "  %mask = sub i32 %one, 1\n"
    "  %srest = and i32 %m, %mask\n"
    "  %shm1 = sub i32 %shift, 1\n"
    "  %shalf = shl i32 1, %shm1\n"
    "  %sabove = icmp ugt i32 %srest, %shalf\n"
    "  %stie = icmp eq i32 %srest, %shalf\n"
    "  %sodd0 = and i32 %sq, 1\n"
    "  %sodd = icmp ne i32 %sodd0, 0\n"
    "  %stieodd = and i1 %stie, %sodd\n"
    "  %sup = or i1 %sabove, %stieodd\n"
    "  %sinc = zext i1 %sup to i32\n"
    "  %sq1 = add i32 %sq, %sinc\n"
    "  %subv0 = or i32 %sign, %sq1\n"
    "  %subv = select i1 %tiny, i32 %sign, i32 %subv0\n"
    /* normal */
    "  %eb = shl i32 %e, 10\n"
    "  %mtop = lshr i32 %man, 13\n"
    "  %n0 = or i32 %eb, %mtop\n"
    "  %nrest = and i32 %man, 8191\n"
    "  %nabove = icmp ugt i32 %nrest, 4096\n"
    "  %ntie = icmp eq i32 %nrest, 4096\n"
    "  %nodd0 = and i32 %n0, 1\n"
    "  %nodd = icmp ne i32 %nodd0, 0\n"
    "  %ntieodd = and i1 %ntie, %nodd\n"
    "  %nup = or i1 %nabove, %ntieodd\n"
    "  %ninc = zext i1 %nup to i32\n"
    "  %n1 = add i32 %n0, %ninc\n"
    "  %normal = or i32 %sign, %n1\n"
    /* select: special, then overflow, then subnormal, else normal */
    "  %r0 = select i1 %sub, i32 %subv, i32 %normal\n"
    "  %r1 = select i1 %over, i32 %inf, i32 %r0\n"
    "  %r2 = select i1 %isinfnan, i32 %special, i32 %r1\n"
    "  %h = trunc i32 %r2 to i16\n"
    "  %b = bitcast i16 %h to half\n"
    "  ret half %b\n"
    "}\n"
    /* f16 -> f32: exact. exp 31: inf/NaN with the payload moved up; exp 0: man * 2^-24 (exact
     * in f32) with the sign; else the exponent rebiased (+112). */
    "define weak hidden float @__extendhfsf2(half %h) {\n"
    "  %hb = bitcast half %h to i16\n"
    "  %x = zext i16 %hb to i32\n"
    "  %sign0 = and i32 %x, 32768\n"
    "  %sign = shl i32 %sign0, 16\n"
    "  %exp0 = lshr i32 %x, 10\n"
    "  %exp = and i32 %exp0, 31\n"
    "  %man = and i32 %x, 1023\n"
    "  %manhi = shl i32 %man, 13\n"
    "  %isinfnan = icmp eq i32 %exp, 31\n"
    "  %special0 = or i32 %sign, 2139095040\n"
    "  %special = or i32 %special0, %manhi\n"
    "  %iszero = icmp eq i32 %exp, 0\n"
    "  %mf = uitofp i32 %man to float\n"
    "  %sv = fmul float %mf, 0x3E70000000000000\n"
    "  %svb = bitcast float %sv to i32\n"
    "  %subv = or i32 %svb, %sign\n"
    "  %eb0 = add i32 %exp, 112\n"
    "  %eb = shl i32 %eb0, 23\n"
    "  %n0 = or i32 %sign, %eb\n"
    "  %normal = or i32 %n0, %manhi\n"
    "  %r0 = select i1 %iszero, i32 %subv, i32 %normal\n"
    "  %r1 = select i1 %isinfnan, i32 %special, i32 %r0\n"
    "  %f = bitcast i32 %r1 to float\n"
    "  ret float %f\n"
    "}\n";

bool kiln_host_builtins_link(LLVMModuleRef mod, char *err, size_t cap) {
  LLVMContextRef llctx = LLVMGetModuleContext(mod);
  /* the parser takes the buffer; the text is static, so the buffer does not copy it */
  LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRange(
      builtins_ir, sizeof builtins_ir - 1, "kiln-host-builtins", 0);
  LLVMModuleRef builtins = NULL;
  char *msg = NULL;
  if (LLVMParseIRInContext(llctx, buf, &builtins, &msg)) {
    snprintf(err, cap, "%s", msg ? msg : "parse error");
    LLVMDisposeMessage(msg);
    return false;
  }
  LLVMSetTarget(builtins, LLVMGetTarget(mod));
  LLVMSetDataLayout(builtins, LLVMGetDataLayoutStr(mod));
  /* consumes `builtins`; fails only if the module already defines one of these reserved names */
  if (LLVMLinkModules2(mod, builtins)) {
    snprintf(err, cap, "the module already defines a conversion builtin");
    return false;
  }
  return true;
}

/* ---- moves as integers ------------------------------------------------------------------------ */

static bool is_vector(LLVMTypeRef t) {
  LLVMTypeKind k = LLVMGetTypeKind(t);
  return k == LLVMVectorTypeKind || k == LLVMScalableVectorTypeKind;
}

static bool is_float16(LLVMTypeRef t) {
  if (is_vector(t)) t = LLVMGetElementType(t);
  LLVMTypeKind k = LLVMGetTypeKind(t);
  return k == LLVMHalfTypeKind || k == LLVMBFloatTypeKind;
}

/* The 16-bit integer type of the same shape as t. */
static LLVMTypeRef int16_like(LLVMTypeRef t) {
  LLVMTypeRef i16 = LLVMInt16TypeInContext(LLVMGetTypeContext(t));
  if (is_vector(t)) {
    unsigned n = LLVMGetVectorSize(t);
    return LLVMGetTypeKind(t) == LLVMScalableVectorTypeKind ? LLVMScalableVectorType(i16, n)
                                                            : LLVMVectorType(i16, n);
  }
  return i16;
}

/* v as `it`: a constant folds; an instruction's value is cast where the builder stands. */
static LLVMValueRef as_type(LLVMBuilderRef b, LLVMValueRef v, LLVMTypeRef it) {
  if (LLVMIsConstant(v)) return LLVMConstBitCast(v, it);
  return LLVMBuildBitCast(b, v, it, "");
}

static void rewrite_phi(LLVMBuilderRef b, LLVMValueRef phi) {
  LLVMTypeRef t = LLVMTypeOf(phi), it = int16_like(t);
  LLVMBasicBlockRef bb = LLVMGetInstructionParent(phi);
  LLVMPositionBuilderBefore(b, phi);
  LLVMValueRef np = LLVMBuildPhi(b, it, "");
  unsigned n = LLVMCountIncoming(phi);
  for (unsigned i = 0; i < n; i++) {
    LLVMBasicBlockRef from = LLVMGetIncomingBlock(phi, i);
    LLVMPositionBuilderBefore(b, LLVMGetBasicBlockTerminator(from));
    LLVMValueRef v = as_type(b, LLVMGetIncomingValue(phi, i), it);
    LLVMAddIncoming(np, &v, &from, 1);
  }
  LLVMValueRef first = LLVMGetFirstInstruction(bb);
  while (first && LLVMIsAPHINode(first)) first = LLVMGetNextInstruction(first);
  LLVMPositionBuilderBefore(b, first);
  LLVMReplaceAllUsesWith(phi, LLVMBuildBitCast(b, np, t, ""));
}

static void rewrite_select(LLVMBuilderRef b, LLVMValueRef sel) {
  LLVMTypeRef t = LLVMTypeOf(sel), it = int16_like(t);
  LLVMPositionBuilderBefore(b, sel);
  LLVMValueRef x = as_type(b, LLVMGetOperand(sel, 1), it);
  LLVMValueRef y = as_type(b, LLVMGetOperand(sel, 2), it);
  LLVMValueRef s = LLVMBuildSelect(b, LLVMGetOperand(sel, 0), x, y, "");
  LLVMReplaceAllUsesWith(sel, LLVMBuildBitCast(b, s, t, ""));
}

/* fptrunc to bf16 (scalar or vector, lane by lane) as calls of the module's __truncsfbf2. */
static void rewrite_bf16_trunc(LLVMBuilderRef b, LLVMValueRef in, LLVMValueRef fn) {
  LLVMTypeRef t = LLVMTypeOf(in), fty = LLVMGlobalGetValueType(fn);
  LLVMValueRef src = LLVMGetOperand(in, 0);
  LLVMPositionBuilderBefore(b, in);
  LLVMValueRef out;
  if (!is_vector(t)) {
    out = LLVMBuildCall2(b, fty, fn, &src, 1, "");
  } else {
    LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetTypeContext(t));
    out = LLVMGetPoison(t);
    for (unsigned i = 0, n = LLVMGetVectorSize(t); i < n; i++) {
      LLVMValueRef lane = LLVMConstInt(i32, i, 0);
      LLVMValueRef x = LLVMBuildExtractElement(b, src, lane, "");
      out = LLVMBuildInsertElement(b, out, LLVMBuildCall2(b, fty, fn, &x, 1, ""), lane, "");
    }
  }
  LLVMReplaceAllUsesWith(in, out);
}

static bool is_bf16_trunc(LLVMValueRef in) {
  LLVMTypeRef t = LLVMTypeOf(in), src = LLVMTypeOf(LLVMGetOperand(in, 0));
  if (is_vector(t)) {
    if (LLVMGetTypeKind(t) == LLVMScalableVectorTypeKind) return false;
    t = LLVMGetElementType(t);
    src = LLVMGetElementType(src);
  }
  return LLVMGetTypeKind(t) == LLVMBFloatTypeKind && LLVMGetTypeKind(src) == LLVMFloatTypeKind;
}

void kiln_host_float16_fixup(LLVMModuleRef mod) {
  LLVMValueRef truncsfbf2 = LLVMGetNamedFunction(mod, "__truncsfbf2");
  LLVMBuilderRef b = LLVMCreateBuilderInContext(LLVMGetModuleContext(mod));
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn))
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
      for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in;) {
        LLVMValueRef next = LLVMGetNextInstruction(in);
        LLVMOpcode op = LLVMGetInstructionOpcode(in);
        if ((op == LLVMPHI || op == LLVMSelect) && is_float16(LLVMTypeOf(in))) {
          if (op == LLVMPHI) rewrite_phi(b, in);
          else rewrite_select(b, in);
          LLVMInstructionEraseFromParent(in);
        } else if (op == LLVMFPTrunc && truncsfbf2 && fn != truncsfbf2 && is_bf16_trunc(in)) {
          rewrite_bf16_trunc(b, in, truncsfbf2);
          LLVMInstructionEraseFromParent(in);
        }
        in = next;
      }
  LLVMDisposeBuilder(b);
}
