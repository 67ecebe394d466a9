/*
 * bz2_block.c: table-driven decoding of one bzip2 block; see bz2_block.h.
 *
 * The work splits into three passes over at most 900000 symbols:
 * - Huffman + MTF: codes are read from a 64-bit big-endian bit buffer,
 *   refilled once per two codes, through a per-group table on the next
 *   FAST_BITS bits (rarer, longer codes through canonical limits), the MTF
 *   list's front kept in a register; runs are written with memset, into
 *   the caller's pre buffer (it then serves as the BWT's last column);
 * - inverse BWT: one sequential pass builds the successor array (tt), then
 *   16 chains walk it at once from start rows marked in it, each segment
 *   into scratch, and the segments are put in text order (see unbwt), so
 *   16 cache misses overlap;
 * - run-length decoding with a slice-by-8 CRC over the written output.
 *
 * Malformed input must never read outside buf + BZ2_SLACK: the refill
 * clamps its load address, so bits past the end are garbage but readable,
 * and every loop that consumes bits checks the position against end_bit
 * often enough (once per 50-symbol group, where at most 1000 bits go).
 * libbz2 1.0.8 is the reference for what is accepted.
 */
#include "stages/extract/bz2_block.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define FAST_BITS 10
#define MAX_CODE_LEN 20
#define MAX_GROUPS 6
#define MAX_ALPHA 258
#define MAX_SELECTORS 18002 /* libbz2 1.0.8 ignores selectors past these */
#define GROUP_SYMBOLS 50
#define MAX_RUN_BIT (1u << 21) /* as libbz2: longer runs exceed any block */
/* The inverse BWT (see unbwt): chains walked at once, segments, chunk size. */
#define LANES 16
#define SEGS (16 * LANES)
#define CHUNK 1024u

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the MTF rotation assumes little-endian");

/* One coding table. fast[] entries hold (symbol << 5) | length for codes of
 * at most FAST_BITS bits, 0 where the next FAST_BITS bits start a longer
 * code (or none). */
typedef struct huff {
    uint16_t fast[1 << FAST_BITS];
    uint32_t first[MAX_CODE_LEN + 1]; /* first code of a length */
    uint32_t past[MAX_CODE_LEN + 1];  /* past its last code */
    uint16_t index[MAX_CODE_LEN + 1]; /* where that length's symbols start in perm */
    uint16_t perm[MAX_ALPHA];         /* symbols by (length, symbol) */
    unsigned max_len;
} huff;

/* tt goes in 2 MB pages where the kernel gives them: the inverse BWT's
 * random walk over 3.6 MB otherwise misses the TLB at almost every step. */
#define HUGE_PAGE (2u << 20)
#define TT_BYTES                                                                                   \
    (((BZ2_BLOCK_MAX(9) + 1) * sizeof(uint32_t) + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE)
/* The inverse BWT's output before it is put in order: chunk 0 for idle
 * lanes, then each segment's bytes in chunks of its own (so at most one
 * part-filled chunk per segment). */
#define CHUNKS (BZ2_BLOCK_MAX(9) / CHUNK + SEGS + 3)

struct bz2_block {
    uint32_t *tt; /* by sorted position: row's successor | its first byte << 24 | START */
    uint8_t *scratch;
    uint32_t chunk_next[CHUNKS]; /* a segment's chunk after this one */
    uint8_t selectors[MAX_SELECTORS];
    huff huff[MAX_GROUPS];
};

bz2_block *bz2_block_new(void) {
    bz2_block *b = malloc(sizeof *b);
    if (!b)
        return NULL;
    b->tt = aligned_alloc(HUGE_PAGE, TT_BYTES);
    b->scratch = malloc((size_t)CHUNKS * CHUNK);
    if (!b->tt || !b->scratch) {
        bz2_block_free(b);
        return NULL;
    }
    madvise(b->tt, TT_BYTES, MADV_HUGEPAGE); /* only a hint: fine if refused */
    return b;
}

void bz2_block_free(bz2_block *b) {
    if (!b)
        return;
    free(b->tt);
    free(b->scratch);
    free(b);
}

/* ------------------------------------------------------------ bit reader */

static inline uint64_t load_be64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return __builtin_bswap64(v);
}

/* The next bits sit MSB-first in bb, bc of them valid (more after a refill:
 * the refill also ORs in a few bits past bc, the same ones again later).
 * off is the byte whose bits come next; loads start no later than lim, the
 * last byte from which 8 bytes are readable. */
