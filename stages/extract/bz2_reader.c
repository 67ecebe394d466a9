/*
 * bz2_reader.c: the parallel bzip2 decoder; see bz2_reader.h.
 *
 * Three roles share a ring of segment slots:
 * - the scanner thread reads the file, cuts it at every block or
 *   end-of-stream magic into segments (one per block, one per stream end),
 *   and frames each as a standalone stream: "BZh" + level, the segment's
 *   bits, the end-of-stream magic and, as the stream CRC, the block's own
 *   CRC (a one-block stream's CRC is its block's);
 * - worker threads decode the block segments with bz2_block.h's decoder
 *   (libbz2 only for the obsolete randomised blocks) and check the block
 *   CRC;
 * - the caller of bz2_reader_read takes the segments in file order, hands
 *   out their output, folds the block CRCs into the stream CRC and checks
 *   it at each stream end, and checks what follows a stream end.
 * A magic can occur by chance inside compressed data (about once per 2^48
 * bits). Such a cut makes the block before it fail to decode, so a failed
 * segment is retried joined with the following ones, as long as the whole
 * stays within the longest possible block; only when that fails too is the
 * data reported as corrupt.
 */
#include "stages/extract/bz2_reader.h"

#include "stages/common/cores.h"
#include "stages/extract/bz2_block.h"
#include "stages/extract/bz2_scan.h"

#include <bzlib.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* The longest a compressed block can be: 900000 symbols of at most 20
 * bits, plus its tables. A longer stretch without a magic is corrupt. */
#define MAX_SEGMENT_BYTES ((size_t)2400000)
#define READ_CHUNK ((size_t)1 << 20)
/* A whole segment plus fresh input, so the window never needs to grow. */
#define WINDOW_CAP (MAX_SEGMENT_BYTES + 2 * READ_CHUNK)
/* Output of one block: text blocks decode to about 1 MB. Run-length
 * coding lets a block expand to ~45 MB; past OUT_MAX the rest of such a
 * block is decoded by the reading thread in OUT_MAX steps, so memory stays
 * bounded by slots x OUT_MAX. */
#define OUT_FIRST ((size_t)1 << 20)
#define OUT_MAX ((size_t)4 << 20)
/* Slots per decoding thread: enough that no worker waits while the reader
 * drains one block, few enough to bound memory. */
#define SLOTS_PER_THREAD 3
/* Around a segment's bits: "BZh" + level, end-of-stream magic, CRC, padding. */
#define FRAME_HEAD_BITS 32
#define FRAME_TAIL_BITS (BZ2_MAGIC_BITS + 32)
/* A segment shorter than a magic and a CRC cannot hold a block header. */
#define MIN_SEGMENT_BITS (BZ2_MAGIC_BITS + 32)

typedef enum seg_kind { SEG_BLOCK, SEG_EOS, SEG_END, SEG_FAIL } seg_kind;
typedef enum slot_state { SLOT_FREE, SLOT_QUEUED, SLOT_DECODING, SLOT_DONE } slot_state;
typedef enum decode_result { DECODED, DECODE_MORE, DECODE_BAD, DECODE_NOMEM } decode_result;

typedef struct segment {
    slot_state state;
    seg_kind kind;
    uint64_t seq;
    uint64_t start_bit; /* in the file */
    uint64_t nbits;
    bool at_eof; /* ends where the file ends, not at a magic */
    int level;   /* of the stream the segment belongs to */
    uint32_t crc;
    uint8_t *in; /* framed; the segment's own bits start at FRAME_HEAD_BITS */
    size_t in_len, in_cap;
    uint8_t *out;
    size_t out_len, out_cap;
    decode_result result;
    uint8_t *pre; /* the block before its run-length stage */
    size_t pre_len, pre_cap;
    bz2_unrle unrle;
    bool unrle_live; /* only between DECODE_MORE steps */
    bz_stream bz;    /* randomised blocks only */
    bool bz_live;    /* only between DECODE_MORE steps */
    sp_error fail;   /* SEG_FAIL: the scanner's error */
} segment;

