/*
 * test_serve_compressed.c: serve's answer from a compressed table (format
 * version 2) is copied by the HTTP layer as it is queued. Such a table's
 * value is a copy in the looking-up thread's buffer, valid until that
 * thread's next lookup (sstpipe.h, Lifetimes), while the HTTP layer may
 * send a response after its thread has answered another request: the
 * reply must say SERVE_BODY_COPY, never point into the table as a version
 * 1 table's value does (SERVE_BODY_TABLE, kept: no copy there). A /v1/get
 * is handled on each kind of table, opened through the holder as serve
 * opens it, and its body checked against the record.
 */
#include "stages/serve/serve_holder.h"
#include "stages/serve/serve_request.h"
#include "test_sst_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#define RECORDS 300

/* The query parameters of a /v1/get of the record of key ctx: key, raw=1. */
static const char *param(void *ctx, const char *name) {
    if (!strcmp(name, "key"))
        return ctx;
    return !strcmp(name, "raw") ? "1" : NULL;
}

/* Handles GET /v1/get?key=KEY&raw=1 (query: room for the query text). */
static void get(const serve_handler *h, served_table *t, char *key, char *query, serve_reply *out) {
    snprintf(query, 64, "key=%s&raw=1", key);
    serve_request req = {
        .method = "GET", .path = "/v1/get", .param = param, .param_ctx = key, .query = query};
    memset(out, 0, sizeof *out);
    serve_handle(h, &req, t, out);
    assert_int_equal(out->status, 200);
}

/* The reply's kind for a /v1/get of key0007 in a table of RECORDS records,
 * compressed or not; its body is checked against the record. */
static serve_body reply_kind(bool compress) {
    char *dir = test_dir_make("serve-compressed");
    char *path = t_path(dir, "t.sst");
    trecs s = {0};
    char key[32], val[400];
    for (int i = 0; i < RECORDS; i++) {
        int klen = snprintf(key, sizeof key, "key%04d", i);
        int vlen = snprintf(val, sizeof val, "the value of %s, %0*d", key, 10 + i % 200, i);
        t_add(&s, (const uint8_t *)key, (uint32_t)klen, (const uint8_t *)val, (uint32_t)vlen);
    }
    table_options to = {.block_size = 4096,
                        .cluster_size = 4096,
                        .max_value_bytes = 400,
                        .compress = compress,
                        .compression_level = 1};
    sp_error err = {0};
    assert_int_equal(t_write_opts(path, &to, &s, NULL, &err), 0);
    serve_holder_options ho = {.target = path, .block_cache = 64 << 10};
    serve_holder *holder = serve_holder_init(&ho, &err);
    if (!holder)
        fail_msg("%s", err.msg);
    serve_metrics metrics;
    serve_metrics_init(&metrics);
    serve_handler h = {.metrics = &metrics, .prefix_limit_max = 10};
    served_table *t = serve_holder_acquire(holder);
    char want_key[] = "key0007", query[64];
    serve_reply out;
    get(&h, t, want_key, query, &out);
    const trec *want = &s.r[7];
    assert_int_equal(out.len, want->vlen);
    assert_memory_equal(out.body, want->val, want->vlen);
    serve_body kind = out.kind;
    serve_reply_destroy(&out);
    served_table_release(t);
    serve_holder_destroy(holder);
    t_free(&s);
    free(path);
    test_dir_remove(dir);
    return kind;
}

static void test_compressed_reply_is_copied(void **state) {
    (void)state;
    assert_int_equal(reply_kind(true), SERVE_BODY_COPY);
    assert_int_equal(reply_kind(false), SERVE_BODY_TABLE);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compressed_reply_is_copied),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
