/* Kernels that check how the runtime runs a grid (CPU kernel ABI, docs/internals.md). */
#include <stdint.h>

/* args: int32_t *hits, int32_t *bad. Each program counts its own linear index in hits[] and
 * flags an out-of-range program id or a grid size that is not the launch's. */
void kiln_cpu_grid_probe(void **args, int32_t pid_x, int32_t pid_y, int32_t pid_z, int32_t nprog_x,
                         int32_t nprog_y, int32_t nprog_z) {
  int32_t *hits = *(int32_t **)args[0];
  int32_t *bad = *(int32_t **)args[1];
  const int32_t *want = *(int32_t **)args[2]; /* the launch's grid */
  if (nprog_x != want[0] || nprog_y != want[1] || nprog_z != want[2] || pid_x < 0 ||
      pid_x >= nprog_x || pid_y < 0 || pid_y >= nprog_y || pid_z < 0 || pid_z >= nprog_z) {
    __atomic_fetch_add(bad, 1, __ATOMIC_RELAXED);
    return;
  }
  int64_t linear = ((int64_t)pid_z * nprog_y + pid_y) * nprog_x + pid_x;
  __atomic_fetch_add(&hits[linear], 1, __ATOMIC_RELAXED);
}

/* args: int64_t *out. A 16 MiB tile on the stack, as compiled kernels may keep: only works on
 * worker threads with big stacks. out[pid_x] = sum of the tile = n * (n - 1) / 2. */
#define BIG (4 * 1024 * 1024)
void kiln_cpu_big_stack(void **args, int32_t pid_x, int32_t pid_y, int32_t pid_z, int32_t nprog_x,
                        int32_t nprog_y, int32_t nprog_z) {
  (void)pid_y;
  (void)pid_z;
  (void)nprog_x;
  (void)nprog_y;
  (void)nprog_z;
  volatile int32_t tile[BIG];
  for (int32_t i = 0; i < BIG; i++) tile[i] = i;
  int64_t sum = 0;
  for (int32_t i = 0; i < BIG; i++) sum += tile[i];
  (*(int64_t **)args[0])[pid_x] = sum;
}
