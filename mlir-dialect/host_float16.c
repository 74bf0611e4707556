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
 * 2. Values through f32. Without 16-bit float registers, a 16-bit float that lives in a register
 *    is promoted to f32 and rounded back when stored or moved on; on a CPU with AVX-512 BF16 the
 *    rounding back is vcvtneps2bf16, which flushes subnormals to zero, so a masked load turned
 *    bf16 subnormals into zeros, and so did any bf16 value that crossed a basic block or a call
 *    (the emu target's sanitizer hooks). kiln_host_float16_fixup carries every f16/bf16 value
 *    (scalar or vector) as a 16-bit integer instead, after LLVM's optimizations (which would
 *    fold the bitcasts back) and before code generation; f32 -> bf16 and bf16 -> f32 become
 *    integer code (as a GPU's cvt.rn.bf16.f32, it keeps subnormals). The section below says
 *    how. */
#include "kiln_mlir_internal.h"

#include "llvm-c/Core.h"
#include "llvm-c/IRReader.h"
#include "llvm-c/Linker.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- 16-bit floats carried as integers ---------------------------------------------------------
 *
 * x86's code generator has no 16-bit float registers without AVX-512 FP16: it keeps an f16 or
 * bf16 value promoted to f32 wherever the value lives in a register, and rounds it back when it
 * is stored, passed on or spilled. Inside one basic block the selection DAG usually folds a
 * load -> store pair into a 16-bit move, but a value that crosses a block (a masked load's
 * branch, the sanitizer hooks' calls and branches on the emu target) is exported as f32 and
 * rounded back with vcvtneps2bf16 on AVX-512 BF16 hosts, which flushes subnormals. Retyping phis
 * and selects alone did not cover the values those phis feed (vector inserts two blocks later).
 *
 * So, after LLVM's optimizations and before code generation, every f16/bf16 value (scalar or
 * vector) of a function gets a 16-bit integer mirror, and the float value disappears:
 *   - moves are rebuilt on the mirrors: load, phi, select, bitcast, insert/extract/shuffle of
 *     vector lanes, fneg (the sign bit);
 *   - f32 -> bf16 is the integer rounding of __truncsfbf2, inline (a GPU's cvt.rn.bf16.f32 keeps
 *     subnormals); bf16 -> f32 is the integer widening (the bits moved up: exact);
 *   - anything else that makes one (arithmetic, an f16 conversion, a call) keeps its float result
 *     for one instruction: a bitcast to the mirror follows it at once;
 *   - a user that needs a float (an f16 widening, arithmetic, a call) gets a bitcast of the mirror
 *     just before it; stores and bitcasts take the mirror itself.
 * No 16-bit float value then lives past the instruction next to it, so none crosses a block or a
 * call. */

/* An open-addressing map from an original value to its mirror; keys are never removed. */
typedef struct MirrorMap {
  LLVMValueRef *keys, *vals;
  size_t cap, n;
} MirrorMap;

static size_t ptr_hash(LLVMValueRef v, size_t cap) {
  uintptr_t x = (uintptr_t)v;
  x ^= x >> 17;
  x *= 0x9e3779b97f4a7c15ull;
  return (size_t)(x >> 7) & (cap - 1);
}

static LLVMValueRef map_get(const MirrorMap *m, LLVMValueRef k) {
  if (!m->cap) return NULL;
  for (size_t i = ptr_hash(k, m->cap);; i = (i + 1) & (m->cap - 1)) {
    if (!m->keys[i]) return NULL;
    if (m->keys[i] == k) return m->vals[i];
  }
}

static void map_put(MirrorMap *m, LLVMValueRef k, LLVMValueRef v) {
  if (2 * (m->n + 1) > m->cap) {
    MirrorMap g = {calloc(m->cap ? 2 * m->cap : 256, sizeof *g.keys),
                   calloc(m->cap ? 2 * m->cap : 256, sizeof *g.vals), m->cap ? 2 * m->cap : 256, 0};
    KILN_ASSERT(g.keys && g.vals);
    for (size_t i = 0; i < m->cap; i++)
      if (m->keys[i]) map_put(&g, m->keys[i], m->vals[i]);
    free(m->keys);
    free(m->vals);
    *m = g;
  }
  size_t i = ptr_hash(k, m->cap);
  while (m->keys[i] && m->keys[i] != k) i = (i + 1) & (m->cap - 1);
  if (!m->keys[i]) m->n++;
  m->keys[i] = k;
  m->vals[i] = v;
}

typedef struct ValueList {
  LLVMValueRef *v;
  size_t n, cap;
} ValueList;

static void list_add(ValueList *l, LLVMValueRef v) {
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 64;
    l->v = realloc(l->v, l->cap * sizeof *l->v);
    KILN_ASSERT(l->v != NULL);
  }
  l->v[l->n++] = v;
}

