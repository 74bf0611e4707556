/* replay.c — a libFuzzer target's entry point run once per input file, without libFuzzer.
 *
 * The fuzz targets are built only in a clang build with -DKILN_FUZZ=ON; their rules (each
 * target aborts when one breaks) would otherwise go unchecked in the builds CI runs. Linked
 * with fuzz_libgen.c and fuzz_cache.c in every build, this replays their seed corpora (the
 * hostile inputs that found or would find each bug) as ctest fuzz_libgen_seeds and
 * fuzz_cache_seeds, under the sanitizers where the build has them.
 * Usage: REPLAY FILE_OR_DIR... (a directory's regular files, in name order). Exits 1 when no
 * input was found (a moved seed folder must not pass silently), 64 on a bad argument. */
#include "kiln_base.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A seed is a few KiB; libFuzzer's own inputs stay far below this. */
#define REPLAY_MAX_INPUT_BYTES ((size_t)16 << 20)

static int replay_file(const char *path) {
  size_t len = 0;
  char *data = kiln_file_read_max(path, &len, REPLAY_MAX_INPUT_BYTES);
  if (!data) {
    char why[4400];
    fprintf(stderr, "replay: %s\n",
            kiln_file_read_error(why, sizeof why, "input", path, "REPLAY_MAX_INPUT_BYTES",
                                 REPLAY_MAX_INPUT_BYTES));
    return -1;
  }
  LLVMFuzzerTestOneInput((const uint8_t *)data, len);
  free(data);
  printf("replayed %s (%zu bytes)\n", path, len);
  return 1;
}

static int replay_dir(const char *dir) {
  struct dirent **names = NULL;
  int n = scandir(dir, &names, NULL, alphasort), done = 0;
  if (n < 0) {
    fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
    return -1;
  }
  for (int i = 0; i < n; i++) {
    char path[8192];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
    if (done >= 0 && stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
      int r = replay_file(path);
      done = r < 0 ? -1 : done + r;
    }
    free(names[i]);
  }
  free(names);
  return done;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE_OR_DIR...\n", argv[0]);
    return 64;
  }
  int total = 0;
  for (int a = 1; a < argc; a++) {
    struct stat sb;
    if (stat(argv[a], &sb) != 0) {
      fprintf(stderr, "replay: %s: %s\n", argv[a], strerror(errno));
      return 64;
    }
    int r = S_ISDIR(sb.st_mode) ? replay_dir(argv[a]) : replay_file(argv[a]);
    if (r < 0) return 1;
    total += r;
  }
  printf("replay: %d inputs, every rule held\n", total);
  return total > 0 ? 0 : 1;
}
