/* main.c — the BERT kernel tests: kernels-bert/ compiled for the cpu target, run through
 * libkilnrt and compared with the references of bert_ref.c (docs/kernels/ says what each test
 * checks and why its tolerance is what it is).
 *
 * Usage: kiln_bert_test FAMILY... | all | --list.  Exit status: 0 passed, 1 failed, 2 bad usage.
 */
#include "tests.h"

#include <stdio.h>
#include <string.h>

static const struct {
  const char *name;
  bool (*run)(KilnRtDevice *dev);
} TESTS[] = {
    {"gelu", kiln_bert_test_gelu},
    {"layernorm", kiln_bert_test_layernorm},
    {"xent", kiln_bert_test_xent},
    {"dropout", kiln_bert_test_dropout},
    {"embedding", kiln_bert_test_embedding},
    {"adamw", kiln_bert_test_adamw},
    {"gemm", kiln_bert_test_gemm},
    {"attention", kiln_bert_test_attention},
};

#define NTESTS (sizeof TESTS / sizeof TESTS[0])

static int find_test(const char *name) {
  for (size_t i = 0; i < NTESTS; i++)
    if (strcmp(TESTS[i].name, name) == 0)
      return (int)i;
  return -1;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FAMILY... | all | --list\n", argv[0]);
    return 2;
  }
  if (strcmp(argv[1], "--list") == 0) {
    for (size_t i = 0; i < NTESTS; i++)
      printf("%s\n", TESTS[i].name);
    return 0;
  }
  bool selected[NTESTS] = {false};
  for (int a = 1; a < argc; a++) {
    int t = strcmp(argv[a], "all") == 0 ? -2 : find_test(argv[a]);
    if (t == -1) {
      fprintf(stderr, "%s: no test named '%s' (--list shows them)\n", argv[0], argv[a]);
      return 2;
    }
    for (size_t i = 0; i < NTESTS; i++)
      selected[i] |= t == -2 || (size_t)t == i;
  }
  KilnRtDevice *dev = NULL;
  KilnRtStatus st = kiln_rt_device_create("cpu", &dev);
  if (st != KILN_RT_OK) {
    fprintf(stderr, "kiln_rt_device_create(\"cpu\") failed: %s: %s\n", kiln_rt_status_name(st),
            kiln_rt_last_error());
    return 1;
  }
  int failed = 0;
  for (size_t i = 0; i < NTESTS; i++) {
    if (!selected[i])
      continue;
    printf("%s\n", TESTS[i].name);
    if (!TESTS[i].run(dev)) {
      failed++;
      printf("%s: FAILED\n", TESTS[i].name);
    }
  }
  kiln_rt_device_destroy(dev);
  return failed ? 1 : 0;
}
