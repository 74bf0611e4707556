/* libargs_test.c — a generated library's argument checks, on the cpu device: what each call
 * refuses before anything runs, and what the checked mode adds.
 *
 * flowlib (the library of autotune.library_flow) is built plainly; argslib is the same kernel,
 * scale_add(x, y, out, a, n) with size rule n for every buffer, compiled with
 * -DKILN_LIB_CHECKED.  Every call here that must be refused passes pointers that the kernel
 * would fault on or write past (NULL, a view 8 floats before the end of a 64-float buffer with
 * n = 64, a stack array), so that a missing check shows as a crash or as a wrong sentinel, not
 * only as a status.  Each refusal is checked for KILN_RT_ERROR_INVALID_ARGUMENT and for the
 * words of its message; the sound calls are checked exactly against a C loop (a * x + y of
 * small integers and quarters is exact in f32, tolerance 0). stridelib is copy_rows, whose
 * buffers' size rules are extents in the row strides, also checked: a buffer one element short of
 * (rows - 1) * ld + cols is refused with the bytes needed and registered, though it holds
 * rows * cols; the copies that run are exact (a copy, tolerance 0). gridlib is rowsum, one
 * program a row and no row count, whose rules name the grid (x: grid0 * cols, out: grid0), also
 * checked: buffers of 3 rows run under a callback's grid of 3 and are refused under the spec's
 * grid of 5 and a callback's 4; sums of small integers and halves are exact (tolerance 0). */
#include <stdio.h>
#include <string.h>

#include "argslib.h"
#include "check.h"
#include "flowlib.h"
#include "gridlib.h"
#include "stridelib.h"

enum { N = 64 };

/* A refused call: INVALID_ARGUMENT, a message holding `words`, and out's sentinel untouched. */
static void refused(const char *what, KilnRtStatus st, const char *words, const float *out) {
  CHECK(st == KILN_RT_ERROR_INVALID_ARGUMENT, "%s: status %s", what, kiln_rt_status_name(st));
  CHECK(strstr(kiln_rt_last_error(), words), "%s: message '%s' lacks '%s'", what,
        kiln_rt_last_error(), words);
  if (out) CHECK(out[0] == -1.0f, "%s: the kernel ran (out[0] = %g)", what, out[0]);
  printf("ok refused %-28s %s\n", what, kiln_rt_last_error());
}

static void sound(const char *what, KilnRtStatus st, const float *x, const float *y,
                  const float *out, int n) {
  CHECK(st == KILN_RT_OK, "%s: %s", what, kiln_rt_last_error());
  int wrong = 0;
  for (int i = 0; i < n && st == KILN_RT_OK; i++) wrong += out[i] != 2.5f * x[i] + y[i];
  CHECK(wrong == 0, "%s: %d wrong elements", what, wrong);
  printf("ok ran     %s\n", what);
}

static void fill(float *x, float *y, float *out, int n) {
  for (int i = 0; i < n; i++) {
    x[i] = (float)(i % 7) * 0.25f;
    y[i] = (float)(i % 5) - 2.0f;
    out[i] = -1.0f;
  }
}

/* Every library: NULL pointers, negative and zero extents, a stream of another device. */
static void plain_checks(flowlib *lib, KilnRtDevice *other, float *x, float *y, float *out) {
  fill(x, y, out, N);
  refused("NULL x", flowlib_scale_add(lib, NULL, y, out, 2.5f, N, NULL, NULL, NULL),
          "pointer x is NULL", out);
  refused("NULL out", flowlib_scale_add(lib, x, y, NULL, 2.5f, N, NULL, NULL, NULL),
          "pointer out is NULL", NULL);
  refused("negative n", flowlib_scale_add(lib, x, y, out, 2.5f, -5, NULL, NULL, NULL),
          "n = -5 sizes a buffer and must not be negative", out);
  refused("zero n", flowlib_scale_add(lib, x, y, out, 2.5f, 0, NULL, NULL, NULL),
          "buffer x of n = 0 elements", out);
  KilnRtStream *s = NULL;
  CHECK(kiln_rt_stream_create(other, &s) == KILN_RT_OK, "stream: %s", kiln_rt_last_error());
  if (s) {
    refused("stream of another device", flowlib_scale_add(lib, x, y, out, 2.5f, N, NULL, NULL, s),
            "the stream belongs to another device", out);
    kiln_rt_stream_destroy(s);
  }
  sound("plain, n = 64", flowlib_scale_add(lib, x, y, out, 2.5f, N, NULL, NULL, NULL), x, y, out,
        N);
}

