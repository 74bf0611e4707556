/* report.c — what a tuning run found: a table (stdout), JSON (--json), an SVG plot. */
#include "internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const state_names[ST_COUNT] = {
    "pruned", "pending", "ok", "crash", "hang", "mismatch", "failed", "poisoned", "budget"};

const char *tune_state_name(TuneState s) {
  return (unsigned)s < ST_COUNT ? state_names[s] : "unknown";
}

static int count_pruned(const TuneKernelReport *k) {
  int n = 0;
  for (int i = 0; i < k->nspace; i++) n += k->space[i].state == ST_PRUNED;
  return n;
}

void tune_report_table(const TuneReport *r, FILE *out) {
  for (int ki = 0; ki < r->nkernels; ki++) {
    const TuneKernelReport *k = &r->kernels[ki];
    fprintf(out, "kernel %s (%s)  key %s  signature %s  device %s  mode %s\n", k->kernel, k->file,
            k->key[0] ? k->key : "-", k->signature[0] ? k->signature : "-", r->device, r->mode);
    fprintf(out, "  space %zu configs, %d pruned, %d considered, %d timings\n", k->space_size,
            count_pruned(k), k->ncands, k->timings);
    fprintf(out, "  %-1s %-44s %-9s %10s %21s %5s %9s  %s\n", "", "config", "status", "median ms",
            "spread (p25..p75) ms", "reps", "build ms", "note");
    char text[256];
    for (int i = 0; i < k->ncands; i++) {
      const TuneCand *c = &k->cands[i];
      tune_config_text(c->config, k->ast, text, sizeof text);
      fprintf(out, "  %-1s %-44s %-9s ", i == k->winner ? "*" : "", text,
              tune_state_name(c->state));
      if (c->state == ST_OK)
        fprintf(out, "%10.4f %10.4f..%-10.4f %5d", c->median_ms, c->p25_ms, c->p75_ms, c->reps);
      else
        fprintf(out, "%10s %21s %5s", "-", "-", "-");
      fprintf(out, " %9.1f  %s%s%s\n", c->compile_ms, c->from_cache ? "cached " : "",
              c->preset[0] ? "preset " : "", c->preset[0] ? c->preset : c->detail);
    }
    for (int i = 0; i < k->nspace; i++)
      if (k->space[i].state == ST_PRUNED) {
        tune_config_text(k->space[i].config, k->ast, text, sizeof text);
        fprintf(out, "  pruned %-44s %s\n", text, k->space[i].detail);
      }
    tune_config_text(k->winner >= 0 ? k->cands[k->winner].config : "none", k->ast, text,
                     sizeof text);
    fprintf(out, "  winner: %s\n\n", text);
  }
}

static cJSON *cand_json(const TuneCand *c) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "config", c->config);
  cJSON_AddNumberToObject(o, "order", c->order);
  cJSON_AddStringToObject(o, "status", tune_state_name(c->state));
  cJSON_AddStringToObject(o, "detail", c->detail);
  if (c->preset[0]) cJSON_AddStringToObject(o, "preset", c->preset);
  if (c->state == ST_OK) {
    cJSON_AddNumberToObject(o, "median_ms", c->median_ms);
    cJSON_AddNumberToObject(o, "p25_ms", c->p25_ms);
    cJSON_AddNumberToObject(o, "p75_ms", c->p75_ms);
    cJSON_AddNumberToObject(o, "min_ms", c->min_ms);
    cJSON_AddNumberToObject(o, "reps", c->reps);
  }
  cJSON_AddNumberToObject(o, "compile_ms", c->compile_ms);
  if (c->usage.valid) {
    cJSON_AddNumberToObject(o, "registers", c->usage.registers);
    cJSON_AddNumberToObject(o, "shared_bytes", c->usage.shared_bytes);
    cJSON_AddNumberToObject(o, "spill_bytes", c->usage.spill_bytes);
  }
  cJSON_AddNumberToObject(o, "timings", c->timings);
  cJSON_AddBoolToObject(o, "from_cache", c->from_cache);
  return o;
}

