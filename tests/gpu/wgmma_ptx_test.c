/* wgmma_ptx_test.c - the wgmma inline PTX of mlir-dialect/gpu/wgmma.c: written and parsed back
 * for every n, operand type and pair of transposes; the exact text of one case; refusals (bad
 * arguments, a buffer too small, texts the writer would not produce); the constraints and the
 * wait; the same for the RS form (A from registers) and the tf32 form (k8, no transposes).  With
 * a ptxas path as argument (`--ptxas PATH`), the MMA at n = 8, 128 and 256, its RS form at n =
 * 64, 128 and 256 and its tf32 form at n = 8, 128 and 256 are assembled for sm_90a inside a
 * small hand-written kernel, with the fences, the commit and the wait around it, and each
 * form's scale-d-false variant (D = A B) once on accumulators never written; exit 77 (a skip)
 * when that ptxas does not exist.  Also each form's scale-d-false text, its way back and its
 * refusals. */
#include "../common/check.h"
#include "gpu_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void round_trips(void) {
  char buf[2048];
  int cases = 0;
  for (int n = 8; n <= 256; n += 8)
    for (int bf16 = 0; bf16 < 2; bf16++)
      for (int t = 0; t < 4; t++) {
        int len = kiln_gpu_wgmma_ptx(buf, sizeof buf, n, bf16, t & 1, t >> 1);
        CHECK(len > 0 && (size_t)len == strlen(buf), "n %d: length %d", n, len);
        int pn = -1, ta = -1, tb = -1;
        bool pbf = !bf16;
        CHECK(kiln_gpu_wgmma_parse(buf, &pn, &pbf, &ta, &tb), "n %d: not parsed back", n);
        CHECK(pn == n && pbf == (bool)bf16 && ta == (t & 1) && tb == (t >> 1),
              "n %d bf16 %d t %d: parsed as n %d bf16 %d ta %d tb %d", n, bf16, t, pn, pbf, ta, tb);
        cases++;
      }
  CHECK(cases == 32 * 8);
}

static void exact_text(void) {
  char buf[512];
  kiln_gpu_wgmma_ptx(buf, sizeof buf, 16, true, 0, 1);
  const char *want = "{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\n"
                     "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 "
                     "{$0, $1, $2, $3, $4, $5, $6, $7}, $16, $17, p, 1, 1, 0, 1;\n}";
  CHECK(strcmp(buf, want) == 0, "got:\n%s", buf);
  char cons[128];
  kiln_gpu_wgmma_constraints(cons, sizeof cons, 4, true);
  CHECK(strcmp(cons, "=f,=f,=f,=f,0,1,2,3,l,l") == 0, "got %s", cons);
  kiln_gpu_wgmma_constraints(cons, sizeof cons, 4, false);
  CHECK(strcmp(cons, "=f,=f,=f,=f,0,1,2,3") == 0, "got %s", cons);
  CHECK(kiln_gpu_wgmma_constraints(cons, 10, 4, true) == -1);
}

