/* check.h — the one CHECK of the C test programs.
 *
 *   CHECK(cond)                  a failed condition is printed with its file and line
 *   CHECK(cond, fmt, ...)        ... and a printf-style explanation (format-checked)
 *   KILN_CHECK_INTO(n, cond, ...) the same, counted in n instead of `failures` (the dialect
 *                                tests count per test case: T_CHECK)
 *
 * A failure goes to stderr as "FILE:LINE: check failed: COND: MESSAGE" and is counted in the
 * program's `failures`, which kiln_check_result turns into its exit status. The helper families of
 * the runtime and emulator tests (CHECK_OK, CHECK_EQ_U, CHECK_LAUNCH, CHECK_MSG, ...) are built
 * on it. Header-only: the runtime-only trees build these programs as well.
 *
 * How CHECK takes one or more arguments in C17 with the format still checked: KILN_CHECK_PICK_
 * selects the bare form when the argument list is one long, the message form otherwise. */
#ifndef KILN_TEST_CHECK_H
#define KILN_TEST_CHECK_H

#include <stdio.h>

/* unused in programs that count elsewhere (T_CHECK) */
static int failures __attribute__((unused));

#define KILN_CHECK_INTO(counter, cond, ...)                                                        \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);                     \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
      (counter)++;                                                                                 \
    }                                                                                              \
  } while (0)

#define KILN_CHECK_MSG_(cond, ...) KILN_CHECK_INTO(failures, cond, __VA_ARGS__)
#define KILN_CHECK_BARE_(cond)                                                                     \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                     \
      failures++;                                                                                  \
    }                                                                                              \
  } while (0)
#define KILN_CHECK_PICK_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16,    \
                         _17, _18, _19, _20, name, ...)                                            \
  name
#define CHECK(...)                                                                                 \
  KILN_CHECK_PICK_(__VA_ARGS__, KILN_CHECK_MSG_, KILN_CHECK_MSG_, KILN_CHECK_MSG_,                 \
                   KILN_CHECK_MSG_, KILN_CHECK_MSG_, KILN_CHECK_MSG_, KILN_CHECK_MSG_,             \
                   KILN_CHECK_MSG_, KILN_CHECK_MSG_, KILN_CHECK_MSG_, KILN_CHECK_MSG_,             \
                   KILN_CHECK_MSG_, KILN_CHECK_MSG_, KILN_CHECK_MSG_, KILN_CHECK_MSG_,             \
                   KILN_CHECK_MSG_, KILN_CHECK_MSG_, KILN_CHECK_MSG_, KILN_CHECK_MSG_,             \
                   KILN_CHECK_BARE_, unused)(__VA_ARGS__)

/* The program's exit status: 1 when a check failed (their count on stderr), else 0 ("NAME: all
 * checks passed" on stdout). */
static inline int kiln_check_result(const char *name) {
  if (failures) {
    fprintf(stderr, "%s: %d check(s) failed\n", name, failures);
    return 1;
  }
  printf("%s: all checks passed\n", name);
  return 0;
}

#endif /* KILN_TEST_CHECK_H */
