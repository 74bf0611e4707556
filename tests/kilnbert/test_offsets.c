/* test_offsets.c — the offsets the trainer's kernel libraries are built with (docs/trainer.md,
 * "Offsets"), on the cpu device, with the 32-bit limit lowered (KILN_INDEX_LIMIT) so that a
 * scaled-down buffer stands for one of 2^31 elements:
 *
 *   - kb_xent_f32 is built with --index-bits 64 (the MLM logits are the product nearest 2^31):
 *     xent_fwd over ROWS x CLASSES = 12,000 logits runs under a limit of 4096 and its loss and
 *     log-sum-exp match a double-precision reference (within 1e-5 relative: one f32 exp/log
 *     chain per row of 3,000 terms, u = 6e-8, sqrt(3000) u = 3e-6);
 *   - kb_tanh_f32 keeps 32-bit offsets: tanh_fwd over the same 12,000 elements is refused,
 *     naming the kernel and --index-bits 64, and never runs (its output sentinel stays);
 *   - the trainer's arena (kilnbert.model_parts runs test_model with a lowered limit): not here.
 *
 * Without --index-bits 64 on xent's libraries the xent call is refused like tanh's. */
#include "check.h"
#include "kb_tanh_f32.h"
#include "kb_xent_f32.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { ROWS = 4, CLASSES = 3000, N = ROWS * CLASSES };

/* One program per row (the library's default grid is its tuning spec's, 16 rows). */
static void xent_grid(const kb_xent_f32_xent_fwd_config *cfg, void *user, uint32_t grid[3]) {
  (void)cfg, (void)user;
  grid[0] = ROWS;
  grid[1] = grid[2] = 1;
}

int main(void) {
  KilnRtDevice *dev = NULL;
  kb_xent_f32 *xent = NULL;
  kb_tanh_f32 *tanh_lib = NULL;
  float *x = NULL, *loss = NULL, *lse = NULL, *y = NULL;
  int32_t *labels = NULL;
  if (kiln_rt_device_create("cpu", &dev) || kb_xent_f32_create(dev, &xent) ||
      kb_tanh_f32_create(dev, &tanh_lib) || kiln_rt_malloc(dev, N * sizeof *x, (void **)&x) ||
      kiln_rt_malloc(dev, N * sizeof *y, (void **)&y) ||
      kiln_rt_malloc(dev, ROWS * sizeof *loss, (void **)&loss) ||
      kiln_rt_malloc(dev, ROWS * sizeof *lse, (void **)&lse) ||
      kiln_rt_malloc(dev, ROWS * sizeof *labels, (void **)&labels)) {
    fprintf(stderr, "setup: %s\n", kiln_rt_last_error());
    return 1;
  }
  for (int i = 0; i < N; i++) {
    x[i] = (float)((i * 37) % 101) / 25.0f - 2.0f;
    y[i] = -7.0f;
  }
  for (int r = 0; r < ROWS; r++) labels[r] = (r * 731) % CLASSES;
  setenv("KILN_INDEX_LIMIT", "4096", 1);

  KilnRtStatus st =
      kb_xent_f32_xent_fwd(xent, x, labels, loss, lse, CLASSES, -100, xent_grid, NULL, NULL);
  CHECK(st == KILN_RT_OK, "xent_fwd (64-bit offsets) over %d logits, limit 4096: %s", N,
        kiln_rt_last_error());
  for (int r = 0; r < ROWS && st == KILN_RT_OK; r++) {
    double mx = -INFINITY, s = 0;
    for (int c = 0; c < CLASSES; c++) mx = fmax(mx, x[r * CLASSES + c]);
    for (int c = 0; c < CLASSES; c++) s += exp(x[r * CLASSES + c] - mx);
    double ref_lse = mx + log(s), ref_loss = ref_lse - x[r * CLASSES + labels[r]];
    CHECK(fabs(lse[r] - ref_lse) <= 1e-5 * fabs(ref_lse) + 1e-6, "row %d: lse %.9g, reference %.9g",
          r, lse[r], ref_lse);
    CHECK(fabs(loss[r] - ref_loss) <= 1e-5 * fabs(ref_loss) + 1e-6,
          "row %d: loss %.9g, reference %.9g", r, loss[r], ref_loss);
  }
  if (st == KILN_RT_OK) printf("ok xent_fwd (64-bit) ran past the limit, loss and lse right\n");

  st = kb_tanh_f32_tanh_fwd(tanh_lib, x, y, N, NULL, NULL, NULL);
  CHECK(st == KILN_RT_ERROR_INVALID_ARGUMENT, "tanh_fwd (32-bit offsets) past the limit: status %s",
        kiln_rt_status_name(st));
  CHECK(strstr(kiln_rt_last_error(), "tanh_fwd") && strstr(kiln_rt_last_error(), "--index-bits 64"),
        "message: %s", kiln_rt_last_error());
  CHECK(y[0] == -7.0f, "the refused tanh_fwd ran (y[0] = %g)", y[0]);
  printf("ok tanh_fwd (32-bit) refused: %s\n", kiln_rt_last_error());
  unsetenv("KILN_INDEX_LIMIT");

  kiln_rt_free(dev, x);
  kiln_rt_free(dev, y);
  kiln_rt_free(dev, loss);
  kiln_rt_free(dev, lse);
  kiln_rt_free(dev, labels);
  kb_xent_f32_destroy(xent);
  kb_tanh_f32_destroy(tanh_lib);
  kiln_rt_device_destroy(dev);
  return kiln_check_result("test_offsets");
}
