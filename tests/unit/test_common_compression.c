/*
 * test_common_compression.c: the one compression sniffer
 * (stages/common/compression.h): every magic extract decodes is told and
 * named, a prefix too short for a magic is not taken for it, only "BZh"
 * with a level digit is a stream the parallel decoder takes, and a file is
 * told by its first bytes (nothing, for a file that cannot be read).
 */
#include "stages/common/compression.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct {
    const char *head;
    size_t len;
    sp_compression kind;
    const char *name;
} cases[] = {
    {"BZh91AY&SY", 10, SP_COMPRESSION_BZIP2, "bzip2"},
    {"\x1f\x8b\x08\x00", 4, SP_COMPRESSION_GZIP, "gzip"},
    {"\xfd"
     "7zXZ\x00",
     6, SP_COMPRESSION_XZ, "xz"},
    {"\x28\xb5\x2f\xfd\x00", 5, SP_COMPRESSION_ZSTD, "zstd"},
    {"<mediawiki", 10, SP_COMPRESSION_NONE, NULL},
};

static void test_every_magic_is_told_and_named(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(sp_compression_sniff(cases[i].head, cases[i].len), cases[i].kind);
        const char *name = sp_compression_name(cases[i].kind);
        if (cases[i].name)
            assert_string_equal(name, cases[i].name);
        else
            assert_null(name);
    }
}

static void test_a_short_prefix_is_nothing(void **state) {
    (void)state;
    assert_int_equal(sp_compression_sniff("BZ", 2), SP_COMPRESSION_NONE);
    assert_int_equal(sp_compression_sniff("\x1f", 1), SP_COMPRESSION_NONE);
    assert_int_equal(sp_compression_sniff("\xfd"
                                          "7zX",
                                          4),
                     SP_COMPRESSION_NONE);
    assert_int_equal(sp_compression_sniff("\x28\xb5\x2f", 3), SP_COMPRESSION_NONE);
    assert_int_equal(sp_compression_sniff("", 0), SP_COMPRESSION_NONE);
    /* The whole magic is compared, not only its first byte. */
    assert_int_equal(sp_compression_sniff("\x1f\x8c", 2), SP_COMPRESSION_NONE);
    assert_int_equal(sp_compression_sniff("BZx9", 4), SP_COMPRESSION_NONE);
}

static void test_bz2_stream_needs_its_level(void **state) {
    (void)state;
    assert_true(sp_compression_bz2_stream("BZh1", 4));
    assert_true(sp_compression_bz2_stream("BZh9xx", 6));
    assert_false(sp_compression_bz2_stream("BZh0", 4));
    assert_false(sp_compression_bz2_stream("BZh:", 4));
    assert_false(sp_compression_bz2_stream("BZhx", 4));
    assert_false(sp_compression_bz2_stream("BZh9", 3));
    assert_false(sp_compression_bz2_stream("\x1f\x8b\x08\x00", 4));
    /* Named bzip2 all the same, so the decoder that refuses it says so. */
    assert_int_equal(sp_compression_sniff("BZh0", 4), SP_COMPRESSION_BZIP2);
}

static void test_a_file_by_its_first_bytes(void **state) {
    (void)state;
    char path[] = "/tmp/test_common_compression.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(cases[i].head, 1, cases[i].len, f), cases[i].len);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(sp_compression_of_file(path), cases[i].kind);
    }
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(sp_compression_of_file(path), SP_COMPRESSION_NONE);
    unlink(path);
    assert_int_equal(sp_compression_of_file(path), SP_COMPRESSION_NONE);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_magic_is_told_and_named),
        cmocka_unit_test(test_a_short_prefix_is_nothing),
        cmocka_unit_test(test_bz2_stream_needs_its_level),
        cmocka_unit_test(test_a_file_by_its_first_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
