/*
 * test_common_runner_kind.c: the runners' one table
 * (stages/common/runner_kind.h): every name parses to its kind and back,
 * in any case (the [cluster] runner key takes "Slurm"), other words are
 * refused, and the lists the help and messages print are the table's
 * names in its order.
 */
#include "stages/common/runner_kind.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

static const sp_runner_kind kinds[] = {SP_RUNNER_LOCAL, SP_RUNNER_PARALLEL, SP_RUNNER_SLURM};
#define N (sizeof kinds / sizeof kinds[0])

static void test_names_and_kinds_both_ways(void **state) {
    (void)state;
    assert_string_equal(sp_runner_kind_name(SP_RUNNER_LOCAL), "local");
    assert_string_equal(sp_runner_kind_name(SP_RUNNER_PARALLEL), "parallel");
    assert_string_equal(sp_runner_kind_name(SP_RUNNER_SLURM), "slurm");
    for (size_t i = 0; i < N; i++) {
        sp_runner_kind k = SP_RUNNER_LOCAL;
        assert_int_equal(sp_runner_kind_parse(sp_runner_kind_name(kinds[i]), &k), 0);
        assert_int_equal(k, kinds[i]);
    }
    assert_string_equal(sp_runner_kind_name((sp_runner_kind)N), "?");
}

static void test_any_case_and_nothing_else(void **state) {
    (void)state;
    sp_runner_kind k = SP_RUNNER_LOCAL;
    assert_int_equal(sp_runner_kind_parse("Slurm", &k), 0);
    assert_int_equal(k, SP_RUNNER_SLURM);
    assert_int_equal(sp_runner_kind_parse("PARALLEL", &k), 0);
    assert_int_equal(k, SP_RUNNER_PARALLEL);
    k = SP_RUNNER_SLURM;
    const char *refused[] = {"pbs", "", "slurm ", "loca", "locals"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        assert_int_equal(sp_runner_kind_parse(refused[i], &k), -1);
    assert_int_equal(k, SP_RUNNER_SLURM);
}

static void test_lists_follow_the_table(void **state) {
    (void)state;
    char words[64] = "", choices[64] = "";
    for (size_t i = 0; i < N; i++) {
        const char *name = sp_runner_kind_name(kinds[i]);
        snprintf(words + strlen(words), sizeof words - strlen(words), "%s%s", i ? " " : "", name);
        snprintf(choices + strlen(choices), sizeof choices - strlen(choices), "%s%s",
                 !i          ? ""
                 : i + 1 < N ? ", "
                             : " or ",
                 name);
    }
    assert_string_equal(SP_RUNNER_WORDS, words);
    assert_string_equal(SP_RUNNER_CHOICES, choices);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_and_kinds_both_ways),
        cmocka_unit_test(test_any_case_and_nothing_else),
        cmocka_unit_test(test_lists_follow_the_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