static void refusals(void) {
  char buf[2048];
  static const int bad_n[] = {0, 4, 12, 260, 264, -8};
  for (size_t i = 0; i < sizeof bad_n / sizeof bad_n[0]; i++)
    CHECK(kiln_gpu_wgmma_ptx(buf, sizeof buf, bad_n[i], false, 0, 0) == -1, "n %d", bad_n[i]);
  CHECK(kiln_gpu_wgmma_ptx(buf, sizeof buf, 64, false, 2, 0) == -1);
  CHECK(kiln_gpu_wgmma_ptx(buf, sizeof buf, 64, false, 0, -1) == -1);
  int len = kiln_gpu_wgmma_ptx(buf, sizeof buf, 256, false, 1, 1);
  CHECK(len > 700 && len < 1000, "n 256: %d characters", len);
  char small[1024];
  for (int cap = 1; cap <= len; cap += 37) /* every cap short of the text refuses */
    CHECK(kiln_gpu_wgmma_ptx(small, (size_t)cap, 256, false, 1, 1) == -1, "cap %d", cap);
  CHECK(kiln_gpu_wgmma_ptx(small, (size_t)len, 256, false, 1, 1) == -1);
  CHECK(kiln_gpu_wgmma_ptx(small, (size_t)len + 1, 256, false, 1, 1) == len);

  /* texts the writer would not produce */
  kiln_gpu_wgmma_ptx(buf, sizeof buf, 8, false, 0, 0);
  int n = 0, ta = 0, tb = 0;
  bool bf16 = false;
  static const char *const from[] = {
      "m64n8k16", "{$0, $1, $2, $3}", "$8, $9", "f16.f16", "1, 1, 0, 0", "\n}", "setp"};
  static const char *const to[] = {"m64n16k16", "{$0, $1, $2}", "$9, $8", "f16.bf16", "1, 1, 0, 2",
                                   "}",         "set"};
  for (size_t i = 0; i < sizeof from / sizeof from[0]; i++) {
    char changed[2048];
    const char *at = strstr(buf, from[i]);
    CHECK(at != NULL, "'%s' not in the text", from[i]);
    if (!at) continue;
    snprintf(changed, sizeof changed, "%.*s%s%s", (int)(at - buf), buf, to[i],
             at + strlen(from[i]));
    CHECK(!kiln_gpu_wgmma_parse(changed, &n, &bf16, &ta, &tb), "accepted:\n%s", changed);
  }
  char longer[2064];
  snprintf(longer, sizeof longer, "%s ", buf);
  CHECK(!kiln_gpu_wgmma_parse(longer, &n, &bf16, &ta, &tb));
  CHECK(!kiln_gpu_wgmma_parse("", &n, &bf16, &ta, &tb));
  CHECK(!kiln_gpu_wgmma_parse(NULL, &n, &bf16, &ta, &tb));
}

/* The RS form (A from registers): round trips, the exact text, its constraints, refusals, and
 * neither parser taking the other form's text. */
