/* kiln_bert.c — the `kiln-bert` command: BERT fine-tuning for sequence classification with
 * Kiln kernels (docs/trainer.md describes it and what is left).
 *
 * Subcommands: `tokenize` (done), `train` (fp32, fp16 and bf16 on the cpu, emu and cuda devices,
 * with dropout; runtime/bert's bert_train does the work) and `eval` (fp32 on the cpu device;
 * bert_eval). A build without the kernel libraries documents train and eval and says they are
 * not implemented. Decisions live in runtime/bert; this file only reads options and streams.
 *
 * Exit codes: 0 success; 1 an input file is wrong (vocabulary, model, data); 2 the environment
 * failed (I/O) or the subcommand is not implemented yet; 64 the command line is wrong. */
#include "bert_batch.h"
#include "bert_sched.h"
#include "bert_tok.h"
#include "bert_vocab.h"
#include "kiln_base.h"
#ifdef KILN_BERT_HAVE_TRAIN
#include "bert_eval.h"
#include "bert_train.h"
#endif
#ifdef KILN_BERT_HAVE_TUNE
#include "bert_tune.h"
#endif

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { EXIT_INPUT = 1, EXIT_ENV = 2, EXIT_USAGE = 64 };

/* The devices train and eval run on in this build, as their help lists them. */
#ifdef KILN_BERT_HAVE_EMU
#define BUILT_EMU ", emu"
#else
#define BUILT_EMU ""
#endif
#ifdef KILN_BERT_HAVE_CUDA
#define BUILT_CUDA ", cuda[:N]"
#else
#define BUILT_CUDA ""
#endif
#define BUILT_DEVICES "cpu" BUILT_EMU BUILT_CUDA

static const char *const usage_main =
    "usage: kiln-bert <command> [options]\n"
    "\n"
    "Fine-tunes BERT for sequence classification (Hugging Face BertForSequenceClassification\n"
    "layout, uncased WordPiece) with kernels written in Kiln.\n"
    "\n"
    "commands:\n"
    "  tokenize   text lines on stdin -> token ids on stdout\n"
    "  train      fine-tune a model on a data set (fp32/fp16/bf16 on cpu, emu, cuda)\n"
    "  eval       classify a data set with a trained model: loss, accuracy, logits\n"
    "  tune       tune every kernel call of a training and an eval step into a cache\n"
    "  help [COMMAND]\n"
    "\n"
    "options:\n"
    "  -h, --help   show this help; `kiln-bert COMMAND --help` shows a command's options\n"
    "  --version    print the version\n"
    "\n"
    "exit codes: 0 success, 1 a wrong input file, 2 environment failure or not implemented,\n"
    "64 bad command line.\n";

static const char *const usage_tokenize =
    "usage: kiln-bert tokenize --vocab FILE [--seq-len L]\n"
    "\n"
    "Reads UTF-8 text from stdin, one text per line (lines end at \\n only; a \\r stays in the\n"
    "text, where it is whitespace; a last line without \\n counts), and prints for each line its\n"
    "token ids separated by single spaces. Invalid UTF-8 is replaced and dropped.\n"
    "\n"
    "options:\n"
    "  --vocab FILE   the WordPiece vocabulary (vocab.txt; id = 0-based line number); required\n"
    "  --seq-len L    print exactly the row training feeds with --padding fixed:\n"
    "                 [CLS] ids[:L-2] [SEP], then [PAD] up to L ids (L >= 2). Without it:\n"
    "                 [CLS] ids [SEP], no truncation, no padding.\n"
    "  -h, --help     show this help\n";

static const char *const usage_train =
    "usage: kiln-bert train --data PATH [--model NAME|DIR] [options]\n"
    "\n"
    "Fine-tunes BertForSequenceClassification with AdamW and prints the benchmark metrics.\n"
#ifdef KILN_BERT_HAVE_TRAIN
    "This build: --precision fp32|fp16|bf16, --dropout P in [0, 1), --device " BUILT_DEVICES ".\n"
