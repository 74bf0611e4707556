/* alloc_cache.c — the caching allocator every device's kiln_rt_malloc/free goes through.
 *
 * Device allocations are slow (cuMemAlloc synchronizes the GPU) and a trainer allocates the same
 * sizes every step, so freed blocks are kept and handed out again. Requests are rounded up to a
 * size class: 512-byte multiples up to 1 MiB, 2 MiB multiples above, so that near sizes share
 * blocks while waste stays bounded (at most 511 B, or under 2 MiB on blocks over 1 MiB). Each
 * class has a free list; blocks are reused only within their class. Live blocks sit in a hash table
 * keyed by address, so that free() finds the class. One mutex guards it all.
 */
#include "device_impl.h"

#include <stdlib.h>
#include <string.h>

#define SMALL_LIMIT       ((size_t)1 << 20)
#define SMALL_STEP        ((size_t)512)
#define LARGE_STEP        ((size_t)2 << 20)
#define NUM_SMALL_CLASSES (SMALL_LIMIT / SMALL_STEP)

typedef struct Block {
  void *ptr;
  size_t size;       /* class size */
  size_t asked;      /* bytes the kiln_rt_malloc asked for (kiln_rt_mem_find's bound) */
  size_t *part_ends; /* kiln_rt_mem_set_parts: ascending ends of the tensors it holds, owned */
  size_t nparts;
  struct Block *next;
} Block;

/* Free blocks of one large class; large classes are few, so a list of bins is enough. */
typedef struct LargeBin {
  size_t size;
  Block *free;
  struct LargeBin *next;
} LargeBin;

struct KilnRtAllocCache {
  pthread_mutex_t lock;
  KilnRtDevice *dev;
  KilnRtRawAlloc raw_alloc;
  KilnRtRawFree raw_free;
  Block *small_free[NUM_SMALL_CLASSES]; /* index = size / 512 - 1 */
  LargeBin *large;
  Block **live; /* hash buckets of blocks in use */
  size_t num_buckets, num_live;
  KilnRtMemStats stats;
};

size_t kiln_rt_cache_class_size(size_t bytes) {
  if (bytes == 0) return 0;
  size_t step = bytes <= SMALL_LIMIT ? SMALL_STEP : LARGE_STEP;
  if (bytes > SIZE_MAX - step) return 0; /* no class can hold it */
  return (bytes + step - 1) / step * step;
}

KilnRtAllocCache *kiln_rt_cache_create(KilnRtDevice *dev, KilnRtRawAlloc raw_alloc,
                                       KilnRtRawFree raw_free) {
  KilnRtAllocCache *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->num_buckets = 64;
  c->live = calloc(c->num_buckets, sizeof *c->live);
  if (!c->live) {
    free(c);
    return NULL;
  }
  pthread_mutex_init(&c->lock, NULL);
  c->dev = dev;
  c->raw_alloc = raw_alloc;
  c->raw_free = raw_free;
  return c;
}

static size_t hash_ptr(const void *p, size_t num_buckets) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33; /* blocks are 512-aligned at least: mix the high bits down */
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (size_t)(x & (num_buckets - 1));
}

static void live_insert(KilnRtAllocCache *c, Block *b) {
  if (c->num_live >= c->num_buckets * 2) {
    /* Grow; if the host is out of memory keep the old table, only chains get longer. */
    size_t n = c->num_buckets * 2;
    Block **t = calloc(n, sizeof *t);
    if (t) {
      for (size_t i = 0; i < c->num_buckets; i++) {
        for (Block *x = c->live[i], *nx; x; x = nx) {
          nx = x->next;
          size_t h = hash_ptr(x->ptr, n);
          x->next = t[h];
          t[h] = x;
        }
      }
      free(c->live);
      c->live = t;
      c->num_buckets = n;
    }
  }
  size_t h = hash_ptr(b->ptr, c->num_buckets);
  b->next = c->live[h];
  c->live[h] = b;
  c->num_live++;
}

static Block *live_remove(KilnRtAllocCache *c, const void *ptr) {
  for (Block **pp = &c->live[hash_ptr(ptr, c->num_buckets)]; *pp; pp = &(*pp)->next) {
    if ((*pp)->ptr == ptr) {
      Block *b = *pp;
      *pp = b->next;
      c->num_live--;
      return b;
    }
  }
  return NULL;
}

/* The free list head for a class; NULL only when a new large bin cannot be allocated. */
static Block **free_list(KilnRtAllocCache *c, size_t size, bool create) {
  if (size <= SMALL_LIMIT) return &c->small_free[size / SMALL_STEP - 1];
  for (LargeBin *bin = c->large; bin; bin = bin->next)
    if (bin->size == size) return &bin->free;
  if (!create) return NULL;
  LargeBin *bin = calloc(1, sizeof *bin);
  if (!bin) return NULL;
  bin->size = size;
  bin->next = c->large;
  c->large = bin;
  return &bin->free;
}

