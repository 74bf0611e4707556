/* bundle.c — `kiln tune --emit-bundle DIR`: the builder stage of a tuning run, for a device on
 * another machine (a GPU machine without LLVM/MLIR, where `kiln` cannot be built).
 *
 * For every kernel it builds the space with the usual pruning, takes the candidates of both
 * modes (default and max-autotune), compiles each into module DIR/<kernel>/v<order> of the one
 * bundle format (kiln/bundle.h: v<order>.sm_90.cubin for sm_80/sm_90, v<order>.cpu.o or
 * v<order>.emu.o host objects for cpu/emu) with the forked builder, and describes the run in
 * DIR/manifest.txt: the argument values and buffer fills (so the runner makes the same inputs
 * with problem.c), the key, the source hash, and per candidate its config, modes, warps, grid,
 * resources and image. bundle_run.c (the runtime-only `kiln-tune-runner`) reads it back.
 *
 * manifest.txt, one record per line, fields separated by single spaces (none contains one):
 *   kiln-tune-bundle 3                             (2: FILE was the image file itself)
 *   target TARGET                                  cpu | emu | sm_80 | sm_90
 *   compiler ID                                    the compiler that built the images
 *                                                  (kiln_tune_compiler_id): the runner's
 *                                                  records name it, not the runner's own build
 *   cpu CPU                                        cpu/emu: the CPU target of the host objects
 *   index_bits 64                                  when compiled with --index-bits 64 (else 32)
 *   kernel NAME
 *   hash HEX / tunehash HEX / key KEY ("-" for none) / seed N
 *                                                  the kernel's and its tune block's hashes;
 *                                                  KEY: the record key (buckets|signature)
 *   param NAME ptr KIND ELEMS FILL A B HAS_RANGE   FILL: rand | const | iota
 *   param NAME val KIND IVAL FVAL
 *   cand ORDER MODES WARPS G0 G1 G2 RESOURCES CONFIG MODULE   MODES: d, m or dm; MODULE:
 *                                                  KERNEL/v<order>, loaded by kiln_rt_bundle_load
 *   end */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const fill_names[] = {"rand", "const", "iota"};

int tune_bundle_begin(TuneBundle *b, const char *dir, KilnTarget target, const char *cpu,
                      int index_bits, FILE *err) {
  memset(b, 0, sizeof *b);
  b->dir = dir;
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
    fprintf(err, "kiln tune: error: cannot create '%s': %s\n", dir, strerror(errno));
    return 2;
  }
  b->mf = open_memstream(&b->buf, &b->len);
  if (!b->mf) return 2;
  fprintf(b->mf, "kiln-tune-bundle 3\ntarget %s\ncompiler %s\n", kiln_target_name(target),
          kiln_tune_compiler_id());
  if (target == KILN_TARGET_CPU || target == KILN_TARGET_EMU) fprintf(b->mf, "cpu %s\n", cpu);
  if (index_bits == 64) fprintf(b->mf, "index_bits 64\n"); /* absent: 32 */
  return 0;
}

static void write_params(FILE *f, const TuneProblem *p) {
  for (int i = 0; i < p->nparams; i++) {
    const TuneParam *q = &p->params[i];
    const char *kind = kiln_scalar_name(q->scalar);
    if (!q->is_ptr) {
      fprintf(f, "param %s val %s %lld ", q->name, kind, (long long)p->ival[i]);
      tune_json_number(f, p->fval[i]);
      fputc('\n', f);
      continue;
    }
    const TuneArgSpec *a = NULL;
    for (int k = 0; k < p->h->nargs; k++)
      if (!strcmp(p->h->args[k].name, q->name)) a = &p->h->args[k];
    fprintf(f, "param %s ptr %s %zu %s ", q->name, kind, p->elems[i], fill_names[a ? a->fill : 0]);
    tune_json_number(f, a ? a->fill_a : 0);
    fputc(' ', f);
    tune_json_number(f, a ? a->fill_b : 0);
    fprintf(f, " %d\n", a && a->has_fill_range);
  }
}

/* Candidates of both modes (of the default mode only when default_only: a whole model's
 * max-autotune space is thousands of cubins), each once, in config order; modes[i] says which
 * mode lists it. */
