/* test_base.c — the shared vocabulary (runtime/base/kiln_base.h) on its own: the target and
 * scalar names, whole-file reads, the atomic writer (modes, symlinks, aborts and failures leave
 * the old file and no temp file), the temp paths removed when SIGINT/SIGTERM ends the process
 * (a forked child killed in the middle of a write, and with a registered tree), the byte-count
 * syntax and the f16/bf16 conversions at known bit patterns.
 *
 * Files are made in a fresh directory under the current one (ctest runs in the build tree) and
 * removed at the end.  Exit status: the number of failed checks. */
#include "kiln_base.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/check.h"

static char dir[64];

static const char *in_dir(const char *name) {
  static char path[2][256];
  static int which;
  which ^= 1;
  snprintf(path[which], sizeof path[which], "%s/%s", dir, name);
  return path[which];
}

static int mode_of(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (int)(st.st_mode & 07777) : -1;
}

/* Files in the test directory whose name holds ".tmp." (a writer's leftover). */
static int temp_files(void) {
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) n += strstr(e->d_name, ".tmp.") != NULL;
  if (d) closedir(d);
  return n;
}

static bool has_text(const char *path, const char *want) {
  size_t len = 0;
  char *got = kiln_file_read(path, &len);
  bool ok = got && len == strlen(want) && memcmp(got, want, len) == 0;
  free(got);
  return ok;
}

static void test_names(void) {
  for (int t = 0; t < KILN_TARGET_COUNT; t++)
    CHECK(kiln_target_from_name(kiln_target_name((KilnTarget)t)) == (KilnTarget)t, "target %d", t);
  CHECK(strcmp(kiln_target_name(KILN_TARGET_SM90), "sm_90") == 0, "sm_90's name");
  CHECK(kiln_target_from_name("sm_70") == KILN_TARGET_COUNT, "an unknown target");
  CHECK(kiln_target_from_name(NULL) == KILN_TARGET_COUNT, "no name");
  CHECK(strcmp(kiln_target_name(KILN_TARGET_COUNT), "?") == 0, "out of range");
  for (int k = 0; k < KILN_SCALAR_COUNT; k++) {
    KilnScalarKind got = KILN_SCALAR_COUNT;
    CHECK(kiln_scalar_from_name(kiln_scalar_name((KilnScalarKind)k), &got) &&
              got == (KilnScalarKind)k,
          "scalar %d", k);
  }
  KilnScalarKind unused;
  CHECK(!kiln_scalar_from_name("f128", &unused), "f128 is no kind");
  CHECK(!kiln_scalar_from_name("u1", &unused), "u1 is no kind");
  CHECK(kiln_scalar_is_float(KILN_SCALAR_BF16) && !kiln_scalar_is_float(KILN_SCALAR_I1), "floats");
  CHECK(kiln_scalar_is_float(KILN_SCALAR_F64) && !kiln_scalar_is_float(KILN_SCALAR_U64), "f64");
  /* the kinds appended after f32 keep the numbers 0..7 of the first eight (caches hold them) */
  CHECK(KILN_SCALAR_F32 == 7 && KILN_SCALAR_F64 == 8 && KILN_SCALAR_U64 == 12, "kind numbers");
  CHECK(kiln_scalar_is_unsigned(KILN_SCALAR_U8) && kiln_scalar_is_unsigned(KILN_SCALAR_U64) &&
            !kiln_scalar_is_unsigned(KILN_SCALAR_I1) && !kiln_scalar_is_unsigned(KILN_SCALAR_I64),
        "unsigned kinds");
}

/* The reserved tune names and their ranges: the frontend, the driver and the tuner's runner read
 * this one table. */
