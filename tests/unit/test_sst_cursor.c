/*
 * test_sst_cursor.c: the cursor over a table or a table set (cursor.h).
 * The same records as one table and as a set of three shards cut at
 * "k0200" and "k0400" answer alike: a whole walk, seeks before, inside and
 * after each shard boundary and past either end, next across shards, an
 * end and a prefix's end (the set then opening no shard past it); a move
 * recorded from outside on a set's shard cursor (sst_cursor_moved). A
 * damaged middle block of the middle shard stops the set's walk at the
 * last record before it with an error naming the shard file and the
 * block, and the cursor stays at that error.
 */
#include "stages/sst/cursor.h"
#include "test_sst_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#define RECORDS 600
#define SHARDS 3
#define BLOCK 512

#define OPTS_FMT                                                                                   \
    "{\"format_version\": 1, \"block_size\": %u, \"cluster_size\": 512, "                          \
    "\"max_value_bytes\": 64, \"restart_interval\": 16, \"checksum\": \"xxh3-64\"}"

typedef struct fixture {
    char *dir;
    char *one;    /* every record, one table */
    char *set;    /* the set's directory */
    trecs recs;   /* record i: key kNNNN, NNNN = i */
    table_set *m; /* the set's manifest */
    sst_reader *table, *shard[SHARDS];
    size_t opened; /* shard cursors the set has opened */
} fixture;

static void key_of(char out[16], size_t i) {
    snprintf(out, 16, "k%04zu", i);
}

/* Shard i holds records [bound(i), bound(i + 1)). */
static size_t bound(size_t i) {
    return i * RECORDS / SHARDS;
}

static void open_readers(fixture *f) {
    sp_error err = {0};
    if (!(f->m = table_set_read(f->set, &err)) || !(f->table = sst_reader_open(f->one, &err)))
        fail_msg("%s", err.msg);
    for (size_t i = 0; i < SHARDS; i++)
        if (!(f->shard[i] = sst_reader_open(table_set_shard_path(f->m, i), &err)))
            fail_msg("%s", err.msg);
}

static void close_readers(fixture *f) {
    sst_reader_close(f->table);
    for (size_t i = 0; i < SHARDS; i++)
        sst_reader_close(f->shard[i]);
    table_set_free(f->m);
}

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    if (!f || !(f->dir = test_dir_make("sst-cursor")))
        return -1;
    for (size_t i = 0; i < RECORDS; i++) {
        char k[16];
        uint8_t v[40];
        key_of(k, i);
        memset(v, (int)('a' + i % 26), sizeof v);
        t_add(&f->recs, (const uint8_t *)k, 5, v, sizeof v);
    }
    f->one = t_path(f->dir, "one.sst");
    sp_error err = {0};
    if (t_write(f->one, BLOCK, 512, 64, &f->recs, NULL, &err))
        fail_msg("%s", err.msg);
    f->set = t_path(f->dir, "set");
    mkdir(f->set, 0755);
    table_set_shard sh[SHARDS] = {0};
    char names[SHARDS][16], los[SHARDS][16], sums[SHARDS][TABLE_SET_CHECKSUM_HEX];
    for (size_t i = 0; i < SHARDS; i++) {
        snprintf(names[i], sizeof names[i], "s%zu.sst", i);
        key_of(los[i], bound(i));
        sh[i] = (table_set_shard){.file = names[i],
                                  .has_lo = i > 0,
                                  .lo = (const uint8_t *)los[i],
                                  .lo_len = 5,
                                  .records = bound(i + 1) - bound(i)};
        if (i > 0) {
            sh[i - 1].has_hi = true;
            sh[i - 1].hi = sh[i].lo;
            sh[i - 1].hi_len = 5;
        }
    }
    for (size_t i = 0; i < SHARDS; i++) {
        trecs part = {0};
        for (size_t j = bound(i); j < bound(i + 1); j++)
            t_add(&part, f->recs.r[j].key, f->recs.r[j].klen, f->recs.r[j].val, f->recs.r[j].vlen);
        char *p = t_path(f->set, names[i]);
        table_stats st = {0};
        if (t_write(p, BLOCK, 512, 64, &part, &st, &err) ||
            table_set_file_checksum(p, sums[i], &err))
            fail_msg("%s", err.msg);
        sh[i].bytes = st.file_size;
        sh[i].checksum = sums[i];
        free(p);
        t_free(&part);
    }
    char opts[256];
    snprintf(opts, sizeof opts, OPTS_FMT, BLOCK);
    if (table_set_write_manifest(f->set, sh, SHARDS, opts, "[]", &err))
        fail_msg("%s", err.msg);
    open_readers(f);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    close_readers(f);
    test_dir_remove(f->dir);
    free(f->one);
    free(f->set);
    t_free(&f->recs);
    free(f);
    return 0;
}

static sst_cursor *open_shard(void *ctx, size_t i, sp_error *err) {
    fixture *f = ctx;
    f->opened++;
    return sst_cursor_table(f->shard[i], err);
}

static sst_cursor *cursor(fixture *f, bool set) {
    sp_error err = {0};
    sst_cursor *c =
        set ? sst_cursor_set(f->m, open_shard, f, &err) : sst_cursor_table(f->table, &err);
    if (!c)
        fail_msg("%s", err.msg);
    f->opened = 0;
    return c;
}

/* The cursor answered rc and, at a record, is at record i. */
static void is_at(const fixture *f, const sst_cursor *c, int rc, size_t i) {
    if (rc < 0)
        fail_msg("%s", sst_cursor_error(c)->msg);
    if (i == RECORDS) {
        assert_int_equal(rc, 0);
        return;
    }
    assert_int_equal(rc, 1);
    const trec *r = &f->recs.r[i];
    assert_int_equal(c->key_len, r->klen);
    assert_memory_equal(c->key, r->key, r->klen);
    assert_int_equal(c->value_len, r->vlen);
    assert_memory_equal(c->value, r->val, r->vlen);
}