struct bz2_reader {
    int fd;
    uint64_t base;  /* the file offset of head[0]: offsets in messages are the file's */
    uint64_t limit; /* bytes of fd to read after head; UINT64_MAX: to its end */
    int wake_fd;    /* readable once closing: the scanner may wait on a pipe */
    char *name;
    pthread_mutex_t mu;
    pthread_cond_t work_cv;  /* a block segment was queued */
    pthread_cond_t done_cv;  /* a segment became SLOT_DONE */
    pthread_cond_t space_cv; /* a slot became free */
    segment *ring;
    uint64_t nslots;
    uint64_t produced; /* next sequence number the scanner fills */
    uint64_t released; /* oldest sequence number not yet freed */
    bool stop;
    pthread_t scanner;
    bool scanner_started;
    pthread_t *workers;
    unsigned nworkers;

    /* Scanner thread only. */
    uint8_t *win; /* file bytes [win_off, win_off + win_len) */
    uint64_t win_off;
    size_t win_len;
    bool eof;
    int level;

    /* Reading thread only. */
    uint64_t next_seq;
    segment merged; /* a failed segment joined with its successors */
    segment *cur;   /* whose output is being handed out */
    bz2_block *merge_block;
    size_t pos;
    uint32_t stream_crc;
    bool in_stream;
    bool finished;
    uint64_t offset;
    uint64_t out_total;    /* decompressed bytes handed out */
    uint64_t stream_start; /* where the latest stream after the first begins in them */
    sp_error error;        /* sticky: once failed, every read fails the same way */
};

static segment *slot(bz2_reader *r, uint64_t seq) {
    return &r->ring[seq % r->nslots];
}

static bool grow(uint8_t **buf, size_t *cap, size_t need) {
    if (need <= *cap)
        return true;
    uint8_t *p = realloc(*buf, need);
    if (!p)
        return false;
    *buf = p;
    *cap = need;
    return true;
}

/* Sizes and zeroes g->in for nbits of segment bits and writes the header. */
static bool frame_begin(segment *g, uint64_t nbits) {
    size_t need = (FRAME_HEAD_BITS + nbits + FRAME_TAIL_BITS + 7) / 8 + BZ2_SLACK;
    if (!grow(&g->in, &g->in_cap, need))
        return false;
    memset(g->in, 0, need);
    memcpy(g->in, "BZh", 3);
    g->in[3] = (uint8_t)('0' + g->level);
    return true;
}

/* Closes the frame after the segment bits ending at bit. */
static void frame_end(segment *g, uint64_t bit) {
    bz2_bits_put(g->in, bit, BZ2_EOS_MAGIC, BZ2_MAGIC_BITS);
    bz2_bits_put(g->in, bit + BZ2_MAGIC_BITS, g->crc, 32);
    g->in_len = (bit + FRAME_TAIL_BITS + 7) / 8;
}

/* Room in g->out for more output: false when it is at OUT_MAX (or out of
 * memory, with *res set). */
static bool out_room(segment *g, decode_result *res) {
    if (g->out_len < g->out_cap)
        return true;
    if (g->out_cap >= OUT_MAX) {
        *res = DECODE_MORE;
        return false;
    }
    size_t cap = g->out_cap ? 2 * g->out_cap : OUT_FIRST;
    if (!grow(&g->out, &g->out_cap, cap < OUT_MAX ? cap : OUT_MAX)) {
        *res = DECODE_NOMEM;
        return false;
    }
    return true;
}

/* Runs the run-length stage into g->out until the block or the room ends. */
static decode_result unrle_step(segment *g) {
    decode_result res = DECODED;
    g->out_len = 0;
    while (!bz2_unrle_done(&g->unrle)) {
        if (!out_room(g, &res))
            return res;
        g->out_len += bz2_unrle_run(&g->unrle, g->out + g->out_len, g->out_cap - g->out_len);
    }
    g->unrle_live = false;
    /* g->crc holds the same bits bz2_block_decode read as the stored CRC. */
    return bz2_unrle_complete(&g->unrle) && bz2_unrle_crc(&g->unrle) == g->crc ? DECODED
                                                                               : DECODE_BAD;
}

/*
 * The libbz2 path, for randomised blocks: decodes the framed g->in into
 * g->out, or continues a DECODE_MORE. libbz2 produces a block's output only
 * after reading all of its bits, and checks the CRC after the last byte; a
 * cut in the wrong place fails either way.
 */
