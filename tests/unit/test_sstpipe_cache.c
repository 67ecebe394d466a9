/*
 * test_sstpipe_cache.c: a compressed table's cache of unpacked blocks
 * (block_cache.h) keeps a mapped table's memory within its budget. Every
 * key of a table whose records unpack to many times the budget is looked
 * up, twice over in a shuffled order, through libsstpipe; the process's
 * anonymous resident memory (RssAnon: the mapped file's pages are not in
 * it) grows by no more than the budget and a stated slack, where keeping
 * every block unpacked until close grows with the table. Every value is
 * checked against its record. Skipped under AddressSanitizer, whose quarantine keeps
 * freed memory resident on purpose.
 */
#include "stages/sst/sstpipe.h"
#include "test_sst_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#define BS 4096u
#define CS 4096u
#define MVB 2000u
#define RECORDS 12000
#define BUDGET ((size_t)512 << 10)
/* What may be resident beyond the budget: the thread's buffers (a block
 * unpacked at most 16 x BS, a chunk of values), and the allocator's own
 * rounding and free lists. */
#define SLACK ((size_t)2 << 20)

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

/* The process's anonymous resident bytes (/proc/self/status). */
static size_t rss_anon(void) {
    FILE *f = fopen("/proc/self/status", "r");
    assert_non_null(f);
    char line[256];
    size_t kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "RssAnon: %zu kB", &kb) == 1)
            break;
    fclose(f);
    assert_true(kb > 0);
    return kb << 10;
}

static void test_cache_bounds_memory(void **state) {
    (void)state;
#ifdef UNDER_ASAN
    skip();
#endif
    char *dir = test_dir_make("sstpipe-cache");
    char *path = t_path(dir, "t.sst");
    trecs s = t_wordy(41, RECORDS, MVB);
    table_options to = {.block_size = BS,
                        .cluster_size = CS,
                        .max_value_bytes = MVB,
                        .compress = true,
                        .compression_level = 1,
                        .dictionary_size = 4096};
    sp_error err = {0};
    table_stats st;
    assert_int_equal(t_write_opts(path, &to, &s, &st, &err), 0);
    /* The records unpacked are many times the budget. */
    assert_true(st.plain_bytes > 10 * BUDGET);

    sstpipe_options *o = sstpipe_options_new();
    sstpipe_options_set_block_cache(o, BUDGET);
    char *msg = NULL;
    sstpipe_table *t = sstpipe_open_with(path, o, &msg);
    sstpipe_options_free(o);
    if (!t)
        fail_msg("%s", msg);
    size_t *order = malloc(2 * s.n * sizeof *order);
    uint64_t seed = 7;
    for (size_t i = 0; i < 2 * s.n; i++)
        order[i] = i % s.n;
    for (size_t i = 2 * s.n; i > 1; i--) {
        size_t j = (size_t)(t_rand(&seed) % i), x = order[i - 1];
        order[i - 1] = order[j];
        order[j] = x;
    }
    size_t before = rss_anon();
    for (size_t n = 0; n < 2 * s.n; n++) {
        const trec *r = &s.r[order[n]];
        const void *v;
        size_t vlen;
        assert_int_equal(sstpipe_get(t, r->key, r->klen, &v, &vlen, &msg), 1);
        assert_int_equal(vlen, r->vlen);
        assert_memory_equal(v, r->val, vlen);
    }
    size_t after = rss_anon();
    size_t grown = after > before ? after - before : 0;
    print_message("records unpacked %llu bytes, budget %zu, anonymous memory grew %zu\n",
                  (unsigned long long)st.plain_bytes, BUDGET, grown);
    assert_true(grown <= BUDGET + SLACK);
    sstpipe_close(t);
    free(order);
    t_free(&s);
    free(path);
    test_dir_remove(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cache_bounds_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
