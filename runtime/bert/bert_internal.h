/* bert_internal.h — what the kilnbert modules share and nobody else uses: setting the failure
 * message, and the growable-array helper. */
#ifndef KILN_BERT_INTERNAL_H
#define KILN_BERT_INTERNAL_H

#include "bert_status.h"

#include <stddef.h>

/* Formats the thread's last-error message and returns `status`, so that a failure reads
 * `return kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s: ...", path);`. */
KilnBertStatus kiln_bert_fail(KilnBertStatus status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Makes room for `need` elements of `elem` bytes in *buf (capacity *cap, doubled as it grows).
 * Returns 0, or -1 when out of memory or the size overflows (then *buf is unchanged). */
int kiln_bert_grow(void **buf, size_t *cap, size_t need, size_t elem);

/* Whether the device spec names `kind` ("cpu", "emu", "cuda"): the kind itself, or for cuda
 * also cuda:N (N decimal digits). train and eval hand a run to the copy of the model built for
 * its device with it. */
int kiln_bert_device_is(const char *spec, const char *kind);

#endif /* KILN_BERT_INTERNAL_H */
