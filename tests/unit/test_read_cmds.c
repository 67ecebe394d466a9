/*
 * test_read_cmds.c: `sstpipe get`, `dump` and `info` as a user runs them
 * (in process, stdout and stderr captured): values and exit codes of get,
 * dump's JSON lines parsed back and compared with the records written, the
 * info text and JSON, and damaged tables reported as errors.
 */
#include "pipeline/command/commands.h"
#include "stages/common/cli.h"
#include "test_sst_util.h"

#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

typedef struct fixture {
    char *dir, *path;
    trecs s;
} fixture;

static char *out_text, *err_text;
static size_t out_len;

static const char *const words[] = {"Alan Turing", "Ada Lovelace",        "Zürich",   "Talk:Foo",
                                    "東京",        "\"Quoted\" \\ title", "Tab\there"};
static const char *const values[] = {"mathematician\nand more",
                                     "",
                                     "city \xe2\x82\xac",
                                     "talk page",
                                     "capital",
                                     "q",
                                     "ctl \x01 byte"};

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->dir = test_dir_make("sst-test");
    f->path = t_path(f->dir, "t.sst");
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        t_add(&f->s, (const uint8_t *)words[i], (uint32_t)strlen(words[i]),
              (const uint8_t *)values[i], (uint32_t)strlen(values[i]));
    t_sort(&f->s);
    sp_error err = {0};
    *state = f;
    return t_write(f->path, 1024, 512, 100, &f->s, NULL, &err);
}

static int teardown(void **state) {
    fixture *f = *state;
    t_free(&f->s);
    test_dir_remove(f->dir);
    free(f->path);
    free(f);
    return 0;
}

static char *slurp_fd(int fd, size_t *len) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    uint8_t *b = t_read_file(path, len);
    b[*len] = 0;
    return (char *)b;
}

/* Runs cmd with args, capturing stdout and stderr. */
static int run(const sp_command *cmd, int argc, ...) {
    char *argv[16];
    va_list ap;
    va_start(ap, argc);
    argv[0] = "cmd";
    for (int i = 1; i < argc; i++)
        argv[i] = va_arg(ap, char *);
    va_end(ap);
    argv[argc] = NULL;
    FILE *o = tmpfile(), *e = tmpfile();
    fflush(stdout);
    fflush(stderr);
    int so = dup(1), se = dup(2);
    dup2(fileno(o), 1);
    dup2(fileno(e), 2);
    int rc = sp_command_main(cmd, argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(so, 1);
    dup2(se, 2);
    close(so);
    close(se);
    free(out_text);
    free(err_text);
    size_t elen;
    out_text = slurp_fd(fileno(o), &out_len);
    err_text = slurp_fd(fileno(e), &elen);
    fclose(o);
    fclose(e);
    return rc;
}

static void test_get(void **state) {
    fixture *f = *state;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        assert_int_equal(run(&get_command, 3, f->path, words[i]), 0);
        assert_int_equal(out_len, strlen(values[i]) + 1);
        assert_memory_equal(out_text, values[i], strlen(values[i]));
        assert_int_equal(out_text[out_len - 1], '\n');
    }
    assert_int_equal(run(&get_command, 3, f->path, "Alan"), SP_EXIT_NO);
    assert_int_equal(out_len, 0);
    assert_int_equal(run(&get_command, 4, f->path, "--", "-dash key"), SP_EXIT_NO);
    assert_int_equal(run(&get_command, 3, f->path, "\x7f\x7f"), SP_EXIT_NO);
    assert_int_equal(run(&get_command, 2, "--help"), 0);
    assert_non_null(strstr(out_text, "usage: sstpipe get FILE KEY"));
    assert_int_equal(run(&get_command, 2, f->path), 2);
    assert_int_equal(run(&get_command, 3, "/nonexistent.sst", "k"), 2);
    assert_non_null(strstr(err_text, "sstpipe: /nonexistent.sst: cannot open"));
}

static void test_get_on_damaged_block_is_an_error(void **state) {
    fixture *f = *state;
    size_t n;
    uint8_t *b = t_read_file(f->path, &n);
    b[10] ^= 0x40;
    assert_int_equal(t_write_file(f->path, b, n), 0);
    free(b);
    assert_int_equal(run(&get_command, 3, f->path, "Ada Lovelace"), SP_EXIT_FAIL);
    assert_int_equal(out_len, 0);
    assert_non_null(strstr(err_text, "t.sst: block 0 at byte 0: block checksum mismatch"));
    assert_int_equal(run(&dump_command, 2, f->path), 1);
    assert_non_null(strstr(err_text, "block checksum mismatch"));
}