static void rs_texts(void) {
  char buf[2048];
  int cases = 0;
  for (int n = 8; n <= 256; n += 8)
    for (int bf16 = 0; bf16 < 2; bf16++)
      for (int tb = 0; tb < 2; tb++) {
        int len = kiln_gpu_wgmma_rs_ptx(buf, sizeof buf, n, bf16, tb);
        CHECK(len > 0 && (size_t)len == strlen(buf), "RS n %d: length %d", n, len);
        int pn = -1, ptb = -1, ta = -1;
        bool pbf = !bf16;
        CHECK(kiln_gpu_wgmma_rs_parse(buf, &pn, &pbf, &ptb), "RS n %d: not parsed back", n);
        CHECK(pn == n && pbf == (bool)bf16 && ptb == tb,
              "RS n %d bf16 %d tb %d: parsed as %d %d %d", n, bf16, tb, pn, pbf, ptb);
        CHECK(!kiln_gpu_wgmma_parse(buf, &pn, &pbf, &ta, &ptb), "SS parser took RS n %d", n);
        kiln_gpu_wgmma_ptx(buf, sizeof buf, n, bf16, 0, tb);
        CHECK(!kiln_gpu_wgmma_rs_parse(buf, &pn, &pbf, &ptb), "RS parser took SS n %d", n);
        cases++;
      }
  CHECK(cases == 32 * 4);

  kiln_gpu_wgmma_rs_ptx(buf, sizeof buf, 16, false, 1);
  const char *want = "{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\n"
                     "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 "
                     "{$0, $1, $2, $3, $4, $5, $6, $7}, {$16, $17, $18, $19}, $20, p, 1, 1, 1;\n}";
  CHECK(strcmp(buf, want) == 0, "got:\n%s", buf);
  char cons[128];
  CHECK(kiln_gpu_wgmma_rs_constraints(cons, sizeof cons, 4) == (int)strlen(cons));
  CHECK(strcmp(cons, "=f,=f,=f,=f,0,1,2,3,r,r,r,r,l") == 0, "got %s", cons);
  CHECK(kiln_gpu_wgmma_rs_constraints(cons, 20, 4) == -1);
  CHECK(kiln_gpu_wgmma_rs_constraints(cons, 29, 4) == -1);
  CHECK(kiln_gpu_wgmma_rs_constraints(cons, 30, 4) == 29);

  static const int bad_n[] = {0, 4, 12, 260, -8};
  for (size_t i = 0; i < sizeof bad_n / sizeof bad_n[0]; i++)
    CHECK(kiln_gpu_wgmma_rs_ptx(buf, sizeof buf, bad_n[i], false, 0) == -1, "RS n %d", bad_n[i]);
  CHECK(kiln_gpu_wgmma_rs_ptx(buf, sizeof buf, 64, false, 2) == -1);
  CHECK(kiln_gpu_wgmma_rs_ptx(buf, sizeof buf, 64, false, -1) == -1);
  int len = kiln_gpu_wgmma_rs_ptx(buf, sizeof buf, 256, true, 1);
  char small[1024];
  for (int cap = 1; cap <= len; cap += 37)
    CHECK(kiln_gpu_wgmma_rs_ptx(small, (size_t)cap, 256, true, 1) == -1, "RS cap %d", cap);
  CHECK(kiln_gpu_wgmma_rs_ptx(small, (size_t)len + 1, 256, true, 1) == len);

  /* texts the RS writer would not produce */
  kiln_gpu_wgmma_rs_ptx(buf, sizeof buf, 8, false, 0);
  int n = 0, tb = 0;
  bool bf16 = false;
  static const char *const from[] = {
      "m64n8k16", "{$8, $9, $10, $11}", "$12, p", "f16.f16", "1, 1, 0;", "\n}", "{$0, $1, $2, $3}"};
  static const char *const to[] = {
      "m64n16k16", "{$8, $9, $10}",       "$13, p", "f16.bf16", "1, 1, 0, 0;",
      "}",         "{$0, $1, $2, $3, $4}"};
  for (size_t i = 0; i < sizeof from / sizeof from[0]; i++) {
    char changed[2048];
    const char *at = strstr(buf, from[i]);
    CHECK(at != NULL, "'%s' not in the RS text", from[i]);
    if (!at) continue;
    snprintf(changed, sizeof changed, "%.*s%s%s", (int)(at - buf), buf, to[i],
             at + strlen(from[i]));
    CHECK(!kiln_gpu_wgmma_rs_parse(changed, &n, &bf16, &tb), "RS accepted:\n%s", changed);
  }
  CHECK(!kiln_gpu_wgmma_rs_parse("", &n, &bf16, &tb));
  CHECK(!kiln_gpu_wgmma_rs_parse(NULL, &n, &bf16, &tb));
}

/* The tf32 form: every n written and parsed back, its exact text, refusals, and neither of the
 * other parsers takes it (nor it theirs). */