static void test_meta_names(void) {
  static const struct {
    const char *name;
    int64_t lo, hi;
  } want[] = {{"num_warps", 1, 64}, {"num_stages", 1, 64}, {"min_blocks", 1, 32}, {"wgmma", 0, 1}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    CHECK(kiln_meta_param_is(want[i].name) && kiln_meta_param_min(want[i].name) == want[i].lo &&
              kiln_meta_param_max(want[i].name) == want[i].hi,
          "meta name %s: %lld..%lld", want[i].name, (long long)kiln_meta_param_min(want[i].name),
          (long long)kiln_meta_param_max(want[i].name));
  CHECK(!kiln_meta_param_is("BLOCK") && !kiln_meta_param_is("WGMMA") && !kiln_meta_param_is("") &&
            !kiln_meta_param_is(NULL),
        "not meta names");
}

static void test_read(void) {
  /* 200,000 bytes with NULs inside: past the reader's first 64 KiB block, so it must grow. */
  size_t n = 200000;
  unsigned char *data = malloc(n);
  for (size_t i = 0; i < n; i++) data[i] = (unsigned char)(i * 7 % 251);
  CHECK(kiln_file_write_atomic(in_dir("big"), data, n) == 0, "write big: %s", strerror(errno));
  size_t len = 0;
  char *got = kiln_file_read(in_dir("big"), &len);
  CHECK(got && len == n && memcmp(got, data, n) == 0 && got[n] == '\0', "read back %zu bytes", len);
  free(got);
  free(data);

  CHECK(kiln_file_write_atomic(in_dir("empty"), "", 0) == 0, "write empty");
  got = kiln_file_read(in_dir("empty"), &len);
  CHECK(got && len == 0 && got[0] == '\0', "an empty file is an empty string");
  free(got);

  errno = 0;
  CHECK(!kiln_file_read(in_dir("missing"), &len) && errno == ENOENT, "missing: errno %d", errno);
}

/* The bounded reader: /dev/zero and a file one byte over the bound are refused with EFBIG
 * after reading at most the bound; a file of exactly the bound reads. */
static void test_read_max(void) {
  size_t len = 0;
  errno = 0;
  CHECK(kiln_file_read_max("/dev/zero", &len, 1 << 20) == NULL && errno == EFBIG,
        "/dev/zero: errno %d, want EFBIG", errno);
  char data[100] = {0};
  CHECK(kiln_file_write_atomic(in_dir("new"), data, sizeof data) == 0, "write");
  char *got = kiln_file_read_max(in_dir("new"), &len, sizeof data);
  CHECK(got && len == sizeof data, "a file of exactly the bound reads");
  free(got);
  errno = 0;
  CHECK(kiln_file_read_max(in_dir("new"), &len, sizeof data - 1) == NULL && errno == EFBIG,
        "one byte over the bound: errno %d", errno);
  /* a sparse file of 1 GiB against a bound of 1 MiB: refused from its size */
  FILE *f = fopen(in_dir("sparse"), "wb");
  CHECK(f && fseeko(f, ((off_t)1 << 30) - 1, SEEK_SET) == 0 && fputc('x', f) == 'x', "sparse");
  if (f) fclose(f);
  errno = 0;
  CHECK(kiln_file_read_max(in_dir("sparse"), &len, 1 << 20) == NULL && errno == EFBIG,
        "a sparse file over the bound: errno %d", errno);
  char msg[256];
  errno = EFBIG;
  kiln_file_read_error(msg, sizeof msg, "source", "k.kiln", "KILN_MAX_SOURCE_BYTES",
                       (size_t)64 << 20);
  CHECK(!strcmp(msg, "the source 'k.kiln' is larger than KILN_MAX_SOURCE_BYTES (64 MiB); refused"),
        "message '%s'", msg);
  errno = ENOENT;
  kiln_file_read_error(msg, sizeof msg, "source", "k.kiln", "KILN_MAX_SOURCE_BYTES", 1);
  CHECK(strstr(msg, "cannot read the source 'k.kiln': ") != NULL, "message '%s'", msg);
}

/* Byte counts as KILN_DEVICE_MEMORY and size options take them (powers of 1024), and their text. */
static void test_bytes(void) {
  static const struct {
    const char *s;
    size_t want;
  } good[] = {{"4096", 4096},   {"64K", 65536},          {"64KiB", 65536},
              {"3M", 3u << 20}, {"2G", (size_t)2 << 30}, {"1T", (size_t)1 << 40}};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
    size_t v = 0;
    CHECK(kiln_parse_bytes(good[i].s, &v) == 0 && v == good[i].want, "'%s': %zu", good[i].s, v);
  }
  static const char *const bad[] = {
      "0", "-5", "+5", "12Q", "1.5G", "K", "", "64Kb", "99999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    size_t v = 7;
    CHECK(kiln_parse_bytes(bad[i], &v) == -1 && v == 7, "'%s' accepted as %zu", bad[i], v);
  }
  char buf[32];
  CHECK(!strcmp(kiln_bytes_text(512, buf, sizeof buf), "512 bytes"), "%s", buf);
  CHECK(!strcmp(kiln_bytes_text(1536, buf, sizeof buf), "1.5 KiB"), "%s", buf);
  CHECK(!strcmp(kiln_bytes_text((size_t)16 << 30, buf, sizeof buf), "16.0 GiB"), "%s", buf);
  CHECK(kiln_host_memory_bytes() > ((size_t)1 << 20), "host memory %zu", kiln_host_memory_bytes());
}

