/* bundle_lib.c — kiln-tune-runner --tuned-libs DIR: a run's winners added to kernel libraries
 * that `kiln lib` made elsewhere, on a machine without the compiler.
 *
 * Why: a GPU machine has no LLVM/MLIR, so its libraries come from a build machine, untuned or
 * tuned from an earlier visit's cache. With this the visit that tunes also uses what it found:
 * every candidate it timed is already compiled (the bundle), so a library needs only rows that
 * point at the winners' images. `kiln lib` writes, beside NAME.c and NAME.h, NAME.plan: per
 * kernel the identity its records carry (hash, tune block hash, -D pins), its parameters, its
 * consts in the config struct's order and its keys, and the counts the library's own modules,
 * images and rows end at. This file reads every NAME.plan of DIR, picks per record key the
 * winner among this run's records of the kernel (tune_plan_pick_winner: the rule `kiln lib`
 * applies to the same records) and writes NAME.tuned.h: the winners' images (read from the
 * bundle, host objects linked to shared objects as `kiln lib` does), their modules and their
 * table rows (keys, promises as masks, config, a description), as macros NAME.c places after its
 * own (libgen.c, source_tuned_hook). NAME.c compiled with -DKILN_GEN_TUNED includes it; the plan
 * id (FNV-1a of NAME.plan) in both refuses a NAME.tuned.h written for another build.
 *
 * The rows behave as `kiln lib`'s tuned variants do: dispatch prefers them over the library's
 * untuned ones, takes the nearest key bucket, and runs one only for calls that keep its promises
 * and its tune block's conditions (the library evaluates those over the row's config). What
 * stays `kiln lib`'s alone: a generic copy of a specialized winner (a compile), so a call that
 * breaks a row's promises runs the library's own variants, as before the run. */
#include "tune_core.h"

#include <kiln/bundle.h>

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define PLAN_MAX_BYTES  ((size_t)1 << 20)
#define PLAN_MAX_PINS   16
#define PLAN_MAX_KERNEL 64
#define TUNE_MAX_ROWS   4096 /* record keys of one kernel */

/* ---------------------------------------------------------------- the candidates of a run */

int tune_tuned_cands_add(TuneTunedCands *all, const char *kernel, const char *hash,
                         const char *tune_hash, const char *key, const char *cpu,
                         const TuneCand *c) {
  if (all->n == all->cap) {
    size_t cap = all->cap ? all->cap * 2 : 64;
    TuneTunedCand *nc = realloc(all->c, cap * sizeof *nc);
    if (!nc) return -1;
    all->c = nc;
    all->cap = cap;
  }
  TuneTunedCand *t = &all->c[all->n++];
  memset(t, 0, sizeof *t);
  snprintf(t->kernel, sizeof t->kernel, "%s", kernel);
  snprintf(t->hash, sizeof t->hash, "%s", hash);
  snprintf(t->tune_hash, sizeof t->tune_hash, "%s", tune_hash);
  snprintf(t->key, sizeof t->key, "%s", key);
  snprintf(t->config, sizeof t->config, "%s", c->config);
  snprintf(t->module, sizeof t->module, "%s", c->obj_path);
  snprintf(t->cpu, sizeof t->cpu, "%s", cpu);
  t->order = c->order;
  t->resources = c->resources;
  return 0;
}

void tune_tuned_cands_free(TuneTunedCands *all) {
  free(all->c);
  memset(all, 0, sizeof *all);
}

/* ---------------------------------------------------------------- NAME.plan */

typedef struct PlanPin {
  char name[64];
  long long value;
  char type[16]; /* a type parameter's: its name ("f16"); "" for an integer */
} PlanPin;

typedef struct PlanKernel {
  char name[64], hash[20], tune_hash[20];
  int nvariants;
  bool rows_checked; /* the library checks a row's conditions (else rows never run) */
  PlanPin pins[PLAN_MAX_PINS];
  int npins;
  TuneParam params[TUNE_MAX_PARAMS]; /* name; is_ptr for those that carry no promise */
  int nparams;
  char consts[TUNE_MAX_PARAMS][64];
  int nconsts;
  char keys[TUNE_MAX_KEYS][64];
  int nkeys;
} PlanKernel;

typedef struct Plan {
  char library[128], device[16];
  int nmod, nimg;
  PlanKernel k[PLAN_MAX_KERNEL];
  int nk;
  uint64_t id;
} Plan;

