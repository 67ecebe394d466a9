/*
 * test_common_json_file.c: the one JSON file writer
 * (stages/common/json_file.h): the document is encoded with the caller's
 * flags and ends in one newline, it replaces an earlier file whole, the
 * caller keeps its reference, and a document that could not be built or a
 * path that cannot be written is an error naming the path that leaves
 * nothing behind.
 */
#include "stages/common/json_file.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct fixture {
    char dir[64];
    char path[96];
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/test_common_json_file.XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->path, sizeof f->path, "%s/out.json", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    unlink(f->path);
    rmdir(f->dir);
    free(f);
    return 0;
}

/* The file's whole text, NUL-terminated. */
static char *slurp(const char *path) {
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    static char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = 0;
    return buf;
}

/* The names in dir other than . and .. */
static int entries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d)
        closedir(d);
    return n;
}

static void test_flags_and_one_newline(void **state) {
    fixture *f = *state;
    json_t *o = json_pack("{s:i, s:[b]}", "z", 1, "a", 1);
    sp_error err = {0};
    assert_int_equal(sp_json_file_write(o, f->path, JSON_INDENT(2), &err), 0);
    assert_string_equal(slurp(f->path), "{\n  \"z\": 1,\n  \"a\": [\n    true\n  ]\n}\n");
    assert_int_equal(sp_json_file_write(o, f->path, JSON_COMPACT | JSON_SORT_KEYS, &err), 0);
    assert_string_equal(slurp(f->path), "{\"a\":[true],\"z\":1}\n");
    /* The caller's reference is its own still. */
    assert_int_equal(o->refcount, 1);
    json_decref(o);
    assert_int_equal(entries(f->dir), 1);
}

static void test_replaces_an_earlier_file_whole(void **state) {
    fixture *f = *state;
    FILE *fp = fopen(f->path, "w");
    assert_non_null(fp);
    fputs("an earlier, much longer document than the one that replaces it\n", fp);
    assert_int_equal(fclose(fp), 0);
    json_t *a = json_array();
    sp_error err = {0};
    assert_int_equal(sp_json_file_write(a, f->path, 0, &err), 0);
    json_decref(a);
    assert_string_equal(slurp(f->path), "[]\n");
    assert_int_equal(entries(f->dir), 1);
}

static void test_errors_name_the_path_and_leave_nothing(void **state) {
    fixture *f = *state;
    sp_error err = {0};
    assert_int_equal(sp_json_file_write(NULL, f->path, 0, &err), -1);
    assert_non_null(strstr(err.msg, f->path));
    assert_int_equal(entries(f->dir), 0);
    char missing[128];
    snprintf(missing, sizeof missing, "%s/no/such/dir.json", f->dir);
    json_t *o = json_object();
    sp_error err2 = {0};
    assert_int_equal(sp_json_file_write(o, missing, 0, &err2), -1);
    json_decref(o);
    assert_non_null(strstr(err2.msg, missing));
    assert_int_equal(entries(f->dir), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_flags_and_one_newline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replaces_an_earlier_file_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors_name_the_path_and_leave_nothing, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
