/* main.c — the BERT kernel tests: kernels-bert/ compiled for the cpu or emu target, run through
 * libkilnrt and compared with the references of bert_ref.c (docs/kernels/ says what each test
 * checks and why its tolerance is what it is).
 *
 * Usage: kiln_bert_test [--device cpu|emu|cuda] [--warps N] [--bundle DIR] [--cpu TARGET]
 *                       FAMILY... | all | --list
 *        kiln_bert_test --emit-bundle DIR [--arch sm_80|sm_90|emu] [--warps N] FAMILY... | all
 * On emu (the default is cpu) the kernels go through the GPU pipeline (layouts, SIMT lowering,
 * nvvm ops as calls into the emulator) and run with 32 * N threads per program (default 4 warps;
 * the layouts depend on it, the cpu target ignores it) on the runtime's emu device, at the
 * smaller shapes each test picks there; the tolerances are the same.
 * A GPU machine has no compiler: `--emit-bundle DIR` compiles every kernel the tests ask for
 * into DIR (for --arch; nothing runs), and `--device cuda --bundle DIR` runs the tests on the
 * GPU from there (bench/gpu/prepare.sh, bench/gpu-check.sh); `--device emu --bundle DIR` does
 * the same on the emulator from host objects (--arch emu), which is how that path is tested.
 * `--cpu TARGET` (generic, x86-64-v2..v4, native: the default) builds the cpu device's kernels
 * for that CPU, so that the code a CPU without AVX-512 runs is tested on any machine.
 * Exit status: 0 passed, 1 failed, 2 bad usage.
 */
#include "tests.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const struct {
  const char *name;
  bool (*run)(const KilnBertDevice *dev);
} TESTS[] = {
    {"gelu", kiln_bert_test_gelu},           {"layernorm", kiln_bert_test_layernorm},
    {"xent", kiln_bert_test_xent},           {"dropout", kiln_bert_test_dropout},
    {"embedding", kiln_bert_test_embedding}, {"adamw", kiln_bert_test_adamw},
    {"gemm", kiln_bert_test_gemm},           {"attention", kiln_bert_test_attention},
    {"tanh", kiln_bert_test_tanh},           {"cast", kiln_bert_test_cast},
};

#define NTESTS (sizeof TESTS / sizeof TESTS[0])

static int find_test(const char *name) {
  for (size_t i = 0; i < NTESTS; i++)
    if (strcmp(TESTS[i].name, name) == 0) return (int)i;
  return -1;
}

static int usage(const char *argv0) {
  fprintf(stderr,
          "usage: %s [--device cpu|emu|cuda] [--warps N] [--bundle DIR] [--cpu TARGET]\n"
          "          FAMILY... | all | --list\n"
          "       %s --emit-bundle DIR [--arch sm_80|sm_90|emu] [--warps N] FAMILY... | all\n",
          argv0, argv0);
  return 2;
}

/* Reads the options before the family names into dev; returns the index of the first name, or
 * -1 after a usage message. */