#else
    "NOT IMPLEMENTED in this build: training needs the kernel libraries, which are generated\n"
    "with the compiler (a build without KILN_RUNTIME_ONLY has them) or prepared elsewhere\n"
    "(-DKILN_BERT_LIBS=DIR, the bundle of bench/gpu/prepare.sh).\n"
#endif
    "\n"
    "data and model:\n"
    "  --data PATH          an aclImdb directory (its train/ split is used), a split directory\n"
    "                       holding neg/ and pos/, or a .tsv / .jsonl file of text and label\n"
    "  --max-samples N      use the first N samples (in the order below, before shuffling)\n"
    "  --model NAME|DIR     tiny (default), mini, base, large (random init), or a directory\n"
    "                       with config.json (+ model.safetensors, + vocab.txt); a classifier or\n"
    "                       pooler it lacks is initialized from --seed, tensors it has beyond\n"
    "                       the model's are ignored (a note on stderr says which)\n"
    "  --vocab FILE         the vocabulary (default: DIR/vocab.txt of --model)\n"
    "  --seq-len L          tokens per sample with [CLS]/[SEP] (<= max_position_embeddings)\n"
    "  --padding fixed|dynamic  pad every batch to L, or to its longest sample rounded up to a\n"
    "                       length bucket\n"
    "  --eval-data PATH     evaluate on PATH at the end (default: the test/ split of an\n"
    "                       aclImdb --data that has one; none otherwise)\n"
    "  --eval-max-samples N evaluate on the first N samples of that (default: --max-samples)\n"
    "  --eval-every N       also evaluate after every N-th step before the last (a record\n"
    "                       {\"eval_step\": k, \"eval_loss\": ...} in --log, a line on a "
    "terminal)\n"
    "\n"
    "training:\n"
    "  --batch B            samples per step; an epoch's last batch is partial\n"
    "  --epochs E           passes over the data\n"
    "  --steps S            optimizer steps (> 0; overrides --epochs, wrapping over epochs)\n"
    "  --stop-after N       end after step N of the run (the schedule still spans the whole\n"
    "                       run); with --save, a later --resume continues from there\n"
    "  --lr X               peak learning rate\n"
    "  --schedule linear|constant   decay after warmup, or none\n"
    "  --warmup W           warmup steps (LR j/W for the first W steps)\n"
    "  --weight-decay X     AdamW decay (not on biases and LayerNorm parameters)\n"
    "  --adam-beta1 X, --adam-beta2 X, --adam-eps X\n"
    "  --clip X             clip the global gradient norm to X (0: no clipping)\n"
    "  --dropout X          hidden, attention and classifier dropout (default: the config's)\n"
    "  --precision fp32|fp16|bf16   fp16: fp32 master weights and dynamic loss scaling\n"
    "  --tf32               with fp32: the matrix products (gemm) round their operands to\n"
    "                       TF32 (10-bit mantissas) and run on tensor cores on a GPU, like\n"
    "                       torch.backends.cuda.matmul.allow_tf32; attention stays IEEE f32\n"
    "  --no-shuffle         keep the data order (neg then pos, file names in byte order)\n"
    "  --group-by-length    with --padding dynamic: batches of samples of about one length\n"
    "                       (each run of 50 batches of the shuffled order sorted by length,\n"
    "                       its batches in a drawn order), so less of a step is padding\n"
    "  --seed N             shuffling and dropout\n"
    "  --device cpu|emu|cuda[:N]\n"
    "  --replicas R         data-parallel: R copies of the model, each running 1/R of every\n"
    "                       batch (--batch stays the whole batch, so the run is the same run),\n"
    "                       their gradients averaged before each optimizer step; on cuda[:N]\n"
    "                       one GPU each (N, N+1, ...), on cpu and emu all in the host's memory\n"
    "  --accumulate A       gradient accumulation: each replica runs its part of every batch\n"
    "                       as A micro-batches in turn, their gradients summed before the\n"
    "                       step (the same step in 1/A of the activation memory, plus one\n"
    "                       f32 copy of the gradients); tune with --batch B / (R x A)\n"
    "  --max-device-bytes N the device memory the run may plan (512M, 2G, ...); a batch that\n"
    "                       needs more is refused before anything is allocated (default:\n"
    "                       KILN_DEVICE_MEMORY, else the GPU's free memory on cuda, the\n"
    "                       host's memory on cpu and emu)\n"
    "  --graphs, --no-graphs  replay each batch shape's forward and backward as one captured\n"
    "                       graph (from its second step), or launch every kernel; default: on\n"
    "                       cuda, off on cpu (no gain there) and emu (cannot capture), off\n"
    "                       with --profile\n"
    "\n"
    "output:\n"
    "  --log FILE           JSON lines: {\"step\": k, \"loss\": x, \"lr\": .., \"grad_norm\": ..,\n"
    "                       \"scale\": .., \"skipped\": ..} per step, then a summary record\n"
    "                       (first_iter_time, avg_iter_time, iter_per_sec, samples_per_sec,\n"
    "                       tokens_per_sec, total_time, total_time_hr, peak_device_bytes,\n"
    "                       eval_loss, accuracy)\n"
    "  --profile            time every kernel launch of the steps after the first and print,\n"
    "                       after the summary, a table per distinct call (kernel, pins, shape,\n"
    "                       launches, ms per step, us per launch, share) and the summed kernel\n"
    "                       time against the step's; with --log also {\"profile\": true, ...}\n"
    "                       records\n"
    "  --save DIR           write config.json + model.safetensors (F32, HF names), the\n"
    "                       optimizer state and the data position, each file atomically\n"
    "  --save-every N       also write the --save checkpoint every N steps\n"
    "  --save-best DIR      after each evaluation (--eval-every, the end of the run) whose\n"
    "                       eval_loss is the lowest so far, write the checkpoint to DIR (as\n"
    "                       --save does), with that evaluation in its trainer_state.json; with\n"
    "                       --resume, the evaluation DIR records is the one to beat\n"
    "  --resume DIR         continue the run saved in DIR (its model, moments, step, seed);\n"
    "                       --steps is the whole run's total\n";