typedef struct bitreader {
    const uint8_t *buf;
    uint64_t bb;
    unsigned bc;
    size_t off, lim;
} bitreader;

static inline void br_refill(bitreader *r) {
    size_t at = r->off < r->lim ? r->off : r->lim;
    r->bb |= load_be64(r->buf + at) >> r->bc;
    r->off += (63 - r->bc) >> 3;
    r->bc |= 56;
}

/* Bits consumed since bit 0 of buf. */
static inline uint64_t br_pos(const bitreader *r) {
    return (uint64_t)r->off * 8 - r->bc;
}

/* The next n (1..32) bits. */
static inline uint32_t br_get(bitreader *r, unsigned n) {
    br_refill(r);
    uint32_t v = (uint32_t)(r->bb >> (64 - n));
    r->bb <<= n;
    r->bc -= n;
    return v;
}

/* ------------------------------------------------------------ header */

/* Builds h from the code lengths of n symbols. Codes are canonical. Like
 * libbz2, a code is read by trying each length in turn, shortest first,
 * against the range of codes of that length: for lengths that make a
 * prefix code that is exactly canonical decoding (codes missing from an
 * incomplete set are errors), and for lengths with more codes than fit
 * (which no encoder writes) it decodes what libbz2 decodes. */
static void huff_build(huff *h, const uint8_t *lens, unsigned n) {
    unsigned count[MAX_CODE_LEN + 1] = {0};
    for (unsigned s = 0; s < n; s++)
        count[lens[s]]++;
    uint32_t code = 0;
    unsigned at = 0, next[MAX_CODE_LEN + 1];
    h->max_len = 0;
    for (unsigned len = 1; len <= MAX_CODE_LEN; len++) {
        h->first[len] = code;
        h->past[len] = code + count[len];
        code = h->past[len] << 1;
        h->index[len] = (uint16_t)at;
        next[len] = at;
        at += count[len];
        if (count[len])
            h->max_len = len;
    }
    for (unsigned s = 0; s < n; s++)
        h->perm[next[lens[s]]++] = (uint16_t)s;

    unsigned fast_max = h->max_len < FAST_BITS ? h->max_len : FAST_BITS;
    for (uint32_t p = 0; p < 1u << FAST_BITS; p++) {
        h->fast[p] = 0;
        for (unsigned len = 1; len <= fast_max; len++) {
            uint32_t v = p >> (FAST_BITS - len);
            if (v < h->past[len]) {
                unsigned sym = h->perm[h->index[len] + v - h->first[len]];
                h->fast[p] = (uint16_t)(sym << 5 | len);
                break;
            }
        }
    }
}

/* The symbol of a code longer than FAST_BITS at the top of bb, and its
 * length in *len; -1 for a code the table does not have. */
static int huff_slow(const huff *h, uint64_t bb, unsigned *len) {
    for (unsigned l = FAST_BITS + 1; l <= h->max_len; l++) {
        uint32_t v = (uint32_t)(bb >> (64 - l));
        if (v < h->past[l]) {
            *len = l;
            return h->perm[h->index[l] + v - h->first[l]];
        }
    }
    return -1;
}

typedef struct header {
    uint32_t crc;
    uint32_t orig_ptr;
    unsigned n_in_use;
    uint8_t seq_to_byte[256];
    unsigned n_selectors;
} header;