/* KILN_LIB_CHECKED: every pointer in a live allocation with room for n elements. */
static void checked(argslib *lib, float *x, float *y, float *out) {
  fill(x, y, out, N);
  float stack[N];
  memset(stack, 0, sizeof stack);
  refused("pointer not allocated", argslib_scale_add(lib, stack, y, out, 2.5f, N, NULL, NULL, NULL),
          "pointer x = ", out);
  refused(
      "view past the end", argslib_scale_add(lib, x + N - 8, y, out, 2.5f, N, NULL, NULL, NULL),
      "buffer x needs 256 bytes (n = 64 elements of 4 bytes) but 32 bytes are registered from x",
      out);
  refused("out too small", argslib_scale_add(lib, x, y, out + 1, 2.5f, N, NULL, NULL, NULL),
          "buffer out needs 256 bytes (n = 64 elements of 4 bytes) but 252 bytes are registered",
          out);
  sound("checked, n = 64", argslib_scale_add(lib, x, y, out, 2.5f, N, NULL, NULL, NULL), x, y, out,
        N);
  fill(x, y, out, N);
  sound("checked, a view of 8 at the end",
        argslib_scale_add(lib, x + N - 8, y + N - 8, out + N - 8, 2.5f, 8, NULL, NULL, NULL),
        x + N - 8, y + N - 8, out + N - 8, 8);
}

/* KILN_LIB_CHECKED in an allocation carved into tensors (kiln_rt_mem_set_parts, as the BERT
 * trainer's arena): room is counted to the end of the pointer's part. One allocation of 2N
 * floats in two parts of N: a call of N + 8 on the first part would reach 8 floats into the
 * second and is refused, though the allocation holds them; each part alone runs. */
static void checked_parts(KilnRtDevice *dev, argslib *lib) {
  float *arena = NULL;
  size_t ends[2] = {N * sizeof(float), 2 * N * sizeof(float)};
  if (kiln_rt_malloc(dev, 2 * N * sizeof(float), (void **)&arena) ||
      kiln_rt_mem_set_parts(dev, arena, ends, 2)) {
    CHECK(0, "parts setup: %s", kiln_rt_last_error());
    return;
  }
  float *x = arena, *out = arena + N;
  for (int i = 0; i < N; i++) {
    x[i] = (float)(i % 7) * 0.25f;
    out[i] = -1.0f;
  }
  refused("x past the end of its part",
          argslib_scale_add(lib, x, x, out, 2.5f, N + 8, NULL, NULL, NULL),
          "buffer x needs 288 bytes (n = 72 elements of 4 bytes) but 256 bytes are registered "
          "from x to the end of its allocation or part",
          out);
  float y[N];
  for (int i = 0; i < N; i++) y[i] = x[i];
  sound("checked, each part a buffer", argslib_scale_add(lib, x, x, out, 2.5f, N, NULL, NULL, NULL),
        x, y, out, N);
  kiln_rt_free(dev, arena);
}

/* stridelib (copy_rows, checked): the extent a call touches is (rows - 1) * ld + cols elements,
 * from its strides. 4 rows of 50 in rows of 64 (x) and 56 (y): x needs 242 floats, y 218. */
