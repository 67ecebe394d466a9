/*
 * verify_problems.h: a problem verify finds, and the bounded list that
 * keeps problems: every one is counted, the first max_problems are kept.
 *
 * The bottom of stages/verify: the check of the file's regions (verify.c)
 * and of its data blocks (verify_blocks.c) both report through it, so
 * neither calls into the other to report a problem; verify.h carries the
 * problem in its report.
 */
#ifndef SSTPIPE_VERIFY_VERIFY_PROBLEMS_H
#define SSTPIPE_VERIFY_VERIFY_PROBLEMS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

typedef struct verify_problem {
    char what[256];  /* one line, e.g. "block checksum mismatch" */
    int64_t block;   /* data block number, -1 when not inside a data block */
    uint64_t offset; /* byte offset in the file */
} verify_problem;

/* The check of one file (verify_check.h). */
struct checker;

/* Appends a problem to a list of *n (capacity *cap) unless it already holds
 * limit; the caller counts every problem, kept or not. */
void problem_list_add(verify_problem **list, size_t *n, size_t *cap, size_t limit, int64_t block,
                      uint64_t offset, const char *fmt, va_list ap);

/* Adds a problem to the checked file's report (counted always, kept while
 * there is room). */
void checker_problem(struct checker *c, int64_t block, uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