static void release_locked(KilnRtAllocCache *c) {
  for (size_t i = 0; i < NUM_SMALL_CLASSES; i++) {
    for (Block *b = c->small_free[i], *nb; b; b = nb) {
      nb = b->next;
      c->raw_free(c->dev, b->ptr);
      free(b);
    }
    c->small_free[i] = NULL;
  }
  for (LargeBin *bin = c->large, *nbin; bin; bin = nbin) {
    nbin = bin->next;
    for (Block *b = bin->free, *nb; b; b = nb) {
      nb = b->next;
      c->raw_free(c->dev, b->ptr);
      free(b);
    }
    free(bin);
  }
  c->large = NULL;
  c->stats.bytes_cached = 0;
  c->stats.bytes_reserved = c->stats.bytes_in_use;
}

static void note_in_use(KilnRtAllocCache *c, size_t size) {
  c->stats.bytes_in_use += size;
  if (c->stats.bytes_in_use > c->stats.peak_bytes_in_use)
    c->stats.peak_bytes_in_use = c->stats.bytes_in_use;
  c->stats.bytes_reserved = c->stats.bytes_in_use + c->stats.bytes_cached;
  c->stats.num_allocs++;
}

static KilnRtStatus alloc_locked(KilnRtAllocCache *c, size_t bytes, void **ptr) {
  size_t size = kiln_rt_cache_class_size(bytes);
  if (size == 0)
    return kiln_rt_fail(KILN_RT_ERROR_OUT_OF_MEMORY, "allocation of %zu bytes is too large", bytes);

  Block **head = free_list(c, size, false);
  if (head && *head) {
    Block *b = *head;
    *head = b->next;
    c->stats.bytes_cached -= size;
    c->stats.num_cache_hits++;
    b->asked = bytes;
    live_insert(c, b);
    note_in_use(c, size);
    *ptr = b->ptr;
    return KILN_RT_OK;
  }

  Block *b = calloc(1, sizeof *b); /* no parts yet */
  if (!b)
    return kiln_rt_fail(KILN_RT_ERROR_OUT_OF_MEMORY, "out of host memory for the allocation table");
  void *p = NULL;
  KilnRtStatus st = c->raw_alloc(c->dev, size, &p);
  if (st == KILN_RT_ERROR_OUT_OF_MEMORY && c->stats.bytes_cached > 0) {
    /* Cached blocks of other classes may be what fills the device: give them back, retry. */
    release_locked(c);
    st = c->raw_alloc(c->dev, size, &p);
  }
  if (st != KILN_RT_OK) {
    free(b);
    return st;
  }
  b->ptr = p;
  b->size = size;
  b->asked = bytes;
  live_insert(c, b);
  c->stats.num_device_allocs++;
  note_in_use(c, size);
  *ptr = p;
  return KILN_RT_OK;
}

KilnRtStatus kiln_rt_cache_alloc(KilnRtAllocCache *c, size_t bytes, void **ptr) {
  pthread_mutex_lock(&c->lock);
  KilnRtStatus st = alloc_locked(c, bytes, ptr);
  pthread_mutex_unlock(&c->lock);
  return st;
}

KilnRtStatus kiln_rt_cache_free(KilnRtAllocCache *c, void *ptr) {
  pthread_mutex_lock(&c->lock);
  Block *b = live_remove(c, ptr);
  if (!b) {
    pthread_mutex_unlock(&c->lock);
    return kiln_rt_fail(KILN_RT_ERROR_INVALID_ARGUMENT,
                        "kiln_rt_free: %p was not allocated on this device (or was already freed)",
                        ptr);
  }
  c->stats.bytes_in_use -= b->size;
  free(b->part_ends); /* the next owner carves it up anew */
  b->part_ends = NULL;
  b->nparts = 0;
  Block **head = free_list(c, b->size, true);
  if (head) {
    b->next = *head;
    *head = b;
    c->stats.bytes_cached += b->size;
  } else {
    /* No host memory for a new bin: return the block to the device instead of caching it. */
    c->raw_free(c->dev, b->ptr);
    free(b);
  }
  c->stats.bytes_reserved = c->stats.bytes_in_use + c->stats.bytes_cached;
  pthread_mutex_unlock(&c->lock);
  return KILN_RT_OK;
}

/* A scan of every live block: addresses inside a block (views) have no hash of their own.
 * Linear in the blocks in use, which is what a checked library call pays per pointer. */