static const char *const usage_eval =
    "usage: kiln-bert eval --model DIR --data PATH [options]\n"
    "\n"
    "Classifies every sample in data order (never shuffled), forward only, without dropout,\n"
    "and prints eval_loss (mean cross-entropy over all samples), accuracy and the benchmark\n"
    "metrics as a table.\n"
#ifdef KILN_BERT_HAVE_TRAIN
    "This build: --precision fp32|fp16|bf16 (--tf32 with fp32), --device " BUILT_DEVICES ".\n"
#else
    "NOT IMPLEMENTED in this build: evaluation needs the kernel libraries, which are\n"
    "generated with the compiler (a build without KILN_RUNTIME_ONLY has them) or prepared\n"
    "elsewhere (-DKILN_BERT_LIBS=DIR, the bundle of bench/gpu/prepare.sh).\n"
#endif
    "\n"
    "options:\n"
    "  --model DIR          config.json + model.safetensors (F32, F16 or BF16) holding every\n"
    "                       parameter (what train --save writes)\n"
    "  --data PATH          an aclImdb directory (its test/ split), a split directory or a\n"
    "                       .tsv / .jsonl file\n"
    "  --max-samples N      the first N samples\n"
    "  --vocab FILE         the vocabulary (default: DIR/vocab.txt)\n"
    "  --seq-len L, --padding fixed|dynamic, --batch B, --precision fp32|fp16|bf16, --tf32,\n"
    "  --device cpu|emu|cuda[:N], --max-device-bytes N   as for train\n"
    "  --dump-logits FILE   one line per sample: its logits, space-separated, 9 significant\n"
    "                       digits (written atomically)\n"
    "  --log FILE           one JSON line: the summary record (written atomically)\n"
    "  --json               print the summary record on stdout instead of the table\n"
    "  --profile            as for train, each batch after the first a step: the table after\n"
    "                       the summary's, the records after the summary record (--json, --log)\n";

