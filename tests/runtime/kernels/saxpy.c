/* A kernel written by hand against the CPU kernel ABI (docs/internals.md), standing in for what
 * the compiler emits: out[i] = a * x[i] + y[i] for i < n, BLOCK elements per program along x.
 * Programs along y handle further rows of length n (row = pid_y), to exercise 2-D grids.
 * args: float *x, float *y, float *out, float a, int32_t n. */
#include <stdint.h>

#define BLOCK 64

void kiln_cpu_saxpy(void **args, int32_t pid_x, int32_t pid_y, int32_t pid_z, int32_t nprog_x,
                    int32_t nprog_y, int32_t nprog_z) {
  (void)pid_z;
  (void)nprog_x;
  (void)nprog_y;
  (void)nprog_z;
  const float *x = *(float **)args[0];
  const float *y = *(float **)args[1];
  float *out = *(float **)args[2];
  float a = *(float *)args[3];
  int32_t n = *(int32_t *)args[4];
  int64_t row = (int64_t)pid_y * n;
  for (int32_t k = 0; k < BLOCK; k++) {
    int32_t i = pid_x * BLOCK + k;
    if (i < n) out[row + i] = a * x[row + i] + y[row + i]; /* the tail is masked */
  }
}