static int seek_str(sst_cursor *c, const char *key) {
    return sst_cursor_seek(c, (const uint8_t *)key, strlen(key));
}

static void test_walks(void **state) {
    fixture *f = *state;
    for (int set = 0; set < 2; set++) {
        /* Every record, in order, from a cursor never sought. */
        sst_cursor *c = cursor(f, set);
        for (size_t i = 0; i <= RECORDS; i++)
            is_at(f, c, sst_cursor_next(c), i);
        is_at(f, c, sst_cursor_next(c), RECORDS);
        /* Before, at and after either end. */
        is_at(f, c, seek_str(c, "a"), 0);
        is_at(f, c, seek_str(c, "k0000"), 0);
        is_at(f, c, seek_str(c, "k0599"), RECORDS - 1);
        is_at(f, c, sst_cursor_next(c), RECORDS);
        is_at(f, c, seek_str(c, "k0599!"), RECORDS);
        is_at(f, c, seek_str(c, "z"), RECORDS);
        is_at(f, c, sst_cursor_seek(c, NULL, 0), 0);
        /* Around each shard boundary b: the last key below it, a key
         * between that one and b (below the next shard's range), b, and
         * a key inside the next shard; each then walked on across it. */
        for (size_t s = 1; s < SHARDS; s++) {
            size_t b = bound(s);
            char k[16];
            key_of(k, b - 1);
            is_at(f, c, seek_str(c, k), b - 1);
            is_at(f, c, sst_cursor_next(c), b);
            is_at(f, c, sst_cursor_next(c), b + 1);
            strcat(k, "~");
            is_at(f, c, seek_str(c, k), b);
            key_of(k, b);
            is_at(f, c, seek_str(c, k), b);
            strcat(k, "!");
            is_at(f, c, seek_str(c, k), b + 1);
            key_of(k, b - 30);
            is_at(f, c, seek_str(c, k), b - 30);
            for (size_t i = b - 29; i < b + 30; i++)
                is_at(f, c, sst_cursor_next(c), i);
        }
        sst_cursor_free(c);
        /* An end at the last boundary: the walk stops before it, and the
         * set opens neither the shard past it nor any other beyond the one
         * sought into. */
        c = cursor(f, set);
        sst_cursor_set_end(c, (const uint8_t *)"k0400", 5);
        is_at(f, c, seek_str(c, "k0398"), 398);
        is_at(f, c, sst_cursor_next(c), 399);
        is_at(f, c, sst_cursor_next(c), RECORDS);
        assert_int_equal(f->opened, set ? 1 : 0);
        sst_cursor_free(c);
        /* A prefix's end: k03.. is records 300 to 399, in the middle shard. */
        c = cursor(f, set);
        sst_cursor_set_prefix_end(c, (const uint8_t *)"k03", 3);
        is_at(f, c, seek_str(c, "k03"), 300);
        for (size_t i = 301; i < 400; i++)
            is_at(f, c, sst_cursor_next(c), i);
        is_at(f, c, sst_cursor_next(c), RECORDS);
        assert_int_equal(f->opened, set ? 1 : 0);
        sst_cursor_free(c);
    }
}

/* A move made outside seek and next (the merge's skip of a whole block)
 * recorded on a set's shard cursor: at the shard's end, the set's next
 * record is the next shard's first. */
static void test_moved(void **state) {
    fixture *f = *state;
    sst_cursor *c = cursor(f, false);
    is_at(f, c, seek_str(c, "k0150"), 150);
    assert_null(sst_cursor_set_shard(c));
    sst_cursor_free(c);
    c = cursor(f, true);
    assert_null(sst_cursor_set_shard(c));
    is_at(f, c, seek_str(c, "k0150"), 150);
    sst_cursor *shard = sst_cursor_set_shard(c);
    assert_non_null(shard);
    is_at(f, shard, 1, 150);
    assert_int_equal(sst_cursor_moved(shard, 0), 0);
    is_at(f, c, sst_cursor_next(c), bound(1));
    sst_cursor_free(c);
}

static void test_damaged_shard(void **state) {
    fixture *f = *state;
    /* Block 1 of the middle shard damaged: its index is whole, so it opens. */
    char *p = t_path(f->set, "s1.sst");
    size_t len;
    uint8_t *b = t_read_file(p, &len);
    b[BLOCK + 3] ^= 0x40;
    assert_int_equal(t_write_file(p, b, len), 0);
    free(b);
    close_readers(f);
    open_readers(f);
    sst_cursor *c = cursor(f, true);
    /* The records up to the end of the shard's block 0, then the error. */
    int rc;
    size_t n = 0;
    while ((rc = sst_cursor_next(c)) == 1) {
        is_at(f, c, rc, n);
        n++;
    }
    assert_int_equal(rc, -1);
    assert_true(n > bound(1) && n < bound(2));
    const char *msg = sst_cursor_error(c)->msg;
    if (!strstr(msg, "s1.sst: block 1 at byte 512"))
        fail_msg("%s", msg);
    /* It stays there, and a seek into a whole shard does not clear it. */
    assert_int_equal(sst_cursor_next(c), -1);
    assert_int_equal(seek_str(c, "k0500"), -1);
    assert_string_equal(sst_cursor_error(c)->msg, msg);
    sst_cursor_free(c);
    /* A seek past the damage reads no damaged block. */
    c = cursor(f, true);
    is_at(f, c, seek_str(c, "k0500"), 500);
    sst_cursor_free(c);
    free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_walks),
        cmocka_unit_test(test_moved),
        cmocka_unit_test(test_damaged_shard),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