static cJSON *kernel_json(const TuneKernelReport *k) {
  cJSON *o = cJSON_CreateObject(), *pruned = cJSON_CreateArray(), *cands = cJSON_CreateArray();
  cJSON_AddStringToObject(o, "kernel", k->kernel);
  cJSON_AddStringToObject(o, "file", k->file);
  cJSON_AddStringToObject(o, "source_hash", k->source_hash);
  cJSON_AddStringToObject(o, "tune_hash", k->tune_hash);
  cJSON_AddStringToObject(o, "key", k->key);
  cJSON_AddStringToObject(o, "signature", k->signature);
  cJSON_AddNumberToObject(o, "space_size", (double)k->space_size);
  cJSON_AddNumberToObject(o, "timings", k->timings);
  for (int i = 0; i < k->nspace; i++)
    if (k->space[i].state == ST_PRUNED) {
      cJSON *p = cJSON_CreateObject();
      cJSON_AddStringToObject(p, "config", k->space[i].config);
      cJSON_AddStringToObject(p, "reason", k->space[i].detail);
      cJSON_AddItemToArray(pruned, p);
    }
  for (int i = 0; i < k->ncands; i++) cJSON_AddItemToArray(cands, cand_json(&k->cands[i]));
  cJSON_AddItemToObject(o, "pruned", pruned);
  cJSON_AddItemToObject(o, "candidates", cands);
  if (k->winner >= 0)
    cJSON_AddStringToObject(o, "winner", k->cands[k->winner].config);
  else
    cJSON_AddNullToObject(o, "winner");
  return o;
}

char *tune_report_json(const TuneReport *r) {
  cJSON *root = cJSON_CreateObject(), *ks = cJSON_CreateArray();
  if (!root || !ks) {
    cJSON_Delete(root);
    cJSON_Delete(ks);
    return NULL;
  }
  cJSON_AddStringToObject(root, "kiln_version", KILN_VERSION_STRING);
  cJSON_AddStringToObject(root, "compiler", kiln_tune_compiler_id());
  cJSON_AddStringToObject(root, "mode", r->mode);
  cJSON_AddStringToObject(root, "device", r->device);
  cJSON_AddNumberToObject(root, "timings", r->timings);
  for (int i = 0; i < r->nkernels; i++) cJSON_AddItemToArray(ks, kernel_json(&r->kernels[i]));
  cJSON_AddItemToObject(root, "kernels", ks);
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  return text;
}

/* ---------------------------------------------------------------- SVG */

static void xml_text(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '<')
      fputs("&lt;", f);
    else if (*s == '>')
      fputs("&gt;", f);
    else if (*s == '&')
      fputs("&amp;", f);
    else
      fputc(*s, f);
  }
}

/* One horizontal bar per considered config (length = median time; failed ones as a red
 * label), a panel per kernel. */
static int svg_write(const TuneReport *r, FILE *f) {
  int rows = 0;
  for (int k = 0; k < r->nkernels; k++) rows += r->kernels[k].ncands + 2;
  int width = 900, left = 360, row_h = 18, height = rows * row_h + 20;
  fprintf(f,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
          "font-family=\"monospace\" font-size=\"11\">\n",
          width, height);
  int y = 10;
  for (int ki = 0; ki < r->nkernels; ki++) {
    const TuneKernelReport *k = &r->kernels[ki];
    double maxms = 0;
    for (int i = 0; i < k->ncands; i++)
      if (k->cands[i].state == ST_OK && k->cands[i].p75_ms > maxms) maxms = k->cands[i].p75_ms;
    fprintf(f, "<text x=\"4\" y=\"%d\" font-weight=\"bold\">", y + 12);
    xml_text(f, k->kernel);
    fprintf(f, " key %s%s", k->key, k->signature[0] ? " signature " : "");
    xml_text(f, k->signature);
    fprintf(f, ": median ms per config (whisker: p25..p75)</text>\n");
    y += row_h;
    for (int i = 0; i < k->ncands; i++, y += row_h) {
      const TuneCand *c = &k->cands[i];
      fprintf(f, "<text x=\"4\" y=\"%d\">%s", y + 12, i == k->winner ? "* " : "");
      xml_text(f, c->config);
      fputs("</text>\n", f);
      if (c->state != ST_OK || maxms <= 0) {
        fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#c00\">%s</text>\n", left, y + 12,
                tune_state_name(c->state));
        continue;
      }
      double scale = (width - left - 90) / maxms;
      fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>\n", left,
              y + 3, c->median_ms * scale, row_h - 6, i == k->winner ? "#2a7" : "#58c");
      fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#000\"/>\n",
              left + c->p25_ms * scale, left + c->p75_ms * scale, y + row_h / 2, y + row_h / 2);
      fprintf(f, "<text x=\"%.1f\" y=\"%d\">%.4f</text>\n", left + c->p75_ms * scale + 4, y + 12,
              c->median_ms);
    }
    y += row_h;
  }
  fputs("</svg>\n", f);
  return ferror(f) ? -1 : 0;
}

int tune_report_svg(const TuneReport *r, const char *path, FILE *err) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  int rc = f ? svg_write(r, f) : -1;
  if (f && fclose(f) != 0) rc = -1;
  if (rc == 0 && kiln_file_write_atomic(path, buf, len) != 0) rc = -1;
  if (rc != 0) fprintf(err, "kiln tune: error: cannot write '%s': %s\n", path, strerror(errno));
  free(buf);
  return rc;
}
