/*
 * test_command.c: the command table (pipeline/command/command.h): every command's
 * declaration is well-formed (names unique, keys and help where they must
 * be), and the parser built from a table sets config keys from flags with
 * the flag as origin, keeps the other flags in order, checks the operand
 * count and handles --help, unknown flags and "--".
 */
#include "pipeline/command/commands.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static void check_unique(const sp_flag *a, const sp_flag *b, const char *cmd) {
    if (!strcmp(a->name, b->name))
        fail_msg("%s: --%s declared twice", cmd, a->name);
    if (a->short_name && a->short_name == b->short_name)
        fail_msg("%s: -%c declared twice", cmd, a->short_name);
}

static void test_every_command_is_well_formed(void **state) {
    (void)state;
    size_t n = 0;
    for (const sp_command *const *c = sp_commands; *c; c++, n++) {
        const sp_command *cmd = *c;
        assert_ptr_equal(sp_command_find(cmd->name), cmd);
        assert_non_null(cmd->summary);
        assert_non_null(cmd->synopsis);
        assert_non_null(cmd->description);
        assert_non_null(cmd->run);
        assert_non_null(cmd->operand_error);
        assert_true(cmd->n_flags <= SP_MAX_FLAGS);
        assert_true(cmd->min_operands >= 0);
        assert_true(cmd->max_operands < 0 || cmd->max_operands >= cmd->min_operands);
        /* Each operand has a name for help and completion. */
        assert_true(cmd->n_operands >= (size_t)cmd->min_operands);
        for (size_t i = 0; i < cmd->n_operands; i++)
            assert_non_null(cmd->operands[i].name);
        for (size_t i = 0; i < cmd->n_flags; i++) {
            const sp_flag *f = &cmd->flags[i];
            int key = sp_flag_key(f);
            assert_true(key >= -1 && key < CONFIG_KEY_COUNT);
            /* A keyed flag with an argument is described by its key; every
             * other flag needs its own help, and a keyed switch a value. */
            if (key < 0 || !f->arg)
                assert_non_null(f->help);
            else if (f->help)
                fail_msg("%s --%s: help text beside its key's", cmd->name, f->name);
            if (key >= 0 && !f->arg)
                assert_non_null(f->value);
            if (f->complete == SP_COMPLETE_WORDS)
                assert_non_null(f->words);
            for (size_t k = 0; k < sp_n_common_flags; k++)
                check_unique(f, &sp_common_flags[k], cmd->name);
            for (size_t k = i + 1; k < cmd->n_flags; k++)
                check_unique(f, &cmd->flags[k], cmd->name);
        }
    }
    assert_true(n >= 14);
    assert_null(sp_command_find("nosuch"));
}

/* ------------------------------------------------------------ the parser */

enum { F_OUT, F_LIST, F_SWITCH };

static const sp_flag flags[] = {
    [F_OUT] = {"out", 'o', "FILE", 0, NULL, "where", SP_COMPLETE_FILE, NULL},
    [F_LIST] = {"item", 0, "X", 0, NULL, "repeatable", SP_COMPLETE_NONE, NULL},
    [F_SWITCH] = {"loud", 'l', NULL, 0, NULL, "a switch", SP_COMPLETE_NONE, NULL},
    {"block-size", 0, "SIZE", SP_KEY(CONFIG_SST_BLOCK_SIZE), NULL, NULL, SP_COMPLETE_NONE, NULL},
    {"skip-redirects", 0, NULL, SP_KEY(CONFIG_EXTRACT_REDIRECTS), "skip", "drop them",
     SP_COMPLETE_NONE, NULL},
};

/* Words, not files: a FILE operand that does not exist is refused (e2e). */
static const sp_operand operands[] = {{"A", SP_COMPLETE_NONE, NULL}, {"B", SP_COMPLETE_NONE, NULL}};

/* What the last run saw. */
static struct {
    int runs;
    char out[64], items[64], operands[64], origin[64];
    unsigned loud;
    uint64_t block_size;
    bool skip;
} seen;

static int record(sp_cmdline *cl) {
    seen.runs++;
    snprintf(seen.out, sizeof seen.out, "%s", cl->value[F_OUT] ? cl->value[F_OUT] : "-");
    seen.items[0] = seen.operands[0] = '\0';
    for (size_t i = 0; i < cl->n_given; i++)
        if (cl->given[i].flag == F_LIST)
            strncat(seen.items, cl->given[i].value, sizeof seen.items - strlen(seen.items) - 1);
    for (int i = 0; i < cl->n_operands; i++)
        strncat(seen.operands, cl->operands[i], sizeof seen.operands - strlen(seen.operands) - 1);
    seen.loud = cl->count[F_SWITCH];
    seen.block_size = cl->cfg.sst.block_size;
    seen.skip = cl->cfg.extract.skip_redirects;
    snprintf(seen.origin, sizeof seen.origin, "%s",
             config_origin_text(&cl->cfg, CONFIG_SST_BLOCK_SIZE));
    return 0;
}

