/* bert_batch.h — from a data set to what each training or evaluation step feeds the model
 * (kiln-bert contract, sections 2 and 3.7): every sample tokenized once and truncated to the
 * row's room; the steps of a run (consecutive slices of the order, an epoch of ceil(N/B)
 * steps with a partial last batch, --steps wrapping into further epochs); the order of each
 * epoch (the data order, or a shuffle from kiln-bert's own seeded RNG); and the batch rows:
 * [CLS] ids [SEP] [PAD]..., attention mask 1 on [CLS]..[SEP], labels. Token types are all 0 and
 * positions 0..S-1, so they are not stored. */
#ifndef KILN_BERT_BATCH_H
#define KILN_BERT_BATCH_H

#include "bert_data.h"
#include "bert_status.h"
#include "bert_tok.h"

#include <stddef.h>
#include <stdint.h>

/* Every sample's WordPiece ids, at most seq_len - 2 of them (the rest could never be fed). */
typedef struct KilnBertEncoded {
  int32_t *ids;  /* all samples' ids, one after another */
  size_t *start; /* sample i is ids[start[i] .. start[i+1]) */
  int *labels;
  size_t n;
} KilnBertEncoded;

/* Tokenizes every sample of ds with tok. On success *out owns its arrays
 * (kiln_bert_encoded_free). INVALID_ARGUMENT for seq_len < 2; OUT_OF_MEMORY. */
KilnBertStatus kiln_bert_encode_dataset(KilnBertTokenizer *tok, const KilnBertDataset *ds,
                                        size_t seq_len, KilnBertEncoded *out);
void kiln_bert_encoded_free(KilnBertEncoded *enc);

/* The run's length: steps if > 0, else epochs x ceil(n / batch). */
size_t kiln_bert_total_steps(size_t n, size_t batch, size_t epochs, size_t steps);
/* Which samples step k (0-based) takes: positions first .. first+count-1 of the order of epoch
 * *epoch (0-based). Every epoch has ceil(n / batch) steps; its last batch holds what is left. */
void kiln_bert_step_slice(size_t n, size_t batch, size_t k, size_t *epoch, size_t *first,
                          size_t *count);
/* Writes the order of an epoch into order[0..n): 0..n-1 without shuffle; else a Fisher-Yates
 * shuffle driven by (seed, epoch), the same on every machine. */
void kiln_bert_epoch_order(size_t n, int shuffle, uint64_t seed, size_t epoch, size_t *order);
/* Sorts samples[0..n) (indices of enc) by token count, longest first, equal ones in the
 * order given. OUT_OF_MEMORY. */
KilnBertStatus kiln_bert_sort_by_length(const KilnBertEncoded *enc, size_t *samples, size_t n);
/* Samples to a length group (--group-by-length): KILN_BERT_GROUP_BATCHES batches. */
#define KILN_BERT_GROUP_BATCHES 50
/* Groups an epoch's (shuffled) order by length, so that dynamic padding pads each batch to
 * about its own samples' length: the order is cut into runs of KILN_BERT_GROUP_BATCHES x batch
 * positions (the last may be shorter); each run is sorted by the samples' token counts in enc,
 * longest first (equal ones keep their order), and its full batches are put in an order drawn
 * from (seed, epoch, run), so that any stretch of steps sees long and short batches alike; an
 * epoch's partial last batch stays last. The batches are those of kiln_bert_step_slice, and
 * the result is a permutation of the order given. OUT_OF_MEMORY. */
KilnBertStatus kiln_bert_group_by_length(const KilnBertEncoded *enc, size_t batch, uint64_t seed,
                                         size_t epoch, size_t *order);

typedef enum KilnBertPadding {
  KILN_BERT_PAD_FIXED,   /* every row has seq_len columns */
  KILN_BERT_PAD_DYNAMIC, /* the longest row of the batch, rounded up to a length bucket */
} KilnBertPadding;

/* The dynamic-padding length for a batch whose longest row ([CLS] and [SEP] included) is
 * `longest`: 32, 64, or the next multiple of 128, never more than seq_len. Few distinct
 * lengths keep the number of kernel shapes small; losses and logits do not depend on it. */
size_t kiln_bert_pad_bucket(size_t longest, size_t seq_len);

/* One batch: rows x cols ids and mask, row-major, and a label per row. Zero-initialize it;
 * its arrays grow as needed and are released by kiln_bert_batch_free. */
typedef struct KilnBertBatch {
  size_t rows, cols;
  int32_t *ids, *mask, *labels;
  size_t cap_cells, cap_rows;
} KilnBertBatch;

/* Fills b with the samples order[0..count) of enc: rows of seq_len columns (fixed) or of the
 * batch's bucket (dynamic). INVALID_ARGUMENT for seq_len < 2; OUT_OF_MEMORY. */
KilnBertStatus kiln_bert_batch_fill(const KilnBertTokenizer *tok, const KilnBertEncoded *enc,
                                    const size_t *order, size_t count, size_t seq_len,
                                    KilnBertPadding padding, KilnBertBatch *b);
void kiln_bert_batch_free(KilnBertBatch *b);
/* The number of real tokens ([CLS]..[SEP], mask 1) of each of b's rows into lens[0..rows): what
 * the model takes as its padding mask. */
void kiln_bert_batch_lens(const KilnBertBatch *b, int32_t *lens);

#endif /* KILN_BERT_BATCH_H */
