/* chain_test.c — an untuned library's chain of defaults (docs/library.md, "Untuned libraries"),
 * on the cpu device.
 *
 * chainlib is rowsum (kernels/rowsum.kiln: one program a row, the whole row in one tile, so
 * `where BLOCK >= cols`) made by `kiln lib` with no cache from a spec of rows of 1000: its
 * default is the first config of the space that holds them, BLOCK = 1024, and the `for cpu`
 * presets written before it, BLOCK = 64 and 256, form the chain in front of it. A call runs
 * the first of 64, 256, 1024 that holds its rows, whatever promises it keeps (rows of 64 and
 * 1000 keep cols%8, the spec's, rows of 60 and 200 do not), and a call that no variant holds
 * is refused naming the condition. Each sum is checked against a C loop: the inputs are
 * integers and halves, so every partial sum is exact in f32 (tolerance 0). */
#include <stdio.h>
#include <string.h>

#include "chainlib.h"
#include "check.h"

enum { ROWS = 3 };

static void rows_grid(const chainlib_rowsum_config *cfg, void *user, uint32_t g[3]) {
  (void)cfg, (void)user;
  g[0] = ROWS;
  g[1] = g[2] = 1;
}

/* rowsum over ROWS rows of cols: the pick is BLOCK = want, and the sums are the C loop's. */
static void runs_with(KilnRtDevice *dev, chainlib *lib, int32_t cols, int64_t want) {
  chainlib_rowsum_config cfg = chainlib_rowsum_pick(cols);
  CHECK(cfg.BLOCK == want, "cols=%d: picks BLOCK=%lld, want %lld", cols, (long long)cfg.BLOCK,
        (long long)want);
  float *x = NULL, *out = NULL;
  if (kiln_rt_malloc(dev, (size_t)ROWS * (size_t)cols * sizeof *x, (void **)&x) ||
      kiln_rt_malloc(dev, ROWS * sizeof *out, (void **)&out)) {
    CHECK(0, "cols=%d: malloc: %s", cols, kiln_rt_last_error());
    return;
  }
  for (int i = 0; i < ROWS * cols; i++) x[i] = (float)(i % 11) * 0.5f - 2.0f;
  KilnRtStatus st = chainlib_rowsum(lib, x, out, cols, rows_grid, NULL, NULL);
  CHECK(st == KILN_RT_OK, "cols=%d: %s", cols, kiln_rt_last_error());
  int wrong = 0;
  for (int r = 0; r < ROWS && st == KILN_RT_OK; r++) {
    float want_sum = 0.0f;
    for (int c = 0; c < cols; c++) want_sum += x[r * cols + c];
    wrong += out[r] != want_sum;
  }
  CHECK(wrong == 0, "cols=%d: %d row sums differ from the C loop", cols, wrong);
  if (cfg.BLOCK == want && st == KILN_RT_OK && !wrong)
    printf("ok cols=%d runs BLOCK=%lld\n", cols, (long long)cfg.BLOCK);
  kiln_rt_free(dev, x);
  kiln_rt_free(dev, out);
}

int main(void) {
  KilnRtDevice *dev = NULL;
  chainlib *lib = NULL;
  if (kiln_rt_device_create("cpu", &dev) || chainlib_create(dev, &lib)) {
    printf("FAIL setup: %s\n", kiln_rt_last_error());
    return 1;
  }
  runs_with(dev, lib, 60, 64);
  runs_with(dev, lib, 64, 64);
  runs_with(dev, lib, 200, 256);
  runs_with(dev, lib, 256, 256);
  runs_with(dev, lib, 1000, 1024);
  float x[1] = {0}, out[1] = {-1.0f};
  KilnRtStatus st = chainlib_rowsum(lib, x, out, 5000, rows_grid, NULL, NULL);
  CHECK(st == KILN_RT_ERROR_INVALID_ARGUMENT, "cols=5000: status %s", kiln_rt_status_name(st));
  CHECK(strstr(kiln_rt_last_error(), "BLOCK >= cols fails"), "cols=5000: message '%s'",
        kiln_rt_last_error());
  CHECK(out[0] == -1.0f, "cols=5000: the kernel ran");
  if (st == KILN_RT_ERROR_INVALID_ARGUMENT)
    printf("ok cols=5000 refused: %s\n", kiln_rt_last_error());
  chainlib_destroy(lib);
  kiln_rt_device_destroy(dev);
  if (failures) printf("FAIL: %d checks\n", failures);
  return failures != 0;
}
