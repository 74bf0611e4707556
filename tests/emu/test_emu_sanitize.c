/* test_emu_sanitize.c — the emu device as a GPU sanitizer: launch limits and checked accesses.
 *
 * Each kernel is hand-written llvm + nvvm IR of the kind convert-kiln-gpu-to-llvm produces, run
 * through kiln-gpu-to-emu, loaded on the runtime's `emu` device and launched. Most are broken on
 * purpose: the launch must fail with a status and a message naming the kernel and the thread (or
 * the argument), never crash the host, and the same kernel launched correctly must give the
 * right numbers. Kiln source cannot express per-thread bugs (control flow is uniform per program),
 * which is why these kernels are written below the language.
 *
 * Launch limits (on emu as on a GPU):
 *   - emu_vec: 16-byte vector loads and stores through pointer arguments; pointers offset by
 *     4 bytes (a view into a flat buffer) are refused before any thread runs (they crashed the
 *     process with SIGSEGV before: an aligned vmovaps on the host);
 *   - grid y or z above 65535 is refused;
 *   - emu_big_smem: 50000 bytes of static shared memory, over a GPU's 48 KiB, is refused.
 */
#include "kiln_gpu.h"
#include "kiln_mlir.h"

#include <kiln/kilnrt.h>

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                                                        \
  do {                                                                          \
    if (!(cond)) {                                                              \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                             \
      fputc('\n', stderr);                                                      \
      failures++;                                                               \
    }                                                                           \
  } while (0)

/* 32 threads; thread t copies in[4t .. 4t+3] to out[4t .. 4t+3] with one 16-byte load and one
 * 16-byte store, as the lowering does for a contiguous f32 tile on aligned pointers. */
static const char *const VEC_IR =
    "module {\n"
    "  llvm.func @emu_vec(%in: !llvm.ptr<1>, %out: !llvm.ptr<1>) attributes {nvvm.kernel, "
    "nvvm.maxntid = array<i32: 32, 1, 1>} {\n"
    "    %c4 = llvm.mlir.constant(4 : i32) : i32\n"
    "    %t = nvvm.read.ptx.sreg.tid.x : i32\n"
    "    %i = llvm.mul %t, %c4 : i32\n"
    "    %p = llvm.getelementptr %in[%i] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32\n"
    "    %v = llvm.load %p {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>\n"
    "    %q = llvm.getelementptr %out[%i] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32\n"
    "    llvm.store %v, %q {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<1>\n"
    "    llvm.return\n"
    "  }\n"
    "}\n";

/* Static shared memory of 50000 bytes: more than a GPU's 48 KiB of `.shared` variables. */
static const char *const BIG_SMEM_IR =
    "module attributes {kiln.gpu.smem_bytes = 50000 : i64} {\n"
    "  llvm.mlir.global internal @kiln_smem() {addr_space = 3 : i32, alignment = 16 : i64} : "
    "!llvm.array<50000 x i8> {\n"
    "    %0 = llvm.mlir.undef : !llvm.array<50000 x i8>\n"
    "    llvm.return %0 : !llvm.array<50000 x i8>\n"
    "  }\n"
    "  llvm.func @emu_big_smem(%out: !llvm.ptr<1>) attributes {nvvm.kernel, nvvm.maxntid = "
    "array<i32: 32, 1, 1>} {\n"
    "    %t = nvvm.read.ptx.sreg.tid.x : i32\n"
    "    %smem = llvm.mlir.addressof @kiln_smem : !llvm.ptr<3>\n"
    "    %p = llvm.getelementptr %smem[%t] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32\n"
    "    llvm.store %t, %p : i32, !llvm.ptr<3>\n"
    "    llvm.return\n"
    "  }\n"
    "}\n";

/* IR text -> kiln-gpu-to-emu -> host object -> module on dev. NULL (and a failure) on error. */
static KilnRtModule *load(KilnRtDevice *dev, const char *ir, const char *what) {
  KilnMlirContext *kctx = kiln_mlir_context_create();
  if (!kctx) {
    CHECK(0, "%s: no MLIR context", what);
    return NULL;
  }
  KilnRtModule *mod = NULL;
  MlirModule m = kiln_mlir_parse(kctx, ir);
  if (mlirModuleIsNull(m)) {
    kiln_mlir_diag_print(kctx, stderr);
    CHECK(0, "%s: the IR does not parse", what);
    kiln_mlir_context_destroy(kctx);
    return NULL;
  }
  MlirPassManager pm = mlirPassManagerCreate(kiln_mlir_context_get(kctx));
  mlirPassManagerAddOwnedPass(pm, kiln_gpu_pass_create_to_emu());
  MlirLogicalResult r = mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(m));
  mlirPassManagerDestroy(pm);
  void *obj = NULL;
  size_t len = 0;
  if (mlirLogicalResultIsFailure(r)) {
    kiln_mlir_diag_print(kctx, stderr);
    CHECK(0, "%s: kiln-gpu-to-emu failed", what);
  } else if (kiln_mlir_emit_host_object(m, 2, NULL, &obj, &len) != KILN_MLIR_OK) {
    kiln_mlir_diag_print(kctx, stderr);
    CHECK(0, "%s: no host object", what);
  } else {
    KilnRtStatus st = kiln_rt_module_load(dev, KILN_RT_MODULE_HOST_OBJECT, obj, len, &mod);
    CHECK(st == KILN_RT_OK, "%s: module load: %s", what, kiln_rt_last_error());
    if (st != KILN_RT_OK)
      mod = NULL;
  }
  kiln_mlir_buffer_free(obj);
  mlirModuleDestroy(m);
  kiln_mlir_context_destroy(kctx);
  return mod;
}

