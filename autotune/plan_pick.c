/* plan_pick.c — the one tie-break: which of several timed candidates wins (plan.h).
 *
 * Timings on a busy machine are noisy, so "the smallest median" alone would pick between two
 * equally fast configs by chance, and a library rebuilt from the same cache could change. The
 * rule: every candidate within the noise of the fastest ties; the tie goes to the one that
 * holds fewer resources (warps times block sizes: it leaves more of the device to other work),
 * then to the one the tune block lists first. `kiln tune`, kiln-tune-runner and `kiln lib` all
 * call this, so a winner means the same thing wherever it was picked. No compiler code: this
 * file is part of the runtime-only tuner core. */
#include "tune_core.h"

#include <math.h>
#include <string.h>

double tune_plan_resources(const KilnTuneConfig *cfg) {
  double r = cfg->num_warps;
  for (int i = 0; i < cfg->nbindings; i++) {
    const char *n = cfg->bindings[i].name;
    if (!kiln_meta_param_is(n) && cfg->bindings[i].value > 0) r *= (double)cfg->bindings[i].value;
  }
  return r;
}

static int fastest_ok(const TuneCand *c, int n) {
  int best = -1;
  for (int i = 0; i < n; i++)
    if (c[i].state == ST_OK && (best < 0 || c[i].median_ms < c[best].median_ms)) best = i;
  return best;
}

int tune_plan_pick_winner(const TuneCand *c, int n) {
  int best = fastest_ok(c, n);
  if (best < 0) return -1;
  double noise = fmax(0.02 * c[best].median_ms, c[best].p75_ms - c[best].p25_ms);
  int win = best;
  for (int i = 0; i < n; i++) {
    if (c[i].state != ST_OK || c[i].median_ms > c[best].median_ms + noise) continue;
    if (c[i].resources < c[win].resources ||
        (c[i].resources == c[win].resources && c[i].order < c[win].order))
      win = i;
  }
  return win;
}
