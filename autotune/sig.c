/* sig.c — specialization signatures: what a call's integer arguments let a variant assume.
 *
 * A kernel written with every stride a parameter serves row- and column-major operands alike,
 * but then nothing about an access is known to be contiguous or aligned, and on GPUs its loads
 * are neither vectorized nor pipelined. Triton's answer, taken here: look at the runtime
 * integer arguments of the call being tuned; one equal to 1 is compiled as the constant 1
 * (`--specialize NAME=1`), one divisible by 16 is promised to be (`--multiple-of NAME=16`).
 * Pointers need nothing: the compiler already assumes them 16-byte aligned. A library's untuned
 * default config has a second tier that promises divisibility by 8 ("cols%8"): 8 elements of
 * f16/bf16 are one 16-byte vector, so rows of 1000 columns still get 128-bit accesses. A
 * library's further layouts of a kernel (a second `--args` naming it) get one copy each, whose
 * promises are the strongest each value keeps: =1, else %16, else %8.
 *
 * The signature is written as text, "sak=1,sbn=1,M%16" (parameter order; "" promises nothing),
 * appended to the cache record's key after a '|' so that records of one signature are never
 * taken for another's; the library generator parses it back and checks it on every call. */
#include "tune_core.h"

#include <stdlib.h>
#include <string.h>

static bool is_int_param(const TuneParam *q) {
  return !q->is_ptr && q->scalar != KILN_SCALAR_I1 && !kiln_scalar_is_float(q->scalar);
}

/* Appends one promise to s (entry and text); false when the text would not fit in `room`. */
/* mod: 0 promises "=1", 8 or 16 "%8" / "%16". */
static bool add_promise(TuneSig *s, const TuneParam *params, int i, int mod, size_t room) {
  size_t used = strlen(s->text);
  char item[80];
  bool multiple = mod != 0;
  int w = multiple ? snprintf(item, sizeof item, "%s%s%%%d", used ? "," : "", params[i].name, mod)
                   : snprintf(item, sizeof item, "%s%s=1", used ? "," : "", params[i].name);
  if (w < 0 || (size_t)w >= sizeof item || used + (size_t)w >= room ||
      used + (size_t)w >= sizeof s->text)
    return false;
  memcpy(s->text + used, item, (size_t)w + 1);
  TuneSigEntry *e = &s->e[s->n++];
  e->param = i;
  e->multiple = multiple;
  e->mod = mod;
  snprintf(e->name, sizeof e->name, "%s", params[i].name);
  return true;
}

void tune_sig_compute_mod(const TuneParam *params, const int64_t *ival, int nparams, size_t room,
                          int mod, TuneSig *s) {
  memset(s, 0, sizeof *s);
  for (int i = 0; i < nparams && i < TUNE_MAX_PARAMS; i++) {
    if (!is_int_param(&params[i])) continue;
    /* 1 before %mod: a unit stride as a constant also folds the multiplications away */
    bool one = ival[i] == 1, divisible = ival[i] % mod == 0;
    /* a promise that does not fit in the record key is left out: fewer promises are always
     * correct, and the key must say exactly what the variant assumes */
    if ((one || divisible) && !add_promise(s, params, i, one ? 0 : mod, room)) break;
  }
}

void tune_sig_compute_layout(const TuneParam *params, const int64_t *ival, int nparams, size_t room,
                             TuneSig *s) {
  memset(s, 0, sizeof *s);
  for (int i = 0; i < nparams && i < TUNE_MAX_PARAMS; i++) {
    if (!is_int_param(&params[i])) continue;
    int mod = ival[i] == 1 ? 0 : ival[i] % 16 == 0 ? 16 : ival[i] % 8 == 0 ? 8 : -1;
    if (mod >= 0 && !add_promise(s, params, i, mod, room)) break;
  }
}

void tune_sig_compute(const TuneParam *params, const int64_t *ival, int nparams, size_t room,
                      TuneSig *s) {
  tune_sig_compute_mod(params, ival, nparams, room, 16, s);
}

/* One "NAME=1" / "NAME%16" / "NAME%8" item of the text; false when malformed or not an
 * integer param. */
static bool parse_item(const char *item, size_t len, const TuneParam *params, int nparams,
                       TuneSig *s) {
  bool d16 = len > 3 && !memcmp(item + len - 3, "%16", 3);
  bool d8 = !d16 && len > 2 && !memcmp(item + len - 2, "%8", 2);
  bool one = len > 2 && !memcmp(item + len - 2, "=1", 2);
  if (!d16 && !d8 && !one) return false;
  size_t nlen = len - (d16 ? 3 : 2);
  for (int i = 0; i < nparams; i++)
    if (strlen(params[i].name) == nlen && !memcmp(params[i].name, item, nlen) &&
        is_int_param(&params[i]))
      return add_promise(s, params, i, d16 ? 16 : d8 ? 8 : 0, sizeof s->text);
  return false;
}

bool tune_sig_parse(const char *text, const TuneParam *params, int nparams, TuneSig *s) {
  memset(s, 0, sizeof *s);
  for (const char *p = text; *p;) {
    size_t len = strcspn(p, ",");
    if (!parse_item(p, len, params, nparams, s)) {
      memset(s, 0, sizeof *s);
      return false;
    }
    p += len + (p[len] == ',');
  }
  return true;
}

bool tune_sig_holds(const TuneSig *s, const int64_t *ival) {
  for (int k = 0; k < s->n; k++) {
    int64_t v = ival[s->e[k].param];
    if (s->e[k].multiple ? v % s->e[k].mod != 0 : v != 1) return false;
  }
  return true;
}

/* How much a signature promises: its number of promises, and among as many, %16 over %8. */
static int sig_strength(const TuneSig *s) {
  int strength = 0;
  for (int e = 0; e < s->n; e++) strength += s->e[e].mod == 8 ? 1 : 2;
  return strength;
}

bool tune_sig_before(const TuneSig *a, const TuneSig *b) {
  return a->n > b->n || (a->n == b->n && sig_strength(a) > sig_strength(b));
}

int64_t tune_key_value(const char *record_key, const char *name) {
  size_t n = strlen(name), len = strcspn(record_key, "|");
  for (const char *p = record_key; (p = strstr(p, name)) != NULL && p < record_key + len; p++)
    if (p[n] == '=' && (p == record_key || p[-1] == ',')) return strtoll(p + n + 1, NULL, 10);
  return 0;
}

const char *tune_sig_of_key(const char *key) {
  const char *bar = strchr(key, '|');
  return bar ? bar + 1 : "";
}

void tune_problem_specialize(TuneProblem *p) {
  size_t used = strlen(p->key);
  size_t room = used + 1 < sizeof p->record_key ? sizeof p->record_key - used - 1 : 0;
  tune_sig_compute(p->params, p->ival, p->nparams, room, &p->sig);
  /* copied by hand: room above guarantees the fit, which snprintf's checker cannot see */
  size_t tlen = strlen(p->sig.text);
  memcpy(p->record_key, p->key, used);
  if (tlen) {
    p->record_key[used] = '|';
    memcpy(p->record_key + used + 1, p->sig.text, tlen);
    used += tlen + 1;
  }
  p->record_key[used] = '\0';
}