static int parse_options(int argc, char **argv, KilnBertDevice *dev, const char **device) {
  int a = 1;
  const char *arch = "sm_90";
  for (; a + 1 < argc && strncmp(argv[a], "--", 2) == 0 && strcmp(argv[a], "--list") != 0; a += 2) {
    if (strcmp(argv[a], "--device") == 0) {
      *device = argv[a + 1];
    } else if (strcmp(argv[a], "--warps") == 0) {
      dev->num_warps = atoi(argv[a + 1]);
    } else if (strcmp(argv[a], "--bundle") == 0) {
      dev->bundle = argv[a + 1];
    } else if (strcmp(argv[a], "--emit-bundle") == 0) {
      dev->bundle = argv[a + 1];
      dev->emit = true;
    } else if (strcmp(argv[a], "--arch") == 0) {
      arch = argv[a + 1];
    } else if (strcmp(argv[a], "--cpu") == 0) {
      dev->cpu = argv[a + 1];
    } else {
      usage(argv[0]);
      return -1;
    }
  }
  if (dev->emit) {
    /* nothing runs: the cpu device only holds the tests' buffers */
    *device = "cpu";
    dev->target = strcmp(arch, "emu") == 0     ? KILN_TARGET_EMU
                  : strcmp(arch, "sm_80") == 0 ? KILN_TARGET_SM80
                  : strcmp(arch, "sm_90") == 0 ? KILN_TARGET_SM90
                                               : KILN_TARGET_CPU;
    if (dev->target == KILN_TARGET_CPU) {
      fprintf(stderr, "%s: --arch must be sm_80, sm_90 or emu, not '%s'\n", argv[0], arch);
      return -1;
    }
  } else if (strcmp(*device, "cpu") != 0 && strcmp(*device, "emu") != 0 &&
             strcmp(*device, "cuda") != 0) {
    fprintf(stderr, "%s: --device must be cpu, emu or cuda, not '%s'\n", argv[0], *device);
    return -1;
  }
#ifdef KILN_TEST_NO_COMPILER
  if (!dev->bundle || dev->emit) {
    fprintf(stderr, "%s: this build has no compiler: run kernels from --bundle DIR\n", argv[0]);
    return -1;
  }
#endif
  if (strcmp(*device, "cuda") == 0 && !dev->bundle) {
    fprintf(stderr, "%s: --device cuda runs precompiled kernels: give --bundle DIR\n", argv[0]);
    return -1;
  }
  if (dev->cpu && (dev->emit || strcmp(*device, "cpu") != 0)) {
    fprintf(stderr, "%s: --cpu chooses the cpu device's host code: it needs --device cpu\n",
            argv[0]);
    return -1;
  }
  if (dev->bundle && !dev->emit && strcmp(*device, "cpu") == 0) {
    fprintf(stderr, "%s: bundles hold GPU code: --bundle needs --device emu or cuda\n", argv[0]);
    return -1;
  }
  /* 32 threads per warp and at most 1024 per block, as on the GPU. */
  if (dev->num_warps < 1 || dev->num_warps > 32 || (dev->num_warps & (dev->num_warps - 1))) {
    fprintf(stderr, "%s: --warps must be a power of two from 1 to 32\n", argv[0]);
    return -1;
  }
  if (!dev->emit)
    dev->target = strcmp(*device, "emu") == 0 ? KILN_TARGET_EMU
                  : strcmp(*device, "cuda") == 0
                      ? KILN_TARGET_SM90 /* any GPU: images by its arch */
                      : KILN_TARGET_CPU;
  if (a >= argc) {
    usage(argv[0]);
    return -1;
  }
  return a;
}

int main(int argc, char **argv) {
  KilnBertDevice dev = {NULL, KILN_TARGET_CPU, 4, NULL, false, NULL};
  const char *device = "cpu";
  int first = parse_options(argc, argv, &dev, &device);
  if (first < 0) return 2;
  if (strcmp(argv[first], "--list") == 0) {
    for (size_t i = 0; i < NTESTS; i++) printf("%s\n", TESTS[i].name);
    return 0;
  }
  bool selected[NTESTS] = {false};
  for (int a = first; a < argc; a++) {
    int t = strcmp(argv[a], "all") == 0 ? -2 : find_test(argv[a]);
    if (t == -1) {
      fprintf(stderr, "%s: no test named '%s' (--list shows them)\n", argv[0], argv[a]);
      return 2;
    }
    for (size_t i = 0; i < NTESTS; i++) selected[i] |= t == -2 || (size_t)t == i;
  }
  if (dev.emit && mkdir(dev.bundle, 0755) != 0 && errno != EEXIST) {
    fprintf(stderr, "%s: cannot create %s: %s\n", argv[0], dev.bundle, strerror(errno));
    return 1;
  }
  KilnRtStatus st = kiln_rt_device_create(device, &dev.rt);
  if (st != KILN_RT_OK) {
    fprintf(stderr, "kiln_rt_device_create(\"%s\") failed: %s: %s\n", device,
            kiln_rt_status_name(st), kiln_rt_last_error());
    return 1;
  }
  int failed = 0;
  for (size_t i = 0; i < NTESTS; i++) {
    if (!selected[i]) continue;
    printf("%s\n", TESTS[i].name);
    if (!TESTS[i].run(&dev)) {
      failed++;
      printf("%s: FAILED\n", TESTS[i].name);
    }
  }
  kiln_rt_device_destroy(dev.rt);
  return failed ? 1 : 0;
}
