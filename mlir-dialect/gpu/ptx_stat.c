/* ptx_stat.c — the static performance report (ptx_stat.h): PTX text and ptxas -v read into
 * per-kernel and per-loop instruction mixes, occupancy and a roofline bound.
 *
 * How the PTX is read: line by line, `//` comments dropped, each line cut at `;` into
 * statements.  `.entry NAME` opens a kernel whose body runs from its first `{` to the matching
 * `}` (inline asm adds nested braces, which only change the depth).  In a body a statement is a
 * label (`$L__BB0_3:`), a directive (starts with `.`) or an instruction (optionally predicated,
 * `@%p1 bra ...`).  Loops are the natural loops of the body's control-flow graph (see "loops"
 * below: a loop's blocks need not be contiguous in the text).  A loop inside no other is depth 1;
 * a loop containing none is `inner`, the one whose mix decides a kernel's speed.
 *
 * Why text and not the MLIR or LLVM module: the PTX is what ptxas compiles, after LLVM's O3
 * (unrolling, vectorizing, splitting wide loads), so its mix is the one that runs, and the
 * tool also reads PTX from anywhere (a file, another compiler). */
#include "ptx_stat.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- reading statements ---- */

typedef struct Inst {
  int line;
  bool predicated; /* under an `@%p` guard: a branch may fall through */
  char text[160];  /* the statement, predicate removed, truncated */
} Inst;

typedef struct Label {
  char name[64];
  int inst; /* index of the next instruction */
  int line;
} Label;

/* One kernel's body while it is read. */
typedef struct Body {
  Inst *insts;
  int ninsts, cap;
  Label *labels;
  int nlabels, lcap;
} Body;

static bool grow(void **p, int *cap, int need, size_t elem) {
  if (need <= *cap) return true;
  int ncap = *cap ? *cap * 2 : 64;
  while (ncap < need) ncap *= 2;
  void *q = realloc(*p, (size_t)ncap * elem);
  if (!q) return false;
  *p = q;
  *cap = ncap;
  return true;
}