static decode_result decode_libbz2(segment *g) {
    if (!g->bz_live) {
        memset(&g->bz, 0, sizeof g->bz);
        if (BZ2_bzDecompressInit(&g->bz, 0, 0) != BZ_OK)
            return DECODE_NOMEM;
        g->bz_live = true;
        g->bz.next_in = (char *)g->in;
        g->bz.avail_in = (unsigned)g->in_len;
    }
    g->out_len = 0;
    decode_result res;
    for (;;) {
        if (!out_room(g, &res)) {
            if (res == DECODE_MORE)
                return res;
            break;
        }
        g->bz.next_out = (char *)g->out + g->out_len;
        g->bz.avail_out = (unsigned)(g->out_cap - g->out_len);
        int rc = BZ2_bzDecompress(&g->bz);
        g->out_len = g->out_cap - g->bz.avail_out;
        if (rc == BZ_STREAM_END) {
            res = g->bz.avail_in ? DECODE_BAD : DECODED;
            break;
        }
        if (rc == BZ_MEM_ERROR) {
            res = DECODE_NOMEM;
            break;
        }
        /* BZ_OK with room left means the input ran out mid-block. */
        if (rc != BZ_OK || g->bz.avail_out) {
            res = DECODE_BAD;
            break;
        }
    }
    BZ2_bzDecompressEnd(&g->bz);
    g->bz_live = false;
    return res;
}

/*
 * Decodes block segment g into g->out, or continues a DECODE_MORE. b is the
 * calling thread's scratch (NULL when it could not be allocated); only a
 * first step needs it.
 */
static decode_result decode(segment *g, bz2_block *b) {
    if (g->unrle_live)
        return unrle_step(g);
    if (g->bz_live)
        return decode_libbz2(g);
    if (!b || !grow(&g->pre, &g->pre_cap, BZ2_BLOCK_MAX(g->level)))
        return DECODE_NOMEM;
    uint32_t stored;
    switch (bz2_block_decode(b, g->in, FRAME_HEAD_BITS, FRAME_HEAD_BITS + g->nbits, g->level,
                             g->pre, &g->pre_len, &stored)) {
    case BZ2_BLOCK_OK:
        break;
    case BZ2_BLOCK_RANDOMISED:
        return decode_libbz2(g);
    case BZ2_BLOCK_NOMEM:
        return DECODE_NOMEM;
    case BZ2_BLOCK_BAD:
        return DECODE_BAD;
    }
    bz2_unrle_init(&g->unrle, g->pre, g->pre_len);
    g->unrle_live = true;
    return unrle_step(g);
}

/*
 * What follows the end-of-stream magic, CRC and padding of EOS segment g:
 * 0 for nothing, the level of the next stream when exactly its header
 * follows, -1 for anything else.
 */
static int eos_next_level(const segment *g) {
    uint64_t pad_end = (g->start_bit + MIN_SEGMENT_BITS + 7) & ~7ull;
    uint64_t end = g->start_bit + g->nbits;
    if (end == pad_end)
        return 0;
    if (end != pad_end + 32)
        return -1;
    uint64_t h = bz2_bits_get(g->in, FRAME_HEAD_BITS + (pad_end - g->start_bit), 32);
    unsigned digit = h & 0xff;
    if (h >> 8 != 0x425a68 /* "BZh" */ || digit < '1' || digit > '9')
        return -1;
    return (int)(digit - '0');
}

/* ------------------------------------------------------------ workers */

static void *worker_main(void *arg) {
    bz2_reader *r = arg;
    bz2_block *b = bz2_block_new();
    pthread_mutex_lock(&r->mu);
    for (;;) {
        segment *g = NULL;
        while (!r->stop) {
            for (uint64_t seq = r->released; seq < r->produced && !g; seq++)
                if (slot(r, seq)->state == SLOT_QUEUED)
                    g = slot(r, seq);
            if (g)
                break;
            pthread_cond_wait(&r->work_cv, &r->mu);
        }
        if (r->stop)
            break;
        g->state = SLOT_DECODING;
        pthread_mutex_unlock(&r->mu);
        g->result = decode(g, b);
        pthread_mutex_lock(&r->mu);
        g->state = SLOT_DONE;
        pthread_cond_broadcast(&r->done_cv);
    }
    pthread_mutex_unlock(&r->mu);
    bz2_block_free(b);
    return NULL;
}

