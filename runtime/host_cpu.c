/* host_cpu.c — CPU targets for host code, and whether this machine runs code built for one.
 *
 * Kernels for the cpu and emu devices are host machine code. The compiler builds them for a named
 * CPU target: "native" (this machine: every feature it has, the fastest code) or a portable
 * baseline ("generic", "x86-64-v2", "x86-64-v3", "x86-64-v4" on x86-64; "generic" on aarch64).
 * What code built for a target may use is a list of CPU features (LLVM's names). A generated
 * library stores that list next to its host images, and loading checks it against the features
 * this CPU reports, so a library built with --cpu native on an AVX-512 machine fails on a machine
 * without AVX-512 with a message that names the missing feature, instead of dying of SIGILL.
 *
 * Detection reads cpuid (x86-64, with the OS's XSAVE state for the AVX and AVX-512 registers) or
 * the kernel's hwcaps (aarch64). Only features code generation may use are listed; the named
 * levels are the x86-64 psABI micro-architecture levels. KILN_RT_HOST_CPU_FEATURES in the
 * environment (a comma-separated list) replaces what is detected, so tests can play a CPU that
 * lacks a feature. */
#include "device_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define HOST_X86 1
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#define HOST_ARM64 1
#endif

typedef struct CpuTarget {
  const char *name;
  const char *llvm_cpu; /* the CPU name LLVM builds for */
  const char *features; /* what code built for it may use, beyond the architecture's baseline */
} CpuTarget;

#define X86_V2 "cx16,popcnt,sse3,sse4.1,sse4.2,ssse3"
#define X86_V3 X86_V2 ",avx,avx2,bmi,bmi2,f16c,fma,lzcnt,movbe"
#define X86_V4 X86_V3 ",avx512bw,avx512cd,avx512dq,avx512f,avx512vl"

static const CpuTarget targets[] = {
#if defined(HOST_X86)
    {"generic", "x86-64", ""},          {"x86-64", "x86-64", ""},
    {"x86-64-v2", "x86-64-v2", X86_V2}, {"x86-64-v3", "x86-64-v3", X86_V3},
    {"x86-64-v4", "x86-64-v4", X86_V4},
#else
    {"generic", "generic", ""},
#endif
};
#if defined(HOST_X86)
#define PORTABLE_HINT "x86-64-v2, or generic"
#else
#define PORTABLE_HINT "generic"
#endif
enum { N_TARGETS = sizeof targets / sizeof targets[0] };

static const CpuTarget *find_target(const char *name) {
  for (int i = 0; i < N_TARGETS; i++)
    if (!strcmp(targets[i].name, name)) return &targets[i];
  return NULL;
}

/* ---- detection ------------------------------------------------------------------------------ */

#if defined(HOST_X86)
typedef struct X86Bit {
  const char *name;
  unsigned leaf, subleaf;
  int reg; /* 0 eax, 1 ebx, 2 ecx, 3 edx */
  int bit;
  int state; /* 0 none, 1 needs the OS to save AVX registers, 2 AVX-512 registers */
} X86Bit;

static const X86Bit x86_bits[] = {
    {"sse3", 1, 0, 2, 0, 0},
    {"pclmul", 1, 0, 2, 1, 0},
    {"ssse3", 1, 0, 2, 9, 0},
    {"fma", 1, 0, 2, 12, 1},
    {"cx16", 1, 0, 2, 13, 0},
    {"sse4.1", 1, 0, 2, 19, 0},
    {"sse4.2", 1, 0, 2, 20, 0},
    {"movbe", 1, 0, 2, 22, 0},
    {"popcnt", 1, 0, 2, 23, 0},
    {"aes", 1, 0, 2, 25, 0},
    {"avx", 1, 0, 2, 28, 1},
    {"f16c", 1, 0, 2, 29, 1},
    {"bmi", 7, 0, 1, 3, 0},
    {"avx2", 7, 0, 1, 5, 1},
    {"bmi2", 7, 0, 1, 8, 0},
    {"avx512f", 7, 0, 1, 16, 2},
    {"avx512dq", 7, 0, 1, 17, 2},
    {"adx", 7, 0, 1, 19, 0},
    {"avx512ifma", 7, 0, 1, 21, 2},
    {"avx512cd", 7, 0, 1, 28, 2},
    {"sha", 7, 0, 1, 29, 0},
    {"avx512bw", 7, 0, 1, 30, 2},
    {"avx512vl", 7, 0, 1, 31, 2},
    {"avx512vbmi", 7, 0, 2, 1, 2},
    {"avx512vbmi2", 7, 0, 2, 6, 2},
    {"gfni", 7, 0, 2, 8, 0},
    {"vaes", 7, 0, 2, 9, 1},
    {"vpclmulqdq", 7, 0, 2, 10, 1},
    {"avx512vnni", 7, 0, 2, 11, 2},
    {"avx512bitalg", 7, 0, 2, 12, 2},
    {"avx512vpopcntdq", 7, 0, 2, 14, 2},
    {"avx512fp16", 7, 0, 3, 23, 2},
    {"avxvnni", 7, 1, 0, 4, 1},
    {"avx512bf16", 7, 1, 0, 5, 2},
    {"lzcnt", 0x80000001u, 0, 2, 5, 0},
};