typedef struct Legalize {
  LLVMBuilderRef b;
  MirrorMap mirror;
  ValueList originals; /* every f16/bf16 value mirrored, in the order met */
  ValueList erase;     /* the instructions replaced, erased at the end */
} Legalize;

static bool is_vector(LLVMTypeRef t) {
  LLVMTypeKind k = LLVMGetTypeKind(t);
  return k == LLVMVectorTypeKind || k == LLVMScalableVectorTypeKind;
}

static LLVMTypeKind elem_kind(LLVMTypeRef t) {
  return LLVMGetTypeKind(is_vector(t) ? LLVMGetElementType(t) : t);
}

static bool is_float16(LLVMTypeRef t) {
  LLVMTypeKind k = elem_kind(t);
  return k == LLVMHalfTypeKind || k == LLVMBFloatTypeKind;
}

/* The type of t's shape with elements `elem` (i16 for a mirror, i32 for a widening). */
static LLVMTypeRef same_shape(LLVMTypeRef t, LLVMTypeRef elem) {
  if (!is_vector(t)) return elem;
  unsigned n = LLVMGetVectorSize(t);
  return LLVMGetTypeKind(t) == LLVMScalableVectorTypeKind ? LLVMScalableVectorType(elem, n)
                                                          : LLVMVectorType(elem, n);
}

static LLVMTypeRef int_like(LLVMTypeRef t, unsigned bits) {
  return same_shape(t, LLVMIntTypeInContext(LLVMGetTypeContext(t), bits));
}

/* The integer constant v in every lane of integer type t (scalar or fixed vector). */
static LLVMValueRef splat(LLVMTypeRef t, unsigned long long v) {
  if (!is_vector(t)) return LLVMConstInt(t, v, 0);
  unsigned n = LLVMGetVectorSize(t);
  LLVMValueRef c = LLVMConstInt(LLVMGetElementType(t), v, 0);
  LLVMValueRef *lanes = malloc(n * sizeof *lanes); /* tiles can be vectors of 1024 lanes */
  KILN_ASSERT(lanes != NULL);
  for (unsigned i = 0; i < n; i++) lanes[i] = c;
  LLVMValueRef r = LLVMConstVector(lanes, n);
  free(lanes);
  return r;
}

/* f32 bits -> bf16 bits, rounded to nearest even, NaNs quieted: __truncsfbf2's steps. */
static LLVMValueRef round_to_bf16(LLVMBuilderRef b, LLVMValueRef f) {
  LLVMTypeRef i32 = int_like(LLVMTypeOf(f), 32);
  LLVMValueRef x = LLVMBuildBitCast(b, f, i32, "");
  LLVMValueRef mag = LLVMBuildAnd(b, x, splat(i32, 0x7fffffff), "");
  LLVMValueRef nan = LLVMBuildICmp(b, LLVMIntUGT, mag, splat(i32, 0x7f800000), "");
  LLVMValueRef top = LLVMBuildLShr(b, x, splat(i32, 16), "");
  LLVMValueRef bias =
      LLVMBuildAdd(b, LLVMBuildAnd(b, top, splat(i32, 1), ""), splat(i32, 0x7fff), "");
  LLVMValueRef rounded = LLVMBuildLShr(b, LLVMBuildAdd(b, x, bias, ""), splat(i32, 16), "");
  LLVMValueRef quiet = LLVMBuildOr(b, top, splat(i32, 64), "");
  LLVMValueRef r = LLVMBuildSelect(b, nan, quiet, rounded, "");
  return LLVMBuildTrunc(b, r, int_like(i32, 16), "");
}