static const char *const usage_tune =
    "usage: kiln-bert tune --cache FILE [--model NAME|DIR] [options]\n"
    "       kiln-bert tune --emit-bundle DIR [--arch sm_80|sm_90] [--model NAME|DIR] [options]\n"
    "\n"
    "Lists every kernel call of one training step and one eval step at the model's exact\n"
    "shapes (every length bucket under --padding dynamic), read off the trainer's own\n"
    "launches, counts equal calls once, tunes each with the autotuner (the code of `kiln tune`)\n"
    "into the cache and prints a table: kernel, pins, shape, launches per step, the winner,\n"
    "its time and its share of the step's summed kernel time, then the total tuning time.\n"
#ifndef KILN_BERT_HAVE_TUNE
    "NOT IMPLEMENTED in this build: tuning needs the compiler (a build without\n"
    "KILN_RUNTIME_ONLY has it).\n"
#endif
    "\n"
    "options:\n"
    "  --cache FILE         the kiln tune cache to extend (required); `kiln lib --cache FILE`\n"
    "                       (or -DKILN_TUNE_CACHE=FILE) builds the libraries from it\n"
    "  --model NAME|DIR     tiny (default), mini, base, large, or a directory with config.json\n"
    "  --precision fp32|fp16|bf16\n"
    "  --tf32               with fp32: the calls of the TF32 gemm libraries (pins TF32=1)\n"
    "  --batch B            samples per step (default 8)\n"
    "  --seq-len L          tokens per sample (default 128)\n"
    "  --padding fixed|dynamic  dynamic: every length bucket up to L (32, 64, multiples of 128)\n"
    "  --mode default|max-autotune  the tuner's presets, or its whole space\n"
    "  --device cpu|emu|cuda[:N]    where to time (cuda: exit 2 when no GPU can be used)\n"
    "  --budget S           tune no new kernel call after S seconds (the rest keep their\n"
    "                       libraries' defaults; the table says which)\n"
    "  --list               list the calls, tune nothing\n"
    "  --emit-bundle DIR    time nothing: compile every call's candidates into DIR/cNNN for\n"
    "                       kiln-tune-runner on a machine without the compiler, listed in\n"
    "                       DIR/calls.txt (--mode default: the default mode's only); no --cache\n"
    "  --arch sm_80|sm_90   the GPU a cuda bundle is compiled for (default sm_90)\n"
    "  --json               the report as JSON\n";

static int usage_error(const char *usage, const char *fmt, const char *arg) {
  fprintf(stderr, "kiln-bert: error: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n\n%s", usage);
  return EXIT_USAGE;
}

static int parse_size(const char *s, size_t lo, size_t *out) {
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s || *end || s[0] == '-' || v < lo || v > (1ull << 31)) return -1;
  *out = (size_t)v;
  return 0;
}

/* One option of a subcommand: its name, how its value is read and where it goes. Each
 * subcommand lists its options in a table, one line an option, and parse_options reads the
 * command line against it, so that every subcommand takes -h/--help, reports an unknown
 * argument, a missing value and a bad value the same way. */
typedef struct Opt Opt;
struct Opt {
  const char *name;
  int (*read)(const Opt *opt, const char *v); /* 0 when v is good; NULL: a flag, no value */
  union {
    int *flag;
    const char **text;
    size_t *size;
    uint64_t *seed;
    double *real;
    KilnBertPadding *padding;
    KilnBertSchedule *schedule;
  } to;
  size_t arg; /* a size or seed: the smallest value taken; a flag: the value it stores */
};

static int read_text(const Opt *opt, const char *v) {
  *opt->to.text = v;
  return 0;
}

static int read_size(const Opt *opt, const char *v) {
  return parse_size(v, opt->arg, opt->to.size);
}

