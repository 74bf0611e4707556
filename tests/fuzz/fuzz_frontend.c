/* libFuzzer target: any byte string through lexer, parser and sema (every kernel, bound from
 * its tune block), diagnostics rendering and the AST dump.  Must never crash, hang or leak. */
#include "kiln_frontend.h"

#include <stdint.h>
#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  KilnCompilation *c = kiln_frontend_create("fuzz.kiln", (const char *)data, size);
  if (!c) return 0;
  FILE *sink = fopen("/dev/null", "w");
  if (kiln_frontend_parse(c)) {
    kiln_sema_check_all(c);
    for (int i = 0; i < kiln_kernel_count(c); i++) {
      KilnKernel *k = kiln_kernel_get(c, i);
      KilnBinding b[] = {{"BLOCK", 64}, {"BM", 16}, {"BN", 16}, {"BK", 16}};
      KilnKernel *typed;
      if (kiln_sema_check_kernel(c, k->name, b, 4, &typed) && sink) kiln_ast_dump(typed, sink);
    }
    for (int i = 0; i < kiln_tune_count(c); i++) {
      KilnTune *t = kiln_tune_get(c, i);
      size_t n = kiln_tune_config_count(t);
      for (size_t j = 0; j < n && j < 8; j++) {
        KilnTuneConfig cfg;
        if (kiln_tune_config_get(t, j, &cfg)) kiln_tune_where_ok(NULL, t, &cfg);
      }
    }
  }
  if (sink) {
    kiln_diag_render(c, sink);
    fclose(sink);
  }
  kiln_frontend_destroy(c);
  return 0;
}