/* Reads everything before the symbols into hd and b's tables. */
static bz2_block_status read_header(bz2_block *b, bitreader *r, uint64_t end_bit, header *hd) {
    uint64_t magic = (uint64_t)br_get(r, 24) << 24;
    magic |= br_get(r, 24);
    if (magic != BZ2_BLOCK_MAGIC)
        return BZ2_BLOCK_BAD;
    hd->crc = br_get(r, 32);
    bool randomised = br_get(r, 1);
    if (br_pos(r) > end_bit)
        return BZ2_BLOCK_BAD;
    if (randomised)
        return BZ2_BLOCK_RANDOMISED;
    hd->orig_ptr = br_get(r, 24);

    unsigned used = br_get(r, 16);
    hd->n_in_use = 0;
    for (unsigned i = 0; i < 16; i++) {
        if (!(used & (0x8000u >> i)))
            continue;
        unsigned bits = br_get(r, 16);
        for (unsigned j = 0; j < 16; j++)
            if (bits & (0x8000u >> j))
                hd->seq_to_byte[hd->n_in_use++] = (uint8_t)(i * 16 + j);
    }
    if (hd->n_in_use == 0)
        return BZ2_BLOCK_BAD;
    unsigned alpha = hd->n_in_use + 2;

    unsigned n_groups = br_get(r, 3);
    if (n_groups < 2 || n_groups > MAX_GROUPS)
        return BZ2_BLOCK_BAD;
    unsigned n_selectors = br_get(r, 15);
    if (n_selectors == 0 || br_pos(r) > end_bit)
        return BZ2_BLOCK_BAD;
    uint8_t mtf[MAX_GROUPS] = {0, 1, 2, 3, 4, 5};
    for (unsigned i = 0; i < n_selectors; i++) {
        /* A selector is at most 6 bits: one refill covers it. */
        br_refill(r);
        unsigned j = 0;
        while (r->bb & (0x8000000000000000ull >> j))
            if (++j >= n_groups)
                return BZ2_BLOCK_BAD;
        r->bb <<= j + 1;
        r->bc -= j + 1;
        if (i < MAX_SELECTORS) {
            uint8_t g = mtf[j];
            for (; j > 0; j--)
                mtf[j] = mtf[j - 1];
            mtf[0] = g;
            b->selectors[i] = g;
        }
        if ((i & 1023) == 0 && br_pos(r) > end_bit)
            return BZ2_BLOCK_BAD;
    }
    hd->n_selectors = n_selectors < MAX_SELECTORS ? n_selectors : MAX_SELECTORS;

    for (unsigned t = 0; t < n_groups; t++) {
        uint8_t lens[MAX_ALPHA];
        unsigned len = br_get(r, 5);
        for (unsigned s = 0; s < alpha; s++) {
            for (;;) {
                if (len < 1 || len > MAX_CODE_LEN || br_pos(r) > end_bit)
                    return BZ2_BLOCK_BAD;
                if (!br_get(r, 1))
                    break;
                len = br_get(r, 1) ? len - 1 : len + 1;
            }
            lens[s] = (uint8_t)len;
        }
        huff_build(&b->huff[t], lens, alpha);
    }
    return BZ2_BLOCK_OK;
}

/* ------------------------------------------------------------ symbols */

/* What read_symbols carries from one symbol to the next. The MTF list's
 * front 8 bytes live in front (byte 0 first), a register: most indexes
 * are below 8 and rotate only those, with no store and reload of the list
 * on the loop's critical path. mtf holds the whole list only while a
 * larger index moves it. */
typedef struct symbols {
    uint64_t front;
    uint8_t mtf[256];
    size_t n;
    uint32_t run, run_bit;
} symbols;

enum { SYM_MORE, SYM_EOB, SYM_BAD };

/* Decodes one symbol from the top of r->bb, which must hold MAX_CODE_LEN
 * valid bits, into L (and counts). */
static inline __attribute__((always_inline)) int read_symbol(const huff *h, bitreader *r,
                                                             symbols *s, unsigned eob, size_t max,
                                                             uint8_t *L, uint32_t *counts) {
    unsigned e = h->fast[r->bb >> (64 - FAST_BITS)];
    unsigned sym, len = e & 31;
    if (__builtin_expect(len != 0, 1)) {
        sym = e >> 5;
    } else {
        int v = huff_slow(h, r->bb, &len);
        if (v < 0)
            return SYM_BAD;
        sym = (unsigned)v;
    }
    r->bb <<= len;
    r->bc -= len;

    if (sym < 2) {
        if (s->run_bit >= MAX_RUN_BIT)
            return SYM_BAD;
        s->run += s->run_bit << sym;
        s->run_bit <<= 1;
        return SYM_MORE;
    }
    if (s->run) {
        if (s->run > max - s->n)
            return SYM_BAD;
        uint8_t c0 = (uint8_t)s->front;
        memset(L + s->n, c0, s->run);
        counts[c0] += s->run;
        s->n += s->run;
        s->run = 0;
        s->run_bit = 1;
    }
    if (sym == eob)
        return SYM_EOB;
    if (s->n >= max)
        return SYM_BAD;
    unsigned idx = sym - 1;
    uint8_t c;
    if (idx < 8) {
        uint64_t keep = ~((2ull << (8 * idx + 7)) - 1);
        c = (uint8_t)(s->front >> (8 * idx));
        s->front = (s->front & keep) | ((s->front << 8) & ~keep) | c;
    } else {
        memcpy(s->mtf, &s->front, 8);
        c = s->mtf[idx];
        memmove(s->mtf + 1, s->mtf, idx);
        s->mtf[0] = c;
        memcpy(&s->front, s->mtf, 8);
    }
    L[s->n++] = c;
    counts[c]++;
    return SYM_MORE;
}