static const sp_command test_cmd = {
    .name = "test",
    .summary = "a test",
    .synopsis = "A [B] [options]",
    .description = "For the parser.",
    .flags = flags,
    .n_flags = sizeof flags / sizeof flags[0],
    .operands = operands,
    .n_operands = 2,
    .min_operands = 1,
    .max_operands = 2,
    .operand_error = "expected A and maybe B, got %d",
    .run = record,
};

static int run(const sp_command *cmd, ...) {
    char *argv[32] = {"test"};
    int argc = 1;
    va_list ap;
    va_start(ap, cmd);
    for (char *a; argc < 31 && (a = va_arg(ap, char *));)
        argv[argc++] = a;
    va_end(ap);
    memset(&seen, 0, sizeof seen);
    /* The help text goes to stdout; keep the test's output short. */
    fflush(stdout);
    FILE *saved = stdout;
    stdout = fopen("/dev/null", "w");
    int rc = sp_command_main(cmd, argc, argv);
    fclose(stdout);
    stdout = saved;
    return rc;
}

static void test_parser(void **state) {
    (void)state;
    assert_int_equal(run(&test_cmd, "a", "--item", "1", "-l", "--block-size", "16K", "--item=2",
                         "b", "-lo", "x", NULL),
                     0);
    assert_int_equal(seen.runs, 1);
    assert_string_equal(seen.out, "x");
    assert_string_equal(seen.items, "12");
    assert_string_equal(seen.operands, "ab");
    assert_int_equal(seen.loud, 2);
    assert_int_equal(seen.block_size, 16384);
    assert_string_equal(seen.origin, "--block-size");
    assert_false(seen.skip);

    /* A keyed switch sets its value; --set comes before the flags. */
    assert_int_equal(run(&test_cmd, "--skip-redirects", "--block-size", "4K", "--set",
                         "sst.block_size=2K", "a", NULL),
                     0);
    assert_true(seen.skip);
    assert_int_equal(seen.block_size, 4096);
    assert_int_equal(run(&test_cmd, "--set", "sst.block_size=2K", "a", NULL), 0);
    assert_int_equal(seen.block_size, 2048);
    assert_string_equal(seen.origin, "--set sst.block_size=2K");

    /* Usage errors never run the command. */
    assert_int_equal(run(&test_cmd, NULL), 2);
    assert_int_equal(run(&test_cmd, "a", "b", "c", NULL), 2);
    assert_int_equal(run(&test_cmd, "a", "--nosuch", NULL), 2);
    assert_int_equal(run(&test_cmd, "a", "--out", NULL), 2);
    assert_int_equal(run(&test_cmd, "a", "-o", NULL), 2);
    assert_int_equal(run(&test_cmd, "a", "--block-size", "3000", NULL), 2);
    assert_int_equal(run(&test_cmd, "a", "--loud=1", NULL), 2);
    assert_int_equal(run(&test_cmd, "a", "--set", "sst.nosuch=1", NULL), 2);
    assert_int_equal(seen.runs, 0);
    assert_int_equal(run(&test_cmd, "--help", NULL), 0);
    assert_int_equal(seen.runs, 0);

    /* After "--" everything is an operand. */
    assert_int_equal(run(&test_cmd, "--", "-l", NULL), 0);
    assert_string_equal(seen.operands, "-l");
    assert_int_equal(seen.loud, 0);
}

static void test_full_names_only(void **state) {
    (void)state;
    /* An abbreviation getopt_long would take is refused, with or without
     * its argument after '='; the full name passes. */
    assert_int_equal(run(&test_cmd, "a", "--lou", NULL), 2);
    assert_int_equal(run(&test_cmd, "a", "--block-siz", "4K", NULL), 2);
    assert_int_equal(run(&test_cmd, "a", "--block-siz=4K", NULL), 2);
    assert_int_equal(run(&test_cmd, "--hel", NULL), 2);
    assert_int_equal(seen.runs, 0);
    assert_int_equal(run(&test_cmd, "a", "--block-size=4K", "--loud", NULL), 0);
    assert_int_equal(seen.block_size, 4096);
    /* A flag after the operands is a flag; after "--", an operand. */
    assert_int_equal(run(&test_cmd, "a", "b", "--nosuch", NULL), 2);
    assert_int_equal(run(&test_cmd, "a", "--", "-cKey", NULL), 0);
    assert_string_equal(seen.operands, "a-cKey");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_command_is_well_formed),
        cmocka_unit_test(test_parser),
        cmocka_unit_test(test_full_names_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
