/* bert_status.h — how the BERT training library (kilnbert) reports failure.
 *
 * Every kiln_bert_* function that can fail returns a KilnBertStatus: KILN_BERT_OK on success; on
 * failure its out-parameters are untouched and a message naming what failed (the file, the
 * tensor, the line) is readable with kiln_bert_last_error() on the calling thread, as with
 * libkilnrt. The library never prints, exits or aborts on a failure.
 */
#ifndef KILN_BERT_STATUS_H
#define KILN_BERT_STATUS_H

typedef enum KilnBertStatus {
  KILN_BERT_OK = 0,
  KILN_BERT_ERROR_INVALID_ARGUMENT, /* a caller mistake: NULL, a size out of range */
  KILN_BERT_ERROR_IO,               /* a file could not be opened, read or written */
  KILN_BERT_ERROR_FORMAT, /* a file's contents break its format (vocab, safetensors, config, data) */
  KILN_BERT_ERROR_NOT_FOUND, /* a name looked up is absent (a tensor, a special token) */
  KILN_BERT_ERROR_OUT_OF_MEMORY,
  KILN_BERT_ERROR_DEVICE, /* a runtime (libkilnrt) call or a kernel launch failed */
  KILN_BERT_STATUS_COUNT
} KilnBertStatus;

/* "KILN_BERT_ERROR_FORMAT"; "KILN_BERT_STATUS_UNKNOWN" when out of range. A static string. */
const char *kiln_bert_status_name(KilnBertStatus status);
/* The message of the calling thread's last failure ("" if none). Valid until its next failure. */
const char *kiln_bert_last_error(void);

#endif /* KILN_BERT_STATUS_H */