/* Huffman and MTF decoding of the symbols into L (the BWT's last column),
 * counting each byte; *n_out is the number of bytes. A refill leaves at
 * least 56 bits, enough for two codes: one refill serves two symbols. */
static bz2_block_status read_symbols(const bz2_block *b, bitreader *rd, uint64_t end_bit,
                                     const header *hd, size_t max, uint8_t *L, uint32_t *counts,
                                     size_t *n_out) {
    _Static_assert(GROUP_SYMBOLS % 2 == 0 && 2 * MAX_CODE_LEN <= 56, "two codes per refill");
    symbols s = {.run_bit = 1};
    memcpy(s.mtf, hd->seq_to_byte, hd->n_in_use);
    memcpy(&s.front, s.mtf, 8);
    const unsigned eob = hd->n_in_use + 1;
    bitreader r = *rd;
    for (unsigned g = 0;; g++) {
        if (g >= hd->n_selectors || br_pos(&r) > end_bit)
            return BZ2_BLOCK_BAD;
        const huff *h = &b->huff[b->selectors[g]];
        for (unsigned k = 0; k < GROUP_SYMBOLS; k += 2) {
            br_refill(&r);
            int st = read_symbol(h, &r, &s, eob, max, L, counts);
            if (st == SYM_MORE)
                st = read_symbol(h, &r, &s, eob, max, L, counts);
            if (__builtin_expect(st != SYM_MORE, 0)) {
                if (st == SYM_BAD)
                    return BZ2_BLOCK_BAD;
                *rd = r;
                *n_out = s.n;
                return BZ2_BLOCK_OK;
            }
        }
    }
}

/* ------------------------------------------------------------ inverse BWT */

/* The walk is a chain of dependent loads over a 3.6 MB array, which misses
 * the L2 cache at almost every step: its speed is the number of chains in
 * flight. Rows are cut into SEGS + 1 segments at start rows marked in tt
 * (every step-th row, which lie at scattered places of the text, and
 * orig_ptr), and LANES lanes walk one segment each in lock step, a segment
 * ending where its walk reaches the next start row. Segments come out in
 * the order lanes finish them, so each goes to its own chunks of scratch,
 * and they are put in text order afterwards by following which start each
 * ran into, from orig_ptr's. Many lanes keep many cache misses in flight,
 * where walking from both ends of the text at once keeps two. */
#define ROW_MASK 0xfffffu /* tt: the next row, first byte << 24, START */
#define START (1u << 20)
#define IDLE UINT32_MAX

_Static_assert(BZ2_BLOCK_MAX(9) < START, "a row number fits below START");

typedef struct seg {
    uint32_t next;  /* the start row its walk ran into */
    uint32_t len;   /* bytes */
    uint32_t chunk; /* its first chunk (later ones: chunk_next) */
} seg;

/* What each lane is doing between runs of lock steps. */
typedef struct lanes {
    uint32_t row[LANES];  /* whose tt entry comes next */
    uint32_t at[LANES];   /* where its next byte goes in scratch */
    uint32_t end[LANES];  /* the end of its current chunk */
    uint32_t id[LANES];   /* its segment, IDLE for none */
    uint32_t done[LANES]; /* bytes of that segment in earlier chunks */
} lanes;

/* Start rows: orig_ptr (segment SEGS) and multiples of step (segment
 * row / step). */
static uint32_t seg_of(uint32_t row, uint32_t orig_ptr, uint32_t step) {
    return row == orig_ptr ? SEGS : row / step;
}

/* Steps every lane at most m times (m no more than any lane's room left in
 * its chunk) or until one of them reaches a start row. Idle lanes circle
 * the sentinel row, writing to chunk 0. */
static void walk(const uint32_t *tt, uint8_t *scratch, lanes *ln, uint32_t m) {
    uint32_t row[LANES];
    uint8_t *w[LANES];
    for (unsigned l = 0; l < LANES; l++) {
        row[l] = ln->row[l];
        w[l] = scratch + ln->at[l];
    }
    uint32_t k = 0;
    for (; k < m; k++) {
        uint32_t e[LANES], any = 0;
        for (unsigned l = 0; l < LANES; l++) {
            e[l] = tt[row[l]];
            any |= e[l];
        }
        if (any & START)
            break;
        for (unsigned l = 0; l < LANES; l++) {
            w[l][k] = (uint8_t)(e[l] >> 24);
            row[l] = e[l] & ROW_MASK;
        }
    }
    for (unsigned l = 0; l < LANES; l++) {
        ln->row[l] = row[l];
        if (ln->id[l] != IDLE)
            ln->at[l] += k;
    }
}