static bool starts(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

static char *trim(char *s) {
  while (isspace((unsigned char)*s)) s++;
  size_t n = strlen(s);
  while (n > 0 && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
  return s;
}

/* Bytes of a `.shared ... .bN name[count]` declaration; -1 for an extern (unsized) array. */
static int shared_decl_bytes(const char *s) {
  const char *b = strstr(s, " .b");
  if (!b) b = strstr(s, " .u");
  int bits = b ? atoi(b + 3) : 8;
  const char *lb = strchr(s, '[');
  if (!lb) return (bits > 0 ? bits : 8) / 8;
  if (lb[1] == ']') return -1;
  long count = strtol(lb + 1, NULL, 10);
  return (int)(count * ((bits > 0 ? bits : 8) / 8));
}

/* ---- classifying instructions ---- */

/* Bits of a PTX type suffix: b16 → 16, f16x2 → 32, bf16 → 16, pred → 1; 0 if not a type. */
static int type_bits(const char *t) {
  if (starts(t, "bf16")) return strcmp(t, "bf16x2") == 0 ? 32 : 16;
  if (strchr("bsuf", t[0]) && isdigit((unsigned char)t[1])) {
    int bits = atoi(t + 1);
    return strstr(t, "x2") ? bits * 2 : bits;
  }
  return 0;
}

static int width_bucket(int bits) {
  switch (bits) {
  case 8: return KILN_PTX_WIDTH_8;
  case 16: return KILN_PTX_WIDTH_16;
  case 32: return KILN_PTX_WIDTH_32;
  case 64: return KILN_PTX_WIDTH_64;
  case 128: return KILN_PTX_WIDTH_128;
  default: return KILN_PTX_WIDTH_OTHER;
  }
}

/* Access width of an ld/st opcode: vector length times the element type's bits. */
static int access_bits(const char *op) {
  int vec = 1, bits = 0;
  char buf[96];
  snprintf(buf, sizeof buf, "%s", op);
  for (char *part = strtok(buf, "."); part; part = strtok(NULL, ".")) {
    if (part[0] == 'v' && isdigit((unsigned char)part[1]))
      vec = atoi(part + 1);
    else if (type_bits(part))
      bits = type_bits(part);
  }
  return vec * bits;
}

/* The copy size of `cp.async.* [dst], [src], SIZE[, src_size]` in bits. */
static int cp_async_bits(const char *text) {
  const char *c = strchr(text, ',');
  c = c ? strchr(c + 1, ',') : NULL;
  return c ? atoi(c + 1) * 8 : 0;
}

static void classify(const char *text, KilnPtxMix *m) {
  char op[96];
  size_t n = strcspn(text, " \t");
  snprintf(op, sizeof op, "%.*s", (int)(n < sizeof op - 1 ? n : sizeof op - 1), text);
  m->insts++;
  if (starts(op, "bar.") || starts(op, "barrier."))
    m->bar_sync++;
  else if (starts(op, "ldmatrix"))
    m->ldmatrix++;
  else if (starts(op, "stmatrix"))
    m->stmatrix++;
  else if (starts(op, "cp.async.wait_group")) {
    int g = atoi(text + n);
    if (g > m->wait_group_max) m->wait_group_max = g;
  } else if (starts(op, "cp.async.wait_all")) {
    if (m->wait_group_max < 0) m->wait_group_max = 0;
  } else if (starts(op, "cp.async.") && strstr(op, ".shared") && strstr(op, "global")) {
    m->cp_async++;
    m->ld_global[width_bucket(cp_async_bits(text))]++;
  } else if (starts(op, "mma."))
    m->mma++;
  else if (starts(op, "wgmma.mma_async")) {
    /* m64nNkK: each of the warpgroup's 4 warps does the work of N / 8 x K / 16 m16n8k16 (N / 8
     * for k16, N / 16 for tf32's k8) */
    const char *shape = strstr(op, ".m64n");
    const char *k = shape ? strchr(shape + 5, 'k') : NULL;
    m->wgmma++;
    m->wgmma_k16 += k ? atoi(shape + 5) / 8 * atoi(k + 1) / 16 : 0;
  } else if (starts(op, "fma."))
    m->fma++;
  else if ((starts(op, "div.rn.f") || starts(op, "div.full.f")))
    m->div_full++;
  else if (starts(op, "shfl."))
    m->shfl++;
  else if (starts(op, "atom.") || starts(op, "red."))
    m->atom++;
  else if (starts(op, "ld.") && strstr(op, ".shared"))
    m->ld_shared++;
  else if (starts(op, "st.") && strstr(op, ".shared"))
    m->st_shared++;
  else if (starts(op, "ld.") && strstr(op, ".global"))
    m->ld_global[width_bucket(access_bits(op))]++;
  else if (starts(op, "st.") && strstr(op, ".global"))
    m->st_global[width_bucket(access_bits(op))]++;
}

static void mix_init(KilnPtxMix *m) {
  memset(m, 0, sizeof *m);
  m->wait_group_max = -1;
}

/* ---- loops ---- */

/* Loops are natural loops of the control-flow graph, not line ranges: LLVM places a loop's
 * cold blocks (masked tail loads, say) after the function's hot code and jumps back into the
 * loop, so a loop's instructions need not be contiguous.  Basic blocks start at labels and after
 * branches; an edge u → h is a back edge when h dominates u; the loop of h is h plus every block
 * that reaches a back edge's source without passing h. */

typedef struct Cfg {
  int nblocks;
  int *start;         /* first instruction of each block; start[nblocks] = ninsts */
  int *block_of;      /* block of each instruction */
  int (*succ)[2];     /* up to two successors, -1 for none */
  unsigned char *dom; /* nblocks x nblocks: dom[b * n + d] when d dominates b */
} Cfg;

static const Label *find_label(const Body *b, const char *name) {
  for (int i = 0; i < b->nlabels; i++)
    if (strcmp(b->labels[i].name, name) == 0) return &b->labels[i];
  return NULL;
}

/* The label a `bra` names (its last operand), or NULL for another instruction. */
static const char *branch_target(const char *text, char *buf, size_t cap) {
  if (!starts(text, "bra")) return NULL;
  const char *t = text + strcspn(text, " \t");
  while (isspace((unsigned char)*t)) t++;
  snprintf(buf, cap, "%.*s", (int)strcspn(t, " \t,;"), t);
  return buf;
}

static bool ends_flow(const Inst *in) {
  return !in->predicated && (starts(in->text, "bra") || starts(in->text, "ret") ||
                             starts(in->text, "exit") || starts(in->text, "trap"));
}

static void cfg_free(Cfg *g) {
  free(g->start);
  free(g->block_of);
  free(g->succ);
  free(g->dom);
}

static bool cfg_blocks(const Body *b, Cfg *g) {
  int n = b->ninsts;
  unsigned char *leader = calloc((size_t)n + 1, 1);
  g->block_of = malloc(((size_t)n + 1) * sizeof *g->block_of);
  g->start = malloc(((size_t)n + 2) * sizeof *g->start);
  if (!leader || !g->block_of || !g->start) {
    free(leader);
    return false;
  }
  leader[0] = 1;
  for (int i = 0; i < b->nlabels; i++) leader[b->labels[i].inst] = 1;
  for (int i = 0; i < n; i++) {
    const char *t = b->insts[i].text;
    if (starts(t, "bra") || starts(t, "ret") || starts(t, "exit")) leader[i + 1] = 1;
  }
  g->nblocks = 0;
  for (int i = 0; i < n; i++) {
    if (leader[i]) g->start[g->nblocks++] = i;
    g->block_of[i] = g->nblocks - 1;
  }
  g->start[g->nblocks] = n;
  free(leader);
  return true;
}

static bool cfg_edges(const Body *b, Cfg *g) {
  g->succ = malloc(((size_t)g->nblocks + 1) * sizeof *g->succ);
  if (!g->succ) return false;
  for (int k = 0; k < g->nblocks; k++) {
    const Inst *last = &b->insts[g->start[k + 1] - 1];
    char name[64];
    const char *target = branch_target(last->text, name, sizeof name);
    const Label *l = target ? find_label(b, target) : NULL;
    g->succ[k][0] = l && l->inst < b->ninsts ? g->block_of[l->inst] : -1;
    g->succ[k][1] = !ends_flow(last) && k + 1 < g->nblocks ? k + 1 : -1;
  }
  return true;
}

/* Iterative dominators over bit rows; unreachable blocks dominate nothing and have no loops. */
static bool cfg_dominators(Cfg *g) {
  int n = g->nblocks;
  g->dom = malloc((size_t)n * (size_t)n);
  unsigned char *reach = calloc((size_t)n, 1), *row = malloc((size_t)n);
  if (!g->dom || !reach || !row) {
    free(reach);
    free(row);
    return false;
  }
  reach[0] = 1;
  for (bool changed = true; changed;) {
    changed = false;
    for (int k = 0; k < n; k++)
      for (int e = 0; e < 2 && reach[k]; e++)
        if (g->succ[k][e] >= 0 && !reach[g->succ[k][e]]) reach[g->succ[k][e]] = 1, changed = true;
  }
  for (int k = 0; k < n; k++) memset(g->dom + (size_t)k * n, k == 0 ? 0 : 1, (size_t)n);
  g->dom[0] = 1;
  for (bool changed = true; changed;) {
    changed = false;
    for (int k = 1; k < n; k++) {
      if (!reach[k]) continue;
      memset(row, 1, (size_t)n);
      for (int p = 0; p < n; p++)
        for (int e = 0; e < 2; e++)
          if (reach[p] && g->succ[p][e] == k)
            for (int d = 0; d < n; d++) row[d] &= g->dom[(size_t)p * n + d];
      row[k] = 1;
      if (memcmp(row, g->dom + (size_t)k * n, (size_t)n) != 0) {
        memcpy(g->dom + (size_t)k * n, row, (size_t)n);
        changed = true;
      }
    }
  }
  for (int k = 0; k < n; k++)
    if (!reach[k]) memset(g->dom + (size_t)k * n, 0, (size_t)n);
  free(reach);
  free(row);
  return true;
}

/* Adds to `in` (the loop of header h) every block reaching `from` backwards without passing h. */
static void natural_loop(const Cfg *g, int h, int from, unsigned char *in, int *stack) {
  int top = 0;
  in[h] = 1;
  if (!in[from]) in[from] = 1, stack[top++] = from;
  while (top > 0) {
    int x = stack[--top];
    for (int p = 0; p < g->nblocks; p++)
      for (int e = 0; e < 2; e++)
        if (g->succ[p][e] == x && !in[p]) in[p] = 1, stack[top++] = p;
  }
}

static int label_line_of(const Body *b, int inst) {
  for (int i = 0; i < b->nlabels; i++)
    if (b->labels[i].inst == inst) return b->labels[i].line;
  return b->insts[inst].line;
}

/* One loop per header with a back edge; nesting from the block sets. */
static bool loops_from_cfg(const Body *b, const Cfg *g, KilnPtxKernel *k) {
  int n = g->nblocks, nloops = 0;
  int *header = malloc((size_t)n * sizeof *header), *stack = malloc((size_t)n * sizeof *stack);
  unsigned char *sets = calloc((size_t)n * (size_t)n, 1); /* row per loop */
  if (!header || !stack || !sets) {
    free(header), free(stack), free(sets);
    return false;
  }
  for (int h = 0; h < n; h++) {
    bool any = false;
    for (int u = 0; u < n; u++)
      for (int e = 0; e < 2; e++)
        if (g->succ[u][e] == h && g->dom[(size_t)u * n + h]) {
          natural_loop(g, h, u, sets + (size_t)nloops * n, stack);
          any = true;
        }
    if (any) header[nloops++] = h;
  }
  k->loops = nloops ? calloc((size_t)nloops, sizeof *k->loops) : NULL;
  bool ok = !nloops || k->loops;
  k->nloops = ok ? nloops : 0;
  for (int j = 0; ok && j < nloops; j++) {
    KilnPtxLoop *L = &k->loops[j];
    const unsigned char *in = sets + (size_t)j * n;
    L->first_line = label_line_of(b, g->start[header[j]]);
    L->depth = 1;
    L->inner = true;
    for (int o = 0; o < nloops; o++)
      if (o != j && sets[(size_t)o * n + header[j]])
        L->depth++; /* o's loop holds j's header: j is nested in o */
      else if (o != j && in[header[o]])
        L->inner = false;
    mix_init(&L->mix);
    for (int blk = 0; blk < n; blk++)
      for (int i = g->start[blk]; in[blk] && i < g->start[blk + 1]; i++) {
        classify(b->insts[i].text, &L->mix);
        if (b->insts[i].line > L->last_line) L->last_line = b->insts[i].line;
      }
  }
  free(header), free(stack), free(sets);
  return ok;
}

static bool find_loops(const Body *b, KilnPtxKernel *k) {
  if (b->ninsts == 0) return true;
  Cfg g = {0};
  bool ok = cfg_blocks(b, &g) && cfg_edges(b, &g) && cfg_dominators(&g) && loops_from_cfg(b, &g, k);
  cfg_free(&g);
  return ok;
}

/* ---- the reader ---- */

typedef struct DsmemSize {
  char kernel[128];
  int bytes;
} DsmemSize;

typedef struct Reader {
  KilnPtxStat *out;
  DsmemSize dsmem[64]; /* kiln_dsmem_NAME constants, matched to kernels at the end */
  int ndsmem;
  int module_smem; /* module-scope .shared bytes, counted in every kernel */
  bool module_dyn;
  KilnPtxKernel *k; /* the kernel being read, NULL outside one */
  bool in_func;     /* a .func body (device function): skipped */
  bool pending;     /* .entry/.func seen, its `{` not yet */
  int depth;
  /* an instruction whose `;` is on a later line (mma.sync writes its operand lists one per
   * line): the lines up to the `;` are its operands, not instructions nor block braces */
  bool open_inst;
  Body body;
  bool oom;
} Reader;

static void start_kernel(Reader *r, const char *s) {
  const char *name = strstr(s, ".entry") + 6;
  while (isspace((unsigned char)*name)) name++;
  KilnPtxStat *o = r->out;
  KilnPtxKernel *nk = realloc(o->kernels, (size_t)(o->nkernels + 1) * sizeof *nk);
  if (!nk) {
    r->oom = true;
    return;
  }
  o->kernels = nk;
  r->k = &nk[o->nkernels++];
  memset(r->k, 0, sizeof *r->k);
  snprintf(r->k->name, sizeof r->k->name, "%.*s", (int)strcspn(name, " \t("), name);
  r->k->smem_static_ptx = r->module_smem;
  r->k->smem_dynamic = r->module_dyn;
  mix_init(&r->k->mix);
  r->body.ninsts = r->body.nlabels = 0;
  r->pending = true;
}

static void directive(Reader *r, const char *s) {
  if (strstr(s, ".entry")) {
    start_kernel(r, s);
  } else if (strstr(s, ".func") && r->depth == 0) {
    r->k = NULL;
    r->in_func = r->pending = true;
  } else if (starts(s, ".maxntid") && r->k) {
    int x = 1, y = 1, z = 1;
    if (sscanf(s + 8, " %d , %d , %d", &x, &y, &z) >= 1) r->k->threads = x * y * z;
  } else if (starts(s, ".minnctapersm") && r->k) {
    int n = 0;
    if (sscanf(s + 13, " %d", &n) == 1) r->k->min_blocks = n;
  } else if (strstr(s, ".const") && strstr(s, "kiln_dsmem_") && strchr(s, '=') && r->ndsmem < 64) {
    const char *nm = strstr(s, "kiln_dsmem_") + 11;
    DsmemSize *d = &r->dsmem[r->ndsmem++];
    snprintf(d->kernel, sizeof d->kernel, "%.*s", (int)strcspn(nm, " \t="), nm);
    d->bytes = atoi(strchr(s, '=') + 1);
  } else if (strstr(s, ".shared") && !strstr(s, ".param")) {
    int bytes = shared_decl_bytes(s);
    bool here = r->k && r->depth > 0;
    if (bytes < 0)
      *(here ? &r->k->smem_dynamic : &r->module_dyn) = true;
    else
      *(here ? &r->k->smem_static_ptx : &r->module_smem) += bytes;
  }
}

static void end_kernel(Reader *r) {
  if (r->k) {
    for (int i = 0; i < r->body.ninsts; i++) classify(r->body.insts[i].text, &r->k->mix);
    if (!find_loops(&r->body, r->k)) r->oom = true;
  }
  r->k = NULL;
  r->in_func = false;
}

/* One statement piece of a line; `ends` says whether a `;` closed it. */
static void statement(Reader *r, char *s, int line, bool ends) {
  s = trim(s);
  if (r->open_inst) { /* operands of the instruction before */
    if (ends) r->open_inst = false;
    return;
  }
  while (*s == '{' || *s == '}') {
    if (*s == '{') {
      r->depth++;
      r->pending = false;
    } else if (--r->depth == 0 && !r->pending) {
      end_kernel(r);
    }
    s = trim(s + 1);
  }
  if (!*s) return;
  size_t n = strlen(s);
  if (s[0] == '.' || r->depth == 0 || (!r->k && !r->in_func)) {
    if (s[0] == '.') directive(r, s);
    return;
  }
  if (r->in_func) return;
  Body *b = &r->body;
  if (s[n - 1] == ':' && !strpbrk(s, " \t")) {
    if (!grow((void **)&b->labels, &b->lcap, b->nlabels + 1, sizeof *b->labels)) {
      r->oom = true;
      return;
    }
    Label *l = &b->labels[b->nlabels++];
    snprintf(l->name, sizeof l->name, "%.*s", (int)(n - 1), s);
    l->inst = b->ninsts;
    l->line = line;
    return;
  }
  bool predicated = s[0] == '@';
  if (predicated) /* a predicate guard: the instruction follows it */
    s = trim(s + strcspn(s, " \t"));
  if (!grow((void **)&b->insts, &b->cap, b->ninsts + 1, sizeof *b->insts)) {
    r->oom = true;
    return;
  }
  Inst *in = &b->insts[b->ninsts++];
  in->line = line;
  in->predicated = predicated;
  snprintf(in->text, sizeof in->text, "%s", s);
  r->open_inst = !ends;
}

/* Cuts a line at `;` (the last piece may hold a label or a brace) after dropping a comment. */
static void read_line(Reader *r, char *line, int lineno) {
  char *c = strstr(line, "//");
  if (c) *c = '\0';
  char *piece = line;
  for (char *semi; (semi = strchr(piece, ';')); piece = semi + 1) {
    *semi = '\0';
    statement(r, piece, lineno, true);
  }
  statement(r, piece, lineno, false);
}

bool kiln_ptx_stat_parse(const char *ptx, KilnPtxStat *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  if (!ptx) {
    snprintf(err, errlen, "no PTX text");
    return false;
  }
  Reader r = {.out = out};
  size_t len = strlen(ptx);
  char *copy = malloc(len + 1); /* the reader cuts lines in place */
  if (copy) memcpy(copy, ptx, len + 1);
  if (!copy) {
    snprintf(err, errlen, "out of memory");
    return false;
  }
  int lineno = 1;
  for (char *line = copy, *nl; line && !r.oom; line = nl ? nl + 1 : NULL, lineno++) {
    nl = strchr(line, '\n');
    if (nl) *nl = '\0';
    read_line(&r, line, lineno);
  }
  if (r.k && !r.oom) /* a body cut short: report what was read */
    end_kernel(&r);
  for (int i = 0; i < r.ndsmem; i++)
    for (int j = 0; j < out->nkernels; j++)
      if (strcmp(out->kernels[j].name, r.dsmem[i].kernel) == 0)
        out->kernels[j].smem_dynamic_bytes = r.dsmem[i].bytes;
  free(copy);
  free(r.body.insts);
  free(r.body.labels);
  if (r.oom || out->nkernels == 0) {
    snprintf(err, errlen, "%s", r.oom ? "out of memory" : "no .entry (kernel) in the PTX text");
    kiln_ptx_stat_free(out);
    return false;
  }
  return true;
}

void kiln_ptx_stat_free(KilnPtxStat *s) {
  if (!s) return;
  for (int i = 0; i < s->nkernels; i++) free(s->kernels[i].loops);
  free(s->kernels);
  memset(s, 0, sizeof *s);
}

/* ---- ptxas -v ---- */

/* The integer just before `word` in line ("12 bytes smem" → 12), or -1. */
static int number_before(const char *line, const char *word) {
  const char *w = strstr(line, word);
  if (!w || w == line) return -1;
  const char *p = w;
  while (p > line && p[-1] == ' ') p--;
  const char *end = p;
  while (p > line && isdigit((unsigned char)p[-1])) p--;
  return p < end ? atoi(p) : -1;
}

static KilnPtxKernel *kernel_named(KilnPtxStat *s, const char *line, const char *after) {
  const char *p = strstr(line, after);
  if (!p) return NULL;
  p += strlen(after);
  size_t n = strcspn(p, "' \t\r");
  for (int i = 0; i < s->nkernels; i++)
    if (strlen(s->kernels[i].name) == n && strncmp(s->kernels[i].name, p, n) == 0)
      return &s->kernels[i];
  return NULL;
}

void kiln_ptx_stat_add_ptxas(KilnPtxStat *s, const char *log) {
  KilnPtxKernel *k = NULL;
  for (const char *line = log; line && *line;) {
    const char *nl = strchr(line, '\n');
    size_t n = nl ? (size_t)(nl - line) : strlen(line);
    char buf[512];
    snprintf(buf, sizeof buf, "%.*s", (int)(n < sizeof buf ? n : sizeof buf - 1), line);
    KilnPtxKernel *named = kernel_named(s, buf, "Compiling entry function '");
    if (!named) named = kernel_named(s, buf, "Function properties for ");
    if (named) k = named;
    if (k) {
      int v;
      k->has_ptxas = true;
      if ((v = number_before(buf, " registers")) >= 0) k->registers = v;
      if ((v = number_before(buf, " bytes smem")) >= 0) k->smem_static = v;
      if ((v = number_before(buf, " bytes stack frame")) >= 0) k->stack_bytes = v;
      if ((v = number_before(buf, " bytes spill stores")) >= 0) k->spill_stores = v;
      if ((v = number_before(buf, " bytes spill loads")) >= 0) k->spill_loads = v;
    }
    line = nl ? nl + 1 : NULL;
  }
}

/* ---- devices, occupancy, roofline ---- */

/* Numbers from NVIDIA's H200 and A100 datasheets and the CUDA programming guide's table of
 * compute capabilities (docs/gpu-lowering.md, "Static performance report"). */
static const KilnPtxDevice devices[] = {
    {"sm_90", "H200 SXM", 65536, 255, 256, 64, 32, 233472, 232448, 1024, 989.0, 67.0, 4800.0},
    {"sm_80", "A100 SXM 80GB", 65536, 255, 256, 64, 32, 167936, 166912, 1024, 312.0, 19.5, 2039.0},
};

const KilnPtxDevice *kiln_ptx_device_find(const char *arch) {
  for (size_t i = 0; arch && i < sizeof devices / sizeof devices[0]; i++)
    if (strcmp(devices[i].arch, arch) == 0) return &devices[i];
  return NULL;
}

KilnPtxOccupancy kiln_ptx_occupancy(const KilnPtxKernel *k, const KilnPtxDevice *d, int dyn_smem) {
  KilnPtxOccupancy o = {0, 0, 0.0, "threads unknown"};
  if (!k || !d || k->threads <= 0) return o;
  int warps = (k->threads + 31) / 32;
  int blocks = d->max_blocks_per_sm;
  o.limit = "blocks";
  int by_warps = d->max_warps_per_sm / warps;
  if (by_warps < blocks) {
    blocks = by_warps;
    o.limit = "warps";
  }
  if (k->has_ptxas && k->registers > 0) {
    int unit = d->reg_alloc_unit;
    int per_warp = (k->registers * 32 + unit - 1) / unit * unit;
    int by_regs = d->regs_per_sm / per_warp / warps;
    if (by_regs < blocks) {
      blocks = by_regs;
      o.limit = "registers";
    }
  }
  if (dyn_smem < k->smem_dynamic_bytes) dyn_smem = k->smem_dynamic_bytes;
  int smem = (k->has_ptxas ? k->smem_static : k->smem_static_ptx) + dyn_smem;
  if (smem > d->smem_per_block_max) {
    blocks = 0;
    o.limit = "shared memory (over the per-block limit)";
  } else if (smem > 0) {
    int by_smem = d->smem_per_sm / (smem + d->smem_reserved_per_block);
    if (by_smem < blocks) {
      blocks = by_smem;
      o.limit = "shared memory";
    }
  }
  o.blocks_per_sm = blocks;
  o.warps_per_sm = blocks * warps;
  o.occupancy = (double)o.warps_per_sm / d->max_warps_per_sm;
  return o;
}

KilnPtxRoofline kiln_ptx_roofline(const KilnPtxDevice *d, double flops, double bytes, bool tensor) {
  KilnPtxRoofline r = {0};
  double peak = (tensor ? d->tensor_tflops : d->fp32_tflops) * 1e12;
  r.compute_us = flops > 0 ? flops / peak * 1e6 : 0.0;
  r.memory_us = bytes > 0 ? bytes / (d->hbm_gbps * 1e9) * 1e6 : 0.0;
  r.intensity = bytes > 0 ? flops / bytes : 0.0;
  r.bound = r.compute_us >= r.memory_us ? "compute" : "memory";
  r.bound_us = r.compute_us >= r.memory_us ? r.compute_us : r.memory_us;
  return r;
}

/* ---- the report ---- */

static const char *const width_names[KILN_PTX_WIDTH_COUNT] = {"8",  "16",  "32",
                                                              "64", "128", "other"};

static double mma_share(const KilnPtxMix *m) { return m->insts ? (double)m->mma / m->insts : 0.0; }

static void json_widths(const int *w, FILE *f) {
  fputc('{', f);
  for (int i = 0; i < KILN_PTX_WIDTH_COUNT; i++)
    fprintf(f, "%s\"%s\": %d", i ? ", " : "", width_names[i], w[i]);
  fputc('}', f);
}

static void json_mix(const KilnPtxMix *m, FILE *f) {
  fprintf(f,
          "\"insts\": %d, \"bar_sync\": %d, \"ld_shared\": %d, \"st_shared\": %d, "
          "\"ldmatrix\": %d, \"stmatrix\": %d, \"cp_async\": %d, \"wait_group_max\": %d, "
          "\"mma\": %d, \"mma_share\": %.4f, \"wgmma\": %d, \"wgmma_k16\": %d, \"fma\": %d, "
          "\"div_full\": %d, \"shfl\": %d, \"atom\": %d, \"ld_global_bits\": ",
          m->insts, m->bar_sync, m->ld_shared, m->st_shared, m->ldmatrix, m->stmatrix, m->cp_async,
          m->wait_group_max, m->mma, mma_share(m), m->wgmma, m->wgmma_k16, m->fma, m->div_full,
          m->shfl, m->atom);
  json_widths(m->ld_global, f);
  fputs(", \"st_global_bits\": ", f);
  json_widths(m->st_global, f);
}

static void json_kernel(const KilnPtxKernel *k, const KilnPtxReportOptions *o, FILE *f) {
  fprintf(f, "    {\"name\": \"%s\", \"threads\": %d, \"min_blocks\": %d, ", k->name, k->threads,
          k->min_blocks);
  if (k->has_ptxas)
    fprintf(f,
            "\"registers\": %d, \"spill_stores\": %d, \"spill_loads\": %d, "
            "\"stack_bytes\": %d, \"smem_static\": %d, ",
            k->registers, k->spill_stores, k->spill_loads, k->stack_bytes, k->smem_static);
  else
    fprintf(f, "\"smem_static\": %d, ", k->smem_static_ptx);
  fprintf(f, "\"smem_dynamic\": %s, \"dyn_smem_bytes\": %d,\n", k->smem_dynamic ? "true" : "false",
          o->dyn_smem > k->smem_dynamic_bytes ? o->dyn_smem : k->smem_dynamic_bytes);
  if (o->device) {
    KilnPtxOccupancy oc = kiln_ptx_occupancy(k, o->device, o->dyn_smem);
    fprintf(f,
            "     \"occupancy\": {\"blocks_per_sm\": %d, \"warps_per_sm\": %d, "
            "\"occupancy\": %.3f, \"limit\": \"%s\"},\n",
            oc.blocks_per_sm, oc.warps_per_sm, oc.occupancy, oc.limit);
  }
  if (o->device && (o->flops > 0 || o->bytes > 0)) {
    KilnPtxRoofline r = kiln_ptx_roofline(o->device, o->flops, o->bytes, o->tensor);
    fprintf(f,
            "     \"roofline\": {\"flops\": %.6g, \"bytes\": %.6g, \"tensor\": %s, "
            "\"intensity\": %.3f, \"compute_us\": %.3f, \"memory_us\": %.3f, "
            "\"bound_us\": %.3f, \"bound\": \"%s\"},\n",
            o->flops, o->bytes, o->tensor ? "true" : "false", r.intensity, r.compute_us,
            r.memory_us, r.bound_us, r.bound);
  }
  fputs("     \"total\": {", f);
  json_mix(&k->mix, f);
  fputs("},\n     \"loops\": [", f);
  for (int i = 0; i < k->nloops; i++) {
    const KilnPtxLoop *L = &k->loops[i];
    fprintf(f,
            "%s\n       {\"first_line\": %d, \"last_line\": %d, \"depth\": %d, "
            "\"inner\": %s, ",
            i ? "," : "", L->first_line, L->last_line, L->depth, L->inner ? "true" : "false");
    json_mix(&L->mix, f);
    fputc('}', f);
  }
  fputs("]}", f);
}

static void text_widths(const char *what, const int *w, FILE *f) {
  fprintf(f, " %s", what);
  bool any = false;
  for (int i = 0; i < KILN_PTX_WIDTH_COUNT; i++)
    if (w[i]) {
      fprintf(f, " %sb:%d", width_names[i], w[i]);
      any = true;
    }
  if (!any) fputs(" -", f);
}

static void text_mix(const KilnPtxMix *m, FILE *f) {
  fprintf(f, "insts %d, bar.sync %d, shared ld/st %d/%d, ldmatrix %d, stmatrix %d, cp.async %d",
          m->insts, m->bar_sync, m->ld_shared, m->st_shared, m->ldmatrix, m->stmatrix, m->cp_async);
  if (m->wait_group_max >= 0) fprintf(f, " (wait_group max %d)", m->wait_group_max);
  fprintf(f, ", mma %d (%.1f%%)", m->mma, 100.0 * mma_share(m));
  if (m->wgmma) fprintf(f, ", wgmma %d (%d m16n8k16 a warp)", m->wgmma, m->wgmma_k16);
  fprintf(f, ", fma %d, div %d, shfl %d, atom %d\n       global", m->fma, m->div_full, m->shfl,
          m->atom);
  text_widths("loads", m->ld_global, f);
  fputc(';', f);
  text_widths("stores", m->st_global, f);
  fputc('\n', f);
}

static void text_kernel(const KilnPtxKernel *k, const KilnPtxReportOptions *o, FILE *f) {
  fprintf(f, "kernel %s: %d threads", k->name, k->threads);
  if (k->min_blocks > 0) fprintf(f, " (min %d blocks/SM: .minnctapersm)", k->min_blocks);
  if (k->has_ptxas)
    fprintf(f, ", %d registers, spills %d/%d bytes (st/ld), stack %d bytes, static smem %d bytes",
            k->registers, k->spill_stores, k->spill_loads, k->stack_bytes, k->smem_static);
  else
    fprintf(f, ", static smem %d bytes (PTX; no ptxas report)", k->smem_static_ptx);
  if (k->smem_dynamic)
    fprintf(f, ", dynamic smem %d bytes\n",
            o->dyn_smem > k->smem_dynamic_bytes ? o->dyn_smem : k->smem_dynamic_bytes);
  else
    fputs(", dynamic smem none\n", f);
  if (o->device) {
    KilnPtxOccupancy oc = kiln_ptx_occupancy(k, o->device, o->dyn_smem);
    fprintf(f, "  occupancy on %s (%s): %d blocks/SM, %d warps/SM (%.0f%%), limited by %s\n",
            o->device->arch, o->device->name, oc.blocks_per_sm, oc.warps_per_sm,
            100.0 * oc.occupancy, oc.limit);
  }
  if (o->device && (o->flops > 0 || o->bytes > 0)) {
    KilnPtxRoofline r = kiln_ptx_roofline(o->device, o->flops, o->bytes, o->tensor);
    fprintf(f,
            "  roofline: %.4g flops, %.4g bytes (%.2f flop/byte): compute %.2f us, "
            "memory %.2f us, %s-bound at %.2f us\n",
            o->flops, o->bytes, r.intensity, r.compute_us, r.memory_us, r.bound, r.bound_us);
  }
  fputs("  total: ", f);
  text_mix(&k->mix, f);
  for (int i = 0; i < k->nloops; i++) {
    const KilnPtxLoop *L = &k->loops[i];
    fprintf(f, "  loop lines %d-%d (depth %d%s): ", L->first_line, L->last_line, L->depth,
            L->inner ? ", inner" : "");
    text_mix(&L->mix, f);
  }
}

void kiln_ptx_stat_print(const KilnPtxStat *s, const KilnPtxReportOptions *o, FILE *f) {
  if (o->json) {
    fprintf(f, "{\"arch\": \"%s\", \"device\": \"%s\", \"kernels\": [\n",
            o->device ? o->device->arch : "", o->device ? o->device->name : "");
    for (int i = 0; i < s->nkernels; i++) {
      json_kernel(&s->kernels[i], o, f);
      fputs(i + 1 < s->nkernels ? ",\n" : "\n", f);
    }
    fputs("]}\n", f);
    return;
  }
  for (int i = 0; i < s->nkernels; i++) text_kernel(&s->kernels[i], o, f);
}
