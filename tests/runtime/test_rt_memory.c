/* The cpu device's memory: copies and sets, the caching allocator's classes, reuse and stats. */
#include "rt_test.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

static void test_round_trip(KilnRtDevice *dev) {
  enum { N = 10007 };
  unsigned char *host = malloc(N), *back = malloc(N);
  for (int i = 0; i < N; i++) host[i] = (unsigned char)(i * 31 + 7);
  void *a = NULL, *b = NULL;
  CHECK_OK(kiln_rt_malloc(dev, N, &a));
  CHECK_OK(kiln_rt_malloc(dev, N, &b));
  CHECK(a && b && a != b);
  CHECK((uintptr_t)a % 64 == 0 && (uintptr_t)b % 64 == 0);
  CHECK_OK(kiln_rt_memcpy_htod(dev, a, host, N, NULL));
  CHECK_OK(kiln_rt_memcpy_dtod(dev, b, a, N, NULL));
  memset(back, 0, N);
  CHECK_OK(kiln_rt_memcpy_dtoh(dev, back, b, N, NULL));
  CHECK(memcmp(back, host, N) == 0);

  CHECK_OK(kiln_rt_memset(dev, (char *)b + 100, 0xAB, 1000, NULL));
  CHECK_OK(kiln_rt_memcpy_dtoh(dev, back, b, N, NULL));
  int ok = 1;
  for (int i = 0; i < N; i++) {
    unsigned char want = i >= 100 && i < 1100 ? 0xAB : host[i];
    if (back[i] != want) ok = 0;
  }
  CHECK(ok);

  /* On a stream the results are the same once it is synchronized. */
  KilnRtStream *s = NULL;
  CHECK_OK(kiln_rt_stream_create(dev, &s));
  CHECK_OK(kiln_rt_memset(dev, a, 0x5A, N, s));
  CHECK_OK(kiln_rt_memcpy_dtoh(dev, back, a, N, s));
  CHECK_OK(kiln_rt_stream_synchronize(s));
  CHECK(back[0] == 0x5A && back[N - 1] == 0x5A);
  kiln_rt_stream_destroy(s);

  /* Zero-byte operations are no-ops even with NULL pointers; NULL with bytes is an error. */
  CHECK_OK(kiln_rt_memcpy_htod(dev, NULL, NULL, 0, NULL));
  CHECK_STATUS(kiln_rt_memcpy_htod(dev, NULL, host, 8, NULL), KILN_RT_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(kiln_rt_memset(dev, NULL, 0, 8, NULL), KILN_RT_ERROR_INVALID_ARGUMENT);

  CHECK_OK(kiln_rt_free(dev, a));
  CHECK_OK(kiln_rt_free(dev, b));
  free(host);
  free(back);
}

static void test_zero_and_bad_free(KilnRtDevice *dev) {
  void *p = (void *)1;
  CHECK_OK(kiln_rt_malloc(dev, 0, &p));
  CHECK(p == NULL);
  CHECK_OK(kiln_rt_free(dev, NULL));
  int on_stack = 0;
  CHECK_STATUS(kiln_rt_free(dev, &on_stack), KILN_RT_ERROR_INVALID_ARGUMENT);
  CHECK_CONTAINS(kiln_rt_last_error(), "was not allocated on this device");
  void *q = NULL;
  CHECK_OK(kiln_rt_malloc(dev, 10, &q));
  CHECK_OK(kiln_rt_free(dev, q));
  CHECK_STATUS(kiln_rt_free(dev, q), KILN_RT_ERROR_INVALID_ARGUMENT); /* double free */
  CHECK_STATUS(kiln_rt_malloc(dev, SIZE_MAX, &q), KILN_RT_ERROR_OUT_OF_MEMORY);
}

static void test_cache(void) {
  KilnRtDevice *dev = NULL;
  CHECK_OK(kiln_rt_device_create("cpu", &dev));
  if (!dev) return;
  KilnRtMemStats st;
  CHECK_OK(kiln_rt_mem_stats(dev, &st));
  CHECK(st.bytes_in_use == 0 && st.bytes_cached == 0 && st.peak_bytes_in_use == 0);

  /* 1000 B -> class 1024; 1 MiB stays in the 512-B steps; 1 MiB + 1 -> 2 MiB; 5 MiB -> 6 MiB. */
  void *a = NULL, *b = NULL, *c = NULL, *d = NULL;
  CHECK_OK(kiln_rt_malloc(dev, 1000, &a));
  CHECK_OK(kiln_rt_malloc(dev, (size_t)1 << 20, &b));
  CHECK_OK(kiln_rt_malloc(dev, ((size_t)1 << 20) + 1, &c));
  CHECK_OK(kiln_rt_malloc(dev, (size_t)5 << 20, &d));
  size_t want_in_use = 1024 + ((size_t)1 << 20) + ((size_t)2 << 20) + ((size_t)6 << 20);
  CHECK_OK(kiln_rt_mem_stats(dev, &st));
  CHECK(st.bytes_in_use == want_in_use);
  CHECK(st.peak_bytes_in_use == want_in_use);
  CHECK(st.bytes_cached == 0 && st.num_allocs == 4 && st.num_device_allocs == 4 &&
        st.num_cache_hits == 0);

  CHECK_OK(kiln_rt_free(dev, a));
  CHECK_OK(kiln_rt_free(dev, d));
  CHECK_OK(kiln_rt_mem_stats(dev, &st));
  CHECK(st.bytes_in_use == want_in_use - 1024 - ((size_t)6 << 20));
  CHECK(st.bytes_cached == 1024 + ((size_t)6 << 20));
  CHECK(st.bytes_reserved == want_in_use);
  CHECK(st.peak_bytes_in_use == want_in_use);

  /* Same class: the freed blocks come back, with no new device allocation. */
  void *a2 = NULL, *d2 = NULL;
  CHECK_OK(kiln_rt_malloc(dev, 600, &a2));                     /* 1024 class too */
  CHECK_OK(kiln_rt_malloc(dev, (size_t)5 << 20 | 12345, &d2)); /* 6 MiB class */
  CHECK(a2 == a);
  CHECK(d2 == d);
  CHECK_OK(kiln_rt_mem_stats(dev, &st));
  CHECK(st.num_cache_hits == 2 && st.num_device_allocs == 4 && st.bytes_cached == 0);
  /* A different class does not reuse. */
  void *e = NULL;
  CHECK_OK(kiln_rt_free(dev, a2));
  CHECK_OK(kiln_rt_malloc(dev, 2000, &e)); /* 2048 class */
  CHECK_OK(kiln_rt_mem_stats(dev, &st));
  CHECK(st.num_device_allocs == 5 && st.bytes_cached == 1024);

  CHECK_OK(kiln_rt_mem_release_cached(dev));
  CHECK_OK(kiln_rt_mem_stats(dev, &st));
  CHECK(st.bytes_cached == 0 && st.bytes_reserved == st.bytes_in_use);
  CHECK(st.bytes_in_use == 2048 + ((size_t)1 << 20) + ((size_t)2 << 20) + ((size_t)6 << 20));

  /* b, c, d2, e are still allocated: destroying the device frees them (ASan checks no leak). */
  kiln_rt_device_destroy(dev);
}

typedef struct Worker {
  KilnRtDevice *dev;
  int seed;
  int errors;
} Worker;

/* Many threads allocating, writing and freeing through one cache must never share a block. */
static void *worker(void *arg) {
  Worker *w = arg;
  void *blocks[16] = {0};
  unsigned r = (unsigned)w->seed;
  for (int it = 0; it < 2000; it++) {
    int slot = it % 16;
    if (blocks[slot]) {
      unsigned char *p = blocks[slot];
      if (p[0] != (unsigned char)w->seed) w->errors++;
      if (kiln_rt_free(w->dev, blocks[slot]) != KILN_RT_OK) w->errors++;
      blocks[slot] = NULL;
    }
    r = r * 1103515245u + 12345u;
    size_t bytes = 1 + (r >> 8) % 8192;
    if (kiln_rt_malloc(w->dev, bytes, &blocks[slot]) != KILN_RT_OK)
      w->errors++;
    else
      memset(blocks[slot], w->seed, bytes);
  }
  for (int i = 0; i < 16; i++)
    if (blocks[i] && kiln_rt_free(w->dev, blocks[i]) != KILN_RT_OK) w->errors++;
  return NULL;
}

static void test_threads(void) {
  KilnRtDevice *dev = NULL;
  CHECK_OK(kiln_rt_device_create("cpu", &dev));
  if (!dev) return;
  enum { T = 4 };
  pthread_t th[T];
  Worker w[T];
  for (int i = 0; i < T; i++) {
    w[i] = (Worker){dev, i + 1, 0};
    pthread_create(&th[i], NULL, worker, &w[i]);
  }
  for (int i = 0; i < T; i++) {
    pthread_join(th[i], NULL);
    CHECK(w[i].errors == 0);
  }
  KilnRtMemStats st;
  CHECK_OK(kiln_rt_mem_stats(dev, &st));
  CHECK(st.bytes_in_use == 0);
  CHECK(st.num_allocs == T * 2000);
  CHECK(st.num_cache_hits > 0);
  kiln_rt_device_destroy(dev);
}

int main(void) {
  KilnRtDevice *dev = NULL;
  CHECK_OK(kiln_rt_device_create("cpu", &dev));
  if (dev) {
    test_round_trip(dev);
    test_zero_and_bad_free(dev);
    kiln_rt_device_destroy(dev);
  }
  test_cache();
  test_threads();
  return kiln_check_result("test_rt_memory");
}
