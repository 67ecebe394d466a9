/*
 * test_rss.h: the process's memory as the kernel counts it, for the tests
 * that hold a stage to its memory budget: a field of /proc/self/status
 * (VmRSS now, VmHWM the peak) in bytes. Header-only, like test_dir.h; it
 * asserts with cmocka, so include it after <cmocka.h>.
 */
#ifndef SSTPIPE_TEST_RSS_H
#define SSTPIPE_TEST_RSS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A field of /proc/self/status, in bytes; fails the test when it is absent. */
static inline uint64_t status_bytes(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    assert_non_null(f);
    char line[256];
    uint64_t kib = 0;
    size_t n = strlen(field);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, field, n) && line[n] == ':')
            kib = strtoull(line + n + 1, NULL, 10);
    fclose(f);
    assert_true(kib > 0);
    return kib << 10;
}

#endif