enum {
  ROWS = 4,
  COLS = 50,
  LDX = 64,
  LDY = 56,
  XN = (ROWS - 1) * LDX + COLS,
  YN = (ROWS - 1) * LDY + COLS
};

static void fill_rows(float *x, int nx, float *y, int ny) {
  for (int i = 0; i < nx; i++) x[i] = (float)(i % 97) * 0.5f;
  for (int i = 0; i < ny; i++) y[i] = -1.0f;
}

/* y's rows hold x's first COLS of each row; y's padding keeps its sentinel. */
static void rows_copied(const char *what, KilnRtStatus st, const float *x, int ldx,
                        const float *y) {
  CHECK(st == KILN_RT_OK, "%s: %s", what, kiln_rt_last_error());
  int wrong = 0;
  for (int r = 0; r < ROWS && st == KILN_RT_OK; r++)
    for (int c = 0; c < LDY && r * LDY + c < YN; c++)
      wrong += y[r * LDY + c] != (c < COLS ? x[r * ldx + c] : -1.0f);
  CHECK(wrong == 0, "%s: %d wrong elements", what, wrong);
  printf("ok ran     %s\n", what);
}

static void checked_strides(KilnRtDevice *dev) {
  stridelib *lib = NULL;
  float *x = NULL, *xs = NULL, *y = NULL, *ys = NULL;
  if (stridelib_create(dev, &lib) || kiln_rt_malloc(dev, XN * sizeof(float), (void **)&x) ||
      kiln_rt_malloc(dev, (XN - 1) * sizeof(float), (void **)&xs) ||
      kiln_rt_malloc(dev, YN * sizeof(float), (void **)&y) ||
      kiln_rt_malloc(dev, (YN - 1) * sizeof(float), (void **)&ys)) {
    CHECK(0, "stridelib setup: %s", kiln_rt_last_error());
    return;
  }
  fill_rows(x, XN, y, YN);
  rows_copied("strided, buffers of exactly the extent",
              stridelib_copy_rows(lib, x, y, ROWS, COLS, LDX, LDY, NULL, NULL, NULL), x, LDX, y);
  /* x one float short of its extent, though far above rows * cols = 200 floats */
  fill_rows(xs, XN - 1, y, YN);
  refused(
      "x one element short of its extent",
      stridelib_copy_rows(lib, xs, y, ROWS, COLS, LDX, LDY, NULL, NULL, NULL),
      "buffer x needs 968 bytes ((rows - 1) * ldx + cols = 242 elements of 4 bytes) but 964 bytes "
      "are registered from x",
      y);
  for (int i = 0; i < YN - 1; i++) ys[i] = -1.0f;
  refused(
      "y one element short of its extent",
      stridelib_copy_rows(lib, x, ys, ROWS, COLS, LDX, LDY, NULL, NULL, NULL),
      "buffer y needs 872 bytes ((rows - 1) * ldy + cols = 218 elements of 4 bytes) but 868 bytes "
      "are registered from y",
      ys);
  /* the short x with rows of 63: the extent is 239 floats, which it holds */
  fill_rows(xs, XN - 1, y, YN);
  rows_copied("strided, the short x with ldx = 63",
              stridelib_copy_rows(lib, xs, y, ROWS, COLS, LDX - 1, LDY, NULL, NULL, NULL), xs,
              LDX - 1, y);
  kiln_rt_free(dev, x);
  kiln_rt_free(dev, xs);
  kiln_rt_free(dev, y);
  kiln_rt_free(dev, ys);
  stridelib_destroy(lib);
}

/* gridlib (rowsum, checked): the rows are the grid's x, `grid0` in the size rules. */
enum { GCOLS = 60, GROWS = 3 };

static void rows_at(const gridlib_rowsum_config *cfg, void *user, uint32_t g[3]) {
  (void)cfg;
  g[0] = *(const uint32_t *)user;
  g[1] = g[2] = 1;
}