/* bf16 bits -> f32 (or wider): the bits moved to the top half, exact. */
static LLVMValueRef widen_bf16(LLVMBuilderRef b, LLVMValueRef bits, LLVMTypeRef to) {
  LLVMTypeRef i32 = int_like(LLVMTypeOf(bits), 32);
  LLVMValueRef w = LLVMBuildShl(b, LLVMBuildZExt(b, bits, i32, ""), splat(i32, 16), "");
  LLVMTypeRef f32 = same_shape(to, LLVMFloatTypeInContext(LLVMGetTypeContext(to)));
  LLVMValueRef f = LLVMBuildBitCast(b, w, f32, "");
  return f32 == to ? f : LLVMBuildFPExt(b, f, to, "");
}

/* Whether the instruction in (of f16/bf16 type) is rebuilt on mirrors and then erased; the
 * others keep their float result for one instruction. */
static bool is_scalable(LLVMTypeRef t) { return LLVMGetTypeKind(t) == LLVMScalableVectorTypeKind; }

static bool rebuilt_on_mirrors(LLVMValueRef in) {
  bool fixed = !is_scalable(LLVMTypeOf(in)); /* splat() builds fixed-width constants only */
  switch (LLVMGetInstructionOpcode(in)) {
  case LLVMLoad: return !LLVMGetVolatile(in) && LLVMGetOrdering(in) == LLVMAtomicOrderingNotAtomic;
  case LLVMPHI:
  case LLVMSelect:
  case LLVMBitCast:
  case LLVMInsertElement:
  case LLVMExtractElement: return true;
  case LLVMShuffleVector:
  case LLVMFNeg: return fixed;
  case LLVMFPTrunc:
    return fixed && elem_kind(LLVMTypeOf(in)) == LLVMBFloatTypeKind &&
           elem_kind(LLVMTypeOf(LLVMGetOperand(in, 0))) == LLVMFloatTypeKind;
  default: return false;
  }
}

static LLVMValueRef mirror_of(Legalize *L, LLVMValueRef v);

/* The mirror of an operand that may or may not be a 16-bit float. */
static LLVMValueRef operand_bits(Legalize *L, LLVMValueRef v) {
  return is_float16(LLVMTypeOf(v)) ? mirror_of(L, v) : v;
}

static LLVMValueRef shuffle_mask(LLVMValueRef sv) {
  LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetTypeContext(LLVMTypeOf(sv)));
  unsigned n = LLVMGetNumMaskElements(sv);
  LLVMValueRef *lanes = malloc(n * sizeof *lanes);
  KILN_ASSERT(lanes != NULL);
  for (unsigned i = 0; i < n; i++) {
    int m = LLVMGetMaskValue(sv, i);
    lanes[i] = m == LLVMGetUndefMaskElem() ? LLVMGetUndef(i32) : LLVMConstInt(i32, (unsigned)m, 0);
  }
  LLVMValueRef r = LLVMConstVector(lanes, n);
  free(lanes);
  return r;
}

/* A rebuilt instruction's mirror, placed just before it (its operands' mirrors are made first:
 * each is placed before its own original, which dominates this one). */