/* The table lines: OPT_FLAG stores VALUE, OPT_SIZE takes an integer from LO up to 2^31. */
#define OPT_FLAG(name, p, value) {name, NULL, {.flag = (p)}, (value)}
#define OPT_TEXT(name, p)        {name, read_text, {.text = (p)}, 0}
#define OPT_SIZE(name, p, lo)    {name, read_size, {.size = (p)}, (lo)}
#define OPT_COUNT(table)         (sizeof(table) / sizeof *(table))

static const Opt *find_option(const Opt *opts, size_t n, const char *name) {
  for (size_t k = 0; k < n; k++)
    if (!strcmp(opts[k].name, name)) return &opts[k];
  return NULL;
}

/* Reads argv against a subcommand's n options. Returns -1 when every argument was taken, else
 * the exit code to end with: 0 after printing the help, EXIT_USAGE after an error message. */
static int parse_options(const Opt *opts, size_t n, const char *usage, int argc, char **argv) {
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(usage, stdout);
      return 0;
    }
    const Opt *opt = find_option(opts, n, a);
    if (!opt) return usage_error(usage, "unknown argument '%s'", a);
    if (!opt->read) {
      *opt->to.flag = (int)opt->arg;
      continue;
    }
    if (i + 1 >= argc) return usage_error(usage, "%s needs a value", a);
    const char *v = argv[++i];
    if (opt->read(opt, v)) {
      fprintf(stderr, "kiln-bert: error: %s: bad value '%s'\n\n%s", a, v, usage);
      return EXIT_USAGE;
    }
  }
  return -1;
}

static int fail_status(KilnBertStatus st) {
  fprintf(stderr, "kiln-bert: error: %s\n", kiln_bert_last_error());
  return st == KILN_BERT_ERROR_IO || st == KILN_BERT_ERROR_OUT_OF_MEMORY ? EXIT_ENV : EXIT_INPUT;
}

/* Prints one row of ids as decimal numbers separated by single spaces. */
static void print_row(const int32_t *row, size_t n, FILE *out) {
  char buf[16];
  for (size_t i = 0; i < n; i++) {
    int len = snprintf(buf, sizeof buf, i ? " %d" : "%d", (int)row[i]);
    fwrite(buf, 1, (size_t)len, out);
  }
  fputc('\n', out);
}

static int cmd_tokenize(int argc, char **argv) {
  const char *vocab_path = NULL;
  size_t seq_len = 0;
  const Opt opts[] = {
      OPT_TEXT("--vocab", &vocab_path),
      OPT_SIZE("--seq-len", &seq_len, 2),
  };
  int done = parse_options(opts, OPT_COUNT(opts), usage_tokenize, argc, argv);
  if (done >= 0) return done;
  if (!vocab_path) return usage_error(usage_tokenize, "%s", "--vocab FILE is required");

  KilnBertVocab *vocab = NULL;
  KilnBertTokenizer *tok = NULL;
  KilnBertStatus st = kiln_bert_vocab_load(vocab_path, &vocab);
  if (st == KILN_BERT_OK) st = kiln_bert_tok_create(vocab, &tok);
  if (st != KILN_BERT_OK) {
    kiln_bert_vocab_destroy(vocab);
    return fail_status(st);
  }
  KilnBertIds ids = {0};
  int32_t *row = NULL;
  size_t row_cap = 0;
  char *line = NULL;
  size_t line_cap = 0;
  ssize_t got;
  int rc = 0;
  while ((got = getdelim(&line, &line_cap, '\n', stdin)) > 0) {
    size_t len = (size_t)got;
    if (line[len - 1] == '\n') len--;
    ids.n = 0;
    if ((st = kiln_bert_tok_encode(tok, line, len, &ids)) != KILN_BERT_OK) {
      rc = fail_status(st);
      break;
    }
    size_t need = seq_len ? seq_len : ids.n + 2;
    if (need > row_cap) {
      free(row);
      row_cap = need;
      if (!(row = malloc(row_cap * sizeof *row))) {
        fprintf(stderr, "kiln-bert: error: out of memory\n");
        rc = EXIT_ENV;
        break;
      }
    }
    size_t real = kiln_bert_tok_row(tok, ids.v, ids.n, seq_len, row);
    print_row(row, seq_len ? seq_len : real, stdout);
  }
  if (!rc && ferror(stdin)) {
    fprintf(stderr, "kiln-bert: error: reading stdin: %s\n", strerror(errno));
    rc = EXIT_ENV;
  }
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "kiln-bert: error: writing stdout: %s\n", strerror(errno));
    if (!rc) rc = EXIT_ENV;
  }
  free(line);
  free(row);
  kiln_bert_ids_free(&ids);
  kiln_bert_tok_destroy(tok);
  kiln_bert_vocab_destroy(vocab);
  return rc;
}

