/* test_emu_offsets.c — 64-bit offsets (kiln compile --index-bits 64) and the launch check that
 * keeps a kernel with 32-bit offsets from buffers its offsets cannot reach, on every device.
 *
 * One kernel, gather_rows, does what xent_fwd does with its logits: program `row` reads BLOCK
 * bytes at x + row * stride and writes them to out + row * BLOCK. `row * stride` is an i32
 * product; past 2^31 it wraps to a negative offset. It is compiled both ways (--index-bits 32
 * and 64) for emu, cpu and cuda (PTX) and checked against a C reference:
 *
 *   - scaled down (4 rows of 1000 bytes) with the limit lowered to 2048 elements
 *     (KILN_EMU_INDEX_LIMIT on emu, KILN_INDEX_LIMIT on cpu and cuda): the 32-bit kernel is
 *     refused at launch, with the argument, its extent and the limit in the message, and never
 *     runs; the 64-bit kernel runs under the same limit and copies the right bytes; without the
 *     limit both are right (the common case keeps its i32 code);
 *   - at full size, where the wrap is real: 3 rows 2^30 + 8 bytes apart, so row 2 starts at byte
 *     2^31 + 16 (the buffer is 2 GiB of address space, of which the test touches three rows: the
 *     host commits pages lazily). The 64-bit kernel reads the right bytes on emu and cpu; the
 *     32-bit one is refused on emu and cpu at the real limit, 2^31, where it would have read
 *     2 GiB before the buffer. Where the 2 GiB cannot be had, that half is skipped, with a line;
 *   - on cuda through the fake driver (tests/runtime/fake_cuda.c, KILN_FAKE_CUDA_MODULES=1: its
 *     memory has addresses and no bytes, its launches run nothing and are counted): the module's
 *     `kiln_offsets_gather_rows` record, read with cuModuleGetGlobal, makes kiln_rt_launch refuse
 *     the 32-bit kernel above the lowered and the real limit before the driver sees the launch
 *     (the launch count does not move), and pass the 64-bit one and the 32-bit one under it.
 *     Without the fake driver (a machine with a GPU) that part is skipped, with a line;
 *   - an arena carved into tensors with kiln_rt_mem_set_parts (the BERT trainer's memory plan):
 *     the check judges each pointer by its own part, on every device.
 *
 * And the registers word of the emu metadata (docs/emulator.md): 0, no count recorded, with the
 * PTX's `.maxntid` equal to the block (what makes the count unneeded).
 *
 * Pass/fail: exact byte equality with the reference (a copy has no rounding); the refusals by
 * status (INVALID_ARGUMENT) and message. */
#include "kiln_driver.h"

#include <kiln/kilnrt.h>

#include "check.h"

#include <dlfcn.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { BLOCK = 32 };

static const char SOURCE[] =
    "kernel gather_rows(x: *i8, out: *i8, stride: i32, const BLOCK: i32) {\n"
    "    let row = program_id(0);\n"
    "    let cols = arange(0, BLOCK);\n"
    "    let v = load(x + row * stride + cols);\n"
    "    store(out + row * BLOCK + cols, v);\n"
    "}\n";

/* gather_rows compiled for the device's target with `bits`-bit offsets, loaded; NULL on failure. */
static KilnRtFunction *load_kernel(KilnRtDevice *dev, KilnTarget target, int bits,
                                   KilnRtModule **mod) {
  KilnDefine block = {"BLOCK", BLOCK};
  KilnCompileOptions o = {.path = "gather_rows.kiln",
                          .source = SOURCE,
                          .source_len = sizeof SOURCE - 1,
                          .kernel = "gather_rows",
                          .defines = &block,
                          .num_defines = 1,
                          .target = target,
                          .num_warps = 1,
                          .index_bits = bits,
                          .diag = stderr};
  KilnBuffer obj = {0};
  *mod = NULL;
  bool gpu = target == KILN_TARGET_SM90;
  if (kiln_driver_compile(&o, gpu ? KILN_EMIT_PTX : KILN_EMIT_OBJ, &obj) != KILN_DRIVER_OK) {
    CHECK(false, "gather_rows does not compile for %s with %d-bit offsets",
          gpu                         ? "sm_90"
          : target == KILN_TARGET_EMU ? "emu"
                                      : "cpu",
          bits);
    return NULL;
  }
  KilnRtStatus st = kiln_rt_module_load(dev, gpu ? KILN_RT_MODULE_PTX : KILN_RT_MODULE_HOST_OBJECT,
                                        obj.data, obj.size, mod);
  kiln_buffer_free(&obj);
  KilnRtFunction *fn = NULL;
  if (st == KILN_RT_OK) st = kiln_rt_module_get_function(*mod, "gather_rows", &fn);
  CHECK(st == KILN_RT_OK, "loading gather_rows: %s", kiln_rt_last_error());
  return st == KILN_RT_OK ? fn : NULL;
}

