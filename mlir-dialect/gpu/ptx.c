/* ptx.c - llvm + nvvm dialect module -> LLVM IR -> PTX, with LLVM-C's NVPTX target.
 *
 * The module is translated into a fresh LLVMContext, optimized with LLVM's default O3 pipeline
 * for the target machine (the SIMT lowering emits plain per-thread scalar code and relies on
 * LLVM for constant folding, CSE and scheduling), then printed as PTX by the code generator at
 * its default level.
 *
 * A module whose shared arena is dynamic (lower.c: `.extern .shared`, above 48 KiB) gets one
 * `.const .u32 kiln_dsmem_NAME` per kernel holding the bytes a launch must pass: a cubin does not
 * record dynamic sizes, and the cuda device reads this at load (runtime/cuda_device.c) so that
 * callers need not know.  Every kernel also gets `kiln_offsets_NAME` (emit.c): its offset bits and
 * pointer element sizes, which the cuda device reads at lookup for the launch check.
 *
 * Between O3 and code generation the module is written as bitcode and read back.  Nothing in it
 * changes but the order of each value's use list, and that order steers LLVM's loop strength
 * reduction: in the order O3 leaves in memory, LSR's search over the unrolled address arithmetic
 * of the attention loops blew up (attn_bwd_dkdv at 64x64: 0.40 s of a 0.54 s code generation);
 * read back, the module is what `opt -O3 | llc -O3` hands the code generator, LSR takes ~25 ms
 * and the PTX is that pipeline's.  The round trip costs ~7 ms. */
#include "gpu_internal.h"

#include "mlir-c/Target/LLVMIR.h"

#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include <pthread.h>

static pthread_once_t nvptx_once = PTHREAD_ONCE_INIT;
static void init_nvptx(void) {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
}

static const char triple[] = "nvptx64-nvidia-cuda";

/* kiln_dsmem_NAME = the arena's bytes, in the constant address space, for every kernel. */
static void add_dynamic_smem_sizes(MlirModule m, LLVMModuleRef mod, LLVMContextRef lctx) {
  MlirOperation mop = mlirModuleGetOperation(m);
  if (mlirAttributeIsNull(mlirOperationGetAttributeByName(
          mop, mlirStringRefCreateFromCString("kiln.gpu.smem_dynamic"))))
    return;
  int64_t bytes = kiln_gpu_int_attr(mop, "kiln.gpu.smem_bytes", 0);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(lctx);
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(mop, 0));
  for (MlirOperation o = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(o);
       o = mlirOperationGetNextInBlock(o)) {
    if (!kiln_ir_op_is(o, "llvm.func") || mlirAttributeIsNull(mlirOperationGetAttributeByName(
                                              o, mlirStringRefCreateFromCString("nvvm.kernel"))))
      continue;
    char name[300];
    MlirStringRef s = mlirStringAttrGetValue(
        mlirOperationGetAttributeByName(o, mlirStringRefCreateFromCString("sym_name")));
    snprintf(name, sizeof name, "kiln_dsmem_%.*s", (int)s.length, s.data);
    LLVMValueRef g = LLVMAddGlobalInAddressSpace(mod, i32, name, 4 /* .const */);
    LLVMSetInitializer(g, LLVMConstInt(i32, (unsigned long long)bytes, 0));
    LLVMSetGlobalConstant(g, 1);
    LLVMSetLinkage(g, LLVMExternalLinkage);
    LLVMSetAlignment(g, 4);
  }
}

static KilnMlirStatus fail(MlirModule m, const char *what, char *msg) {
  kiln_ir_error(mlirOperationGetLocation(mlirModuleGetOperation(m)), "PTX generation: %s%s%s", what,
                msg ? ": " : "", msg ? msg : "");
  if (msg) LLVMDisposeMessage(msg);
  return KILN_MLIR_ERR_LLVM;
}

/* mod written as bitcode and read back into its context (see the top of the file): the new
 * module, mod disposed; mod itself when the round trip fails (code generation is then only
 * slower). */
static LLVMModuleRef reread(LLVMModuleRef mod) {
  LLVMMemoryBufferRef bc = LLVMWriteBitcodeToMemoryBuffer(mod);
  if (!bc) return mod;
  LLVMModuleRef fresh = NULL;
  bool ok = !LLVMParseBitcodeInContext2(LLVMGetModuleContext(mod), bc, &fresh);
  LLVMDisposeMemoryBuffer(bc); /* a fully read module keeps nothing of its buffer */
  if (!ok) return mod;
  LLVMDisposeModule(mod);
  return fresh;
}

