/*
 * wg_rng.h: the generator's own pseudo-random numbers (xoshiro256** seeded by
 * splitmix64), and a stateless hash for properties of page number i.
 *
 * Why its own: the same --seed must give the same bytes on every machine and
 * libc, so nothing here (or anywhere in wikigen) uses rand(), floating point
 * or libm. The stateless hash lets any page's title be recomputed from its
 * number alone, so redirects and links can point at pages not yet written.
 */
#ifndef WIKIGEN_WG_RNG_H
#define WIKIGEN_WG_RNG_H

#include <stdbool.h>
#include <stdint.h>

typedef struct wg_rng {
    uint64_t s[4];
} wg_rng;

static inline uint64_t wg_splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline void wg_rng_seed(wg_rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++)
        r->s[i] = wg_splitmix64(&seed);
}

static inline uint64_t wg_rotl(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

static inline uint64_t wg_next(wg_rng *r) {
    uint64_t *s = r->s;
    uint64_t out = wg_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = wg_rotl(s[3], 45);
    return out;
}

/* Uniform in [0, n) by multiply-shift (bias below 2^-32 is irrelevant here). */
static inline uint32_t wg_below(wg_rng *r, uint32_t n) {
    return (uint32_t)(((wg_next(r) >> 32) * (uint64_t)n) >> 32);
}

/* Uniform in [lo, hi]. */
static inline uint32_t wg_range(wg_rng *r, uint32_t lo, uint32_t hi) {
    return lo + wg_below(r, hi - lo + 1);
}

/* True with probability per_million / 1e6. */
static inline bool wg_chance(wg_rng *r, uint32_t per_million) {
    return wg_below(r, 1000000) < per_million;
}

/* A well-mixed 64-bit value determined by (key, i, salt) alone. */
static inline uint64_t wg_hash3(uint64_t key, uint64_t i, uint64_t salt) {
    uint64_t x = key ^ (i * 0xd6e8feb86659fd93ull) ^ (salt * 0x9e3779b97f4a7c15ull);
    return wg_splitmix64(&x);
}

#endif