static void checked_grid(KilnRtDevice *dev) {
  gridlib *lib = NULL;
  float *x = NULL, *out = NULL, *x4 = NULL;
  if (gridlib_create(dev, &lib) ||
      kiln_rt_malloc(dev, GROWS * GCOLS * sizeof(float), (void **)&x) ||
      kiln_rt_malloc(dev, (GROWS + 1) * GCOLS * sizeof(float), (void **)&x4) ||
      kiln_rt_malloc(dev, GROWS * sizeof(float), (void **)&out)) {
    CHECK(0, "gridlib setup: %s", kiln_rt_last_error());
    return;
  }
  for (int i = 0; i < GROWS * GCOLS; i++) x[i] = (float)(i % 9) * 0.5f - 2.0f;
  for (int r = 0; r < GROWS; r++) out[r] = -1.0f;
  uint32_t rows = GROWS, more = GROWS + 1;
  KilnRtStatus st = gridlib_rowsum(lib, x, out, GCOLS, rows_at, &rows, NULL);
  CHECK(st == KILN_RT_OK, "rowsum over 3 rows: %s", kiln_rt_last_error());
  int wrong = 0;
  for (int r = 0; r < GROWS && st == KILN_RT_OK; r++) {
    float want = 0.0f;
    for (int c = 0; c < GCOLS; c++) want += x[r * GCOLS + c];
    wrong += out[r] != want;
  }
  CHECK(wrong == 0, "rowsum over 3 rows: %d sums differ from the C loop", wrong);
  if (st == KILN_RT_OK && !wrong) printf("ok ran     rowsum, 3 rows, a grid of 3\n");
  for (int r = 0; r < GROWS; r++) out[r] = -1.0f;
  refused("rows of 3 under the spec's grid of 5",
          gridlib_rowsum(lib, x, out, GCOLS, NULL, NULL, NULL),
          "buffer x needs 1200 bytes (grid0 * cols = 300 elements of 4 bytes) but 720 bytes are "
          "registered from x",
          out);
  refused("rows of 3 under a grid of 4", gridlib_rowsum(lib, x, out, GCOLS, rows_at, &more, NULL),
          "buffer x needs 960 bytes (grid0 * cols = 240 elements of 4 bytes) but 720 bytes are "
          "registered from x",
          out);
  refused("x of 4 rows, out of 3, a grid of 4",
          gridlib_rowsum(lib, x4, out, GCOLS, rows_at, &more, NULL),
          "buffer out needs 16 bytes (grid0 = 4 elements of 4 bytes) but 12 bytes are registered "
          "from out",
          out);
  kiln_rt_free(dev, x);
  kiln_rt_free(dev, x4);
  kiln_rt_free(dev, out);
  gridlib_destroy(lib);
}

int main(void) {
  KilnRtDevice *dev = NULL, *other = NULL;
  flowlib *plain = NULL;
  argslib *chk = NULL;
  float *x = NULL, *y = NULL, *out = NULL;
  if (kiln_rt_device_create("cpu", &dev) || kiln_rt_device_create("cpu", &other) ||
      flowlib_create(dev, &plain) || argslib_create(dev, &chk) ||
      kiln_rt_malloc(dev, N * sizeof(float), (void **)&x) ||
      kiln_rt_malloc(dev, N * sizeof(float), (void **)&y) ||
      kiln_rt_malloc(dev, N * sizeof(float), (void **)&out)) {
    printf("FAIL setup: %s\n", kiln_rt_last_error());
    return 1;
  }
  plain_checks(plain, other, x, y, out);
  checked(chk, x, y, out);
  checked_parts(dev, chk);
  checked_strides(dev);
  checked_grid(dev);
  kiln_rt_free(dev, x);
  kiln_rt_free(dev, y);
  kiln_rt_free(dev, out);
  flowlib_destroy(plain);
  argslib_destroy(chk);
  kiln_rt_device_destroy(other);
  kiln_rt_device_destroy(dev);
  return failures != 0;
}