/* ------------------------------------------------------------ scanner */

/* Waits for the slot of the next sequence number; NULL when stopping. */
static segment *scan_slot(bz2_reader *r) {
    pthread_mutex_lock(&r->mu);
    segment *g = slot(r, r->produced);
    while (!r->stop && g->state != SLOT_FREE)
        pthread_cond_wait(&r->space_cv, &r->mu);
    bool stop = r->stop;
    pthread_mutex_unlock(&r->mu);
    return stop ? NULL : g;
}

static void scan_publish(bz2_reader *r, segment *g) {
    pthread_mutex_lock(&r->mu);
    g->seq = r->produced++;
    g->state = g->kind == SEG_BLOCK ? SLOT_QUEUED : SLOT_DONE;
    if (g->kind == SEG_BLOCK)
        pthread_cond_signal(&r->work_cv);
    else
        pthread_cond_broadcast(&r->done_cv);
    pthread_mutex_unlock(&r->mu);
}

/* Ends the scan with an error for the reader to report in turn. */
static void scan_fail(bz2_reader *r, int err_no, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void scan_fail(bz2_reader *r, int err_no, const char *fmt, ...) {
    segment *g = scan_slot(r);
    if (!g)
        return;
    char msg[sizeof g->fail.msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sp_error_clear(&g->fail);
    errno = err_no;
    if (err_no)
        sp_errorf_errno(&g->fail, "%s", msg);
    else
        sp_errorf(&g->fail, "%s", msg);
    g->kind = SEG_FAIL;
    scan_publish(r, g);
}

static void scan_corrupt(bz2_reader *r, uint64_t byte, const char *why) {
    scan_fail(r, 0, "%s: corrupt or truncated bzip2 data near compressed byte %llu (%s)", r->name,
              (unsigned long long)(r->base + byte), why);
}

/* Queues the segment [start, end) of the file, which the window holds. */
static bool scan_emit(bz2_reader *r, seg_kind kind, uint64_t start, uint64_t end, bool at_eof) {
    segment *g = scan_slot(r);
    if (!g)
        return false;
    uint64_t src_bit = start - 8 * r->win_off;
    g->kind = kind;
    g->start_bit = start;
    g->nbits = end - start;
    g->at_eof = at_eof;
    g->level = r->level;
    g->crc = g->nbits >= MIN_SEGMENT_BITS
                 ? (uint32_t)bz2_bits_get(r->win, src_bit + BZ2_MAGIC_BITS, 32)
                 : 0;
    if (!frame_begin(g, g->nbits)) {
        scan_fail(r, 0, "%s: out of memory", r->name);
        return false;
    }
    bz2_bits_copy(g->in, FRAME_HEAD_BITS, r->win, src_bit, g->nbits);
    frame_end(g, FRAME_HEAD_BITS + g->nbits);
    if (kind == SEG_EOS && eos_next_level(g) > 0)
        r->level = eos_next_level(g);
    scan_publish(r, g);
    return true;
}

/* Reads more of the file, first dropping the window's bytes before keep. */
static bool scan_fill(bz2_reader *r, uint64_t keep) {
    if (r->win_len + READ_CHUNK > WINDOW_CAP) {
        size_t drop = (size_t)(keep - r->win_off);
        memmove(r->win, r->win + drop, r->win_len - drop);
        r->win_off += drop;
        r->win_len -= drop;
    }
    /* An idle pipe would hold read() forever; close must not wait for it. */
    struct pollfd p[2] = {{.fd = r->fd, .events = POLLIN}, {.fd = r->wake_fd, .events = POLLIN}};
    while (poll(p, 2, -1) < 0) {
        if (errno != EINTR) {
            scan_fail(r, errno, "%s: poll failed near byte %llu", r->name,
                      (unsigned long long)(r->base + r->win_off + r->win_len));
            return false;
        }
    }
    if (p[1].revents)
        return false;
    size_t want = READ_CHUNK < r->limit ? READ_CHUNK : (size_t)r->limit;
    ssize_t n = 0;
    while (want && (n = read(r->fd, r->win + r->win_len, want)) < 0) {
        if (errno != EINTR) {
            scan_fail(r, errno, "%s: read failed near byte %llu", r->name,
                      (unsigned long long)(r->base + r->win_off + r->win_len));
            return false;
        }
    }
    if (r->limit != UINT64_MAX)
        r->limit -= (uint64_t)n;
    r->win_len += (size_t)n;
    r->eof = n == 0;
    return true;
}

static void *scan_main(void *arg) {
    bz2_reader *r = arg;
    /* The file's header is "BZh" + level; its first block (or, for an
     * empty stream, its end) starts right after. */
    bool first = true;
    seg_kind kind = SEG_BLOCK;
    uint64_t seg_start = FRAME_HEAD_BITS, from = FRAME_HEAD_BITS;
    for (;;) {
        uint64_t base = 8 * r->win_off, end = base + 8 * (uint64_t)r->win_len, at;
        bz2_mark mark = bz2_find_mark(r->win, from - base, end - base, &at);
        if (mark != BZ2_MARK_NONE) {
            at += base;
            if (first && at != FRAME_HEAD_BITS) {
                scan_corrupt(r, 4, "no block after the stream header");
                return NULL;
            }
            if (!first && !scan_emit(r, kind, seg_start, at, false))
                return NULL;
            first = false;
            seg_start = at;
            kind = mark == BZ2_MARK_BLOCK ? SEG_BLOCK : SEG_EOS;
            from = at + 1;
            continue;
        }
        if (first && (end >= FRAME_HEAD_BITS + BZ2_MAGIC_BITS || r->eof)) {
            scan_corrupt(r, end / 8, "no block after the stream header");
            return NULL;
        }
        if (r->eof) {
            if (scan_emit(r, kind, seg_start, end, true)) {
                segment *g = scan_slot(r);
                if (g) {
                    g->kind = SEG_END;
                    g->start_bit = end;
                    g->nbits = 0;
                    scan_publish(r, g);
                }
            }
            return NULL;
        }
        /* Every start up to end - 48 has been tried. */
        if (end >= from + BZ2_MAGIC_BITS)
            from = end - BZ2_MAGIC_BITS + 1;
        if (end - seg_start > 8 * (uint64_t)MAX_SEGMENT_BYTES) {
            scan_corrupt(r, seg_start / 8, "no block boundary where one must be");
            return NULL;
        }
        if (!scan_fill(r, seg_start / 8))
            return NULL;
        pthread_mutex_lock(&r->mu);
        bool stop = r->stop;
        pthread_mutex_unlock(&r->mu);
        if (stop)
            return NULL;
    }
}

/* ------------------------------------------------------------ reading side */

static segment *wait_done(bz2_reader *r, uint64_t seq) {
    segment *g = slot(r, seq);
    pthread_mutex_lock(&r->mu);
    while (g->state != SLOT_DONE || g->seq != seq)
        pthread_cond_wait(&r->done_cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
    return g;
}

/* Frees the oldest held slot g for the scanner. */
static void release(bz2_reader *r, segment *g) {
    if (g->bz_live) {
        BZ2_bzDecompressEnd(&g->bz);
        g->bz_live = false;
    }
    g->unrle_live = false;
    pthread_mutex_lock(&r->mu);
    g->state = SLOT_FREE;
    r->released++;
    pthread_cond_signal(&r->space_cv);
    pthread_mutex_unlock(&r->mu);
}

static int corrupt(bz2_reader *r, uint64_t byte, const char *why) {
    return sp_errorf(&r->error,
                     "%s: corrupt or truncated bzip2 data near compressed byte %llu (%s)", r->name,
                     (unsigned long long)(r->base + byte), why);
}

/* The outcome of a decode that did not succeed, for segment g. */
static int decode_failed(bz2_reader *r, const segment *g, decode_result res) {
    if (res == DECODE_NOMEM)
        return sp_errorf(&r->error, "%s: out of memory decoding bzip2", r->name);
    return corrupt(r, g->start_bit / 8, "bad block");
}

/*
 * Block segment g (the oldest held) failed to decode: retries it joined
 * with the following segments, in case a magic inside it was found by
 * chance. Returns the joined segment, or NULL after setting the error.
 */
static segment *merge(bz2_reader *r, segment *g) {
    segment *m = &r->merged;
    uint64_t bits = g->nbits;
    decode_result res = DECODE_BAD;
    for (uint64_t seq = r->next_seq; seq < g->seq + r->nslots && res == DECODE_BAD; seq++) {
        segment *next = wait_done(r, seq);
        if (next->kind == SEG_FAIL) {
            sp_errorf(&r->error, "%s", next->fail.msg);
            return NULL;
        }
        if (next->kind == SEG_END || bits + next->nbits > 8 * (uint64_t)MAX_SEGMENT_BYTES)
            break;
        bits += next->nbits;
        m->kind = SEG_BLOCK;
        m->start_bit = g->start_bit;
        m->nbits = bits;
        m->at_eof = next->at_eof;
        m->level = g->level;
        if (!frame_begin(m, bits)) {
            res = DECODE_NOMEM;
            break;
        }
        uint64_t at = FRAME_HEAD_BITS;
        for (uint64_t s = g->seq; s <= seq; s++) {
            bz2_bits_copy(m->in, at, slot(r, s)->in, FRAME_HEAD_BITS, slot(r, s)->nbits);
            at += slot(r, s)->nbits;
        }
        /* g alone may have been too short to hold the CRC. */
        m->crc = (uint32_t)bz2_bits_get(m->in, FRAME_HEAD_BITS + BZ2_MAGIC_BITS, 32);
        frame_end(m, at);
        if (!r->merge_block)
            r->merge_block = bz2_block_new();
        m->unrle_live = false;
        res = m->result = decode(m, r->merge_block);
        if (res == DECODED || res == DECODE_MORE) {
            for (uint64_t s = g->seq; s <= seq; s++)
                release(r, slot(r, s));
            r->next_seq = seq + 1;
            return m;
        }
    }
    decode_failed(r, g, res);
    return NULL;
}

/* Checks a stream's end: its CRC and what follows. */
static int end_stream(bz2_reader *r, const segment *g) {
    if (g->nbits < MIN_SEGMENT_BITS)
        return corrupt(r, (g->start_bit + g->nbits) / 8, "end-of-stream marker cut short");
    if (g->crc != r->stream_crc)
        return corrupt(r, g->start_bit / 8, "stream CRC mismatch");
    uint64_t pad_end = (g->start_bit + MIN_SEGMENT_BITS + 7) / 8;
    int next = eos_next_level(g);
    if (next == 0 && g->at_eof) {
        r->in_stream = false;
    } else if (next > 0 && !g->at_eof) {
        r->stream_crc = 0;
        r->stream_start = r->out_total;
    } else if (next > 0)
        return corrupt(r, pad_end + 4, "stream header without blocks");
    else
        return corrupt(r, pad_end, "garbage after the end of a stream");
    return 0;
}

/* Takes the next segment in file order; sets r->cur when it has output. */
static int next_segment(bz2_reader *r) {
    segment *g = wait_done(r, r->next_seq++);
    int rc = 0;
    switch (g->kind) {
    case SEG_FAIL:
        return sp_errorf(&r->error, "%s", g->fail.msg);
    case SEG_END:
        if (r->in_stream)
            return corrupt(r, g->start_bit / 8, "no end-of-stream marker");
        r->offset = g->start_bit / 8;
        r->finished = true;
        release(r, g);
        return 0;
    case SEG_EOS:
        rc = end_stream(r, g);
        r->offset = (g->start_bit + g->nbits + 7) / 8;
        release(r, g);
        return rc;
    case SEG_BLOCK:
        if (g->result == DECODE_BAD && !(g = merge(r, g)))
            return -1;
        if (g->result == DECODE_NOMEM)
            return decode_failed(r, g, g->result);
        r->stream_crc = (r->stream_crc << 1 | r->stream_crc >> 31) ^ g->crc;
        r->offset = (g->start_bit + g->nbits + 7) / 8;
        r->cur = g;
        r->pos = 0;
        return 0;
    }
    return 0;
}

ssize_t bz2_reader_read(bz2_reader *r, void *buf, size_t n, sp_error *err) {
    uint8_t *dst = buf;
    size_t got = 0;
    while (got < n && !r->error.set) {
        segment *g = r->cur;
        if (g && r->pos < g->out_len) {
            size_t k = g->out_len - r->pos < n - got ? g->out_len - r->pos : n - got;
            memcpy(dst + got, g->out + r->pos, k);
            r->pos += k;
            got += k;
            r->out_total += k;
        } else if (g && g->result == DECODE_MORE) {
            g->result = decode(g, NULL);
            r->pos = 0;
            if (g->result != DECODED && g->result != DECODE_MORE)
                decode_failed(r, g, g->result);
        } else if (g) {
            if (g != &r->merged)
                release(r, g);
            r->cur = NULL;
        } else if (r->finished) {
            break;
        } else {
            next_segment(r);
        }
    }
    /* The bytes decoded before an error go out first, as a read(2) gives
     * what it read before failing, so that the parser sees all the data
     * there was whatever the size of the reads; the next call fails (the
     * error stays set). */
    if (r->error.set && got == 0)
        return sp_errorf(err, "%s", r->error.msg);
    return (ssize_t)got;
}

uint64_t bz2_reader_offset(const bz2_reader *r) {
    return r->base + r->offset;
}

uint64_t bz2_reader_stream_start(const bz2_reader *r) {
    return r->stream_start;
}

static void segment_free(segment *g) {
    if (g->bz_live)
        BZ2_bzDecompressEnd(&g->bz);
    free(g->in);
    free(g->pre);
    free(g->out);
}

void bz2_reader_close(bz2_reader *r) {
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    r->stop = true;
    pthread_cond_broadcast(&r->work_cv);
    pthread_cond_broadcast(&r->space_cv);
    pthread_mutex_unlock(&r->mu);
    if (r->wake_fd >= 0)
        eventfd_write(r->wake_fd, 1);
    if (r->scanner_started)
        pthread_join(r->scanner, NULL);
    for (unsigned i = 0; i < r->nworkers; i++)
        pthread_join(r->workers[i], NULL);
    for (uint64_t i = 0; r->ring && i < r->nslots; i++)
        segment_free(&r->ring[i]);
    segment_free(&r->merged);
    bz2_block_free(r->merge_block);
    pthread_cond_destroy(&r->space_cv);
    pthread_cond_destroy(&r->done_cv);
    pthread_cond_destroy(&r->work_cv);
    pthread_mutex_destroy(&r->mu);
    free(r->workers);
    free(r->ring);
    free(r->win);
    free(r->name);
    if (r->wake_fd >= 0)
        close(r->wake_fd);
    free(r);
}

bz2_reader *bz2_reader_open(int fd, const char *name, const uint8_t *head, size_t head_len,
                            const bz2_reader_range *range, unsigned threads, sp_error *err) {
    if (threads == 0)
        threads = sp_usable_cores();
    bz2_reader *r = calloc(1, sizeof *r);
    if (!r) {
        sp_errorf(err, "%s: out of memory", name);
        return NULL;
    }
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->work_cv, NULL);
    pthread_cond_init(&r->done_cv, NULL);
    pthread_cond_init(&r->space_cv, NULL);
    r->fd = fd;
    r->base = range ? range->base : 0;
    r->limit = range ? range->limit : UINT64_MAX;
    r->wake_fd = eventfd(0, EFD_CLOEXEC);
    r->nslots = (uint64_t)SLOTS_PER_THREAD * threads + 2;
    r->name = strdup(name);
    r->ring = calloc(r->nslots, sizeof *r->ring);
    r->win = calloc(1, WINDOW_CAP + BZ2_SLACK);
    r->workers = calloc(threads, sizeof *r->workers);
    if (r->wake_fd < 0 || !r->name || !r->ring || !r->win || !r->workers || head_len > WINDOW_CAP) {
        sp_errorf(err, "%s: out of memory", name);
        bz2_reader_close(r);
        return NULL;
    }
    memcpy(r->win, head, head_len);
    r->win_len = head_len;
    r->level = head[3] - '0';
    r->in_stream = true;
    r->scanner_started = pthread_create(&r->scanner, NULL, scan_main, r) == 0;
    for (; r->scanner_started && r->nworkers < threads; r->nworkers++)
        if (pthread_create(&r->workers[r->nworkers], NULL, worker_main, r))
            break;
    if (r->nworkers < threads) {
        sp_errorf(err, "%s: cannot start the bzip2 decoding threads", name);
        bz2_reader_close(r);
        return NULL;
    }
    return r;
}