/* One line of a plan into p. 0, or -1 for a line this reader does not know. */
static int plan_line(Plan *p, const char *l) {
  PlanKernel *k = p->nk ? &p->k[p->nk - 1] : NULL;
  char a[64], b[64];
  int i = 0;
  if (sscanf(l, "library %127s", p->library) == 1) return libgen_is_ident(p->library) ? 0 : -1;
  if (sscanf(l, "device %15s", p->device) == 1) return 0;
  if (sscanf(l, "modules %d", &p->nmod) == 1) return p->nmod >= 0 ? 0 : -1;
  if (sscanf(l, "images %d", &p->nimg) == 1) return p->nimg >= 0 ? 0 : -1;
  if (!strncmp(l, "kernel ", 7)) {
    if (p->nk == PLAN_MAX_KERNEL) return -1;
    k = &p->k[p->nk++];
    memset(k, 0, sizeof *k);
    return sscanf(l, "kernel %63s", k->name) == 1 && libgen_is_ident(k->name) ? 0 : -1;
  }
  if (!k) return -1;
  if (sscanf(l, "hash %19s", k->hash) == 1) return 0;
  if (sscanf(l, "tunehash %19s", k->tune_hash) == 1) return 0;
  if (sscanf(l, "variants %d", &k->nvariants) == 1) return k->nvariants >= 1 ? 0 : -1;
  if (sscanf(l, "rows %63s", a) == 1) {
    k->rows_checked = !strcmp(a, "checked");
    return k->rows_checked || !strcmp(a, "never") ? 0 : -1;
  }
  if (!strncmp(l, "pin ", 4)) {
    if (k->npins == PLAN_MAX_PINS) return -1;
    PlanPin *q = &k->pins[k->npins++];
    return sscanf(l, "pin %63s %lld %15s", q->name, &q->value, q->type) >= 2 ? 0 : -1;
  }
  if (sscanf(l, "param %d %63s %63s", &i, a, b) == 3) {
    if (i != k->nparams || i == TUNE_MAX_PARAMS) return -1;
    TuneParam *q = &k->params[k->nparams++];
    memset(q, 0, sizeof *q);
    snprintf(q->name, sizeof q->name, "%s", a);
    q->is_ptr = strcmp(b, "int") != 0; /* tune_sig_parse takes promises of integers only */
    q->scalar = KILN_SCALAR_I64;
    return 0;
  }
  if (sscanf(l, "const %63s", a) == 1) {
    if (k->nconsts == TUNE_MAX_PARAMS) return -1;
    snprintf(k->consts[k->nconsts++], 64, "%s", a);
    return 0;
  }
  if (sscanf(l, "key %63s", a) == 1) {
    if (k->nkeys == TUNE_MAX_KEYS) return -1;
    snprintf(k->keys[k->nkeys++], 64, "%s", a);
    return 0;
  }
  return !strcmp(l, "end") ? 0 : -1;
}

static int plan_line_of(void *ctx, char *line) { return plan_line(ctx, line); }

/* Reads path into p. 0, or -1 with the message on log. */
static int plan_read(const char *path, Plan *p, FILE *log) {
  memset(p, 0, sizeof *p);
  /* the id: the hash of the bytes `kiln lib` hashed */
  int rc = tune_read_versioned_lines(path, PLAN_MAX_BYTES, "PLAN_MAX_BYTES", "library plan",
                                     "kiln-lib-plan 1", plan_line_of, p, &p->id, log);
  if (rc == 0 && (!p->library[0] || !p->device[0])) {
    fprintf(log, "kiln-tune-runner: error: %s: no library or device line\n", path);
    rc = -1;
  }
  return rc;
}

/* ---------------------------------------------------------------- winners */

/* The value of binding `name` in a config string ("BM=64,num_warps=4"); false when absent. */
static bool config_value(const char *config, const char *name, long long *v) {
  size_t n = strlen(name);
  for (const char *p = config; *p; p += strcspn(p, ","), p += *p == ',') {
    if (strncmp(p, name, n) || p[n] != '=') continue;
    char *end = NULL;
    *v = strtoll(p + n + 1, &end, 10);
    return end != p + n + 1;
  }
  return false;
}