#if !defined(KILN_BERT_HAVE_TRAIN) || !defined(KILN_BERT_HAVE_TUNE)
/* train, eval and tune in a build without the kernel libraries: the help is real, the work is not
 * there. */
static int cmd_pending(const char *name, const char *usage, int argc, char **argv) {
  for (int i = 0; i < argc; i++)
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      fputs(usage, stdout);
      return 0;
    }
  fprintf(stderr,
          "kiln-bert: error: '%s' is not implemented yet (see kiln-bert %s --help for "
          "the options it will take)\n",
          name, name);
  return EXIT_ENV;
}
#endif

#ifdef KILN_BERT_HAVE_TRAIN
/* The exit code of a failed train or eval run: a refused option is a bad command line. */
static int run_failure(KilnBertStatus st) {
  if (st == KILN_BERT_ERROR_INVALID_ARGUMENT || st == KILN_BERT_ERROR_DEVICE) {
    fprintf(stderr, "kiln-bert: error: %s\n", kiln_bert_last_error());
    return st == KILN_BERT_ERROR_DEVICE ? EXIT_ENV : EXIT_USAGE;
  }
  return fail_status(st);
}

/* A finite number: NaN compares false with every bound and inf passes `>= 0`, so either would
 * slip past the range checks (an --lr of inf trains to NaN weights, a --budget of inf never
 * ends). */
static int parse_double(const char *s, double *out) {
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !isfinite(v)) return -1;
  *out = v;
  return 0;
}

static int read_seed(const Opt *opt, const char *v) {
  size_t n = 0;
  if (parse_size(v, opt->arg, &n)) return -1;
  *opt->to.seed = n;
  return 0;
}

/* A finite number >= 0. */
static int read_real(const Opt *opt, const char *v) {
  double d = 0;
  if (parse_double(v, &d) || d < 0) return -1;
  *opt->to.real = d;
  return 0;
}

/* A byte count as kiln_parse_bytes reads it (512M, 2G, ...). */
static int read_bytes(const Opt *opt, const char *v) { return kiln_parse_bytes(v, opt->to.size); }

static int read_padding(const Opt *opt, const char *v) {
  if (!strcmp(v, "fixed"))
    *opt->to.padding = KILN_BERT_PAD_FIXED;
  else if (!strcmp(v, "dynamic"))
    *opt->to.padding = KILN_BERT_PAD_DYNAMIC;
  else
    return -1;
  return 0;
}

static int read_schedule(const Opt *opt, const char *v) {
  if (!strcmp(v, "linear"))
    *opt->to.schedule = KILN_BERT_SCHEDULE_LINEAR;
  else if (!strcmp(v, "constant"))
    *opt->to.schedule = KILN_BERT_SCHEDULE_CONSTANT;
  else
    return -1;
  return 0;
}

#define OPT_SEED(name, p)     {name, read_seed, {.seed = (p)}, 0}
#define OPT_REAL(name, p)     {name, read_real, {.real = (p)}, 0}
#define OPT_BYTES(name, p)    {name, read_bytes, {.size = (p)}, 0}
#define OPT_PADDING(name, p)  {name, read_padding, {.padding = (p)}, 0}
#define OPT_SCHEDULE(name, p) {name, read_schedule, {.schedule = (p)}, 0}

