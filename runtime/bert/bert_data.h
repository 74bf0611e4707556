/* bert_data.h — labelled texts for sequence classification, in the order the trainer takes
 * them (kiln-bert contract, section 2):
 * - an aclImdb split directory: the regular files named *.txt directly inside SPLIT/neg
 *   (label 0) and SPLIT/pos (label 1), everything else ignored (unsup/, labeledBow.feat,
 *   urls_*.txt), ordered by the bytes of "neg/NAME" and "pos/NAME" (all neg first; 10_1.txt
 *   before 1_3.txt before 2_4.txt); a file's text is all of it;
 * - a TSV file: one sample a line, "text<TAB>label" (split at the last tab; \n or \r\n line
 *   ends; a first line "text<TAB>label" is a header and skipped); the text may hold no newline;
 * - a JSONL file: one {"text": "...", "label": N} object a line; blank lines skipped.
 * max_samples > 0 keeps the first max_samples of that order (before any shuffling). Texts are
 * kept as bytes; the tokenizer deals with encodings, BOMs and line ends. */
#ifndef KILN_BERT_DATA_H
#define KILN_BERT_DATA_H

#include "bert_status.h"

#include <stddef.h>

typedef struct KilnBertSample {
  char *text; /* NUL-terminated (it may contain NULs itself: use len) */
  size_t len;
  int label;
  char *source; /* where it came from, for messages: "neg/10_1.txt", "train.tsv:12" */
} KilnBertSample;

typedef struct KilnBertDataset {
  KilnBertSample *samples;
  size_t n;
} KilnBertDataset;

/* Reads the split directory `dir` (holding neg/ and pos/). IO naming the path when a directory
 * or file cannot be read; FORMAT when neither neg/ nor pos/ holds a sample. */
KilnBertStatus kiln_bert_data_imdb(const char *dir, size_t max_samples, KilnBertDataset *out);
/* Reads a TSV file; FORMAT naming the line for a line without a tab or with a label that is not
 * an integer in [0, num_labels). */
KilnBertStatus kiln_bert_data_tsv(const char *path, int num_labels, size_t max_samples,
                                  KilnBertDataset *out);
/* Reads a JSONL file; FORMAT naming the line for anything but an object with a string "text"
 * and an integer "label" in [0, num_labels). */
KilnBertStatus kiln_bert_data_jsonl(const char *path, int num_labels, size_t max_samples,
                                    KilnBertDataset *out);
/* What `--data PATH` means: a file ending in .tsv or .jsonl; a directory holding neg/ or pos/;
 * else PATH/split (an aclImdb root: split is "train" or "test"). IMDB labels are 0 and 1, so
 * num_labels must be at least 2 there. */
KilnBertStatus kiln_bert_data_load(const char *path, const char *split, int num_labels,
                                   size_t max_samples, KilnBertDataset *out);
/* Releases the samples; the dataset is left empty. */
void kiln_bert_data_free(KilnBertDataset *ds);

#endif /* KILN_BERT_DATA_H */
