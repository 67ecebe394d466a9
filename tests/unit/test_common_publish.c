/*
 * test_common_publish.c: publishing (stages/common/publish.h, and
 * sp_outfile in fileio.h, which publishes through it), scratch
 * directories and tree removal (scratch.h) and the free-space check
 * (freespace.h).
 *
 * The output files here are the named kind (SSTPIPE_NO_O_TMPFILE=1, set
 * before the first one is made): their temporary name exists from the
 * start, so a test can see that it is gone after a failure, which an
 * anonymous file would hide.
 */
#include "stages/common/fileio.h"
#include "stages/common/freespace.h"
#include "stages/common/publish.h"
#include "stages/common/scratch.h"

#include "test_dir.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char *dir;

static int setup(void **state) {
    (void)state;
    dir = test_dir_make("test_common_publish");
    return dir ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    int rc = test_dir_remove(dir);
    dir = NULL;
    return rc;
}

static void path_in(char *buf, const char *name) {
    snprintf(buf, TEST_DIR_CAP, "%s/%s", dir, name);
}

static void put_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* The file's text ("" when there is none). */
static const char *text_of(const char *path) {
    static char buf[256];
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return buf;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static bool exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

/* A pid no process has: a child's, once it has exited and been reaped. */
static long dead_pid(void) {
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    assert_true(pid > 0);
    assert_int_equal(waitpid(pid, NULL, 0), pid);
    return (long)pid;
}

/* This host as the temporary names spell it. */
static void this_host(char *buf, size_t cap) {
    sp_publish_owner(buf, cap);
    *strrchr(buf, '-') = '\0';
}

/* An output's new bytes are at its path only once committed, whole: until
 * then the earlier file is there, unchanged. */
static void test_output_whole_only_at_commit(void **state) {
    (void)state;
    char out[TEST_DIR_CAP];
    path_in(out, "out.txt");
    put_file(out, "old");
    sp_outfile f;
    sp_error err = {0};
    assert_int_equal(sp_outfile_open(&f, out, &err), 0);
    assert_int_equal(sp_write_all(f.fd, "new, ", 5, out, &err), 0);
    assert_string_equal(text_of(out), "old");
    assert_int_equal(sp_write_all(f.fd, "whole", 5, out, &err), 0);
    assert_string_equal(text_of(out), "old");
    assert_int_equal(sp_outfile_commit(&f, &err), 0);
    assert_string_equal(text_of(out), "new, whole");
    assert_int_equal(test_dir_entries(dir), 1);
}

/* A failed output leaves no temporary name and no part of itself, and the
 * earlier good file as it was: given up (an error of the writer), or
 * failing at the rename (a directory with entries is in the way). */
static void test_failure_leaves_nothing(void **state) {
    (void)state;
    char out[TEST_DIR_CAP], blocked[TEST_DIR_CAP], inside[TEST_DIR_CAP];
    path_in(out, "out.txt");
    put_file(out, "good");
    sp_outfile f;
    sp_error err = {0};
    assert_int_equal(sp_outfile_open(&f, out, &err), 0);
    assert_int_equal(sp_write_all(f.fd, "half", 4, out, &err), 0);
    assert_int_equal(test_dir_entries(dir), 2); /* the named temporary file */
    sp_outfile_abort(&f);
    assert_string_equal(text_of(out), "good");
    assert_int_equal(test_dir_entries(dir), 1);

    path_in(blocked, "blocked");
    assert_int_equal(mkdir(blocked, 0755), 0);
    path_in(inside, "blocked/keep");
    put_file(inside, "kept");
    assert_int_equal(sp_outfile_open(&f, blocked, &err), 0);
    assert_int_equal(sp_write_all(f.fd, "x", 1, blocked, &err), 0);
    assert_int_equal(sp_outfile_commit(&f, &err), -1);
    assert_non_null(strstr(err.msg, "cannot rename into place"));
    assert_int_equal(test_dir_entries(dir), 2);
    assert_int_equal(test_dir_entries(blocked), 1);
    assert_string_equal(text_of(inside), "kept");
}

/* The sweep removes the temporaries (files or trees) of this host's dead
 * processes, and nothing of a live process, of another host, or under
 * another prefix. */
static void test_sweep_dead_owners_only(void **state) {
    (void)state;
    char host[SP_PUBLISH_OWNER_MAX], name[TEST_DIR_CAP], p[TEST_DIR_CAP * 2];
    this_host(host, sizeof host);
    long dead = dead_pid();
    const char *kept[4], *gone[2];
    char names[6][256];
    snprintf(names[0], sizeof names[0], "t.sst.tmp.%s-%ld", host, dead);
    snprintf(names[1], sizeof names[1], "t.sst.tmp.%s-%ld.ab12", host, dead);
    snprintf(names[2], sizeof names[2], "t.sst.tmp.%s-%ld", host, (long)getpid());
    snprintf(names[3], sizeof names[3], "t.sst.tmp.other_%s-%ld", host, dead);
    snprintf(names[4], sizeof names[4], "u.sst.tmp.%s-%ld", host, dead);
    snprintf(names[5], sizeof names[5], "t.sst.tmp.%s-%ldx", host, dead);
    gone[0] = names[0];
    gone[1] = names[1];
    kept[0] = names[2];
    kept[1] = names[3];
    kept[2] = names[4];
    kept[3] = names[5];
    for (int i = 0; i < 6; i++) {
        path_in(name, names[i]);
        if (i == 1) { /* a tree: a set's directory under construction */
            assert_int_equal(mkdir(name, 0755), 0);
            snprintf(p, sizeof p, "%s/shard-0000.sst", name);
            put_file(p, "part");
        } else {
            put_file(name, "part");
        }
    }
    assert_int_equal(sp_publish_sweep(dir, "t.sst.tmp."), 2);
    for (int i = 0; i < 2; i++) {
        path_in(name, gone[i]);
        assert_false(exists(name));
    }
    for (int i = 0; i < 4; i++) {
        path_in(name, kept[i]);
        assert_true(exists(name));
    }
    /* The owner part of this process's temporary names is what the sweep
     * reads. */
    char target[TEST_DIR_CAP], tmp[TEST_DIR_CAP * 2];
    path_in(target, "t.sst");
    sp_error err = {0};
    assert_int_equal(sp_publish_temp(target, tmp, sizeof tmp, &err), 0);
    path_in(name, names[2]);
    assert_string_equal(tmp, name);
    /* The same sweep, named by the target. */
    path_in(name, names[0]);
    put_file(name, "part");
    assert_int_equal(sp_publish_sweep_beside(target), 1);
    assert_false(exists(name));
}

/* A directory published onto one with entries is exchanged with it (the
 * old one is then at the temporary name), and an undo puts both back; a
 * publish onto nothing is undone by taking it back. */
static void test_directory_exchange_and_undo(void **state) {
    (void)state;
    char next[TEST_DIR_CAP], cur[TEST_DIR_CAP], p[TEST_DIR_CAP];
    path_in(next, "set.tmp");
    path_in(cur, "set");
    assert_int_equal(mkdir(next, 0755), 0);
    assert_int_equal(mkdir(cur, 0755), 0);
    path_in(p, "set.tmp/new");
    put_file(p, "new");
    path_in(p, "set/old");
    put_file(p, "old");
    sp_published pub;
    sp_error err = {0};
    /* Without an exchange a directory with entries is in the way. */
    assert_int_equal(sp_publish(next, cur, SP_PUBLISH_SYNC, &pub, &err), -1);
    assert_non_null(strstr(err.msg, "cannot rename to"));
    /* ... which SP_PUBLISH_KEEP takes as published already. */
    assert_int_equal(sp_publish(next, cur, SP_PUBLISH_KEEP, &pub, NULL), 1);
    path_in(p, "set/old");
    assert_true(exists(p));

    sp_error ok = {0};
    assert_int_equal(sp_publish(next, cur, SP_PUBLISH_SYNC | SP_PUBLISH_EXCHANGE, &pub, &ok), 0);
    assert_true(pub.exchanged);
    path_in(p, "set/new");
    assert_string_equal(text_of(p), "new");
    path_in(p, "set.tmp/old");
    assert_string_equal(text_of(p), "old");

    assert_int_equal(sp_publish_undo(&pub, &ok), 0);
    path_in(p, "set/old");
    assert_string_equal(text_of(p), "old");
    path_in(p, "set.tmp/new");
    assert_string_equal(text_of(p), "new");
    path_in(p, "set/new");
    assert_false(exists(p));

    /* Nothing at the target: renamed, and undone by renaming it back. */
    char fresh[TEST_DIR_CAP];
    path_in(fresh, "fresh");
    assert_int_equal(sp_publish(next, fresh, SP_PUBLISH_EXCHANGE, &pub, &ok), 0);
    assert_false(pub.exchanged);
    assert_false(exists(next));
    path_in(p, "fresh/new");
    assert_true(exists(p));
    assert_int_equal(sp_publish_undo(&pub, &ok), 0);
    assert_false(exists(fresh));
    path_in(p, "set.tmp/new");
    assert_true(exists(p));
    assert_false(ok.set);
}

/* A symlink replaced by exchange (nightly's `current`) and put back. */
static void test_symlink_exchange_and_undo(void **state) {
    (void)state;
    char link_tmp[TEST_DIR_CAP], cur[TEST_DIR_CAP], target[64];
    path_in(link_tmp, ".current.tmp");
    path_in(cur, "current");
    assert_int_equal(symlink("builds/a", cur), 0);
    assert_int_equal(symlink("builds/b", link_tmp), 0);
    sp_published pub;
    sp_error err = {0};
    assert_int_equal(sp_publish(link_tmp, cur, SP_PUBLISH_EXCHANGE | SP_PUBLISH_UNDO, &pub, &err),
                     0);
    ssize_t n = readlink(cur, target, sizeof target - 1);
    assert_true(n > 0);
    target[n] = '\0';
    assert_string_equal(target, "builds/b");
    assert_int_equal(sp_publish_undo(&pub, &err), 0);
    n = readlink(cur, target, sizeof target - 1);
    assert_true(n > 0);
    target[n] = '\0';
    assert_string_equal(target, "builds/a");
}

/* A tree goes whole, a symlink in it is removed and not followed, and a
 * path that is not there is no error. */
static void test_remove_tree(void **state) {
    (void)state;
    char tree[TEST_DIR_CAP], p[TEST_DIR_CAP], outside[TEST_DIR_CAP];
    path_in(outside, "outside");
    put_file(outside, "stays");
    path_in(tree, "tree");
    assert_int_equal(mkdir(tree, 0755), 0);
    path_in(p, "tree/sub");
    assert_int_equal(mkdir(p, 0755), 0);
    path_in(p, "tree/sub/f");
    put_file(p, "x");
    path_in(p, "tree/link");
    assert_int_equal(symlink(outside, p), 0);
    sp_error err = {0};
    assert_int_equal(sp_remove_tree(tree, &err), 0);
    assert_false(exists(tree));
    assert_string_equal(text_of(outside), "stays");
    assert_int_equal(sp_remove_tree(tree, &err), 0);
    assert_int_equal(sp_remove_tree(outside, &err), 0);
    assert_false(exists(outside));
    assert_false(err.set);
}

/* A scratch directory is new, under the base given, and removed with what
 * is left in it. */
static void test_scratch_dir(void **state) {
    (void)state;
    sp_scratch_dir d;
    sp_error err = {0};
    assert_int_equal(sp_scratch_dir_create(&d, dir, "sstpipe-test", &err), 0);
    assert_int_equal(strncmp(d.path, dir, strlen(dir)), 0);
    char p[TEST_DIR_CAP * 2];
    snprintf(p, sizeof p, "%s/left", d.path);
    put_file(p, "left");
    assert_int_equal(sp_scratch_dir_remove(&d, &err), 0);
    assert_null(d.path);
    assert_int_equal(test_dir_entries(dir), 0);
    assert_int_equal(sp_scratch_dir_remove(&d, &err), 0);
    char missing[TEST_DIR_CAP];
    path_in(missing, "missing/below");
    assert_int_equal(sp_scratch_dir_create(&d, missing, "x", &err), -1);
    assert_non_null(strstr(err.msg, "cannot create the scratch directory"));
}

static void test_free_bytes(void **state) {
    (void)state;
    uint64_t avail = 0;
    sp_error err = {0};
    assert_int_equal(sp_free_bytes(dir, &avail, &err), 0);
    assert_true(avail > 0);
    char missing[TEST_DIR_CAP];
    path_in(missing, "missing");
    assert_int_equal(sp_free_bytes(missing, &avail, &err), -1);
    assert_non_null(strstr(err.msg, "cannot check free space"));
}

int main(void) {
    /* Named output files, whose temporary names a failure must remove. */
    setenv(SP_NO_O_TMPFILE_ENV, "1", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_output_whole_only_at_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failure_leaves_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sweep_dead_owners_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_directory_exchange_and_undo, setup, teardown),
        cmocka_unit_test_setup_teardown(test_symlink_exchange_and_undo, setup, teardown),
        cmocka_unit_test_setup_teardown(test_remove_tree, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scratch_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_free_bytes, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