/* Launches gather_rows over `rows` programs: x (device), out (device), stride. */
static KilnRtStatus gather(KilnRtFunction *fn, uint32_t rows, void *x, void *out, int32_t stride) {
  void *args[3] = {&x, &out, &stride};
  KilnRtLaunchConfig cfg = {.grid = {rows, 1, 1}, .block_threads = 32}; /* num_warps = 1 */
  return kiln_rt_launch(fn, &cfg, args, NULL);
}

/* The bytes at x[r * stride .. + BLOCK) of every row, as the kernel must copy them: a pattern
 * that differs per row and per column, written only where the kernel reads. */
static uint8_t pattern(uint32_t row, uint32_t col) { return (uint8_t)(row * 37u + col * 5u + 1u); }

static void fill_rows(KilnRtDevice *dev, uint8_t *x, uint32_t rows, size_t stride) {
  for (uint32_t r = 0; r < rows; r++) {
    uint8_t row[BLOCK];
    for (uint32_t c = 0; c < BLOCK; c++) row[c] = pattern(r, c);
    CHECK(kiln_rt_memcpy_htod(dev, x + (size_t)r * stride, row, BLOCK, NULL) == KILN_RT_OK,
          "upload: %s", kiln_rt_last_error());
  }
}

/* out must hold pattern(r, c) at r * BLOCK + c. */
static void check_rows(KilnRtDevice *dev, const char *what, const uint8_t *out, uint32_t rows) {
  uint8_t got[4 * BLOCK];
  if (kiln_rt_memcpy_dtoh(dev, got, out, (size_t)rows * BLOCK, NULL) != KILN_RT_OK) {
    CHECK(false, "%s: download: %s", what, kiln_rt_last_error());
    return;
  }
  int bad = 0;
  for (uint32_t r = 0; r < rows; r++)
    for (uint32_t c = 0; c < BLOCK; c++)
      if (got[r * BLOCK + c] != pattern(r, c) && bad++ == 0)
        CHECK(false, "%s: out[%u][%u] = %u, expected %u", what, r, c, got[r * BLOCK + c],
              pattern(r, c));
  if (bad == 0) printf("  %s: %u rows right\n", what, rows);
}

static void expect_refused(KilnRtStatus st, const char *what) {
  const char *msg = kiln_rt_last_error();
  CHECK(st == KILN_RT_ERROR_INVALID_ARGUMENT, "%s: status %d, expected INVALID_ARGUMENT (%s)", what,
        (int)st, st == KILN_RT_OK ? "it ran" : msg);
  if (st != KILN_RT_ERROR_INVALID_ARGUMENT) return;
  CHECK(strstr(msg, "gather_rows") && strstr(msg, "pointer argument 0") &&
            strstr(msg, "32-bit offsets") && strstr(msg, "--index-bits 64"),
        "%s: message: %s", what, msg);
  printf("  %s: refused: %s\n", what, msg);
}

/* The launches the fake driver ran (its fake_cuda_launches); -1 where there is none. */
static int fake_launches(void) {
  void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  const int *n = h ? dlsym(h, "fake_cuda_launches") : NULL;
  int v = n ? *n : -1;
  if (h) dlclose(h);
  return v;
}

/* Scaled down: 4 rows 1000 bytes apart under a limit of 2048 elements (`limit_var`). On cuda
 * (the fake driver) the outputs have no bytes to compare: the launches are counted instead. */
static void test_scaled(KilnRtDevice *emu, const char *limit_var, KilnRtFunction *k32,
                        KilnRtFunction *k64, bool fake) {
  printf("scaled down: 4 rows of 1000 bytes, %s=2048\n", limit_var);
  enum { ROWS = 4, STRIDE = 1000 };
  uint8_t *x = NULL, *out = NULL;
  if (kiln_rt_malloc(emu, ROWS * STRIDE, (void **)&x) != KILN_RT_OK ||
      kiln_rt_malloc(emu, ROWS * BLOCK, (void **)&out) != KILN_RT_OK) {
    CHECK(false, "malloc: %s", kiln_rt_last_error());
    return;
  }
  if (!fake) fill_rows(emu, x, ROWS, STRIDE);
  setenv(limit_var, "2048", 1);
  int before = fake_launches();
  expect_refused(gather(k32, ROWS, x, out, STRIDE), "32-bit offsets, 4000 elements");
  if (fake) CHECK(fake_launches() == before, "the refused launch reached the driver");
  CHECK(gather(k64, ROWS, x, out, STRIDE) == KILN_RT_OK, "64-bit offsets: %s",
        kiln_rt_last_error());
  if (!fake) check_rows(emu, "64-bit offsets under the limit", out, ROWS);
  unsetenv(limit_var);
  if (!fake) CHECK(kiln_rt_memset(emu, out, 0, ROWS * BLOCK, NULL) == KILN_RT_OK, "memset");
  CHECK(gather(k32, ROWS, x, out, STRIDE) == KILN_RT_OK, "32-bit offsets: %s",
        kiln_rt_last_error());
  if (!fake) check_rows(emu, "32-bit offsets without the limit", out, ROWS);
  if (fake) {
    CHECK(fake_launches() == before + 2, "the driver ran %d launches, expected 2",
          fake_launches() - before);
    printf("  cuda: the 64-bit launch and the 32-bit one without the limit reached the driver\n");
  }
  kiln_rt_free(emu, x);
  kiln_rt_free(emu, out);
}