/* Whether a record of plan kernel k may be used: its kernel text, tune block and pins. */
static bool record_fits_plan(const PlanKernel *k, const KilnCacheRecord *r) {
  if (r->status != KILN_CACHE_OK || strcmp(r->kernel, k->name) || strcmp(r->source_hash, k->hash) ||
      strcmp(r->tune_hash, k->tune_hash))
    return false;
  for (int i = 0; i < k->npins; i++) {
    long long v;
    if (config_value(r->config, k->pins[i].name, &v) && v != k->pins[i].value) return false;
  }
  return true;
}

/* The bundle's candidate a record was timed as (same kernel, key and config), or NULL. */
static const TuneTunedCand *cand_of(const TuneTunedCands *all, const KilnCacheRecord *r) {
  for (size_t i = 0; i < all->n; i++) {
    const TuneTunedCand *c = &all->c[i];
    if (!strcmp(c->kernel, r->kernel) && !strcmp(c->hash, r->source_hash) &&
        !strcmp(c->tune_hash, r->tune_hash) && !strcmp(c->key, r->key) &&
        !strcmp(c->config, r->config))
      return c;
  }
  return NULL;
}

/* One row of the table: the winner of one record key. */
typedef struct Row {
  const TuneTunedCand *cand;
  const KilnCacheRecord *rec;
  TuneSig sig;
} Row;

/* The winner of each record key among the records of plan kernel k, in rows[] (*n of them, at
 * most cap). -1 on memory failure. */
static int kernel_rows(const PlanKernel *k, const KilnCache *records, const TuneTunedCands *cands,
                       Row *rows, int cap, int *n) {
  *n = 0;
  size_t m = records->count ? records->count : 1;
  TuneCand *c = calloc(m, sizeof *c);
  const KilnCacheRecord **rec = calloc(m, sizeof *rec);
  const TuneTunedCand **tc = calloc(m, sizeof *tc);
  bool *done = calloc(m, sizeof *done);
  int rc = c && rec && tc && done ? 0 : -1;
  for (size_t i = 0; rc == 0 && i < records->count && *n < cap; i++) {
    const KilnCacheRecord *first = &records->records[i];
    if (done[i] || !record_fits_plan(k, first)) continue;
    int nc = 0; /* every usable record of this key, in the cache's order */
    for (size_t j = i; j < records->count; j++) {
      const KilnCacheRecord *r = &records->records[j];
      if (done[j] || strcmp(r->key, first->key) || !record_fits_plan(k, r)) continue;
      done[j] = true;
      const TuneTunedCand *t = cand_of(cands, r);
      if (!t) continue; /* not a candidate of this run's bundles */
      memset(&c[nc], 0, sizeof c[nc]);
      c[nc].state = ST_OK;
      c[nc].median_ms = r->median_ms;
      c[nc].p25_ms = r->p25_ms;
      c[nc].p75_ms = r->p75_ms;
      c[nc].order = t->order;
      c[nc].resources = t->resources;
      rec[nc] = r;
      tc[nc++] = t;
    }
    TuneSig sig;
    int w = nc ? tune_plan_pick_winner(c, nc) : -1;
    if (w < 0 || !tune_sig_parse(tune_sig_of_key(first->key), k->params, k->nparams, &sig))
      continue;
    rows[(*n)++] = (Row){tc[w], rec[w], sig};
  }
  /* more promises first, as `kiln lib` orders its variants (stable) */
  for (int i = 1; i < *n; i++)
    for (int j = i; j > 0 && tune_sig_before(&rows[j].sig, &rows[j - 1].sig); j--) {
      Row t = rows[j];
      rows[j] = rows[j - 1];
      rows[j - 1] = t;
    }
  free(c);
  free(rec);
  free(tc);
  free(done);
  return rc;
}

/* ---------------------------------------------------------------- NAME.tuned.h */

static unsigned long long sig_bits(const TuneSig *s, int mod) {
  unsigned long long m = 0;
  for (int e = 0; e < s->n; e++)
    if (s->e[e].mod == mod && s->e[e].param < 64) m |= 1ULL << s->e[e].param;
  return m;
}

/* The images of one winner's module as C arrays kiln_gen_timg<first..>: host objects linked to
 * shared objects (the library's program then needs no C compiler, as with `kiln lib`), PTX with
 * its NUL. Appends their KilnRtImage entries to `entries`. Returns the count, or -1 (reported). */