static void tf32_texts(void) {
  char buf[2048];
  for (int n = 8; n <= 256; n += 8) {
    int len = kiln_gpu_wgmma_tf32_ptx(buf, sizeof buf, n), pn = -1, ta, tb;
    bool bf16;
    CHECK(len > 0 && (size_t)len == strlen(buf), "tf32 n %d: length %d", n, len);
    CHECK(kiln_gpu_wgmma_tf32_parse(buf, &pn) && pn == n, "tf32 n %d: parsed as %d", n, pn);
    CHECK(!kiln_gpu_wgmma_parse(buf, &pn, &bf16, &ta, &tb), "SS parser took tf32 n %d", n);
    CHECK(!kiln_gpu_wgmma_rs_parse(buf, &pn, &bf16, &tb), "RS parser took tf32 n %d", n);
    kiln_gpu_wgmma_ptx(buf, sizeof buf, n, false, 0, 0);
    CHECK(!kiln_gpu_wgmma_tf32_parse(buf, &pn), "tf32 parser took f16 n %d", n);
  }
  kiln_gpu_wgmma_tf32_ptx(buf, sizeof buf, 16);
  const char *want = "{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\n"
                     "wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32 "
                     "{$0, $1, $2, $3, $4, $5, $6, $7}, $16, $17, p, 1, 1;\n}";
  CHECK(strcmp(buf, want) == 0, "got:\n%s", buf);
  static const int bad_n[] = {0, 4, 12, 264, -8};
  for (size_t i = 0; i < sizeof bad_n / sizeof bad_n[0]; i++)
    CHECK(kiln_gpu_wgmma_tf32_ptx(buf, sizeof buf, bad_n[i]) == -1, "tf32 n %d", bad_n[i]);
  int len = kiln_gpu_wgmma_tf32_ptx(buf, sizeof buf, 256);
  CHECK(kiln_gpu_wgmma_tf32_ptx(buf, (size_t)len, 256) == -1);
  kiln_gpu_wgmma_tf32_ptx(buf, sizeof buf, 64);
  char changed[2048];
  static const char *const from[] = {"k8", "tf32.tf32", "p, 1, 1;", "$64"}, *const to[] = {
                                                                                "k16", "tf32.f16",
                                                                                "p, 1, 1, 0, 0;",
                                                                                "$65"};
  for (size_t i = 0; i < sizeof from / sizeof from[0]; i++) {
    const char *at = strstr(buf, from[i]);
    KILN_ASSERT(at != NULL);
    snprintf(changed, sizeof changed, "%.*s%s%s", (int)(at - buf), buf, to[i],
             at + strlen(from[i]));
    int n = -1;
    CHECK(!kiln_gpu_wgmma_tf32_parse(changed, &n) && n == -1, "tf32 accepted:\n%s", changed);
  }
}

/* The scale-d-false variant of each form: only the head's setp differs, no parser takes it as
 * it is, kiln_gpu_wgmma_zero_d gives back the text it came from (and refuses the others). */
static void zero_d_texts(void) {
  char text[2048], zero[2048], back[2048];
  for (int form = 0; form < 3; form++)
    for (int n = 8; n <= 256; n += 8) {
      int len = form == 0   ? kiln_gpu_wgmma_ptx(text, sizeof text, n, n % 16 == 0, 1, 0)
                : form == 1 ? kiln_gpu_wgmma_rs_ptx(text, sizeof text, n, false, n % 16 == 0)
                            : kiln_gpu_wgmma_tf32_ptx(text, sizeof text, n);
      KILN_ASSERT(len > 0);
      memcpy(zero, text, (size_t)len + 1);
      CHECK(kiln_gpu_wgmma_set_zero_d(zero), "form %d n %d: not made scale-d false", form, n);
      const char *at = strstr(zero, "setp.eq.u32 p, 1, 0;");
      CHECK(at != NULL && strlen(zero) == (size_t)len &&
                strncmp(zero, text, (size_t)(at - zero)) == 0 &&
                strcmp(at + 20, text + (at - zero) + 20) == 0,
            "form %d n %d: more than the setp changed:\n%s", form, n, zero);
      int pn, ta, tb;
      bool bf16;
      CHECK(!kiln_gpu_wgmma_parse(zero, &pn, &bf16, &ta, &tb) &&
                !kiln_gpu_wgmma_rs_parse(zero, &pn, &bf16, &tb) &&
                !kiln_gpu_wgmma_tf32_parse(zero, &pn),
            "form %d n %d: a parser took the scale-d-false text", form, n);
      CHECK(kiln_gpu_wgmma_zero_d(zero, back, sizeof back) && strcmp(back, text) == 0,
            "form %d n %d: not given back", form, n);
      CHECK(!kiln_gpu_wgmma_zero_d(text, back, sizeof back), "form %d n %d: scale-d true", form, n);
      CHECK(!kiln_gpu_wgmma_zero_d(zero, back, (size_t)len), "form %d n %d: cap", form, n);
    }
  char fence[] = KILN_GPU_WGMMA_FENCE_PTX;
  CHECK(!kiln_gpu_wgmma_set_zero_d(fence) && strcmp(fence, KILN_GPU_WGMMA_FENCE_PTX) == 0);
  CHECK(!kiln_gpu_wgmma_set_zero_d(NULL) && !kiln_gpu_wgmma_zero_d(NULL, back, sizeof back));
  CHECK(!kiln_gpu_wgmma_zero_d("", back, sizeof back));
}

