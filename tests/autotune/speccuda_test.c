/* speccuda_test.c — a cuda library from a cache whose matmul_f16 timings carry a specialization
 * signature (a cpu tuning of one pinned pipelinable config, relabelled as a GPU's), built by `kiln lib
 * --device cuda` without a GPU. The generated C is #included so that its static tables can be
 * read (kiln_gen_table0 is the table of its one kernel):
 *   - matmul_f16 has two modules, the specialized winner and the generic fallback, each with a
 *     cubin per arch (unless the tree has no ptxas) and PTX for sm_80;
 *   - only the specialized module's PTX uses cp.async (the promises make the K loop's loads
 *     contiguous and aligned, so they are pipelined); the generic one has none;
 *   - dispatch (the pure _pick) takes the specialized variant for row-major calls and the
 *     generic one for calls that break a promise. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include KILN_TEST_LIB_C

#include "check.h"

#define NMODULES  (sizeof kiln_gen_modules / sizeof *kiln_gen_modules)
#define NVARIANTS (sizeof kiln_gen_table0 / sizeof *kiln_gen_table0)

/* The PTX image of module m, or NULL; counts its cubins into *cubins. */
static const char *module_ptx(size_t m, int *cubins) {
  const char *ptx = NULL;
  *cubins = 0;
  for (int i = kiln_gen_modules[m].first; i < kiln_gen_modules[m].first + kiln_gen_modules[m].count;
       i++) {
    const KilnRtImage *im = &kiln_gen_images[i];
    if (im->format == KILN_RT_MODULE_CUBIN)
      (*cubins)++;
    else if (im->format == KILN_RT_MODULE_PTX && im->arch == 80)
      ptx = im->data;
  }
  return ptx;
}

static void check_modules(void) {
  CHECK(NMODULES == 2 && NVARIANTS == 2, "%zu modules, %zu variants (want 2, 2)", (size_t)NMODULES,
        (size_t)NVARIANTS);
  for (size_t v = 0; v < NVARIANTS; v++) {
    const char *sig = kiln_gen_table0[v].cfg.signature;
    int m = kiln_gen_table0[v].module, cubins = 0;
    const char *ptx = module_ptx((size_t)m, &cubins);
    CHECK(cubins == (KILN_TEST_CUBINS ? 2 : 0), "variant '%s': %d cubins", sig, cubins);
    CHECK(ptx && strstr(ptx, ".entry matmul_f16("), "variant '%s' has no PTX", sig);
    if (!ptx) continue;
    bool async = strstr(ptx, "cp.async") != NULL;
    CHECK(async == (sig[0] != '\0'), "variant '%s': cp.async %s", sig,
          async ? "present" : "absent");
    printf("variant %zu: signature '%s', module %d, %d cubins, cp.async %s\n", v, sig, m, cubins,
           async ? "yes" : "no");
  }
}

static void check_dispatch(void) {
  /* (M, N, K, sam, sak, sbk, sbn, scm, scn) */
  speccuda_matmul_f16_config row =
      speccuda_matmul_f16_pick(1024, 1024, 1024, 1024, 1, 1024, 1, 1024, 1);
  speccuda_matmul_f16_config odd =
      speccuda_matmul_f16_pick(1024, 1024, 1000, 1000, 1, 1024, 1, 1024, 1);
  speccuda_matmul_f16_config tra =
      speccuda_matmul_f16_pick(1024, 1024, 1024, 1, 1024, 1024, 1, 1024, 1);
  CHECK(row.signature[0] != '\0', "a row-major call runs the generic variant");
  CHECK(odd.signature[0] == '\0', "odd K runs '%s'", odd.signature);
  CHECK(tra.signature[0] == '\0', "a transposed A runs '%s'", tra.signature);
}

int main(void) {
  check_modules();
  check_dispatch();
  printf("%s\n", failures ? "FAILED" : "all ok");
  return failures != 0;
}