static int write_images(FILE *arrays, FILE *entries, int first, const TuneTunedCand *c,
                        KilnRtDeviceKind kind, FILE *log) {
  char dir[512], name[512];
  const char *slash = strrchr(c->module, '/');
  if (!slash) return fprintf(log, "kiln-tune-runner: error: module '%s'\n", c->module), -1;
  snprintf(dir, sizeof dir, "%.*s", (int)(slash - c->module), c->module);
  snprintf(name, sizeof name, "%s", slash + 1);
  KilnRtImage img[KILN_RT_BUNDLE_MAX_IMAGES];
  char *files[KILN_RT_BUNDLE_MAX_IMAGES];
  size_t n = 0;
  if (kiln_rt_bundle_read_images(dir, name, kind, img, files, &n) != KILN_RT_OK) {
    fprintf(log, "kiln-tune-runner: error: %s\n", kiln_rt_last_error());
    kiln_rt_bundle_images_free(img, files, n);
    return -1;
  }
  char features[1024] = "";
  int rc = 0;
  if (kind != KILN_RT_DEVICE_CUDA &&
      kiln_rt_host_cpu_target(c->cpu, NULL, 0, features, sizeof features) != KILN_RT_OK) {
    fprintf(log, "kiln-tune-runner: error: cpu '%s': %s\n", c->cpu, kiln_rt_last_error());
    rc = -1;
  }
  for (size_t i = 0; i < n && rc == 0; i++) {
    const unsigned char *data = img[i].data;
    size_t size = img[i].size;
    void *so = NULL;
    KilnRtModuleFormat fmt = img[i].format;
    if (fmt == KILN_RT_MODULE_HOST_OBJECT) {
      if (kiln_rt_host_object_link(data, size, &so, &size) != KILN_RT_OK) {
        fprintf(log, "kiln-tune-runner: error: linking %s/%s: %s\n", dir, files[i],
                kiln_rt_last_error());
        rc = -1;
        break;
      }
      data = so;
      fmt = KILN_RT_MODULE_HOST_SHARED;
    }
    bool nul = fmt == KILN_RT_MODULE_PTX && (!size || data[size - 1] != '\0');
    fprintf(arrays, "/* %s/%s */\nstatic const unsigned char kiln_gen_timg%d[%zu] = {", c->kernel,
            files[i], first + (int)i, size + nul);
    for (size_t j = 0; j < size; j++) fprintf(arrays, "%s%u,", j % 24 ? "" : "\n  ", data[j]);
    fprintf(arrays, "%s\n};\n", nul ? "0," : "");
    static const char *const fmt_name[] = {
        [KILN_RT_MODULE_PTX] = "KILN_RT_MODULE_PTX",
        [KILN_RT_MODULE_CUBIN] = "KILN_RT_MODULE_CUBIN",
        [KILN_RT_MODULE_HOST_OBJECT] = "KILN_RT_MODULE_HOST_OBJECT",
        [KILN_RT_MODULE_HOST_SHARED] = "KILN_RT_MODULE_HOST_SHARED"};
    fprintf(entries, "  {%s, %d, kiln_gen_timg%d, sizeof kiln_gen_timg%d, ", fmt_name[fmt],
            img[i].arch, first + (int)i, first + (int)i);
    if (fmt == KILN_RT_MODULE_HOST_SHARED) {
      libgen_c_string(entries, c->cpu);
      fputs(", ", entries);
      libgen_c_string(entries, features);
      fputs("}, \\\n", entries);
    } else {
      fputs("NULL, NULL}, \\\n", entries);
    }
    free(so);
  }
  kiln_rt_bundle_images_free(img, files, n);
  return rc ? -1 : (int)n;
}

/* A config string as the texts show it: a type parameter pinned by name (T=f16, where the
 * config holds the type's number). */
static void config_text(const PlanKernel *k, const char *config, char *buf, size_t cap) {
  size_t used = 0;
  buf[0] = '\0';
  for (const char *p = config; *p && used < cap;) {
    size_t len = strcspn(p, ","), name = strcspn(p, "=");
    const char *type = NULL;
    for (int i = 0; i < k->npins && name < len; i++)
      if (k->pins[i].type[0] && strlen(k->pins[i].name) == name &&
          !strncmp(k->pins[i].name, p, name))
        type = k->pins[i].type;
    int w = type
                ? snprintf(buf + used, cap - used, "%s%.*s=%s", used ? "," : "", (int)name, p, type)
                : snprintf(buf + used, cap - used, "%s%.*s", used ? "," : "", (int)len, p);
    if (w < 0) break;
    used += (size_t)w;
    p += len + (p[len] == ',');
  }
}