static void test_write_modes(void) {
  mode_t old = umask(022);
  CHECK(kiln_file_write_atomic(in_dir("new"), "one", 3) == 0, "create");
  /* 0666 less the umask, as `kiln compile -o` and the tuner's outputs both get (not 0600) */
  CHECK(mode_of(in_dir("new")) == 0644, "new file mode %o", (unsigned)mode_of(in_dir("new")));
  chmod(in_dir("new"), 0600);
  CHECK(kiln_file_write_atomic(in_dir("new"), "two", 3) == 0, "replace");
  CHECK(mode_of(in_dir("new")) == 0600 && has_text(in_dir("new"), "two"),
        "a replaced file keeps its mode");
  umask(old);
}

static void test_write_symlink(void) {
  CHECK(kiln_file_write_atomic(in_dir("real"), "old", 3) == 0, "target");
  CHECK(symlink("real", in_dir("link")) == 0, "symlink: %s", strerror(errno));
  CHECK(kiln_file_write_atomic(in_dir("link"), "new", 3) == 0, "write through the link");
  struct stat st;
  CHECK(lstat(in_dir("link"), &st) == 0 && S_ISLNK(st.st_mode), "the link is still a link");
  CHECK(has_text(in_dir("real"), "new"), "the link's target was replaced");
  CHECK(kiln_file_same(in_dir("link"), in_dir("real")), "one file, two names");
  CHECK(!kiln_file_same(in_dir("real"), in_dir("missing")), "a missing file is no file");
}

static void test_write_failures(void) {
  CHECK(kiln_file_write_atomic(in_dir("keep"), "kept", 4) == 0, "keep");
  /* an abort after writing leaves the old contents and no temp file */
  KilnAtomicFile af;
  CHECK(kiln_atomic_begin(&af, in_dir("keep")) == 0, "begin");
  kiln_atomic_write(&af, "half", 4);
  CHECK(temp_files() == 1, "one temp file while writing");
  kiln_atomic_abort(&af);
  CHECK(has_text(in_dir("keep"), "kept") && temp_files() == 0, "abort keeps the old file");
  /* a write in pieces commits whole */
  CHECK(kiln_atomic_begin(&af, in_dir("keep")) == 0, "begin again");
  kiln_atomic_write(&af, "new ", 4);
  kiln_atomic_write(&af, "text", 4);
  CHECK(kiln_atomic_commit(&af) == 0 && has_text(in_dir("keep"), "new text"), "commit");
  /* a directory that does not exist: -1 with errno, nothing created */
  errno = 0;
  CHECK(kiln_file_write_atomic(in_dir("no-such-dir/x"), "x", 1) == -1 && errno == ENOENT,
        "no directory: errno %d", errno);
  /* the target is a directory: the rename fails, the temp file goes */
  CHECK(mkdir(in_dir("sub"), 0755) == 0, "mkdir");
  CHECK(kiln_file_write_atomic(in_dir("sub"), "x", 1) == -1, "a directory is not replaced");
  CHECK(temp_files() == 0, "no temp file after a failed rename");
  rmdir(in_dir("sub"));
}

/* A child that begins an atomic write of "keep" and registers a small tree, then is ended by
 * `sig` before it commits: it must die of that signal, the old file must be intact, and neither
 * the temp file nor the tree may be left. A path the child did not register (made by the
 * parent) must survive. */
static void interrupted_child(int sig) {
  CHECK(kiln_file_write_atomic(in_dir("keep"), "kept", 4) == 0, "keep");
  CHECK(mkdir(in_dir("parents"), 0755) == 0, "mkdir parents");
  int parents = kiln_cleanup_register(in_dir("parents"));
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    KilnAtomicFile af;
    if (kiln_atomic_begin(&af, in_dir("keep")) != 0) _exit(3);
    kiln_atomic_write(&af, "half", 4);
    fflush(af.f);
    if (mkdir(in_dir("tree"), 0755) || mkdir(in_dir("tree/sub"), 0755) ||
        kiln_file_write_atomic(in_dir("tree/sub/f"), "x", 1) ||
        kiln_file_write_atomic(in_dir("tree/g"), "y", 1))
      _exit(4);
    if (kiln_cleanup_register(in_dir("tree")) < 0) _exit(5);
    raise(sig);
    _exit(6); /* not reached: the signal's default action ends the child */
  }
  int status = 0;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork/wait");
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == sig,
        "the child should die of signal %d (status 0x%x)", sig, (unsigned)status);
  CHECK(has_text(in_dir("keep"), "kept"), "signal %d: the old file is not intact", sig);
  CHECK(temp_files() == 0, "signal %d: a temp file was left", sig);
  struct stat st;
  CHECK(stat(in_dir("tree"), &st) != 0, "signal %d: the registered tree was left", sig);
  CHECK(stat(in_dir("parents"), &st) == 0, "signal %d: the child removed its parent's path", sig);
  kiln_cleanup_unregister(parents);
  rmdir(in_dir("parents"));
}