KilnRtStatus kiln_rt_cache_find(KilnRtAllocCache *c, const void *p, void **base, size_t *bytes) {
  uintptr_t a = (uintptr_t)p;
  KilnRtStatus st = KILN_RT_ERROR_INVALID_ARGUMENT;
  pthread_mutex_lock(&c->lock);
  for (size_t i = 0; i < c->num_buckets && st != KILN_RT_OK; i++)
    for (Block *b = c->live[i]; b; b = b->next)
      if (a >= (uintptr_t)b->ptr && a - (uintptr_t)b->ptr < b->asked) {
        *base = b->ptr;
        *bytes = b->asked;
        st = KILN_RT_OK;
        break;
      }
  pthread_mutex_unlock(&c->lock);
  return st;
}

/* The live block whose start is exactly ptr; the caller holds the lock. */
static Block *live_block_at(KilnRtAllocCache *c, const void *ptr) {
  for (size_t i = 0; i < c->num_buckets; i++)
    for (Block *b = c->live[i]; b; b = b->next)
      if (b->ptr == ptr) return b;
  return NULL;
}

KilnRtStatus kiln_rt_cache_set_parts(KilnRtAllocCache *c, void *base, const size_t *ends,
                                     size_t n) {
  size_t *copy = n ? malloc(n * sizeof *copy) : NULL;
  if (n && !copy) return kiln_rt_fail(KILN_RT_ERROR_OUT_OF_MEMORY, "out of host memory for parts");
  if (n) memcpy(copy, ends, n * sizeof *copy);
  pthread_mutex_lock(&c->lock);
  Block *b = live_block_at(c, base);
  KilnRtStatus st = KILN_RT_OK;
  if (!b) {
    st = kiln_rt_fail(KILN_RT_ERROR_INVALID_ARGUMENT,
                      "kiln_rt_mem_set_parts: %p is not the start of a live allocation", base);
  } else {
    for (size_t i = 0; i < n && st == KILN_RT_OK; i++)
      if (ends[i] > b->asked || (i > 0 && ends[i] <= ends[i - 1]))
        st = kiln_rt_fail(KILN_RT_ERROR_INVALID_ARGUMENT,
                          "kiln_rt_mem_set_parts: end %zu = %zu is not ascending within the %zu "
                          "bytes of the allocation",
                          i, ends[i], b->asked);
  }
  if (st == KILN_RT_OK) {
    free(b->part_ends);
    b->part_ends = copy;
    b->nparts = n;
    copy = NULL;
  }
  pthread_mutex_unlock(&c->lock);
  free(copy);
  return st;
}

KilnRtStatus kiln_rt_cache_find_part(KilnRtAllocCache *c, const void *p, void **start,
                                     size_t *bytes) {
  uintptr_t a = (uintptr_t)p;
  KilnRtStatus st = KILN_RT_ERROR_INVALID_ARGUMENT;
  pthread_mutex_lock(&c->lock);
  for (size_t i = 0; i < c->num_buckets && st != KILN_RT_OK; i++)
    for (Block *b = c->live[i]; b; b = b->next) {
      if (a < (uintptr_t)b->ptr || a - (uintptr_t)b->ptr >= b->asked) continue;
      size_t off = a - (uintptr_t)b->ptr, lo = 0, hi = b->asked;
      for (size_t k = 0; k < b->nparts; k++) { /* the first end past off closes p's part */
        if (b->part_ends[k] > off) {
          hi = b->part_ends[k];
          break;
        }
        lo = b->part_ends[k];
      }
      *start = (char *)b->ptr + lo;
      *bytes = hi - lo;
      st = KILN_RT_OK;
      break;
    }
  pthread_mutex_unlock(&c->lock);
  return st;
}

void kiln_rt_cache_stats(KilnRtAllocCache *c, KilnRtMemStats *out) {
  pthread_mutex_lock(&c->lock);
  *out = c->stats;
  pthread_mutex_unlock(&c->lock);
}

void kiln_rt_cache_release(KilnRtAllocCache *c) {
  pthread_mutex_lock(&c->lock);
  release_locked(c);
  pthread_mutex_unlock(&c->lock);
}

void kiln_rt_cache_destroy(KilnRtAllocCache *c) {
  if (!c) return;
  release_locked(c);
  for (size_t i = 0; i < c->num_buckets; i++) {
    for (Block *b = c->live[i], *nb; b; b = nb) {
      nb = b->next;
      c->raw_free(c->dev, b->ptr);
      free(b->part_ends);
      free(b);
    }
  }
  free(c->live);
  pthread_mutex_destroy(&c->lock);
  free(c);
}