/* An arena carved into tensors (kiln_rt_mem_set_parts), as the BERT trainer's memory plan is:
 * 1024 bytes of rows (4 rows 200 apart) then an 8192-byte tensor, under a limit of 2048. From
 * the arena's start the allocation holds 9216 elements, so the 32-bit kernel is refused until
 * the parts are declared; then its rows' part (1024 elements) passes and is copied right, and a
 * pointer into the big part (8192 elements) is still refused. */
static void test_parts(KilnRtDevice *dev, const char *limit_var, KilnRtFunction *k32, bool fake) {
  printf("an arena of two tensors, %s=2048, kiln_rt_mem_set_parts\n", limit_var);
  enum { ROWS = 4, STRIDE = 200, PART0 = 1024, PART1 = 8192 };
  uint8_t *arena = NULL, *out = NULL;
  if (kiln_rt_malloc(dev, PART0 + PART1, (void **)&arena) != KILN_RT_OK ||
      kiln_rt_malloc(dev, ROWS * BLOCK, (void **)&out) != KILN_RT_OK) {
    CHECK(false, "malloc: %s", kiln_rt_last_error());
    return;
  }
  if (!fake) fill_rows(dev, arena, ROWS, STRIDE);
  setenv(limit_var, "2048", 1);
  expect_refused(gather(k32, ROWS, arena, out, STRIDE), "32-bit offsets, arena without parts");
  size_t ends[1] = {PART0};
  CHECK(kiln_rt_mem_set_parts(dev, arena, ends, 1) == KILN_RT_OK, "set_parts: %s",
        kiln_rt_last_error());
  CHECK(gather(k32, ROWS, arena, out, STRIDE) == KILN_RT_OK, "32-bit offsets, its part: %s",
        kiln_rt_last_error());
  if (!fake) check_rows(dev, "32-bit offsets in a 1024-element part", out, ROWS);
  expect_refused(gather(k32, 1, arena + PART0, out, STRIDE), "32-bit offsets, the 8192-byte part");
  size_t bad[2] = {PART0, 16};
  CHECK(kiln_rt_mem_set_parts(dev, arena, bad, 2) == KILN_RT_ERROR_INVALID_ARGUMENT &&
            kiln_rt_mem_set_parts(dev, arena + 64, ends, 1) == KILN_RT_ERROR_INVALID_ARGUMENT,
        "set_parts takes descending ends or a pointer inside the allocation");
  unsetenv(limit_var);
  kiln_rt_free(dev, arena);
  kiln_rt_free(dev, out);
}

/* Full size: row 2 starts at byte 2^31 + 16, where i32 `row * stride` wraps. */
enum { BIG_ROWS = 3 };
static const int32_t BIG_STRIDE = (1 << 30) + 8;

static void test_full(KilnRtDevice *dev, const char *name, KilnRtFunction *k64, KilnRtFunction *k32,
                      bool fake) {
  size_t bytes = (size_t)(BIG_ROWS - 1) * (size_t)BIG_STRIDE + BLOCK;
  printf("%s, full size: 3 rows 2^30 + 8 bytes apart in %zu bytes\n", name, bytes);
  uint8_t *x = NULL, *out = NULL;
  if (kiln_rt_malloc(dev, bytes, (void **)&x) != KILN_RT_OK) {
    printf("  skipped: cannot allocate %zu bytes here (%s)\n", bytes, kiln_rt_last_error());
    return;
  }
  if (kiln_rt_malloc(dev, BIG_ROWS * BLOCK, (void **)&out) != KILN_RT_OK) {
    CHECK(false, "malloc: %s", kiln_rt_last_error());
    kiln_rt_free(dev, x);
    return;
  }
  if (!fake) fill_rows(dev, x, BIG_ROWS, (size_t)BIG_STRIDE);
  CHECK(gather(k64, BIG_ROWS, x, out, BIG_STRIDE) == KILN_RT_OK, "%s 64-bit: %s", name,
        kiln_rt_last_error());
  if (!fake) check_rows(dev, "64-bit offsets past 2^31", out, BIG_ROWS);
  int before = fake_launches();
  expect_refused(gather(k32, BIG_ROWS, x, out, BIG_STRIDE), "32-bit offsets past 2^31");
  if (fake) CHECK(fake_launches() == before, "the refused launch reached the driver");
  kiln_rt_free(dev, x);
  kiln_rt_free(dev, out);
}

