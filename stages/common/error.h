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

/* Fills err (unless it already holds an error) and returns -1. */
int sp_errorf(sp_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Like sp_errorf, with ": strerror(errno)" appended. */
int sp_errorf_errno(sp_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void sp_error_clear(sp_error *err);

#endif
