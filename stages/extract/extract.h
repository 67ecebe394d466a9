/*
 * extract.h: the first stage. Decompresses a MediaWiki XML export and emits
 * one record per <page>: key = <title> (UTF-8, entities resolved, namespace
 * prefix as in the dump), value = text of the page's last <revision> (empty
 * when absent or deleted).
 *
 * Compression (bz2 single- or multistream, gz, xz, zst, or none) is
 * recognised from the content, not the name. Memory does not grow with the
 * input or with the size of one page: text beyond value_cap is dropped (its
 * length is still counted), and with value_cap == 0 text beyond the
 * in-memory buffer spills to an anonymous scratch file.
 */
#ifndef SSTPIPE_EXTRACT_EXTRACT_H
#define SSTPIPE_EXTRACT_EXTRACT_H

#include "stages/common/error.h"
#include "stages/common/progress.h"
#include "stages/common/record.h"
#include "stages/extract/source.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct extract_stats extract_stats;

/* Where one parsing thread puts its records, for a caller that orders them
 * itself (build: each thread's part of the sort, sorter.h). */
typedef struct extract_part {
    sp_sink sink;
    /* Called on the thread before the records of a stretch of the dump,
     * with that stretch's place: later stretches have higher places. */
    void (*begin)(void *ctx, uint64_t place);
    /* Called on the thread when it has parsed its last stretch, once the
     * whole document is parsed without an error (not after one). */
    void (*end)(void *ctx);
    void *ctx;
} extract_part;

typedef struct extract_options {
    /* Keep at most this many bytes of each page's text; 0 keeps all of it. */
    uint64_t value_cap;
    /* Scratch directory for spilled page text (NULL: $TMPDIR or /tmp). */
    const char *tmp_dir;
    /* Namespaces to keep (<ns> numbers); NULL/0 keeps every namespace. */
    const int *namespaces;
    int namespace_count;
    /* Drop pages that carry <redirect/>. */
    bool skip_redirects;
    /* Threads decompressing (bz2 decoding threads, the {threads} of the
     * decompressor command) and parsing (parse_pool.h; 1: the parse runs
     * on the calling thread); 0: one per core this process may run on. */
    unsigned threads;
    /* Bytes of XML per parse chunk (parse_pool.h); 0: 1 MiB. Any size
     * gives the same records and errors. */
    size_t chunk_bytes;
    /* NULL: every record goes into the sink, in document order. Else, with
     * more than one thread (threads must then be extract_threads()'s), one
     * per thread: parsing thread i puts its records into parts[i], in no
     * order across parts (parse_pool.h), and the sink is not used. */
    const extract_part *parts;
    /* External decompressor command (see source.h); NULL or "": the
     * built-in decoders. */
    const char *decompressor;
    /* Only this part of the input, framed (source.h; a cluster map task);
     * NULL: the whole input. */
    const source_slice *slice;
    /* Stored into after each chunk of input is parsed (about every MiB of
     * XML): input bytes, XML bytes, pages and records so far; NULL for none. */
    sp_progress *progress;
} extract_options;

struct extract_stats {
    uint64_t input_bytes; /* bytes read from the input file (compressed) */
    uint64_t xml_bytes;   /* bytes of XML after decompression */
    uint64_t pages;       /* <page> elements seen */
    uint64_t records;     /* records emitted */
    uint64_t skipped_redirects;
    uint64_t skipped_namespace;
    unsigned threads; /* decompressing and parsing threads used */
    /* CPU time of the parsing workers, and of the calling thread (reading,
     * cutting, handing records on: with one thread, the parse too). With
     * the process's CPU time they split a build's cost by stage. */
    double parse_cpu_seconds;
    double caller_cpu_seconds;
    /* Chunks parsed by the workers (0 with one thread), and of them those
     * cut at a compressed stream's start (multistream bz2) and those cut at
     * a page start tag found by a search back from the chunk's end (every
     * other input): both checked by their workers rather than found by the
     * calling thread's scan. */
    uint64_t parse_chunks;
    uint64_t stream_cuts;
    uint64_t guessed_cuts;
};

void extract_options_init(extract_options *opts);
/* The threads extract_file will use: opts->threads, or for 0 one per core
 * this process may run on (taskset, cgroup cpusets). */
unsigned extract_threads(const extract_options *opts);

/* The `-v` line, without its newline, into buf (cap bytes; 256 hold it):
 * "extract: input_bytes=N xml_bytes=N pages=N ...". The command prints
 * it; the library prints nothing. */
void extract_stats_format(const extract_stats *s, char *buf, size_t cap);

/*
 * Extracts path ("-" for stdin) into sink. Errors name the file and the
 * compressed byte offset (decompression) or the XML line (parsing).
 * stats may be NULL.
 */
int extract_file(const char *path, const extract_options *opts, const sp_sink *sink,
                 extract_stats *stats, sp_error *err);

#endif