/* Writes the n bytes of the block before BWT from its last column L
 * (overwriting it) and the byte counts. False when the rows do not form one
 * cycle through orig_ptr whose length divides n; when the cycle's length
 * divides n, the bytes are the cycle repeated (as libbz2 outputs them). */
static bool unbwt(bz2_block *b, uint8_t *L, size_t n, const uint32_t *counts, uint32_t orig_ptr) {
    uint32_t cf[256];
    uint32_t sum = 0;
    for (unsigned c = 0; c < 256; c++) {
        cf[c] = sum;
        sum += counts[c];
    }
    uint32_t *tt = b->tt;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t c = L[i];
        tt[cf[c]++] = c << 24 | i;
    }
    tt[n] = (uint32_t)n; /* the sentinel */

    uint32_t step = (uint32_t)((n + SEGS - 1) / SEGS);
    uint32_t starts[SEGS + 1], n_starts = 0;
    starts[n_starts++] = orig_ptr;
    for (uint32_t j = 0; j < SEGS && (size_t)j * step < n; j++)
        if (j * step != orig_ptr)
            starts[n_starts++] = j * step;
    for (uint32_t i = 0; i < n_starts; i++)
        tt[starts[i]] |= START;

    seg segs[SEGS + 1];
    lanes ln;
    uint32_t next_start = 0, next_chunk = 1, busy = 0;
    for (unsigned l = 0; l < LANES; l++)
        ln.id[l] = IDLE;
    for (;;) {
        for (unsigned l = 0; l < LANES; l++) {
            if (ln.id[l] != IDLE)
                continue;
            ln.row[l] = (uint32_t)n;
            ln.at[l] = 0;
            ln.end[l] = CHUNK;
            if (next_start == n_starts)
                continue;
            /* The first step is taken here: the walk stops at START. */
            uint32_t s = starts[next_start++], id = seg_of(s, orig_ptr, step);
            uint32_t e = tt[s];
            segs[id].chunk = next_chunk;
            ln.id[l] = id;
            ln.done[l] = 0;
            ln.at[l] = next_chunk++ * CHUNK;
            ln.end[l] = ln.at[l] + CHUNK;
            b->scratch[ln.at[l]++] = (uint8_t)(e >> 24);
            ln.row[l] = e & ROW_MASK;
            busy++;
        }
        if (!busy)
            break;
        uint32_t m = CHUNK;
        for (unsigned l = 0; l < LANES; l++)
            if (ln.end[l] - ln.at[l] < m)
                m = ln.end[l] - ln.at[l];
        walk(tt, b->scratch, &ln, m);
        for (unsigned l = 0; l < LANES; l++) {
            uint32_t id = ln.id[l];
            if (id == IDLE)
                continue;
            uint32_t chunk = (ln.end[l] - 1) / CHUNK;
            if (tt[ln.row[l]] & START) {
                segs[id].len = ln.done[l] + ln.at[l] - chunk * CHUNK;
                segs[id].next = ln.row[l];
                ln.id[l] = IDLE;
                busy--;
            } else if (ln.at[l] == ln.end[l]) {
                b->chunk_next[chunk] = next_chunk;
                ln.done[l] += CHUNK;
                ln.at[l] = next_chunk++ * CHUNK;
                ln.end[l] = ln.at[l] + CHUNK;
            }
        }
    }

    /* Every start row's segment is done, and following them from
     * orig_ptr's leads back to it. */
    size_t total = 0;
    uint32_t id = SEGS;
    do {
        if (segs[id].len > n - total)
            return false;
        uint32_t chunk = segs[id].chunk, left = segs[id].len;
        while (left) {
            uint32_t k = left < CHUNK ? left : CHUNK;
            memcpy(L + total, b->scratch + (size_t)chunk * CHUNK, k);
            total += k;
            left -= k;
            chunk = b->chunk_next[chunk];
        }
        id = seg_of(segs[id].next, orig_ptr, step);
    } while (id != SEGS);
    if (n % total)
        return false;
    for (size_t p = total; p < n; p++)
        L[p] = L[p - total];
    return true;
}

