/*
 * bench_keys.c: writes the key sequence `sstpipe profile FILE N --seed S`
 * looks up, so the benchmark times the mtbl peer on exactly the same keys.
 *
 *   bench_keys FILE N SEED OUT
 *
 * It calls the profile's own drawing code (stages/profile/profile_keys.c,
 * no misses) rather than a copy of it, and prints the key_sequence_hash
 * that `sstpipe profile --json` reports for the same FILE, N and SEED: the
 * benchmark compares the two. OUT holds, per key, a u32 little-endian
 * length and the key bytes (the format mtbl_peer lookup reads).
 */
#include "stages/profile/profile_keys.h"
#include "stages/sst/sstpipe.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: bench_keys FILE N SEED OUT\n");
        return 2;
    }
    sp_error err = {0};
    char *msg = NULL;
    sstpipe_table *t = sstpipe_open(argv[1], &msg);
    if (!t) {
        fprintf(stderr, "bench_keys: %s\n", msg);
        return 1;
    }
    profile_keys keys;
    if (profile_keys_draw(t, strtoull(argv[2], NULL, 10), 0, strtoull(argv[3], NULL, 10), &keys,
                          &err)) {
        fprintf(stderr, "bench_keys: %s\n", err.msg);
        return 1;
    }
    FILE *out = fopen(argv[4], "wb");
    if (!out) {
        perror(argv[4]);
        return 1;
    }
    for (uint64_t i = 0; i < keys.n; i++) {
        uint32_t len = (uint32_t)(keys.start[i + 1] - keys.start[i]);
        uint8_t le[4] = {(uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16),
                         (uint8_t)(len >> 24)};
        fwrite(le, 1, 4, out);
        fwrite(keys.bytes + keys.start[i], 1, len, out);
    }
    if (fclose(out) != 0) {
        perror(argv[4]);
        return 1;
    }
    printf("%016llx\n", (unsigned long long)keys.hash);
    profile_keys_destroy(&keys);
    sstpipe_close(t);
    return 0;
}
