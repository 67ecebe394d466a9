/*
 * iotest_pattern.c: iotest's patterns as users write them ("rr:8K") and
 * the default six. The two-letter kinds follow diskspd's vocabulary:
 * r/s for random/sequential, then r/w for read/write.
 */
#include "pipeline/tune/iotest.h"

#include "stages/common/size.h"

#include <stdio.h>
#include <string.h>

const iotest_pattern iotest_default_patterns[IOTEST_DEFAULT_PATTERN_COUNT] = {
    {.random = true, .write = false, .io_size = 8u << 10},
    {.random = true, .write = false, .io_size = 64u << 10},
    {.random = true, .write = true, .io_size = 8u << 10},
    {.random = false, .write = false, .io_size = 64u << 10},
    {.random = false, .write = true, .io_size = 8u << 10},
    {.random = false, .write = false, .io_size = 256u << 10},
};

int iotest_parse_pattern(const char *text, iotest_pattern *out, sp_error *err) {
    const char *colon = strchr(text, ':');
    if (!colon || colon - text != 2 || (text[0] != 'r' && text[0] != 's') ||
        (text[1] != 'r' && text[1] != 'w'))
        return sp_errorf(err,
                         "--pattern: '%s' is not KIND:SIZE with KIND rr, rw, sr or sw "
                         "(random/sequential read/write), e.g. rr:8K",
                         text);
    uint64_t size;
    if (sp_parse_size(colon + 1, "--pattern", &size, err))
        return -1;
    if (size < IOTEST_MIN_IO_SIZE || size > IOTEST_MAX_IO_SIZE || size % IOTEST_MIN_IO_SIZE)
        return sp_errorf(
            err, "--pattern: '%s': the IO size must be a multiple of 4K from 4K to 16M", text);
    out->random = text[0] == 'r';
    out->write = text[1] == 'w';
    out->io_size = (uint32_t)size;
    return 0;
}

const char *iotest_pattern_name(const iotest_pattern *p, char *buf, size_t cap) {
    char size[32];
    snprintf(buf, cap, "%c%c:%s", p->random ? 'r' : 's', p->write ? 'w' : 'r',
             sp_format_size(p->io_size, size, sizeof size));
    return buf;
}

const char *iotest_pattern_kind(const iotest_pattern *p) {
    if (p->random)
        return p->write ? "random write" : "random read";
    return p->write ? "sequential write" : "sequential read";
}
