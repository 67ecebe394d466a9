/*
 * wg_incr.c: daily increments of a generated dump; see wg_incr.h.
 *
 * The base's page count is what a run of the base generator writes, so it
 * is found by running it into /dev/null (at generator speed; nothing is
 * kept). Each day's pages are then chosen with a generator seeded by the
 * base seed and the date and written by wg_dump with a page list.
 */
#include "data/wg_incr.h"

#include "data/wg_rng.h"
#include "stages/common/cli.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Days since 1970-01-01 of a civil date, and back (H. Hinnant's algorithms). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static uint32_t civil_from_days(int64_t z) {
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t y = (int64_t)yoe + era * 400;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    unsigned d = doy - (153 * mp + 2) / 5 + 1;
    unsigned m = mp < 10 ? mp + 3 : mp - 9;
    return (uint32_t)((y + (m <= 2)) * 10000 + m * 100 + d);
}

int wg_incr_parse_date(const char *s, uint32_t *date) {
    if (strlen(s) != 8 || strspn(s, "0123456789") != 8)
        return -1;
    unsigned v = (unsigned)atoi(s), y = v / 10000, m = v / 100 % 100, d = v % 100;
    if (y < 1970 || m < 1 || m > 12 || d < 1 || d > 31 ||
        civil_from_days(days_from_civil(y, m, d)) != v)
        return -1;
    *date = v;
    return 0;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Pages the base dump has: what its generator writes. */
static int base_pages(const wg_dump_options *base, uint64_t *pages, sp_error *err) {
    int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return sp_errorf(err, "/dev/null: cannot open");
    wg_sink *sink = NULL;
    wg_dump_stats st = {0};
    int rc = wg_sink_open(&sink, WG_FORMAT_XML, 1, fd, "/dev/null", err);
    if (!rc)
        rc = wg_dump_write(base, sink, &st, err);
    wg_sink_destroy(sink);
    close(fd);
    *pages = st.pages;
    return rc;
}

static const char *suffix(wg_format f) {
    switch (f) {
    case WG_FORMAT_XML:
        return ".xml";
    case WG_FORMAT_ZST:
        return ".xml.zst";
    default:
        return ".xml.bz2";
    }
}

static int write_day(const wg_incr_options *io, const wg_dump_options *base, uint64_t pages,
                     unsigned day, wg_format format, unsigned threads, sp_error *err) {
    int64_t days =
        days_from_civil(io->base_date / 10000, io->base_date / 100 % 100, io->base_date % 100) +
        day;
    uint32_t date = civil_from_days(days);
    wg_rng rng;
    wg_rng_seed(&rng, wg_hash3(base->seed, date, 0x696e6372 /* "incr" */));
    uint64_t edits = pages * io->edit_per_million / 1000000;
    if (edits == 0 && io->edit_per_million && pages)
        edits = 1;
    uint64_t *numbers = malloc((edits + io->new_pages + 1) * sizeof *numbers);
    if (!numbers)
        return sp_errorf(err, "out of memory for %llu pages", (unsigned long long)edits);
    size_t n = 0;
    for (uint64_t k = 0; k < edits; k++)
        numbers[n++] = wg_below(&rng, (uint32_t)(pages > UINT32_MAX ? UINT32_MAX : pages));
    qsort(numbers, n, sizeof *numbers, cmp_u64);
    size_t u = 0;
    for (size_t k = 0; k < n; k++)
        if (!u || numbers[u - 1] != numbers[k])
            numbers[u++] = numbers[k];
    n = u;
    /* New pages take page numbers past the base's, day after day. */
    for (uint64_t k = 0; k < io->new_pages; k++)
        numbers[n++] = pages + (uint64_t)(day - 1) * io->new_pages + k;

    wg_page_list list = {.numbers = numbers,
                         .n = n,
                         .title_seed = base->seed,
                         .title_size = base->size,
                         .min_revisions = 1,
                         .max_revisions = 4,
                         .time_from = (uint64_t)days * 86400 - 12 * 3600,
                         .time_span = 12 * 3600};
    wg_dump_options o = {.seed = wg_hash3(base->seed, date, 1),
                         .dup_per_million = base->dup_per_million,
                         .pages_per_stream = format == WG_FORMAT_BZ2_MULTI ? 100 : 0,
                         .pages = &list};
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-%08u-pages-meta-hist-incr%s", io->dir, io->wiki,
             (unsigned)date, suffix(format));
    sp_output out;
    wg_sink *sink = NULL;
    wg_dump_stats st;
    int rc = sp_output_open(&out, path, err);
    if (!rc) {
        rc = wg_sink_open(&sink, format, threads, out.fd, out.name, err);
        if (!rc)
            rc = wg_dump_write(&o, sink, &st, err);
        if (!rc)
            rc = sp_output_commit(&out, err);
        else
            sp_output_abort(&out);
    }
    wg_sink_destroy(sink);
    free(numbers);
    return rc;
}

int wg_incr_write(const wg_incr_options *io, const wg_dump_options *base, wg_format format,
                  unsigned threads, unsigned *files, sp_error *err) {
    uint64_t pages = 0;
    *files = 0;
    if (base_pages(base, &pages, err))
        return -1;
    for (unsigned day = 1; day <= io->days; day++) {
        if (write_day(io, base, pages, day, format, threads, err))
            return -1;
        (*files)++;
    }
    return 0;
}
