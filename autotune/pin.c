/* pin.c — `-D NAME=VALUE` on `kiln tune` and `kiln lib`: a const parameter held at one value.
 *
 * Some const parameters choose what a kernel computes rather than how fast: an element type
 * (`T`), an epilogue (`EPI`), a GELU flavour (`TANH`). Their values are different kernels, not
 * tuning choices, so they are given by the caller. A pin replaces the parameter's value list
 * in a copy of the tune block (adding it when the block does not list it) and drops the
 * presets' assignments to it; records carry the pinned binding in their config, and a library
 * takes only the records that match its pins. */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int tune_pins_add(TunePins *p, const char *arg, char *err, size_t cap) {
  const char *eq = strchr(arg, '=');
  size_t n = eq ? (size_t)(eq - arg) : 0;
  if (!eq || n == 0 || n >= sizeof p->pins[0].name || !eq[1]) {
    snprintf(err, cap, "-D expects NAME=VALUE, got '%s'", arg);
    return -1;
  }
  if (p->n == TUNE_MAX_PINS) {
    snprintf(err, cap, "too many -D options (at most %d)", TUNE_MAX_PINS);
    return -1;
  }
  TunePin *q = &p->pins[p->n];
  memset(q, 0, sizeof *q);
  memcpy(q->name, arg, n);
  KilnScalarKind sk;
  if (kiln_scalar_from_name(eq + 1, &sk)) {
    q->is_type = true;
    q->value = (int64_t)sk;
  } else {
    char *end;
    errno = 0;
    long long v = strtoll(eq + 1, &end, 0);
    if (errno || *end) {
      snprintf(err, cap, "-D %s: '%s' is neither an integer nor a type name", q->name, eq + 1);
      return -1;
    }
    q->value = v;
  }
  for (int i = 0; i < p->n; i++)
    if (!strcmp(p->pins[i].name, q->name)) {
      snprintf(err, cap, "-D %s is given twice", q->name);
      return -1;
    }
  p->n++;
  return 0;
}

/* The kernel's const parameter `name` (NULL when it has none). */
static const KilnDecl *const_param(const KilnKernel *k, const char *name) {
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i]->kind == KILN_DECL_CONST_PARAM && !strcmp(k->params[i]->name, name))
      return k->params[i];
  return NULL;
}

/* Whether pin q applies to kernel k; an error when it names the kernel's parameter with the
 * wrong kind of value (a type for an integer const, or the reverse). */
static int pin_applies(const TunePin *q, const KilnKernel *k, char *err, size_t cap) {
  if (kiln_meta_param_is(q->name)) {
    int64_t lo = kiln_meta_param_min(q->name), hi = kiln_meta_param_max(q->name);
    if (q->is_type || q->value < lo || q->value > hi) {
      snprintf(err, cap, "-D %s expects an integer in %lld..%lld", q->name, (long long)lo,
               (long long)hi);
      return -1;
    }
    return 1;
  }
  const KilnDecl *d = const_param(k, q->name);
  if (!d) return 0;
  if (d->is_type_param != q->is_type) {
    snprintf(err, cap, "-D %s: '%s' of '%s' is %s", q->name, q->name, k->name,
             d->is_type_param ? "a type parameter (give a type: f16, bf16, f32, ...)"
                              : "an integer const parameter (give an integer)");
    return -1;
  }
  return 1;
}

static bool pinned_name(const TunePins *p, const KilnKernel *k, const char *name) {
  for (int i = 0; i < p->n; i++)
    if (!strcmp(p->pins[i].name, name) &&
        (kiln_meta_param_is(name) || const_param(k, name) != NULL))
      return true;
  return false;
}

int tune_pins_check(TunePins *p, const KilnKernel *k, char *err, size_t cap) {
  int np = 0;
  for (int i = 0; i < p->n; i++) {
    int a = pin_applies(&p->pins[i], k, err, cap);
    if (a < 0) return -1;
    if (a) p->pins[i].used = true;
    np += a;
  }
  return np;
}

TunePinned *tune_pins_apply(TunePins *p, const KilnTune *t, char *err, size_t cap) {
  TunePinned *pt = calloc(1, sizeof *pt);
  if (!pt) goto oom;
  pt->tune = *t;
  int np = tune_pins_check(p, t->kernel, err, cap);
  if (np < 0) goto fail;
  pt->params = calloc((size_t)(t->nparams + np) + 1, sizeof *pt->params);
  pt->values = calloc((size_t)np + 1, sizeof *pt->values);
  if (!pt->params || !pt->values) goto oom;
  int n = 0, nv = 0;
  for (int i = 0; i < t->nparams; i++) pt->params[n++] = t->params[i];
  for (int i = 0; i < p->n; i++) {
    const TunePin *q = &p->pins[i];
    if (!pinned_name(p, t->kernel, q->name)) continue;
    int j = 0;
    while (j < n && strcmp(pt->params[j].name, q->name)) j++;
    if (j == n) pt->params[n++] = (KilnTuneParam){.name = q->name, .span = t->span};
    pt->values[nv] = q->value;
    pt->params[j].values = &pt->values[nv++];
    pt->params[j].nvalues = 1;
  }
  pt->tune.params = pt->params;
  pt->tune.nparams = n;
  /* presets keep their other assignments: a preset is a speed choice, the pin a meaning */
  int nassigns = 0;
  for (int i = 0; i < t->npresets; i++) nassigns += t->presets[i].nassigns;
  pt->presets = calloc((size_t)t->npresets + 1, sizeof *pt->presets);
  pt->assigns = calloc((size_t)nassigns + 1, sizeof *pt->assigns);
  if (!pt->presets || !pt->assigns) goto oom;
  int na = 0;
  for (int i = 0; i < t->npresets; i++) {
    const KilnTunePreset *s = &t->presets[i];
    KilnTunePreset *d = &pt->presets[i];
    *d = *s;
    d->assigns = &pt->assigns[na];
    d->nassigns = 0;
    for (int k = 0; k < s->nassigns; k++)
      if (!pinned_name(p, t->kernel, s->assigns[k].name))
        pt->assigns[na + d->nassigns++] = s->assigns[k];
    na += d->nassigns;
  }
  pt->tune.presets = pt->presets;
  return pt;
oom:
  snprintf(err, cap, "out of memory");
fail:
  tune_pinned_free(pt);
  return NULL;
}

void tune_pinned_free(TunePinned *pt) {
  if (!pt) return;
  free(pt->params);
  free(pt->values);
  free(pt->presets);
  free(pt->assigns);
  free(pt);
}

bool tune_pins_match(const TunePins *p, const KilnTuneConfig *cfg) {
  for (int i = 0; i < p->n; i++)
    for (int b = 0; b < cfg->nbindings; b++)
      if (!strcmp(cfg->bindings[b].name, p->pins[i].name) &&
          cfg->bindings[b].value != p->pins[i].value)
        return false;
  return true;
}

const char *tune_pins_unused(const TunePins *p) {
  for (int i = 0; i < p->n; i++)
    if (!p->pins[i].used) return p->pins[i].name;
  return NULL;
}