/* What row r's module tells kiln_rt_function_set_about: its config and promises, and where it
 * was timed (as libgen.c's own modules say "tuned"). */
static void module_about(FILE *f, const PlanKernel *k, const Row *r, const char *device) {
  char cfg[512], about[1024];
  config_text(k, r->cand->config, cfg, sizeof cfg);
  snprintf(about, sizeof about, "%s%s%s, timed on %s", cfg, r->sig.n ? ", promises " : "",
           r->sig.text, device);
  libgen_c_string(f, about);
}

/* One table row of plan kernel k (macro body text, ending in a continuation). */
static void write_row(FILE *f, const PlanKernel *k, const Row *r, int module, const char *device) {
  fputs("  {{", f);
  for (int j = 0; j < (k->nkeys ? k->nkeys : 1); j++)
    fprintf(f, "%s%lldLL", j ? ", " : "",
            k->nkeys ? (long long)tune_key_value(r->rec->key, k->keys[j]) : 0LL);
  fprintf(f, "}, %d, 0x%llxULL, 0x%llxULL, 0x%llxULL, 0, {", module, sig_bits(&r->sig, 0),
          sig_bits(&r->sig, 16), sig_bits(&r->sig, 8));
  for (int i = 0; i < k->nconsts; i++) {
    long long v = 0;
    config_value(r->cand->config, k->consts[i], &v); /* absent: 0, as `kiln lib` writes */
    fprintf(f, "%lldLL, ", v);
  }
  long long warps = 0, stages = 0;
  config_value(r->cand->config, "num_warps", &warps);
  config_value(r->cand->config, "num_stages", &stages);
  fprintf(f, "%lld, %lld, ", warps, stages);
  libgen_c_string(f, r->sig.text);
  fputs("}, \\\n   ", f);
  char about[1024];
  size_t len = strcspn(r->rec->key, "|");
  char cfg[512];
  config_text(k, r->cand->config, cfg, sizeof cfg);
  snprintf(about, sizeof about, "%.*s%s%s%s%s, timed on %s", (int)len, r->rec->key, len ? ", " : "",
           cfg, r->sig.n ? ", promises " : "", r->sig.text, device);
  libgen_c_string(f, about);
  fprintf(f, "}, /* tuned median %.4f ms, on the device */ \\\n", r->rec->median_ms);
}

/* Writes DIR/NAME.tuned.h for plan p. *nrows gets the rows written (0: no file written). */
static int write_tuned(const char *dir, const Plan *p, const KilnCache *records,
                       const TuneTunedCands *cands, KilnRtDeviceKind kind, const char *device,
                       int *nrows, FILE *log) {
  char *abuf = NULL, *ebuf = NULL, *mbuf = NULL, *rbuf = NULL;
  size_t alen = 0, elen = 0, mlen = 0, rlen = 0;
  FILE *arrays = open_memstream(&abuf, &alen), *entries = open_memstream(&ebuf, &elen);
  FILE *mods = open_memstream(&mbuf, &mlen), *rows = open_memstream(&rbuf, &rlen);
  Row *rw = malloc((size_t)TUNE_MAX_ROWS * sizeof *rw);
  int rc = arrays && entries && mods && rows && rw ? 0 : 2, nmod = 0, nimg = 0;
  *nrows = 0;
  for (int ki = 0; ki < p->nk && rc == 0; ki++) {
    const PlanKernel *k = &p->k[ki];
    int n = 0;
    if (kernel_rows(k, records, cands, rw, TUNE_MAX_ROWS, &n)) rc = 2;
    if (n && !k->rows_checked) {
      fprintf(log,
              "kiln-tune-runner: note: %s: %s's conditions on the call name what a row "
              "cannot hold; its %d winner(s) stay out (kiln lib --cache adds them)\n",
              p->library, k->name, n);
      n = 0;
    }
    fprintf(rows, "#define KILN_GEN_TUNED_N%d %d /* %s */\n#define KILN_GEN_TUNED_ROWS%d \\\n", ki,
            n, k->name, ki);
    for (int r = 0; r < n && rc == 0; r++) {
      int got = write_images(arrays, entries, nimg, rw[r].cand, kind, log);
      if (got < 0) {
        rc = 1;
        break;
      }
      fprintf(mods, "  {\"%s\", %d, %d, ", k->name, p->nimg + nimg, got);
      module_about(mods, k, &rw[r], device);
      fputs("}, \\\n", mods);
      nimg += got;
      write_row(rows, k, &rw[r], p->nmod + nmod++, device);
    }
    fputs("\n", rows);
    *nrows += n;
  }
  FILE *streams[] = {arrays, entries, mods, rows};
  for (int i = 0; i < 4; i++)
    if (streams[i] && fclose(streams[i]) != 0 && rc == 0) rc = 2;
  if (rc == 0 && *nrows) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) rc = 2;
    if (f) {
      fprintf(f,
              "/* %s.tuned.h — written by kiln-tune-runner --tuned-libs; do not edit.\n"
              " * %d variant(s) timed on %s, added to %s.c when it is compiled with\n"
              " * -DKILN_GEN_TUNED (docs/library.md, \"Tuned on the device\"). */\n"
              "#define KILN_GEN_TUNED_PLAN 0x%016llxULL\n#define KILN_GEN_TUNED_NMOD %d\n"
              "#define KILN_GEN_TUNED_NIMG %d\n\n%s\n#define KILN_GEN_TUNED_IMAGES \\\n%s\n"
              "#define KILN_GEN_TUNED_MODULES \\\n%s\n%s",
              p->library, *nrows, device, p->library, (unsigned long long)p->id, nmod, nimg, abuf,
              ebuf, mbuf, rbuf);
      if (fclose(f) != 0) rc = 2;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.tuned.h", dir, p->library);
    if (rc == 0 && kiln_file_write_atomic(path, text, len) != 0) {
      fprintf(log, "kiln-tune-runner: error: cannot write '%s': %s\n", path, strerror(errno));
      rc = 2;
    }
    free(text);
  }
  free(rw);
  free(abuf);
  free(ebuf);
  free(mbuf);
  free(rbuf);
  return rc;
}