static void waits(void) {
  int k = -1;
  CHECK(kiln_gpu_wgmma_wait_parse(KILN_GPU_WGMMA_WAIT_PTX "0;", &k) && k == 0);
  CHECK(kiln_gpu_wgmma_wait_parse(KILN_GPU_WGMMA_WAIT_PTX "1;", &k) && k == 1);
  static const char *const bad[] = {KILN_GPU_WGMMA_WAIT_PTX ";",   KILN_GPU_WGMMA_WAIT_PTX "1",
                                    KILN_GPU_WGMMA_WAIT_PTX "1; ", KILN_GPU_WGMMA_WAIT_PTX "-1;",
                                    KILN_GPU_WGMMA_WAIT_PTX " 1;", "wgmma.wait_group 0;"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    k = -7;
    CHECK(!kiln_gpu_wgmma_wait_parse(bad[i], &k) && k == -7, "accepted '%s'", bad[i]);
  }
}

/* The MMA's text with $i made registers: %f<i> for the accumulators, then for the SS form %rd0
 * and %rd1 for the descriptors, for the RS form (`rs`) %r0..%r3 for A and %rd1 for B's
 * descriptor (the tied inputs are the same registers, as LLVM assigns them). */
static void substitute(const char *text, int regs, bool rs, char *out, size_t cap) {
  size_t o = 0;
  for (const char *p = text; *p && o + 16 < cap; p++) {
    if (*p != '$') {
      out[o++] = *p;
      continue;
    }
    int i = (int)strtol(p + 1, (char **)&p, 10), past = i - 2 * regs;
    p--;
    if (i < regs)
      o += (size_t)snprintf(out + o, cap - o, "%%f%d", i);
    else if (rs && past < 4)
      o += (size_t)snprintf(out + o, cap - o, "%%r%d", past);
    else
      o += (size_t)snprintf(out + o, cap - o, "%%rd%d", rs ? 1 : past);
  }
  out[o] = '\0';
}

/* A kernel around one MMA: descriptors from a parameter, accumulators zero, the results stored;
 * `rs`: the RS form, its A registers 1.0 in every half (ta unused); `tf32`: the tf32 form (bf16,
 * ta and tb unused); `zero`: the scale-d-false variant, the accumulators never written before. */
