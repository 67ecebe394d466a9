/*
 * test_sort_merge.c: the merger (merge.h) over in-memory sources: key
 * order, the highest source index winning a shared key, replaced records
 * counted, peek agreeing with next, empty sources, and an error from a
 * source passed on.
 */
#include "stages/common/key.h"
#include "stages/sort/merge.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

/* A source over a NULL-terminated array of "key=value" strings. */
typedef struct array_source {
    merge_source src;
    const char *const *items;
    size_t next;
    const char *value;
    int fail_at; /* next() fails on this item (-1: never) */
} array_source;

static int array_next(merge_source *s, sp_error *err) {
    array_source *a = (array_source *)s;
    if ((int)a->next == a->fail_at)
        return sp_errorf(err, "source broke");
    const char *it = a->items[a->next];
    if (!it)
        return 0;
    a->next++;
    const char *eq = strchr(it, '=');
    s->key = (const uint8_t *)it;
    s->key_len = (uint32_t)(eq - it);
    s->prefix = sp_key_prefix(s->key, s->key_len);
    a->value = eq + 1;
    s->value_len = strlen(eq + 1);
    return 1;
}

static int array_value(merge_source *s, const uint8_t **value, sp_error *err) {
    (void)err;
    *value = (const uint8_t *)((array_source *)s)->value;
    return 0;
}

static const merge_source_ops array_ops = {.next = array_next, .value = array_value};

static void array_init(array_source *a, const char *const *items) {
    memset(a, 0, sizeof *a);
    a->src.ops = &array_ops;
    a->items = items;
    a->fail_at = -1;
}

/* Pulls everything from m into "k=v from;" form. */
static void drain(merger *m, char *out, size_t cap) {
    size_t o = 0;
    sp_record rec;
    unsigned from;
    int got;
    out[0] = '\0';
    for (;;) {
        const uint8_t *pk;
        uint32_t pl;
        unsigned pf;
        sp_error err = {0};
        int peeked = merger_peek(m, &pk, &pl, &pf, &err);
        got = merger_next(m, &rec, &from, &err);
        assert_int_equal(peeked, got);
        if (got != 1)
            break;
        assert_int_equal(pf, from);
        assert_int_equal(pl, rec.key_len);
        o += (size_t)snprintf(out + o, cap - o, "%.*s=%.*s %u;", (int)rec.key_len, rec.key,
                              (int)rec.value_len, rec.value, from);
    }
    assert_int_equal(got, 0);
}

static void test_latest_source_wins(void **state) {
    (void)state;
    static const char *const a[] = {"apple=a0", "cherry=a0", "fig=a0", NULL};
    static const char *const b[] = {"apple=b1", "banana=b1", "fig=b1", NULL};
    static const char *const c[] = {"cherry=c2", "fig=c2", "zebra=c2", NULL};
    array_source s[3];
    array_init(&s[0], a);
    array_init(&s[1], b);
    array_init(&s[2], c);
    merge_source *src[3] = {&s[0].src, &s[1].src, &s[2].src};
    unsigned heap[3];
    merger m;
    sp_error err = {0};
    assert_int_equal(merger_init(&m, src, 3, heap, &err), 0);
    char out[512];
    drain(&m, out, sizeof out);
    assert_string_equal(out, "apple=b1 1;banana=b1 1;cherry=c2 2;fig=c2 2;zebra=c2 2;");
    assert_int_equal(m.dups, 4);
}

static void test_empty_sources(void **state) {
    (void)state;
    static const char *const none[] = {NULL};
    static const char *const one[] = {"k=v", NULL};
    array_source s[3];
    array_init(&s[0], none);
    array_init(&s[1], one);
    array_init(&s[2], none);
    merge_source *src[3] = {&s[0].src, &s[1].src, &s[2].src};
    unsigned heap[3];
    merger m;
    sp_error err = {0};
    assert_int_equal(merger_init(&m, src, 3, heap, &err), 0);
    char out[64];
    drain(&m, out, sizeof out);
    assert_string_equal(out, "k=v 1;");
    assert_int_equal(merger_init(&m, src, 0, heap, &err), 0);
    drain(&m, out, sizeof out);
    assert_string_equal(out, "");
}

static void test_source_error(void **state) {
    (void)state;
    static const char *const a[] = {"a=1", "b=1", "c=1", NULL};
    array_source s;
    array_init(&s, a);
    s.fail_at = 2;
    merge_source *src[1] = {&s.src};
    unsigned heap[1];
    merger m;
    sp_error err = {0};
    assert_int_equal(merger_init(&m, src, 1, heap, &err), 0);
    sp_record rec;
    unsigned from;
    assert_int_equal(merger_next(&m, &rec, &from, &err), 1);
    assert_int_equal(merger_next(&m, &rec, &from, &err), 1);
    assert_int_equal(merger_next(&m, &rec, &from, &err), -1);
    assert_string_equal(err.msg, "source broke");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_latest_source_wins),
        cmocka_unit_test(test_empty_sources),
        cmocka_unit_test(test_source_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
