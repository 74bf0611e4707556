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

/* One of the two libraries: how to call it and what it must compute (its element type's
 * conversions, and f applied in f32 to a x), and the pins its config must carry. */
typedef struct Variant {
  const char *name;
  KilnRtStatus (*launch)(void *lib, uint16_t *x, uint16_t *y, int32_t n, float a);
  void (*pick)(int64_t n, int64_t *op, int64_t *t, int64_t *block, int *warps);
  uint16_t (*to_elem)(float);
  float (*from_elem)(uint16_t);
  float (*f)(float);
  float a;
  int64_t op, t; /* t: f16 is kind 5, bf16 6 (i1 i8 i16 i32 i64 f16 bf16 f32) */
} Variant;

static KilnRtStatus launch_sq(void *lib, uint16_t *x, uint16_t *y, int32_t n, float a) {
  return act_sq_f16_act(lib, x, y, n, a, NULL, NULL, NULL);
}
static KilnRtStatus launch_relu(void *lib, uint16_t *x, uint16_t *y, int32_t n, float a) {
  return act_relu_bf16_act(lib, x, y, n, a, NULL, NULL, NULL);
}
static void pick_sq(int64_t n, int64_t *op, int64_t *t, int64_t *block, int *warps) {
  act_sq_f16_act_config c = act_sq_f16_act_pick(n);
  *op = c.OP, *t = c.T, *block = c.BLOCK, *warps = c.num_warps;
}
static void pick_relu(int64_t n, int64_t *op, int64_t *t, int64_t *block, int *warps) {
  act_relu_bf16_act_config c = act_relu_bf16_act_pick(n);
  *op = c.OP, *t = c.T, *block = c.BLOCK, *warps = c.num_warps;
}
static float square(float v) { return v * v; }
static float relu(float v) { return v > 0.0f ? v : 0.0f; }

static const Variant f16_square = {
    "f16 square", launch_sq, pick_sq, kiln_ref_f32_to_f16, kiln_ref_f16_to_f32, square, 1.5f, 2, 5};
static const Variant bf16_relu = {
    "bf16 relu", launch_relu, pick_relu, kiln_ref_f32_to_bf16, kiln_ref_bf16_to_f32, relu,
    -0.75f,      1,           6};

/* y = f(a x) rounded once to the element type, bit for bit. */
static int check(const Variant *v, void *lib, KilnRtDevice *dev, int n) {
  uint16_t *x, *y;
  if (kiln_rt_malloc(dev, (size_t)n * 2, (void **)&x) ||
      kiln_rt_malloc(dev, (size_t)n * 2, (void **)&y))
    return printf("FAIL malloc\n"), 1;
  for (int i = 0; i < n; i++) x[i] = v->to_elem(input(i)), y[i] = 0xffff;
  KilnRtStatus st = v->launch(lib, x, y, n, v->a);
  int bad = st != KILN_RT_OK;
  for (int i = 0; i < n && !bad; i++) {
    uint16_t want = v->to_elem(v->f(v->from_elem(x[i]) * v->a));
    if (y[i] != want) {
      printf("FAIL %s n=%d: y[%d] = %g, want %g\n", v->name, n, i, v->from_elem(y[i]),
             v->from_elem(want));
      bad = 1;
    }
  }
  int64_t op, t, block;
  int warps;
  v->pick(n, &op, &t, &block, &warps);
  if (op != v->op || t != v->t) {
    printf("FAIL %s library picked OP=%lld T=%lld\n", v->name, (long long)op, (long long)t);
    bad = 1;
  }
  printf("%s %s n=%d: BLOCK=%lld num_warps=%d status %s\n", bad ? "FAIL" : "ok", v->name, n,
         (long long)block, warps, kiln_rt_status_name(st));
  kiln_rt_free(dev, x);
  kiln_rt_free(dev, y);
  return bad;
}

int main(void) {
  KilnRtDevice *dev;
  act_sq_f16 *sq;
  act_relu_bf16 *relu_lib;
  if (kiln_rt_device_create("cpu", &dev) != KILN_RT_OK ||
      act_sq_f16_create(dev, &sq) != KILN_RT_OK ||
      act_relu_bf16_create(dev, &relu_lib) != KILN_RT_OK) {
    printf("FAIL: %s\n", kiln_rt_last_error());
    return 1;
  }
  int sizes[] = {5000, 77, 1};
  for (int i = 0; i < 3; i++) {
    failures += check(&f16_square, sq, dev, sizes[i]);
    failures += check(&bf16_relu, relu_lib, dev, sizes[i]);
  }
  act_sq_f16_destroy(sq);
  act_relu_bf16_destroy(relu_lib);
  kiln_rt_device_destroy(dev);
  return failures ? 1 : 0;
}
