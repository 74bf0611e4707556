/* bert_params.h — the parameters of BertForSequenceClassification under their Hugging Face
 * names, in one flat f32 buffer: the layout a config implies (names, shapes, offsets, which get
 * weight decay), loading it from a safetensors file (converted to f32, shapes checked, aliases
 * of older checkpoints accepted, what is missing reported for initialization), a seeded random
 * initialization, and saving it as F32 safetensors. */
#ifndef KILN_BERT_PARAMS_H
#define KILN_BERT_PARAMS_H

#include "bert_config.h"
#include "bert_st.h"
#include "bert_status.h"

#include <stddef.h>
#include <stdint.h>

/* Offsets of parameters in the flat buffer are multiples of this many floats (64 bytes). */
#define KILN_BERT_PARAM_ALIGN 16

typedef enum KilnBertInit {
  KILN_BERT_INIT_NORMAL, /* weights of Linear and Embedding: normal(0, initializer_range) */
  KILN_BERT_INIT_ZERO,   /* biases */
  KILN_BERT_INIT_ONE,    /* LayerNorm weights */
} KilnBertInit;

typedef struct KilnBertParam {
  char name[128];   /* "bert.encoder.layer.3.attention.self.query.weight" */
  int ndim;         /* 1 or 2 */
  int64_t shape[2]; /* [out, in] for Linear weights, as the reference stores them */
  size_t numel;
  size_t offset; /* in floats, from the start of the flat buffer */
  int decay;     /* AdamW weight decay applies: not for biases and LayerNorm parameters */
  KilnBertInit init;
  size_t ordinal; /* its index in the reference's order: the initializer's stream, so that where
                     the layout keeps a tensor does not change its initial values */
} KilnBertParam;

typedef struct KilnBertParams {
  KilnBertParam *p;
  size_t n;
  size_t total; /* floats in the flat buffer, padding included */
} KilnBertParams;

/* The parameters cfg implies, in the reference's order (embeddings, layers, pooler,
 * classifier), except that each layer's query, key and value weights come together, then their
 * three biases: the flat buffer holds them as one [3 hidden, hidden] matrix and one [3 hidden]
 * vector, which the model multiplies by as one (the fused QKV projection). In the flat buffer
 * every decayed parameter comes first (in this order), then the rest, so that AdamW's decay
 * flag holds over two ranges (offsets do not grow along the list). On success *out owns its
 * array (kiln_bert_params_free). */
KilnBertStatus kiln_bert_params_layout(const KilnBertConfig *cfg, KilnBertParams *out);
void kiln_bert_params_free(KilnBertParams *params);
/* The parameter called name, or NULL. */
const KilnBertParam *kiln_bert_params_find(const KilnBertParams *params, const char *name);

/* Fills flat (params->total floats) from st. A parameter is looked up under its name, then
 * without the "bert." prefix (a bare BertModel checkpoint), with LayerNorm weight/bias also as
 * gamma/beta (older checkpoints). Tensors of other names are ignored. loaded[i] (params->n
 * flags) tells which were found; missing ones are left untouched for the caller to initialize
 * (a pretrained checkpoint has no classifier). FORMAT naming the tensor for a wrong shape or
 * dtype. */
KilnBertStatus kiln_bert_params_load(const KilnBertParams *params, const KilnBertSt *st,
                                     float *flat, unsigned char *loaded);
/* Whether a parameter a checkpoint lacks may be initialized instead of refusing the checkpoint:
 * the heads a pretrained encoder comes without (classifier.*: every pretrained checkpoint;
 * bert.pooler.*: a masked-LM one). Any other missing parameter is an error. */
int kiln_bert_params_initializable(const KilnBertParam *p);
/* Calls note(user, name) (when note is not NULL) for every tensor of st that no parameter reads
 * under its name or an alias (a masked-LM head's cls.predictions.*, position_ids), in the file's
 * order, and returns how many there are. Out of host memory, every tensor counts as unused. */
size_t kiln_bert_params_unused(const KilnBertParams *params, const KilnBertSt *st,
                               void (*note)(void *user, const char *name), void *user);
/* Initializes the parameters whose `only` flag is 0 (all of them when only is NULL) as the
 * reference does (normal(0, initializer_range) weights with the [PAD] row of the word
 * embeddings zero, zero biases, LayerNorm weights 1), with kiln-bert's own seeded generator. */
void kiln_bert_params_init(const KilnBertParams *params, const KilnBertConfig *cfg, uint64_t seed,
                           const unsigned char *only, float *flat);
/* Writes every parameter as F32 safetensors under its name, atomically. */
KilnBertStatus kiln_bert_params_save(const KilnBertParams *params, const float *flat,
                                     const char *path);

#endif /* KILN_BERT_PARAMS_H */
