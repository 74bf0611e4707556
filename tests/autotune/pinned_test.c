/* pinned_test.c — two libraries generated from one cache with `kiln tune/lib -D`: act (relu or
 * square of a x, any element type) pinned to square in f16 and to relu in bf16. The cache also
 * holds f16 relu timings, which the f16 square library must not take. Every result is checked
 * against a C loop rounded to the element type once (the kernel's math is f32): exact. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "act_relu_bf16.h"
#include "act_sq_f16.h"
#include "reference.h"

static int failures;

static float input(int i) { return (float)((i * 37) % 101 - 50) * 0.0625f; }

/* f16: round(x) then square in f32, rounded once to f16. */
static int check_sq_f16(act_sq_f16 *lib, KilnRtDevice *dev, int n) {
  uint16_t *x, *y;
  if (kiln_rt_malloc(dev, (size_t)n * 2, (void **)&x) || kiln_rt_malloc(dev, (size_t)n * 2, (void **)&y))
    return printf("FAIL malloc\n"), 1;
  for (int i = 0; i < n; i++) x[i] = kiln_ref_f32_to_f16(input(i)), y[i] = 0xffff;
  KilnRtStatus st = act_sq_f16_act(lib, x, y, n, 1.5f, NULL, NULL, NULL);
  int bad = st != KILN_RT_OK;
  for (int i = 0; i < n && !bad; i++) {
    float v = kiln_ref_f16_to_f32(x[i]) * 1.5f;
    uint16_t want = kiln_ref_f32_to_f16(v * v);
    if (y[i] != want) {
      printf("FAIL f16 square n=%d: y[%d] = %g, want %g\n", n, i, kiln_ref_f16_to_f32(y[i]),
             kiln_ref_f16_to_f32(want));
      bad = 1;
    }
  }
  act_sq_f16_act_config cfg = act_sq_f16_act_pick(n);
  if (cfg.OP != 2 || cfg.T != 5) { /* f16 is kind 5 in i1 i8 i16 i32 i64 f16 bf16 f32 */
    printf("FAIL f16 square library picked OP=%lld T=%lld\n", (long long)cfg.OP, (long long)cfg.T);
    bad = 1;
  }
  printf("%s f16 square n=%d: BLOCK=%lld num_warps=%d status %s\n", bad ? "FAIL" : "ok", n,
         (long long)cfg.BLOCK, cfg.num_warps, kiln_rt_status_name(st));
  kiln_rt_free(dev, x);
  kiln_rt_free(dev, y);
  return bad;
}

static int check_relu_bf16(act_relu_bf16 *lib, KilnRtDevice *dev, int n) {
  uint16_t *x, *y;
  if (kiln_rt_malloc(dev, (size_t)n * 2, (void **)&x) || kiln_rt_malloc(dev, (size_t)n * 2, (void **)&y))
    return printf("FAIL malloc\n"), 1;
  for (int i = 0; i < n; i++) x[i] = kiln_ref_f32_to_bf16(input(i)), y[i] = 0xffff;
  KilnRtStatus st = act_relu_bf16_act(lib, x, y, n, -0.75f, NULL, NULL, NULL);
  int bad = st != KILN_RT_OK;
  for (int i = 0; i < n && !bad; i++) {
    float v = kiln_ref_bf16_to_f32(x[i]) * -0.75f;
    uint16_t want = kiln_ref_f32_to_bf16(v > 0.0f ? v : 0.0f);
    if (y[i] != want) {
      printf("FAIL bf16 relu n=%d: y[%d] = %g, want %g\n", n, i, kiln_ref_bf16_to_f32(y[i]),
             kiln_ref_bf16_to_f32(want));
      bad = 1;
    }
  }
  act_relu_bf16_act_config cfg = act_relu_bf16_act_pick(n);
  if (cfg.OP != 1 || cfg.T != 6) {
    printf("FAIL bf16 relu library picked OP=%lld T=%lld\n", (long long)cfg.OP, (long long)cfg.T);
    bad = 1;
  }
  printf("%s bf16 relu n=%d: BLOCK=%lld num_warps=%d status %s\n", bad ? "FAIL" : "ok", n,
         (long long)cfg.BLOCK, cfg.num_warps, kiln_rt_status_name(st));
  kiln_rt_free(dev, x);
  kiln_rt_free(dev, y);
  return bad;
}

int main(void) {
  KilnRtDevice *dev;
  act_sq_f16 *sq;
  act_relu_bf16 *relu;
  if (kiln_rt_device_create("cpu", &dev) != KILN_RT_OK || act_sq_f16_create(dev, &sq) != KILN_RT_OK ||
      act_relu_bf16_create(dev, &relu) != KILN_RT_OK) {
    printf("FAIL: %s\n", kiln_rt_last_error());
    return 1;
  }
  int sizes[] = {5000, 77, 1};
  for (int i = 0; i < 3; i++) {
    failures += check_sq_f16(sq, dev, sizes[i]);
    failures += check_relu_bf16(relu, dev, sizes[i]);
  }
  act_sq_f16_destroy(sq);
  act_relu_bf16_destroy(relu);
  kiln_rt_device_destroy(dev);
  return failures ? 1 : 0;
}