/* Which register states the OS saves on a context switch (XCR0): without them the instructions
 * fault even where cpuid lists them. */
static int os_register_state(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return 0; /* no OSXSAVE */
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  (void)hi;
  int state = 0;
  if ((lo & 0x6) == 0x6) state = 1;                 /* SSE + AVX state */
  if (state == 1 && (lo & 0xe0) == 0xe0) state = 2; /* opmask + ZMM state */
  return state;
}

static void detect(char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = '\0';
  unsigned max_leaf = __get_cpuid_max(0, NULL), max_ext = __get_cpuid_max(0x80000000u, NULL);
  int state = os_register_state();
  for (size_t i = 0; i < sizeof x86_bits / sizeof x86_bits[0]; i++) {
    const X86Bit *f = &x86_bits[i];
    if (f->leaf >= 0x80000000u ? f->leaf > max_ext : f->leaf > max_leaf) continue;
    if (f->state > state) continue;
    unsigned r[4];
    __cpuid_count(f->leaf, f->subleaf, r[0], r[1], r[2], r[3]);
    if (!(r[f->reg] & (1u << f->bit))) continue;
    int w = snprintf(buf + n, cap - n, "%s%s", n ? "," : "", f->name);
    if (w < 0 || (size_t)w >= cap - n) break;
    n += (size_t)w;
  }
}
#elif defined(HOST_ARM64)
static void detect(char *buf, size_t cap) {
  unsigned long h1 = getauxval(AT_HWCAP), h2 = getauxval(AT_HWCAP2);
  struct {
    const char *name;
    unsigned long word;
    int bit;
  } bits[] = {
      {"fullfp16", h1, 10}, {"dotprod", h1, 20}, {"sve", h1, 22},
      {"sve2", h2, 1},      {"i8mm", h2, 13},    {"bf16", h2, 14},
  };
  size_t n = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++) {
    if (!(bits[i].word & (1ul << bits[i].bit))) continue;
    int w = snprintf(buf + n, cap - n, "%s%s", n ? "," : "", bits[i].name);
    if (w < 0 || (size_t)w >= cap - n) break;
    n += (size_t)w;
  }
}
#else
static void detect(char *buf, size_t cap) { buf[0] = cap ? '\0' : buf[0]; }
#endif

/* This CPU's features, or the list KILN_RT_HOST_CPU_FEATURES plays. */
static void host_features(char *buf, size_t cap) {
  const char *fake = getenv("KILN_RT_HOST_CPU_FEATURES");
  if (fake)
    snprintf(buf, cap, "%s", fake);
  else
    detect(buf, cap);
}

/* Whether the comma-separated list has `name` (len bytes) as one of its items. */
static bool list_has(const char *list, const char *name, size_t len) {
  for (const char *p = list; *p;) {
    size_t n = strcspn(p, ",");
    if (n == len && !strncmp(p, name, len)) return true;
    p += n;
    if (*p == ',') p++;
  }
  return false;
}

/* ---- API ------------------------------------------------------------------------------------- */

KilnRtStatus kiln_rt_host_cpu_target(const char *cpu, char *llvm_cpu, size_t llvm_cap,
                                     char *features, size_t features_cap) {
  if (!cpu || !features || !features_cap)
    return kiln_rt_fail(KILN_RT_ERROR_INVALID_ARGUMENT, "kiln_rt_host_cpu_target: NULL argument");
  if (!strcmp(cpu, "native")) {
    if (llvm_cpu && llvm_cap) snprintf(llvm_cpu, llvm_cap, "native");
    host_features(features, features_cap);
    return KILN_RT_OK;
  }
  const CpuTarget *t = find_target(cpu);
  if (!t) {
    char names[256] = "native";
    size_t n = strlen(names);
    for (int i = 0; i < N_TARGETS && n < sizeof names; i++)
      n += (size_t)snprintf(names + n, sizeof names - n, ", %s", targets[i].name);
    return kiln_rt_fail(KILN_RT_ERROR_INVALID_ARGUMENT,
                        "unknown CPU target '%s' (this architecture has: %s)", cpu, names);
  }
  if (llvm_cpu && llvm_cap) snprintf(llvm_cpu, llvm_cap, "%s", t->llvm_cpu);
  snprintf(features, features_cap, "%s", t->features);
  return KILN_RT_OK;
}

KilnRtStatus kiln_rt_host_cpu_check(const char *cpu, const char *features) {
  if (!features || !*features) return KILN_RT_OK;
  char have[1024];
  host_features(have, sizeof have);
  for (const char *p = features; *p;) {
    size_t n = strcspn(p, ",");
    if (n && !list_has(have, p, n))
      return kiln_rt_fail(KILN_RT_ERROR_UNSUPPORTED,
                          "this CPU lacks '%.*s', which the host code needs (it was built for the "
                          "CPU target '%s'); rebuild it for a portable target (--cpu %s)",
                          (int)n, p, cpu && *cpu ? cpu : "?", PORTABLE_HINT);
    p += n;
    if (*p == ',') p++;
  }
  return KILN_RT_OK;
}
