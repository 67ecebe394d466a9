/*
 * fuzz_file.h: fuzz input as a file the code under test opens by name.
 *
 * The readers under test take a path or a descriptor, as they do in
 * production, so each input is written to an anonymous memory file (memfd)
 * and handed over as /proc/self/fd/N: no disk writes, no temp names to
 * clean up, and a crash leaves nothing behind.
 */
#ifndef SSTPIPE_FUZZ_FUZZ_FILE_H
#define SSTPIPE_FUZZ_FUZZ_FILE_H

#include "stages/common/error.h"

#include <stddef.h>
#include <stdint.h>

typedef struct fuzz_file {
    int fd;        /* positioned at offset 0 */
    char path[64]; /* "/proc/self/fd/N" */
} fuzz_file;

/* Writes data to a new memory file; aborts when the system refuses (that
 * is the harness failing, never the code under test). */
void fuzz_file_init(fuzz_file *f, const uint8_t *data, size_t size);
void fuzz_file_destroy(fuzz_file *f);

/* Aborts with a message on stderr: a broken invariant is a crash to report. */
void fuzz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* The promise every failing call makes: err holds one line naming the file. */
void fuzz_check_error(const sp_error *err, const char *path);

#endif
