/* fe_dump: parses a .kiln file, type-checks one kernel (or all) and prints diagnostics and the
 * typed AST.  Used by the rendering test and handy when writing tests.
 *   fe_dump FILE [-DNAME=VALUE ...] [KERNEL] */
#include "kiln_frontend.h"

#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: fe_dump FILE [-DNAME=VALUE ...] [KERNEL]\n");
    return 2;
  }
  size_t len;
  char *text = kiln_file_read(argv[1], &len);
  if (!text) {
    fprintf(stderr, "fe_dump: cannot read %s\n", argv[1]);
    return 2;
  }
  KilnBinding b[32];
  size_t nb = 0;
  const char *kernel = NULL;
  for (int i = 2; i < argc; i++) {
    if (strncmp(argv[i], "-D", 2) == 0 && strchr(argv[i], '=') && nb < 32) {
      char *eq = strchr(argv[i], '=');
      *eq = 0;
      b[nb].name = argv[i] + 2;
      b[nb++].value = strtoll(eq + 1, NULL, 0);
    } else {
      kernel = argv[i];
    }
  }
  KilnCompilation *c = kiln_frontend_create(argv[1], text, len);
  free(text);
  if (!c) return 2;
  bool ok = kiln_frontend_parse(c);
  KilnKernel *k = NULL;
  if (ok) ok = kernel ? kiln_sema_check_kernel(c, kernel, b, nb, &k) : kiln_sema_check_all(c);
  kiln_diag_render(c, stdout);
  if (ok && k) kiln_ast_dump(k, stdout);
  kiln_frontend_destroy(c);
  return ok ? 0 : 1;
}
