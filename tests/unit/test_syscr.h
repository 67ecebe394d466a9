/*
 * test_syscr.h: the kernel's counts of this process's reads (/proc/self/io):
 * its read system calls (syscr) and the bytes it had read from the disk
 * (read_bytes), for tests that count a lookup's reads from outside the
 * code that makes them. Header-only, like test_dir.h; include it after
 * cmocka.h, whose assertions it uses.
 */
#ifndef SSTPIPE_TEST_SYSCR_H
#define SSTPIPE_TEST_SYSCR_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value of the line "name: N" of /proc/self/io. */
static inline unsigned long proc_io(const char *name) {
    char text[1024] = "\n", want[64]; /* every line then follows a newline */
    FILE *f = fopen("/proc/self/io", "r");
    assert_non_null(f);
    size_t n = fread(text + 1, 1, sizeof text - 2, f);
    fclose(f);
    text[n + 1] = 0;
    snprintf(want, sizeof want, "\n%s: ", name);
    const char *p = strstr(text, want);
    assert_non_null(p);
    return strtoul(p + strlen(want), NULL, 10);
}

static inline unsigned long read_syscalls(void) {
    return proc_io("syscr");
}

static inline unsigned long disk_read_bytes(void) {
    return proc_io("read_bytes");
}

#endif
