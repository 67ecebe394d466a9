/*
 * error.h: the error value every sstpipe function returns through.
 *
 * Library code never prints. A failing function fills an sp_error with one
 * line that names what failed and where (file, byte offset or line) and
 * returns -1; the command line prints that line once, prefixed "sstpipe: ".
 * The first error wins: a cleanup path that fails after the real error does
 * not overwrite it.
 */
#ifndef SSTPIPE_COMMON_ERROR_H
#define SSTPIPE_COMMON_ERROR_H

#include <stdbool.h>

typedef struct sp_error {
    bool set;
    char msg[1024];
} sp_error;

/* The functions behind the two macros below; call those. */
void sp_error_set(sp_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sp_error_set_errno(sp_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Fills err (unless it already holds an error) and returns -1. A macro, so
 * that the -1 is visible wherever a function using it is inlined: to gcc -O3
 * an opaque call's `return sp_errorf(...)` might be 0, a success that never
 * set its output, and the caller reading that output got a false
 * -Wmaybe-uninitialized (sp_parse_size's *out in sp_parse_pow2_size). */
#define sp_errorf(err, ...)                                                                        \
    ({                                                                                             \
        sp_error_set((err), __VA_ARGS__);                                                          \
        -1;                                                                                        \
    })

/* Like sp_errorf, with ": strerror(errno)" appended. */
#define sp_errorf_errno(err, ...)                                                                  \
    ({                                                                                             \
        sp_error_set_errno((err), __VA_ARGS__);                                                    \
        -1;                                                                                        \
    })

/* Inline: a warm lookup clears an error (not all 1 KiB of it) in every
 * call of its path (sstpipe_get, the reader's get-in-block), where an
 * opaque call was two calls a lookup for two stores. */
static inline void sp_error_clear(sp_error *err) {
    err->set = false;
    err->msg[0] = '\0';
}

#endif
