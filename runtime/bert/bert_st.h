/* bert_st.h — safetensors files, the weights format of Hugging Face checkpoints: reading
 * (F32, F16 and BF16 tensors converted to f32; other dtypes listed but not readable) and writing
 * (F32, atomically). A file is a little-endian u64 header length, a JSON header mapping each
 * tensor name to {dtype, shape, data_offsets: [begin, end)} (plus an optional "__metadata__"
 * object, ignored), and the data those offsets index, relative to the end of the header.
 *
 * Every length and offset is checked against the file before anything is read: a truncated or
 * corrupt file is a FORMAT error that names the file and the tensor, never a crash. Tensors may
 * come in any order and their data may overlap. */
#ifndef KILN_BERT_ST_H
#define KILN_BERT_ST_H

#include "bert_status.h"

#include <stddef.h>
#include <stdint.h>

#define KILN_BERT_ST_MAX_DIMS 8

typedef enum KilnBertDtype {
  KILN_BERT_DTYPE_F32,
  KILN_BERT_DTYPE_F16,
  KILN_BERT_DTYPE_BF16,
  KILN_BERT_DTYPE_OTHER, /* a dtype kiln-bert does not read (I64, F64, ...) */
  KILN_BERT_DTYPE_COUNT
} KilnBertDtype;

typedef struct KilnBertStTensor {
  const char *name;  /* owned by the file */
  const char *dtype; /* as written ("F32", "I64"); owned by the file */
  KilnBertDtype dt;
  int ndim;
  int64_t shape[KILN_BERT_ST_MAX_DIMS];
  uint64_t numel;            /* product of shape (1 for a scalar) */
  const unsigned char *data; /* nbytes bytes inside the file */
  size_t nbytes;
} KilnBertStTensor;

typedef struct KilnBertSt KilnBertSt;

/* Maps and checks the file at path. On success *out is owned by the caller (kiln_bert_st_close)
 * and its tensors' data stay valid until then. IO when unreadable, FORMAT when malformed. */
KilnBertStatus kiln_bert_st_open(const char *path, KilnBertSt **out);
/* The same over size bytes at data, which are borrowed and must outlive *out; name is used in
 * messages. */
KilnBertStatus kiln_bert_st_parse(const void *data, size_t size, const char *name,
                                  KilnBertSt **out);
/* NULL is a no-op. */
void kiln_bert_st_close(KilnBertSt *st);

size_t kiln_bert_st_count(const KilnBertSt *st);
/* The i-th tensor in header order, or NULL out of range. */
const KilnBertStTensor *kiln_bert_st_tensor(const KilnBertSt *st, size_t i);
/* The tensor called name, or NULL. */
const KilnBertStTensor *kiln_bert_st_find(const KilnBertSt *st, const char *name);

/* Reads tensor `name` into out (numel floats), converting F16 and BF16 to f32, after checking
 * that its shape is shape[0..ndim). NOT_FOUND naming the tensor when absent; FORMAT naming it
 * (and both shapes) for another shape or a dtype that is not F32, F16 or BF16. */
KilnBertStatus kiln_bert_st_read_f32(const KilnBertSt *st, const char *name, const int64_t *shape,
                                     int ndim, float *out);

/* Converts n little-endian elements of dtype dt (F32, F16 or BF16) at src (any alignment) to f32. */
void kiln_bert_dtype_to_f32(KilnBertDtype dt, const void *src, size_t n, float *dst);

/* One tensor to write. */
typedef struct KilnBertStEntry {
  const char *name;
  const float *data; /* numel floats (may be NULL when numel is 0) */
  int ndim;
  int64_t shape[KILN_BERT_ST_MAX_DIMS];
} KilnBertStEntry;

/* Writes entries[0..n) as F32 tensors, in that order, with "__metadata__": {"format": "pt"} and
 * the header padded with spaces so that the data starts 8-byte aligned. Atomic: path keeps its
 * old contents unless the whole file was written and synced. INVALID_ARGUMENT for a duplicate
 * or reserved name or a bad shape, IO naming the path. */
KilnBertStatus kiln_bert_st_write(const char *path, const KilnBertStEntry *entries, size_t n);

#endif /* KILN_BERT_ST_H */