static void step_done(const KilnStepHook *hook, const char *step) {
  if (hook && hook->done) hook->done(hook->user, step);
}

KilnMlirStatus kiln_gpu_emit_ptx(MlirModule m, const char *arch, char **ptx, size_t *len) {
  return kiln_gpu_emit_ptx_steps(m, arch, NULL, ptx, len);
}

KilnMlirStatus kiln_gpu_emit_ptx_steps(MlirModule m, const char *arch, const KilnStepHook *hook,
                                       char **ptx, size_t *len) {
  if (!arch || !ptx || !len || (strcmp(arch, "sm_80") != 0 && strcmp(arch, "sm_90") != 0))
    return KILN_MLIR_ERR_INVALID;
  *ptx = NULL;
  *len = 0;
  pthread_once(&nvptx_once, init_nvptx);
  char *err = NULL;
  LLVMTargetRef target;
  if (LLVMGetTargetFromTriple(triple, &target, &err))
    return fail(m, "no NVPTX target in this LLVM", err);
  LLVMContextRef lctx = LLVMContextCreate();
  LLVMModuleRef mod = mlirTranslateModuleToLLVMIR(mlirModuleGetOperation(m), lctx);
  if (!mod) {
    LLVMContextDispose(lctx);
    return fail(m, "translation to LLVM IR failed", NULL);
  }
  /* PTX ISA 8.0: what LLVM 19 and CUDA 12+ ptxas both know, and enough for sm_90.  Code
   * generation at the default level, not the aggressive one: for NVPTX the difference is GVN
   * twice over the IR where EarlyCSE runs once, 30 ms of attn_bwd_dkdv's 180, and on every BERT
   * kernel the PTX has the same loops, registers and spills, and as many or fewer instructions
   * (O3 has already done the IR's value numbering). */
  /* A module with wgmma (lower_wgmma.c marks it) needs sm_90's arch-specific features: the
   * PTX target sm_90a, which runs on sm_90 devices only. */
  const char *cpu = strcmp(arch, "sm_90") == 0 && kiln_gpu_int_attr(mlirModuleGetOperation(m),
                                                                    KILN_GPU_WGMMA_MODULE_ATTR, 0)
                        ? "sm_90a"
                        : arch;
  LLVMTargetMachineRef tm =
      LLVMCreateTargetMachine(target, triple, cpu, "+ptx80", LLVMCodeGenLevelDefault,
                              LLVMRelocDefault, LLVMCodeModelDefault);
  KilnMlirStatus st = KILN_MLIR_OK;
  LLVMSetTarget(mod, triple);
  add_dynamic_smem_sizes(m, mod, lctx);
  kiln_mlir_add_offset_tables(m, mod, 4 /* .const */);
  LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(mod, dl);
  LLVMDisposeTargetData(dl);
  step_done(hook, "llvm-translate");
  /* Without the SLP vectorizer: on the unrolled per-thread code it searched for 16 ms of
   * attn_bwd_dkdv's 140 in O3 and found nothing (the PTX of every BERT kernel is the same
   * without it: the lowering already writes the vector accesses, and NVPTX has few vector
   * operations to form). */
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMPassBuilderOptionsSetSLPVectorization(po, 0);
  LLVMErrorRef perr = LLVMRunPasses(mod, "default<O3>", tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (perr) {
    st = fail(m, "LLVM optimization failed", LLVMGetErrorMessage(perr));
  } else {
    step_done(hook, "llvm-opt");
    mod = reread(mod);
    step_done(hook, "llvm-reread");
    LLVMMemoryBufferRef buf = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &err, &buf)) {
      st = fail(m, "NVPTX code generation failed", err);
    } else {
      step_done(hook, "nvptx-codegen");
      size_t n = LLVMGetBufferSize(buf);
      char *out = malloc(n + 1);
      if (!out) {
        st = KILN_MLIR_ERR_NOMEM;
      } else {
        memcpy(out, LLVMGetBufferStart(buf), n);
        out[n] = '\0';
        *ptx = out;
        *len = strlen(out);
      }
      LLVMDisposeMemoryBuffer(buf);
    }
  }
  LLVMDisposeTargetMachine(tm);
  LLVMDisposeModule(mod);
  LLVMContextDispose(lctx);
  return st;
}
