/* emit.c - a module lowered to the llvm dialect becomes LLVM IR text or a host object file.
 *
 * Every module also gets, per kernel, a constant `kiln_offsets_NAME` (kiln_mlir_add_offset_tables):
 * the offset bits the kernel was compiled with and the element size of each pointer parameter,
 * from the attributes widen-offsets recorded.  The runtime reads it when it looks a kernel up
 * (dlsym for host objects, cuModuleGetGlobal for PTX and cubins) and refuses, on every device, a
 * launch whose pointer argument a 32-bit kernel cannot index (runtime/device.c).
 *
 * Failures come back as a status plus an error diagnostic on the module's context. */
#include "kiln_mlir_internal.h"

#include "llvm-c/Core.h"
#include "llvm-c/Target.h"
#include "llvm-c/TargetMachine.h"
#include "llvm-c/Transforms/PassBuilder.h"
#include "mlir-c/Target/LLVMIR.h"

#include <pthread.h>

static MlirLocation module_loc(MlirModule m) {
  return mlirOperationGetLocation(mlirModuleGetOperation(m));
}

static LLVMModuleRef translate(MlirModule m, LLVMContextRef llctx) {
  LLVMModuleRef mod = mlirTranslateModuleToLLVMIR(mlirModuleGetOperation(m), llctx);
  if (!mod)
    kiln_ir_error(module_loc(m), "translation to LLVM IR failed (is the module fully lowered "
                                 "to the llvm dialect?)");
  return mod;
}

KilnMlirStatus kiln_mlir_translate_to_llvm_ir(MlirModule m, char **out, size_t *len) {
  *out = NULL;
  *len = 0;
  LLVMContextRef llctx = LLVMContextCreate();
  LLVMModuleRef mod = translate(m, llctx);
  if (!mod) {
    LLVMContextDispose(llctx);
    return KILN_MLIR_ERR_LLVM;
  }
  char *text = LLVMPrintModuleToString(mod);
  size_t n = strlen(text);
  *out = malloc(n + 1);
  KilnMlirStatus st = KILN_MLIR_OK;
  if (*out) {
    memcpy(*out, text, n + 1);
    *len = n;
  } else {
    st = KILN_MLIR_ERR_NOMEM;
  }
  LLVMDisposeMessage(text);
  LLVMDisposeModule(mod);
  LLVMContextDispose(llctx);
  return st;
}

static pthread_once_t native_once = PTHREAD_ONCE_INIT;
static int native_ok;
static void init_native(void) {
  native_ok = !LLVMInitializeNativeTarget() && !LLVMInitializeNativeAsmPrinter();
}

/* A target machine for this host's triple and the CPU `cpu` (an LLVM CPU name; NULL or "native":
 * this host's CPU with every feature it has, so objects run only where they are built). */
static LLVMTargetMachineRef host_machine(MlirModule m, int opt_level, const char *cpu) {
  pthread_once(&native_once, init_native);
  if (!native_ok) {
    kiln_ir_error(module_loc(m), "LLVM has no native target for this host");
    return NULL;
  }
  char *triple = LLVMGetDefaultTargetTriple();
  LLVMTargetRef target;
  char *err = NULL;
  LLVMTargetMachineRef tm = NULL;
  if (LLVMGetTargetFromTriple(triple, &target, &err)) {
    kiln_ir_error(module_loc(m), "no LLVM target for %s: %s", triple, err ? err : "");
    LLVMDisposeMessage(err);
  } else {
    bool native = !cpu || !strcmp(cpu, "native");
    char *host_cpu = native ? LLVMGetHostCPUName() : NULL;
    char *features = native ? LLVMGetHostCPUFeatures() : NULL;
    LLVMCodeGenOptLevel lvl = opt_level <= 0   ? LLVMCodeGenLevelNone
                              : opt_level == 1 ? LLVMCodeGenLevelLess
                              : opt_level == 2 ? LLVMCodeGenLevelDefault
                                               : LLVMCodeGenLevelAggressive;
    tm = LLVMCreateTargetMachine(target, triple, native ? host_cpu : cpu, native ? features : "",
                                 lvl, LLVMRelocPIC, LLVMCodeModelDefault);
    if (native) {
      LLVMDisposeMessage(host_cpu);
      LLVMDisposeMessage(features);
    }
    if (!tm) kiln_ir_error(module_loc(m), "cannot create an LLVM target machine for %s", triple);
  }
  LLVMDisposeMessage(triple);
  return tm;
}

