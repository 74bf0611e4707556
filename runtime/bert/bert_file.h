/* bert_file.h — the trainer's file access: whole-file reads, read-only mappings of large files
 * (weights), and atomic writes (checkpoints, configs) that a reader sees either whole or not at
 * all. Every failure names the path and the OS's reason. */
#ifndef KILN_BERT_FILE_H
#define KILN_BERT_FILE_H

#include "bert_status.h"
#include "kiln_base.h"

#include <stddef.h>
#include <stdio.h>

/* Named bounds on what the trainer reads into memory. A file (or line) past its bound is
 * refused with its name and the limit's, before it is read where the file says its size, else
 * as soon as the read passes the bound: a link to /dev/zero, a FIFO or a runaway file costs at
 * most that much memory. Each is far above real inputs. */
/* vocab.txt: BERT's English one is 226 KiB, the multilingual one under 1 MiB. */
#define KILN_BERT_MAX_VOCAB_BYTES ((size_t)64 << 20)
/* config.json and trainer_state.json: a few hundred bytes. */
#define KILN_BERT_MAX_JSON_BYTES ((size_t)16 << 20)
/* One sample: an aclImdb review file (the longest is 14 KiB) or one TSV / JSONL line. */
#define KILN_BERT_MAX_SAMPLE_BYTES ((size_t)4 << 20)
/* One TSV / JSONL file (read a line at a time; its samples are kept in memory). */
#define KILN_BERT_MAX_DATASET_BYTES ((size_t)4 << 30)
/* A safetensors file's JSON header (the format's own bound; the tensors' bytes are mapped, not
 * read, and checked against the file's size). */
#define KILN_BERT_MAX_ST_HEADER_BYTES ((size_t)100000000)

/* Reads all of path into *data (malloc'ed, with a NUL after the last byte so that text can be
 * parsed in place; free() it) and its length, without the NUL, into *len. A file over max
 * bytes is FORMAT, naming path and limit_name (the macro's name); IO on other failures. */
KilnBertStatus kiln_bert_file_read(const char *path, size_t max, const char *limit_name,
                                   char **data, size_t *len);

/* A read-only view of a whole file, mapped rather than copied (a BERT-large checkpoint is
 * 1.3 GB). data is NULL for an empty file. */
typedef struct KilnBertFileMap {
  const unsigned char *data;
  size_t size;
} KilnBertFileMap;

KilnBertStatus kiln_bert_file_map(const char *path, KilnBertFileMap *out);
/* Releases the mapping; a zeroed or already unmapped map is a no-op. */
void kiln_bert_file_unmap(KilnBertFileMap *map);

/* An atomic write in progress: the bytes go to a temporary file next to `path` (same directory,
 * so the final rename cannot cross file systems); commit flushes it to disk, renames it over
 * path and syncs the directory. Until then, and after a failed write or an abort, path keeps
 * its old contents and no temporary file is left behind. */
typedef struct KilnBertAtomicFile {
  KilnAtomicFile file; /* the shared atomic writer (kiln_base.h): symlinks followed, mode kept */
  char *path;          /* as the caller named it, for messages */
} KilnBertAtomicFile;

/* Creates the temporary file (mode as a plain create would give). IO on failure. */
KilnBertStatus kiln_bert_file_begin(const char *path, KilnBertAtomicFile *af);
/* Appends n bytes. A failure is remembered and reported by commit, so callers may write a
 * sequence of pieces and check once. */
void kiln_bert_file_write(KilnBertAtomicFile *af, const void *data, size_t n);
/* Finishes: IO (naming path) if any write, the flush, the fsync or the rename failed; the
 * temporary file is removed then. af is released either way. */
KilnBertStatus kiln_bert_file_commit(KilnBertAtomicFile *af);
/* Gives the write up: removes the temporary file and releases af. */
void kiln_bert_file_abort(KilnBertAtomicFile *af);

/* begin + one write + commit. */
KilnBertStatus kiln_bert_file_write_atomic(const char *path, const void *data, size_t n);

#endif /* KILN_BERT_FILE_H */