static LLVMValueRef rebuild(Legalize *L, LLVMValueRef in, LLVMTypeRef it) {
  LLVMBuilderRef b = L->b;
  LLVMOpcode op = LLVMGetInstructionOpcode(in);
  if (op == LLVMPHI) { /* entered in the map before its incoming values: loops come back to it */
    LLVMPositionBuilderBefore(b, in);
    LLVMValueRef np = LLVMBuildPhi(b, it, "");
    map_put(&L->mirror, in, np);
    for (unsigned i = 0, n = LLVMCountIncoming(in); i < n; i++) {
      LLVMValueRef v = mirror_of(L, LLVMGetIncomingValue(in, i));
      LLVMBasicBlockRef from = LLVMGetIncomingBlock(in, i);
      LLVMAddIncoming(np, &v, &from, 1);
    }
    return np;
  }
  LLVMValueRef ops[3] = {NULL, NULL, NULL};
  unsigned nops = (unsigned)LLVMGetNumOperands(in);
  for (unsigned i = 0; i < nops && i < 3; i++)
    if (op != LLVMLoad) ops[i] = operand_bits(L, LLVMGetOperand(in, i));
  LLVMPositionBuilderBefore(b, in);
  switch (op) {
  case LLVMLoad: {
    LLVMValueRef ld = LLVMBuildLoad2(b, it, LLVMGetOperand(in, 0), "");
    LLVMSetAlignment(ld, LLVMGetAlignment(in));
    return ld;
  }
  case LLVMSelect: return LLVMBuildSelect(b, ops[0], ops[1], ops[2], "");
  case LLVMBitCast: return LLVMTypeOf(ops[0]) == it ? ops[0] : LLVMBuildBitCast(b, ops[0], it, "");
  case LLVMInsertElement: return LLVMBuildInsertElement(b, ops[0], ops[1], ops[2], "");
  case LLVMExtractElement: return LLVMBuildExtractElement(b, ops[0], ops[1], "");
  case LLVMShuffleVector: return LLVMBuildShuffleVector(b, ops[0], ops[1], shuffle_mask(in), "");
  case LLVMFNeg: return LLVMBuildXor(b, ops[0], splat(it, 0x8000), "");
  case LLVMFPTrunc: return round_to_bf16(b, LLVMGetOperand(in, 0));
  default: KILN_ASSERT(!"not a rebuilt instruction"); return NULL;
  }
}

/* The 16-bit integer mirror of a 16-bit float value, made once. */
static LLVMValueRef mirror_of(Legalize *L, LLVMValueRef v) {
  LLVMValueRef have = map_get(&L->mirror, v);
  if (have) return have;
  LLVMTypeRef it = int_like(LLVMTypeOf(v), 16);
  LLVMValueRef m;
  if (LLVMIsConstant(v)) {
    m = LLVMConstBitCast(v, it);
  } else if (LLVMIsAInstruction(v) && rebuilt_on_mirrors(v)) {
    m = rebuild(L, v, it);
    /* A loop entered at v (its block laid out before the loop's header): rebuilding v's
     * operands reached a phi whose value around the loop is v, which mirrored v first. That
     * mirror is the one its users were built on; this copy is left unused, dead code the code
     * generator drops, and v must not be listed twice (it would be erased twice). A phi's own
     * mirror is in the map already (rebuild put it there), and is this one. */
    LLVMValueRef first = map_get(&L->mirror, v);
    if (first && first != m) return first;
    list_add(&L->erase, v);
    list_add(&L->originals, v);
  } else if (LLVMIsAInstruction(v)) { /* kept: its bits taken right after it */
    LLVMValueRef next = LLVMGetNextInstruction(v);
    KILN_ASSERT(next != NULL && !LLVMIsAPHINode(v));
    LLVMPositionBuilderBefore(L->b, next);
    m = LLVMBuildBitCast(L->b, v, it, "");
    list_add(&L->originals, v);
  } else { /* an argument: its bits taken at the entry */
    LLVMValueRef first = LLVMGetFirstInstruction(LLVMGetEntryBasicBlock(LLVMGetParamParent(v)));
    LLVMPositionBuilderBefore(L->b, first);
    m = LLVMBuildBitCast(L->b, v, it, "");
    list_add(&L->originals, v);
  }
  map_put(&L->mirror, v, m);
  return m;
}