static KilnMlirStatus optimize(MlirModule m, LLVMModuleRef mod, LLVMTargetMachineRef tm,
                               int opt_level) {
  char *triple = LLVMGetTargetMachineTriple(tm);
  LLVMSetTarget(mod, triple);
  LLVMDisposeMessage(triple);
  LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(mod, dl);
  LLVMDisposeTargetData(dl);
  char err[512];
  if (!kiln_host_builtins_link(mod, err, sizeof err)) {
    kiln_ir_error(module_loc(m), "host conversion builtins: %s", err);
    return KILN_MLIR_ERR_LLVM;
  }
  if (opt_level <= 0) return KILN_MLIR_OK;
  char pipeline[32];
  snprintf(pipeline, sizeof pipeline, "default<O%d>", opt_level > 3 ? 3 : opt_level);
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMErrorRef e = LLVMRunPasses(mod, pipeline, tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (e) {
    char *msg = LLVMGetErrorMessage(e);
    kiln_ir_error(module_loc(m), "LLVM optimization failed: %s", msg);
    LLVMDisposeErrorMessage(msg);
    return KILN_MLIR_ERR_LLVM;
  }
  return KILN_MLIR_OK;
}

void kiln_mlir_add_offset_tables(MlirModule m, LLVMModuleRef mod, unsigned addrspace) {
  MlirOperation mop = mlirModuleGetOperation(m);
  MlirAttribute all =
      mlirOperationGetAttributeByName(mop, mlirStringRefCreateFromCString("kiln.arg_elem_bytes"));
  MlirAttribute bits =
      mlirOperationGetAttributeByName(mop, mlirStringRefCreateFromCString("kiln.index_bits"));
  if (mlirAttributeIsNull(all) || !mlirAttributeIsADictionary(all) || mlirAttributeIsNull(bits) ||
      !mlirAttributeIsAInteger(bits))
    return; /* hand-written IR without the record: the runtime leaves such kernels unchecked */
  LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetModuleContext(mod));
  for (intptr_t k = 0; k < mlirDictionaryAttrGetNumElements(all); k++) {
    MlirNamedAttribute e = mlirDictionaryAttrGetElement(all, k);
    if (!mlirAttributeIsADenseI32Array(e.attribute)) continue;
    intptr_t n = mlirDenseArrayGetNumElements(e.attribute);
    LLVMValueRef *words = malloc((size_t)(n + 2) * sizeof *words);
    KILN_ASSERT(words != NULL);
    words[0] = LLVMConstInt(i32, (unsigned long long)mlirIntegerAttrGetValueInt(bits), 0);
    words[1] = LLVMConstInt(i32, (unsigned long long)n, 0);
    for (intptr_t i = 0; i < n; i++)
      words[i + 2] = LLVMConstInt(i32, (unsigned)mlirDenseI32ArrayGetElement(e.attribute, i), 0);
    MlirStringRef kname = mlirIdentifierStr(e.name);
    char name[320];
    snprintf(name, sizeof name, "kiln_offsets_%.*s", (int)kname.length, kname.data);
    LLVMTypeRef ty = LLVMArrayType2(i32, (uint64_t)(n + 2));
    LLVMValueRef g = LLVMAddGlobalInAddressSpace(mod, ty, name, addrspace);
    LLVMSetInitializer(g, LLVMConstArray2(i32, words, (uint64_t)(n + 2)));
    LLVMSetGlobalConstant(g, 1);
    LLVMSetLinkage(g, LLVMExternalLinkage);
    LLVMSetAlignment(g, 4);
    free(words);
  }
}

KilnMlirStatus kiln_mlir_emit_host_object(MlirModule m, int opt_level, const char *cpu, void **out,
                                          size_t *len) {
  *out = NULL;
  *len = 0;
  LLVMTargetMachineRef tm = host_machine(m, opt_level, cpu);
  if (!tm) return KILN_MLIR_ERR_LLVM;
  LLVMContextRef llctx = LLVMContextCreate();
  LLVMModuleRef mod = translate(m, llctx);
  if (mod) kiln_mlir_add_offset_tables(m, mod, 0);
  KilnMlirStatus st = mod ? optimize(m, mod, tm, opt_level) : KILN_MLIR_ERR_LLVM;
  if (st == KILN_MLIR_OK) {
    kiln_host_float16_fixup(mod);
    char *err = NULL;
    LLVMMemoryBufferRef buf = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &err, &buf)) {
      kiln_ir_error(module_loc(m), "LLVM code generation failed: %s", err ? err : "");
      LLVMDisposeMessage(err);
      st = KILN_MLIR_ERR_LLVM;
    } else {
      size_t n = LLVMGetBufferSize(buf);
      *out = malloc(n ? n : 1);
      if (*out) {
        memcpy(*out, LLVMGetBufferStart(buf), n);
        *len = n;
      } else {
        st = KILN_MLIR_ERR_NOMEM;
      }
      LLVMDisposeMemoryBuffer(buf);
    }
  }
  if (mod) LLVMDisposeModule(mod);
  LLVMContextDispose(llctx);
  LLVMDisposeTargetMachine(tm);
  return st;
}

void kiln_mlir_buffer_free(void *buf) { free(buf); }