static void test_signal_cleanup(void) {
  interrupted_child(SIGINT);
  interrupted_child(SIGTERM);
}

static uint32_t bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static void test_half(void) {
  /* f32 -> f16, exact bit patterns (round to nearest even, subnormals, overflow) */
  static const struct {
    float f;
    uint16_t h;
  } f16[] = {
      {1.0f, 0x3c00},
      {-2.0f, 0xc000},
      {65504.0f, 0x7bff},
      {65520.0f, 0x7c00},
      {0x1p-14f, 0x0400},
      {0x1p-24f, 0x0001},
      {0x1p-25f, 0x0000},
      {0x1.8p-25f, 0x0001},
      {1.0f + 0x1p-11f, 0x3c00},
      {1.0f + 0x3p-11f, 0x3c02},
      {INFINITY, 0x7c00},
      {-0.0f, 0x8000},
  };
  for (size_t i = 0; i < sizeof f16 / sizeof *f16; i++) {
    CHECK(kiln_f32_to_f16(f16[i].f) == f16[i].h, "f16(%a) = %#x, want %#x", f16[i].f,
          kiln_f32_to_f16(f16[i].f), f16[i].h);
  }
  /* f16 -> f32 is exact: every half is a float */
  static const struct {
    uint16_t h;
    float f;
  } wide[] = {
      {0x3c00, 1.0f},           {0xc000, -2.0f},    {0x7bff, 65504.0f},
      {0x0400, 0x1p-14f},       {0x0001, 0x1p-24f}, {0x03ff, 0x3ffp-24f},
      {0x3c02, 1.0f + 0x1p-9f}, {0x8000, -0.0f},    {0x7c00, INFINITY},
  };
  for (size_t i = 0; i < sizeof wide / sizeof *wide; i++)
    CHECK(bits(kiln_f16_to_f32(wide[i].h)) == bits(wide[i].f), "f32(%#x) = %a, want %a", wide[i].h,
          kiln_f16_to_f32(wide[i].h), wide[i].f);
  uint16_t nan16 = kiln_f32_to_f16(NAN);
  CHECK((nan16 & 0x7c00) == 0x7c00 && (nan16 & 0x3ff), "NaN stays NaN: %#x", nan16);
  CHECK(isnan(kiln_f16_to_f32(0x7e00)), "f16 NaN widens to NaN");
  /* bf16: f32's top half, the low 16 bits rounded to nearest even */
  CHECK(kiln_f32_to_bf16(1.0f) == 0x3f80 && kiln_bf16_to_f32(0x3f80) == 1.0f, "bf16 1.0");
  CHECK(kiln_f32_to_bf16(1.0f + 0x1p-8f) == 0x3f80, "bf16 tie to even (down)");
  CHECK(kiln_f32_to_bf16(1.0f + 0x3p-8f) == 0x3f82, "bf16 tie to even (up)");
  CHECK(kiln_f32_to_bf16(-3.0e38f) == 0xff62, "bf16 -3e38: %#x", kiln_f32_to_bf16(-3.0e38f));
  uint16_t nanb = kiln_f32_to_bf16(NAN);
  CHECK((nanb & 0x7f80) == 0x7f80 && (nanb & 0x7f), "bf16 NaN stays NaN: %#x", nanb);
}

int main(void) {
  snprintf(dir, sizeof dir, "base-test-XXXXXX");
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  test_names();
  test_meta_names();
  test_read();
  test_read_max();
  test_bytes();
  test_write_modes();
  test_write_symlink();
  test_write_failures();
  test_signal_cleanup();
  test_half();
  const char *names[] = {"big", "empty", "new", "real", "link", "keep", "sparse"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) unlink(in_dir(names[i]));
  rmdir(dir);
  if (failures) printf("%d check(s) failed\n", failures);
  return failures != 0;
}