/* The options train and eval share (the data, the model and where it runs), in their option
 * structs under the same names. */
#define RUN_OPTIONS(o)                                                                             \
  OPT_TEXT("--data", &(o).data), OPT_TEXT("--model", &(o).model), OPT_TEXT("--vocab", &(o).vocab), \
      OPT_TEXT("--device", &(o).device), OPT_TEXT("--precision", &(o).precision),                  \
      OPT_FLAG("--tf32", &(o).tf32, 1), OPT_TEXT("--log", &(o).log),                               \
      OPT_BYTES("--max-device-bytes", &(o).max_device_bytes),                                      \
      OPT_PADDING("--padding", &(o).padding), OPT_SIZE("--max-samples", &(o).max_samples, 1),      \
      OPT_SIZE("--seq-len", &(o).seq_len, 2), OPT_SIZE("--batch", &(o).batch, 1)

static int cmd_train(int argc, char **argv) {
  KilnBertTrainOptions o;
  kiln_bert_train_defaults(&o);
  const Opt opts[] = {
      RUN_OPTIONS(o),
      OPT_TEXT("--save", &o.save),
      OPT_TEXT("--save-best", &o.save_best),
      OPT_TEXT("--resume", &o.resume),
      OPT_TEXT("--eval-data", &o.eval_data),
      OPT_SCHEDULE("--schedule", &o.schedule),
      OPT_SIZE("--epochs", &o.epochs, 1),
      OPT_SIZE("--steps", &o.steps, 1),
      OPT_SIZE("--warmup", &o.warmup, 0),
      OPT_SIZE("--stop-after", &o.stop_after, 1),
      OPT_SIZE("--replicas", &o.replicas, 1),
      OPT_SIZE("--accumulate", &o.accumulate, 1),
      OPT_SIZE("--save-every", &o.save_every, 1),
      OPT_SIZE("--eval-every", &o.eval_every, 1),
      OPT_SIZE("--eval-max-samples", &o.eval_max_samples, 1),
      OPT_SEED("--seed", &o.seed),
      OPT_REAL("--lr", &o.lr),
      OPT_REAL("--weight-decay", &o.weight_decay),
      OPT_REAL("--adam-beta1", &o.beta1),
      OPT_REAL("--adam-beta2", &o.beta2),
      OPT_REAL("--adam-eps", &o.eps),
      OPT_REAL("--clip", &o.clip),
      OPT_REAL("--dropout", &o.dropout),
      OPT_FLAG("--no-shuffle", &o.shuffle, 0),
      OPT_FLAG("--group-by-length", &o.group_by_length, 1),
      OPT_FLAG("--profile", &o.profile, 1),
      OPT_FLAG("--graphs", &o.graphs, 1),
      OPT_FLAG("--no-graphs", &o.graphs, 0),
  };
  int done = parse_options(opts, OPT_COUNT(opts), usage_train, argc, argv);
  if (done >= 0) return done;
  if (!o.data) return usage_error(usage_train, "%s", "--data PATH is required");
  if (o.save_every && !o.save)
    return usage_error(usage_train, "%s", "--save-every N needs --save DIR");
  o.progress = isatty(STDERR_FILENO) ? stderr : NULL;
  o.table = stdout;
  o.notes = stderr;
  KilnBertStatus st = kiln_bert_train(&o);
  return st == KILN_BERT_OK ? 0 : run_failure(st);
}

static int cmd_eval(int argc, char **argv) {
  KilnBertEvalOptions o;
  kiln_bert_eval_defaults(&o);
  int json = 0;
  const Opt opts[] = {
      RUN_OPTIONS(o),
      OPT_TEXT("--dump-logits", &o.dump_logits),
      OPT_FLAG("--json", &json, 1),
      OPT_FLAG("--profile", &o.profile, 1),
  };
  int done = parse_options(opts, OPT_COUNT(opts), usage_eval, argc, argv);
  if (done >= 0) return done;
  if (!o.model) return usage_error(usage_eval, "%s", "--model DIR is required");
  if (!o.data) return usage_error(usage_eval, "%s", "--data PATH is required");
  if (json)
    o.json = stdout;
  else
    o.table = stdout;
  KilnBertStatus st = kiln_bert_eval(&o, NULL);
  return st == KILN_BERT_OK ? 0 : run_failure(st);
}
#endif

