/*
 * test_syscr.h: the kernel's count of this process's read system calls
 * (/proc/self/io, syscr), for tests that count a lookup's reads from
 * outside the code that makes them. Header-only, like test_dir.h; include
 * it after cmocka.h, whose assertions it uses.
 */
#ifndef SSTPIPE_TEST_SYSCR_H
#define SSTPIPE_TEST_SYSCR_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline unsigned long read_syscalls(void) {
    char text[1024];
    FILE *f = fopen("/proc/self/io", "r");
    assert_non_null(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    const char *p = strstr(text, "syscr: ");
    assert_non_null(p);
    return strtoul(p + 7, NULL, 10);
}

#endif