static char *kernel_ptx(int n, bool bf16, int ta, int tb, bool rs, bool tf32, bool zero) {
  int regs = n / 2;
  char text[2048], body[4096];
  KILN_ASSERT((tf32 ? kiln_gpu_wgmma_tf32_ptx(text, sizeof text, n)
               : rs ? kiln_gpu_wgmma_rs_ptx(text, sizeof text, n, bf16, tb)
                    : kiln_gpu_wgmma_ptx(text, sizeof text, n, bf16, ta, tb)) > 0);
  KILN_ASSERT(!zero || kiln_gpu_wgmma_set_zero_d(text));
  substitute(text, regs, rs, body, sizeof body);
  size_t cap = 16384 + (size_t)regs * 64;
  char *ptx = malloc(cap);
  KILN_ASSERT(ptx != NULL);
  int len = snprintf(ptx, cap,
                     ".version 8.0\n.target sm_90a\n.address_size 64\n"
                     ".visible .entry k(.param .u64 out, .param .u64 desc)\n{\n"
                     ".reg .f32 %%f<%d>;\n.reg .b64 %%rd<4>;\n.reg .b32 %%r<4>;\n"
                     "ld.param.u64 %%rd0, [desc];\nadd.s64 %%rd1, %%rd0, 64;\n"
                     "ld.param.u64 %%rd2, [out];\ncvta.to.global.u64 %%rd2, %%rd2;\n",
                     regs);
  for (int i = 0; i < regs && !zero; i++)
    len += snprintf(ptx + len, cap - (size_t)len, "mov.f32 %%f%d, 0f00000000;\n", i);
  for (int i = 0; rs && i < 4; i++)
    len += snprintf(ptx + len, cap - (size_t)len, "mov.b32 %%r%d, %s;\n", i,
                    bf16 ? "0x3f803f80" : "0x3c003c00");
  len += snprintf(ptx + len, cap - (size_t)len, "%s\n%s\n%s\n%s\n%s0;\n",
                  KILN_GPU_FENCE_PROXY_ASYNC_PTX, KILN_GPU_WGMMA_FENCE_PTX, body,
                  KILN_GPU_WGMMA_COMMIT_PTX, KILN_GPU_WGMMA_WAIT_PTX);
  for (int i = 0; i < regs; i++)
    len += snprintf(ptx + len, cap - (size_t)len, "st.global.f32 [%%rd2+%d], %%f%d;\n", 4 * i, i);
  snprintf(ptx + len, cap - (size_t)len, "ret;\n}\n");
  return ptx;
}

/* One kernel through ptxas for sm_90a; `what` names it in the report. */
static void assemble_one(const char *ptxas, const char *what, int n, char *ptx) {
  char *log = NULL;
  KilnGpuPtxasInfo info;
  KilnMlirStatus st = kiln_gpu_ptxas(ptxas, ptx, "sm_90a", NULL, NULL, &info, &log);
  CHECK(st == KILN_MLIR_OK, "%s n %d does not assemble:\n%s\n%s", what, n, log ? log : "", ptx);
  if (st == KILN_MLIR_OK)
    printf("%s n %d: assembled for sm_90a, %d registers\n", what, n, info.registers);
  free(log);
  free(ptx);
}

static void assemble(const char *ptxas) {
  static const int ns[3] = {8, 128, 256}, rs_ns[3] = {64, 128, 256};
  for (int i = 0; i < 3; i++)
    assemble_one(ptxas, "SS", ns[i],
                 kernel_ptx(ns[i], i == 1, i == 2, i != 0, false, false, false));
  for (int i = 0; i < 3; i++)
    assemble_one(ptxas, "RS", rs_ns[i],
                 kernel_ptx(rs_ns[i], i == 1, 0, i != 0, true, false, false));
  for (int i = 0; i < 3; i++)
    assemble_one(ptxas, "tf32", ns[i], kernel_ptx(ns[i], false, 0, 0, false, true, false));
  assemble_one(ptxas, "SS scale-d false", 128, kernel_ptx(128, false, 0, 0, false, false, true));
  assemble_one(ptxas, "RS scale-d false", 64, kernel_ptx(64, true, 0, 1, true, false, true));
  assemble_one(ptxas, "tf32 scale-d false", 64, kernel_ptx(64, false, 0, 0, false, true, true));
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--ptxas") == 0) {
    if (access(argv[2], X_OK) != 0) {
      printf("no ptxas at '%s': skipped\n", argv[2]);
      return 77;
    }
    assemble(argv[2]);
    return kiln_check_result("gpu.wgmma_ptxas");
  }
  round_trips();
  exact_text();
  refusals();
  rs_texts();
  tf32_texts();
  zero_d_texts();
  waits();
  return kiln_check_result("gpu.wgmma_text");
}
