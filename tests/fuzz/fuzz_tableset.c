/*
 * fuzz_tableset.c: libFuzzer target for the table set manifest parser
 * (stages/sst/table_set.c), which every reader of a set runs on
 * tableset.json before opening a shard.
 *
 * The input is the manifest's text. table_set_parse either refuses it with
 * one line naming the manifest, or returns a set that keeps every promise
 * of TABLESET.md: at least one shard, shard 0 unbounded below and the last
 * above, each range non-empty and contiguous with the next, plain file
 * names with their paths under the directory, and key routing
 * (table_set_find) that sends each bound to the shard that holds it.
 */
#include "fuzz_file.h"
#include "stages/common/key.h"
#include "stages/sst/table_set.h"

#include <stdio.h>
#include <string.h>

#define NAME "fuzz-set/tableset.json"

static void check_set(const table_set *s) {
    size_t n = table_set_count(s);
    if (n == 0)
        fuzz_fail("a set without shards was accepted");
    for (size_t i = 0; i < n; i++) {
        const table_set_shard *sh = table_set_shard_at(s, i);
        if ((i == 0) == sh->has_lo || (i == n - 1) == sh->has_hi)
            fuzz_fail("shard %zu: unbounded where it may not be, or bounded at an end", i);
        if (strncmp(table_set_shard_path(s, i), "fuzz-set/", 9) != 0 ||
            strchr(table_set_shard_path(s, i) + 9, '/'))
            fuzz_fail("shard %zu: its path leaves the directory: %s", i,
                      table_set_shard_path(s, i));
        if (sh->has_lo && sh->has_hi && sp_key_cmp(sh->lo, sh->lo_len, sh->hi, sh->hi_len) >= 0)
            fuzz_fail("shard %zu: an empty range was accepted", i);
        if (i + 1 < n) {
            const table_set_shard *nx = table_set_shard_at(s, i + 1);
            if (sp_key_cmp(sh->hi, sh->hi_len, nx->lo, nx->lo_len) != 0)
                fuzz_fail("shards %zu and %zu are not contiguous", i, i + 1);
        }
        if (sh->has_lo) {
            size_t f = table_set_find(s, sh->lo, sh->lo_len);
            if (f != i || !table_set_shard_holds(sh, sh->lo, sh->lo_len))
                fuzz_fail("shard %zu's lo routes to shard %zu", i, f);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sp_error err = {0};
    table_set *s = table_set_parse((const char *)data, size, NAME, "fuzz-set", &err);
    if (!s)
        fuzz_check_error(&err, NAME);
    else
        check_set(s);
    table_set_free(s);
    return 0;
}