static int both_modes(TuneJob *j, TuneCand *space, int nspace, bool default_only, TuneCand **out,
                      char (**modes)[3]) {
  TuneCand *d = NULL, *m = NULL;
  j->max_mode = false;
  int nd = tune_select_cands(j, space, nspace, &d);
  j->max_mode = true;
  int nm = nd < 0 ? -1 : default_only ? 0 : tune_select_cands(j, space, nspace, &m);
  TuneCand *all = nm < 0 ? NULL : calloc((size_t)(nd + nm + 1), sizeof *all);
  char(*md)[3] = all ? calloc((size_t)(nd + nm + 1), sizeof *md) : NULL;
  int n = 0;
  for (int pass = 0; md && pass < 2; pass++)
    for (int i = 0; i < (pass ? nm : nd); i++) {
      const TuneCand *c = pass ? &m[i] : &d[i];
      int k = 0;
      while (k < n && all[k].order != c->order) k++;
      if (k == n) all[n++] = *c;
      strcat(md[k], pass ? "m" : "d");
    }
  free(d);
  free(m);
  if (!md) {
    free(all);
    return -1;
  }
  for (int i = 1; i < n; i++) /* insertion sort by order: the runner keeps file order */
    for (int k = i; k > 0 && all[k].order < all[k - 1].order; k--) {
      TuneCand t = all[k];
      all[k] = all[k - 1], all[k - 1] = t;
      char s[3];
      memcpy(s, md[k], 3), memcpy(md[k], md[k - 1], 3), memcpy(md[k - 1], s, 3);
    }
  *out = all;
  *modes = md;
  return n;
}

int tune_bundle_kernel(TuneBundle *b, TuneJob *j, bool default_only) {
  const char *name = j->t->kernel_name;
  char kdir[4200];
  snprintf(kdir, sizeof kdir, "%s/%s", b->dir, name);
  if (mkdir(kdir, 0755) != 0 && errno != EEXIST) {
    fprintf(j->log, "kiln tune: error: cannot create '%s': %s\n", kdir, strerror(errno));
    return 2;
  }
  int nspace = 0;
  TuneCand *space = tune_space_build(j->c, j->src, j->t, j->p, &j->tg->limits, &nspace), *c = NULL;
  char(*modes)[3] = NULL;
  int n = space ? both_modes(j, space, nspace, default_only, &c, &modes) : -1;
  tune_cands_free(space, nspace);
  if (n < 0) return 2;
  int *idx = malloc((size_t)(n + 1) * sizeof *idx);
  for (int i = 0; idx && i < n; i++) idx[i] = i;
  if (idx) tune_build(j->path, j->src, j->srclen, name, &j->p->sig, j->tg, c, idx, n, kdir, j->run);
  char hash[20];
  tune_kernel_hash(j->src, j->srclen, j->t->kernel, hash);
  FILE *f = b->mf;
  fprintf(f, "kernel %s\nhash %s\ntunehash %s\nkey %s\nseed %llu\n", name, hash, j->rep->tune_hash,
          j->p->record_key[0] ? j->p->record_key : "-", (unsigned long long)j->p->h->seed);
  write_params(f, j->p);
  int built = 0;
  for (int i = 0; idx && i < n; i++) {
    char log[4300];
    snprintf(log, sizeof log, "%s/v%d.log", kdir, c[i].order);
    unlink(log);
    if (c[i].state != ST_PENDING) {
      fprintf(j->log, "kiln tune: note: %s %s is left out of the bundle: %s\n", name, c[i].config,
              c[i].detail);
      continue;
    }
    fprintf(f, "cand %d %s %d %u %u %u ", c[i].order, modes[i], c[i].cfg.num_warps, c[i].grid[0],
            c[i].grid[1], c[i].grid[2]);
    tune_json_number(f, c[i].resources);
    fprintf(f, " %s %s/v%d\n", c[i].config, name, c[i].order);
    built++;
  }
  fprintf(f, "end\n");
  fprintf(j->log, "kiln tune: bundled %s: %d of %d candidates built\n", name, built, n);
  free(idx);
  free(modes);
  tune_cands_free(c, n);
  return idx ? 0 : 2;
}

int tune_bundle_end(TuneBundle *b, bool write, FILE *err) {
  int rc = 0;
  if (b->mf && fclose(b->mf) != 0) rc = 2;
  b->mf = NULL;
  char path[4200];
  snprintf(path, sizeof path, "%s/manifest.txt", b->dir);
  if (write && rc == 0 && kiln_file_write_atomic(path, b->buf, b->len) != 0) {
    fprintf(err, "kiln tune: error: cannot write '%s': %s\n", path, strerror(errno));
    rc = 2;
  }
  free(b->buf);
  b->buf = NULL;
  return rc;
}