/* Launches kernel `name` of mod on a grid of blocks with args (pointers to the values). */
static KilnRtStatus launch(KilnRtModule *mod, const char *name, const uint32_t grid[3],
                           void **args) {
  KilnRtFunction *fn = NULL;
  KilnRtStatus st = kiln_rt_module_get_function(mod, name, &fn);
  if (st != KILN_RT_OK)
    return st;
  KilnRtLaunchConfig cfg = {.grid = {grid[0], grid[1], grid[2]}, .block_threads = 0};
  return kiln_rt_launch(fn, &cfg, args, NULL);
}

/* Whether the last error mentions every one of the NULL-terminated words. */
static bool message_has(const char *const *words) {
  for (; *words; words++)
    if (!strstr(kiln_rt_last_error(), *words))
      return false;
  return true;
}

#define EXPECT_FAILURE(st, want, ...)                                                          \
  do {                                                                                        \
    const char *const words_[] = {__VA_ARGS__, NULL};                                          \
    CHECK((st) == (want), "gave %s, want %s (%s)", kiln_rt_status_name(st),                    \
          kiln_rt_status_name(want), kiln_rt_last_error());                                    \
    CHECK(message_has(words_), "message: %s", kiln_rt_last_error());                           \
    printf("  reported: %s\n", kiln_rt_last_error());                                           \
  } while (0)

/* ---- launch limits ------------------------------------------------------------------------- */

static void test_pointer_alignment(KilnRtDevice *dev, float *buf) {
  printf("emu_vec: pointer arguments aligned as the code assumes\n");
  KilnRtModule *mod = load(dev, VEC_IR, "emu_vec");
  if (!mod)
    return;
  const uint32_t one[3] = {1, 1, 1};
  for (int i = 0; i < 512; i++)
    buf[i] = (float)i;
  float *in = buf, *out = buf + 256;
  void *args[] = {&in, &out};
  KilnRtStatus st = launch(mod, "emu_vec", one, args);
  CHECK(st == KILN_RT_OK, "aligned launch: %s", kiln_rt_last_error());
  for (int i = 0; st == KILN_RT_OK && i < 128; i++)
    CHECK(out[i] == (float)i, "out[%d] = %g, want %d (exact copy)", i, out[i], i);

  float *in1 = buf + 1, *out1 = buf + 257; /* views 4 bytes into the buffers */
  void *bad_in[] = {&in1, &out};
  st = launch(mod, "emu_vec", one, bad_in);
  EXPECT_FAILURE(st, KILN_RT_ERROR_INVALID_ARGUMENT, "emu_vec", "argument 0", "16-byte aligned");
  void *bad_out[] = {&in, &out1};
  st = launch(mod, "emu_vec", one, bad_out);
  EXPECT_FAILURE(st, KILN_RT_ERROR_INVALID_ARGUMENT, "emu_vec", "argument 1", "16-byte aligned");
  kiln_rt_module_destroy(mod);
}

static void test_grid_limits(KilnRtDevice *dev, float *buf) {
  printf("emu_vec: grid y and z at most 65535\n");
  KilnRtModule *mod = load(dev, VEC_IR, "emu_vec");
  if (!mod)
    return;
  float *in = buf, *out = buf + 256;
  void *args[] = {&in, &out};
  const uint32_t y[3] = {1, 65536, 1}, z[3] = {1, 1, 70000};
  EXPECT_FAILURE(launch(mod, "emu_vec", y, args), KILN_RT_ERROR_INVALID_ARGUMENT, "emu_vec",
                 "grid[1] = 65536", "65535");
  EXPECT_FAILURE(launch(mod, "emu_vec", z, args), KILN_RT_ERROR_INVALID_ARGUMENT, "emu_vec",
                 "grid[2] = 70000");
  kiln_rt_module_destroy(mod);
}

static void test_static_shared_limit(KilnRtDevice *dev, float *buf) {
  printf("emu_big_smem: static shared memory at most 48 KiB\n");
  KilnRtModule *mod = load(dev, BIG_SMEM_IR, "emu_big_smem");
  if (!mod)
    return;
  const uint32_t one[3] = {1, 1, 1};
  void *args[] = {&buf};
  EXPECT_FAILURE(launch(mod, "emu_big_smem", one, args), KILN_RT_ERROR_INVALID_ARGUMENT,
                 "emu_big_smem", "50000 bytes of static shared memory");
  kiln_rt_module_destroy(mod);
}

int main(void) {
  KilnRtDevice *dev = NULL;
  if (kiln_rt_device_create("emu", &dev) != KILN_RT_OK) {
    fprintf(stderr, "cannot open the emu device: %s\n", kiln_rt_last_error());
    return 1;
  }
  float *buf = NULL;
  if (kiln_rt_malloc(dev, 512 * sizeof *buf, (void **)&buf) != KILN_RT_OK) {
    fprintf(stderr, "kiln_rt_malloc: %s\n", kiln_rt_last_error());
    kiln_rt_device_destroy(dev);
    return 1;
  }
  test_pointer_alignment(dev, buf);
  test_grid_limits(dev, buf);
  test_static_shared_limit(dev, buf);

  kiln_rt_free(dev, buf);
  kiln_rt_device_destroy(dev);
  if (failures)
    fprintf(stderr, "test_emu_sanitize: %d failure(s)\n", failures);
  return failures ? 1 : 0;
}