/* Points user u of the original value v (operand i) at v's mirror m. */
static void use_mirror(Legalize *L, LLVMValueRef u, unsigned i, LLVMValueRef v, LLVMValueRef m) {
  LLVMOpcode op = LLVMGetInstructionOpcode(u);
  if ((op == LLVMStore && i == 0) || op == LLVMBitCast) {
    LLVMSetOperand(u, i, m);
  } else if (op == LLVMFPExt && elem_kind(LLVMTypeOf(v)) == LLVMBFloatTypeKind &&
             !is_scalable(LLVMTypeOf(v))) {
    LLVMPositionBuilderBefore(L->b, u);
    LLVMReplaceAllUsesWith(u, widen_bf16(L->b, m, LLVMTypeOf(u)));
    list_add(&L->erase, u);
  } else {
    LLVMPositionBuilderBefore(L->b, u);
    LLVMSetOperand(u, i, LLVMBuildBitCast(L->b, m, LLVMTypeOf(v), ""));
  }
}

/* Every user of v that is not itself replaced (nor v's own mirror) takes the mirror. */
static void redirect_users(Legalize *L, LLVMValueRef v) {
  LLVMValueRef m = map_get(&L->mirror, v);
  ValueList users = {0};
  for (LLVMUseRef u = LLVMGetFirstUse(v); u; u = LLVMGetNextUse(u)) {
    LLVMValueRef user = LLVMGetUser(u);
    bool replaced = is_float16(LLVMTypeOf(user)) && rebuilt_on_mirrors(user);
    if (user != m && !replaced) list_add(&users, user);
  }
  for (size_t k = 0; k < users.n; k++) {
    LLVMValueRef u = users.v[k];
    if (k && users.v[k - 1] == u) continue; /* one user may appear once per operand */
    for (unsigned i = 0, n = (unsigned)LLVMGetNumOperands(u); i < n; i++)
      if (LLVMGetOperand(u, i) == v) use_mirror(L, u, i, v, m);
  }
  free(users.v);
}

static void legalize_function(Legalize *L, LLVMValueRef fn) {
  ValueList found = {0};
  for (LLVMValueRef a = LLVMGetFirstParam(fn); a; a = LLVMGetNextParam(a))
    if (is_float16(LLVMTypeOf(a)) && LLVMGetFirstUse(a)) list_add(&found, a);
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in))
      if (is_float16(LLVMTypeOf(in))) list_add(&found, in);
  for (size_t i = 0; i < found.n; i++) mirror_of(L, found.v[i]);
  for (size_t i = 0; i < L->originals.n; i++) redirect_users(L, L->originals.v[i]);
  /* what is left uses only other replaced instructions: cut those ties, then erase */
  for (size_t i = 0; i < L->erase.n; i++)
    LLVMReplaceAllUsesWith(L->erase.v[i], LLVMGetPoison(LLVMTypeOf(L->erase.v[i])));
  for (size_t i = 0; i < L->erase.n; i++) LLVMInstructionEraseFromParent(L->erase.v[i]);
  L->originals.n = L->erase.n = 0;
  /* erased instructions' addresses may come back as new values in the next function */
  if (L->mirror.cap) memset(L->mirror.keys, 0, L->mirror.cap * sizeof *L->mirror.keys);
  L->mirror.n = 0;
  free(found.v);
}

void kiln_host_float16_fixup(LLVMModuleRef mod) {
  Legalize L = {.b = LLVMCreateBuilderInContext(LLVMGetModuleContext(mod))};
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn))
    if (LLVMCountBasicBlocks(fn)) legalize_function(&L, fn);
  free(L.mirror.keys);
  free(L.mirror.vals);
  free(L.originals.v);
  free(L.erase.v);
  LLVMDisposeBuilder(L.b);
}
