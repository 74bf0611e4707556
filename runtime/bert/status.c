/* status.c — status names, the thread-local last-error message and the array growth helper. */
#include "bert_internal.h"

#include <stdarg.h>
#include <string.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static const char *const status_names[KILN_BERT_STATUS_COUNT] = {
    [KILN_BERT_OK] = "KILN_BERT_OK",
    [KILN_BERT_ERROR_INVALID_ARGUMENT] = "KILN_BERT_ERROR_INVALID_ARGUMENT",
    [KILN_BERT_ERROR_IO] = "KILN_BERT_ERROR_IO",
    [KILN_BERT_ERROR_FORMAT] = "KILN_BERT_ERROR_FORMAT",
    [KILN_BERT_ERROR_NOT_FOUND] = "KILN_BERT_ERROR_NOT_FOUND",
    [KILN_BERT_ERROR_OUT_OF_MEMORY] = "KILN_BERT_ERROR_OUT_OF_MEMORY",
    [KILN_BERT_ERROR_DEVICE] = "KILN_BERT_ERROR_DEVICE",
};

const char *kiln_bert_status_name(KilnBertStatus status) {
  if ((unsigned)status >= (unsigned)KILN_BERT_STATUS_COUNT) return "KILN_BERT_STATUS_UNKNOWN";
  return status_names[status];
}

/* Long enough for a path and a tensor name with its shapes. */
static _Thread_local char last_error[2048];

const char *kiln_bert_last_error(void) { return last_error; }

KilnBertStatus kiln_bert_fail(KilnBertStatus status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return status;
}

int kiln_bert_grow(void **buf, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 0;
  size_t ncap = *cap ? *cap : 16;
  while (ncap < need) {
    if (ncap > SIZE_MAX / 2) return -1;
    ncap *= 2;
  }
  if (ncap > SIZE_MAX / elem) return -1;
  void *nb = realloc(*buf, ncap * elem);
  if (!nb) return -1;
  *buf = nb;
  *cap = ncap;
  return 0;
}

int kiln_bert_device_is(const char *spec, const char *kind) {
  size_t n = strlen(kind);
  if (strncmp(spec, kind, n)) return 0;
  if (!spec[n]) return 1;
  if (strcmp(kind, "cuda") || spec[n] != ':' || !spec[n + 1]) return 0;
  return strspn(spec + n + 1, "0123456789") == strlen(spec + n + 1);
}