#ifdef KILN_BERT_HAVE_TUNE
static int cmd_tune(int argc, char **argv) {
  KilnBertTuneOptions o;
  kiln_bert_tune_defaults(&o);
  const Opt opts[] = {
      OPT_TEXT("--cache", &o.cache),         OPT_TEXT("--model", &o.model),
      OPT_TEXT("--precision", &o.precision), OPT_TEXT("--device", &o.device),
      OPT_TEXT("--mode", &o.mode),           OPT_TEXT("--emit-bundle", &o.bundle_dir),
      OPT_TEXT("--arch", &o.arch),           OPT_PADDING("--padding", &o.padding),
      OPT_SIZE("--batch", &o.batch, 1),      OPT_SIZE("--seq-len", &o.seq_len, 2),
      OPT_REAL("--budget", &o.budget),       OPT_FLAG("--json", &o.json, 1),
      OPT_FLAG("--list", &o.list_only, 1),   OPT_FLAG("--tf32", &o.tf32, 1),
  };
  int done = parse_options(opts, OPT_COUNT(opts), usage_tune, argc, argv);
  if (done >= 0) return done;
  if (!o.cache && !o.list_only && !o.bundle_dir)
    return usage_error(usage_tune, "%s", "--cache FILE is required (or --emit-bundle DIR)");
  if (o.bundle_dir && (o.cache || o.budget >= 0))
    return usage_error(usage_tune, "%s", "--emit-bundle times nothing: no --cache or --budget");
  if (o.arch && !o.bundle_dir) return usage_error(usage_tune, "%s", "--arch is for --emit-bundle");
  if (!o.cache) o.cache = "";
  KilnBertStatus st = kiln_bert_tune(&o);
  return st == KILN_BERT_OK ? 0 : run_failure(st);
}
#endif

static int dispatch(const char *cmd, int argc, char **argv) {
  if (!strcmp(cmd, "tokenize")) return cmd_tokenize(argc, argv);
#ifdef KILN_BERT_HAVE_TRAIN
  if (!strcmp(cmd, "train")) return cmd_train(argc, argv);
#else
  if (!strcmp(cmd, "train")) return cmd_pending("train", usage_train, argc, argv);
#endif
#ifdef KILN_BERT_HAVE_TRAIN
  if (!strcmp(cmd, "eval")) return cmd_eval(argc, argv);
#else
  if (!strcmp(cmd, "eval")) return cmd_pending("eval", usage_eval, argc, argv);
#endif
#ifdef KILN_BERT_HAVE_TUNE
  if (!strcmp(cmd, "tune")) return cmd_tune(argc, argv);
#else
  if (!strcmp(cmd, "tune")) return cmd_pending("tune", usage_tune, argc, argv);
#endif
  return -1;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(usage_main, stderr);
    return EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
    fputs(usage_main, stdout);
    return 0;
  }
  if (!strcmp(cmd, "--version")) {
    printf("kiln-bert %s\n", KILN_VERSION_STRING);
    return 0;
  }
  if (!strcmp(cmd, "help")) {
    if (argc < 3) {
      fputs(usage_main, stdout);
      return 0;
    }
    char help[] = "--help";
    char *args[] = {help};
    int rc = dispatch(argv[2], 1, args);
    return rc >= 0 ? rc : usage_error(usage_main, "unknown command '%s'", argv[2]);
  }
  int rc = dispatch(cmd, argc - 2, argv + 2);
  return rc >= 0 ? rc : usage_error(usage_main, "unknown command '%s'", cmd);
}