static const char *kind_name(KilnRtDeviceKind kind) {
  return kind == KILN_RT_DEVICE_CUDA ? "cuda" : kind == KILN_RT_DEVICE_EMU ? "emu" : "cpu";
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The NAME.plan files of dir, sorted (so the output is in one order). -1 when dir cannot be
 * read. */
static int plan_files(const char *dir, char ***out, int *n, FILE *log) {
  DIR *d = opendir(dir);
  *out = NULL;
  *n = 0;
  if (!d)
    return fprintf(log, "kiln-tune-runner: error: --tuned-libs '%s': %s\n", dir, strerror(errno)),
           -1;
  int rc = 0;
  for (struct dirent *e; rc == 0 && (e = readdir(d)) != NULL;) {
    size_t len = strlen(e->d_name);
    if (len < 6 || strcmp(e->d_name + len - 5, ".plan")) continue;
    char **nf = realloc(*out, (size_t)(*n + 1) * sizeof *nf);
    if (!nf || !(nf[*n] = strdup(e->d_name))) {
      if (nf) *out = nf;
      rc = -1;
      break;
    }
    *out = nf;
    (*n)++;
  }
  closedir(d);
  if (*n) qsort(*out, (size_t)*n, sizeof **out, by_name);
  return rc;
}

int tune_tuned_libs_write(const char *dir, const KilnCache *records, const TuneTunedCands *cands,
                          KilnRtDeviceKind kind, const char *device, FILE *log) {
  char **files = NULL;
  int nfiles = 0, rc = plan_files(dir, &files, &nfiles, log) ? 2 : 0, libs = 0, total = 0;
  Plan *p = malloc(sizeof *p);
  if (!p) rc = 2;
  for (int i = 0; i < nfiles && rc == 0; i++) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    if (plan_read(path, p, log)) {
      rc = 1;
      break;
    }
    if (strcmp(p->device, kind_name(kind))) continue; /* another device's library */
    int n = 0;
    rc = write_tuned(dir, p, records, cands, kind, device, &n, log);
    if (rc == 0 && n) {
      fprintf(log, "kiln-tune-runner: %s: %d tuned variant(s) in %s/%s.tuned.h\n", p->library, n,
              dir, p->library);
      libs++;
      total += n;
    }
  }
  if (rc == 0)
    fprintf(log,
            "kiln-tune-runner: --tuned-libs: %d variant(s) added to %d of %d librar%s in %s "
            "(compile them with -DKILN_GEN_TUNED)\n",
            total, libs, nfiles, nfiles == 1 ? "y" : "ies", dir);
  for (int i = 0; i < nfiles; i++) free(files[i]);
  free(files);
  free(p);
  return rc;
}