bz2_block_status bz2_block_decode(bz2_block *b, const uint8_t *buf, uint64_t bit, uint64_t end_bit,
                                  int level, uint8_t *pre, size_t *pre_len, uint32_t *crc) {
    if (level < 1 || level > 9 || end_bit < bit)
        return BZ2_BLOCK_BAD;
    bitreader r = {.buf = buf, .off = bit / 8, .lim = end_bit / 8 + BZ2_SLACK - 8};
    br_refill(&r);
    r.bb <<= bit & 7;
    r.bc -= bit & 7;

    header hd;
    bz2_block_status st = read_header(b, &r, end_bit, &hd);
    if (st == BZ2_BLOCK_RANDOMISED)
        *crc = hd.crc;
    if (st != BZ2_BLOCK_OK)
        return st;

    uint32_t counts[256] = {0};
    size_t n;
    st = read_symbols(b, &r, end_bit, &hd, BZ2_BLOCK_MAX(level), pre, counts, &n);
    if (st != BZ2_BLOCK_OK)
        return st;
    if (br_pos(&r) != end_bit || hd.orig_ptr >= n)
        return BZ2_BLOCK_BAD;
    if (!unbwt(b, pre, n, counts, hd.orig_ptr))
        return BZ2_BLOCK_BAD;
    *pre_len = n;
    *crc = hd.crc;
    return BZ2_BLOCK_OK;
}

/* ------------------------------------------------------------ CRC */

/* bzip2's CRC-32 (MSB-first, polynomial 0x04C11DB7), slice-by-8: crc_tab[k]
 * advances the register over a byte followed by k zero bytes. */
static uint32_t crc_tab[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_fill(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i << 24;
        for (int k = 0; k < 8; k++)
            c = (c & 0x80000000u) ? (c << 1) ^ 0x04C11DB7u : c << 1;
        crc_tab[0][i] = c;
    }
    for (int k = 1; k < 8; k++)
        for (uint32_t i = 0; i < 256; i++)
            crc_tab[k][i] = crc_tab[k - 1][i] << 8 ^ crc_tab[0][crc_tab[k - 1][i] >> 24];
}

static uint32_t crc_update(uint32_t crc, const uint8_t *p, size_t n) {
    for (; n >= 8; p += 8, n -= 8) {
        uint32_t hi =
            crc ^ ((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
        crc = crc_tab[7][hi >> 24] ^ crc_tab[6][(hi >> 16) & 0xff] ^ crc_tab[5][(hi >> 8) & 0xff] ^
              crc_tab[4][hi & 0xff] ^ crc_tab[3][p[4]] ^ crc_tab[2][p[5]] ^ crc_tab[1][p[6]] ^
              crc_tab[0][p[7]];
    }
    for (; n; p++, n--)
        crc = crc << 8 ^ crc_tab[0][(crc >> 24) ^ *p];
    return crc;
}

/* ------------------------------------------------------------ run-length */

void bz2_unrle_init(bz2_unrle *u, const uint8_t *pre, size_t len) {
    pthread_once(&crc_once, crc_fill);
    *u = (bz2_unrle){.in = pre, .len = len, .last = -1, .crc = 0xffffffffu};
}

size_t bz2_unrle_run(bz2_unrle *u, uint8_t *out, size_t cap) {
    const uint8_t *in = u->in;
    size_t pos = u->pos, len = u->len, o = 0;
    unsigned run = u->run;
    int last = u->last;
    size_t repeat = u->repeat;
    for (;;) {
        if (repeat) {
            size_t k = repeat < cap - o ? repeat : cap - o;
            memset(out + o, last, k);
            o += k;
            repeat -= k;
            if (repeat)
                break;
        }
        if (run == 4 && pos < len) {
            repeat = in[pos++];
            run = 0;
            continue;
        }
        /* Plain bytes until a fourth equal one, the input or the room ends. */
        while (pos < len && o < cap) {
            int c = in[pos++];
            out[o++] = (uint8_t)c;
            if (c != last) {
                last = c;
                run = 1;
            } else if (++run == 4) {
                break;
            }
        }
        if (run != 4 || pos == len || o == cap)
            break;
    }
    u->pos = pos;
    u->run = run;
    u->last = last;
    u->repeat = repeat;
    u->crc = crc_update(u->crc, out, o);
    return o;
}

bool bz2_unrle_done(const bz2_unrle *u) {
    return u->pos == u->len && u->repeat == 0;
}

bool bz2_unrle_complete(const bz2_unrle *u) {
    return u->run != 4;
}

uint32_t bz2_unrle_crc(const bz2_unrle *u) {
    return ~u->crc;
}