/* gather_rows compiled for target at num_warps warps as emit's text (lowered MLIR, PTX); NULL
 * data if the compile fails. */
static KilnBuffer gather_rows_text(KilnTarget target, KilnEmit emit, int num_warps) {
  KilnDefine block = {"BLOCK", BLOCK};
  KilnCompileOptions o = {.path = "gather_rows.kiln",
                          .source = SOURCE,
                          .source_len = sizeof SOURCE - 1,
                          .kernel = "gather_rows",
                          .defines = &block,
                          .num_defines = 1,
                          .target = target,
                          .num_warps = num_warps,
                          .diag = stderr};
  KilnBuffer text = {0};
  if (kiln_driver_compile(&o, emit, &text) != KILN_DRIVER_OK) {
    kiln_buffer_free(&text);
    text = (KilnBuffer){0};
  }
  return text;
}

/* The emu module records no register count (its metadata's 7th word is 0), and what makes that
 * safe holds: the PTX of the same kernel declares `.maxntid` equal to its block at 1 and 8
 * warps, so ptxas fits any block the emulator accepts (it refuses every other size) into a
 * GPU's register file. */
static void test_registers_unrecorded(void) {
  printf("emu metadata: no register count; the PTX's .maxntid is the block\n");
  KilnBuffer text = gather_rows_text(KILN_TARGET_EMU, KILN_EMIT_LOWERED_MLIR, 1);
  long regs = -1;
  const char *m = text.data ? strstr(text.data, "@kiln_emu_meta_gather_rows(dense<[") : NULL;
  unsigned w[7];
  if (m && sscanf(m + strlen("@kiln_emu_meta_gather_rows(dense<["), "%u, %u, %u, %u, %u, %u, %u",
                  &w[0], &w[1], &w[2], &w[3], &w[4], &w[5], &w[6]) == 7) {
    regs = (long)w[6];
    CHECK(w[1] == 32, "emu block threads %u, want 32", w[1]);
  }
  CHECK(regs == 0, "emu registers word %ld, want 0", regs);
  kiln_buffer_free(&text);
  for (int warps = 1; warps <= 8; warps *= 8) {
    KilnBuffer ptx = gather_rows_text(KILN_TARGET_SM90, KILN_EMIT_PTX, warps);
    char want[32];
    snprintf(want, sizeof want, ".maxntid %d, 1, 1", 32 * warps);
    CHECK(ptx.data && strstr(ptx.data, want), "sm_90 PTX at %d warps lacks '%s'", warps, want);
    kiln_buffer_free(&ptx);
  }
}

static void run_device(const char *spec, KilnTarget target) {
  KilnRtDevice *dev = NULL;
  bool fake = target == KILN_TARGET_SM90;
  if (fake && !getenv("KILN_FAKE_CUDA_MODULES")) {
    printf("cuda: skipped (the fake driver is not in use: KILN_FAKE_CUDA_MODULES unset)\n");
    return;
  }
  if (kiln_rt_device_create(spec, &dev) != KILN_RT_OK) {
    CHECK(false, "device %s: %s", spec, kiln_rt_last_error());
    return;
  }
  KilnRtModule *m32 = NULL, *m64 = NULL;
  KilnRtFunction *k32 = load_kernel(dev, target, 32, &m32);
  KilnRtFunction *k64 = load_kernel(dev, target, 64, &m64);
  const char *limit_var = target == KILN_TARGET_EMU ? "KILN_EMU_INDEX_LIMIT" : "KILN_INDEX_LIMIT";
  if (k32 && k64) test_scaled(dev, limit_var, k32, k64, fake);
  if (k32) test_parts(dev, limit_var, k32, fake);
  if (k32 && k64) test_full(dev, spec, k64, k32, fake);
  kiln_rt_module_destroy(m32);
  kiln_rt_module_destroy(m64);
  kiln_rt_device_destroy(dev);
}

int main(void) {
  unsetenv("KILN_EMU_INDEX_LIMIT");
  unsetenv("KILN_INDEX_LIMIT");
  run_device("emu", KILN_TARGET_EMU);
  run_device("cpu", KILN_TARGET_CPU);
  run_device("cuda", KILN_TARGET_SM90);
  test_registers_unrecorded();
  return kiln_check_result("test_emu_offsets");
}