static void test_dump_round_trips(void **state) {
    fixture *f = *state;
    assert_int_equal(run(&dump_command, 3, f->path, "--jsonl"), 0);
    /* UTF-8 as is, not \u-escaped; the exact line format. */
    assert_non_null(strstr(out_text, "{\"key\": \"Zürich\", \"value\": \"city €\"}\n"));
    assert_non_null(
        strstr(out_text, "{\"key\": \"Tab\\there\", \"value\": \"ctl \\u0001 byte\"}\n"));
    char *line = out_text, *nl;
    size_t i = 0;
    while ((nl = strchr(line, '\n'))) {
        json_error_t je;
        json_t *j = json_loadb(line, (size_t)(nl - line), 0, &je);
        assert_non_null(j);
        assert_true(i < f->s.n);
        json_t *k = json_object_get(j, "key"), *v = json_object_get(j, "value");
        assert_int_equal(json_string_length(k), f->s.r[i].klen);
        assert_memory_equal(json_string_value(k), f->s.r[i].key, f->s.r[i].klen);
        assert_int_equal(json_string_length(v), f->s.r[i].vlen);
        assert_memory_equal(json_string_value(v), f->s.r[i].val, f->s.r[i].vlen);
        json_decref(j);
        line = nl + 1;
        i++;
    }
    assert_int_equal(i, f->s.n);
    assert_int_equal(run(&dump_command, 3, f->path, "--xml"), 2);
}

static void test_dump_refuses_invalid_utf8(void **state) {
    fixture *f = *state;
    trecs s = {0};
    t_add(&s, (const uint8_t *)"bin", 3, (const uint8_t *)"\xff\xfe", 2);
    sp_error err = {0};
    assert_int_equal(t_write(f->path, 1024, 512, 100, &s, NULL, &err), 0);
    assert_int_equal(run(&dump_command, 2, f->path), 1);
    assert_non_null(strstr(err_text, "record 0: value is not valid UTF-8"));
    t_free(&s);
}

static void test_info(void **state) {
    fixture *f = *state;
    assert_int_equal(run(&info_command, 2, f->path), 0);
    assert_non_null(strstr(out_text, "records:          7\n"));
    assert_non_null(strstr(out_text, "block size:       1024 (1K)\n"));
    assert_non_null(strstr(out_text, "cluster size:     512\n"));
    assert_non_null(strstr(out_text, "max value bytes:  100\n"));
    assert_non_null(strstr(out_text, "format version:   1\n"));
    char line[128];
    snprintf(line, sizeof line, "bytes per record: %.1f\n", 2048.0 / 7);
    assert_non_null(strstr(out_text, line));
    assert_int_equal(run(&info_command, 3, f->path, "--json"), 0);
    json_error_t je;
    json_t *j = json_loads(out_text, 0, &je);
    assert_non_null(j);
    uint64_t kb = 0, vb = 0;
    for (size_t i = 0; i < f->s.n; i++) {
        kb += f->s.r[i].klen;
        vb += f->s.r[i].vlen;
    }
    assert_int_equal(json_integer_value(json_object_get(j, "records")), 7);
    assert_int_equal(json_integer_value(json_object_get(j, "data_blocks")), 1);
    assert_int_equal(json_integer_value(json_object_get(j, "file_size")), 2048);
    assert_int_equal(json_integer_value(json_object_get(j, "key_bytes")), kb);
    assert_int_equal(json_integer_value(json_object_get(j, "value_bytes")), vb);
    assert_int_equal(json_integer_value(json_object_get(j, "block_size")), 1024);
    assert_int_equal(json_integer_value(json_object_get(j, "format_version")), 1);
    assert_true(json_real_value(json_object_get(j, "compactness")) == (double)(kb + vb) / 2048.0);
    /* The file's bytes over its records; the values over the one data block. */
    assert_true(json_real_value(json_object_get(j, "bytes_per_record")) == 2048.0 / 7);
    assert_true(json_real_value(json_object_get(j, "compression_ratio")) == (double)vb / 1024.0);
    assert_string_equal(json_string_value(json_object_get(j, "path")), f->path);
    json_decref(j);
    assert_int_equal(run(&info_command, 2, f->dir), 1);
    assert_non_null(strstr(err_text, "not a regular file"));
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_get),
        T(test_get_on_damaged_block_is_an_error),
        T(test_dump_round_trips),
        T(test_dump_refuses_invalid_utf8),
        T(test_info),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    free(out_text);
    free(err_text);
    return failed;
}
