/*
 * parse_pool.h: the XML parse of a dump on several threads, with exactly
 * the results of the single-threaded parse.
 *
 * The caller's thread reads the decompressed document and cuts it at page
 * boundaries (page_split.h) into chunks of about chunk_bytes. Each chunk is
 * parsed by one libxml2 parser on a worker thread (in fragment mode after
 * the document's head, see wikixml.h), text past the value cap dropped per
 * chunk (text_skip.h), and its pages collected in the chunk's own buffer.
 * The caller's thread hands the pages on in document order: chunk after
 * chunk, each one's pages in order. So "a later page with the same title
 * wins" and every count mean what they meant with one parser, and the
 * records reach the single-threaded sink (truncate, sorter) in the same
 * order whatever the thread count or chunk size.
 *
 * With parts (extract_options.parts: build) the records do not come back
 * to the caller's thread: each worker puts its chunk's records into its
 * own part (truncate, then its share of the sort, which sorts and spills
 * its runs there), after telling it the chunk's place in the document.
 * The sort's merge then lets the highest place win among equal keys, so a
 * later page still wins; the caller's thread only adds the chunks' counts
 * and reports their errors, in document order. What stays serial is the
 * reading and cutting here, and the merge and table writer after.
 *
 * Bounded: at most 2 * threads + 1 chunks are read ahead; a chunk holds at
 * most PARSE_POOL_MAX_FACTOR * chunk_bytes of XML, and its pages fit in as
 * many bytes (a record is never longer than the XML it came from); each
 * thread filters a chunk whole before parsing it, into a buffer of its own
 * of at most a chunk's size. A
 * stretch of the document with no cut point for that long (one huge page,
 * or markup page_split.h does not follow) is parsed by the caller's thread
 * as it streams in, after every chunk before it, with the caller's spilling
 * text buffer: as the single-threaded path does, in the same memory.
 *
 * Once the head is read the caller's thread scans nothing: chunks are cut
 * at stream starts (multistream bz2, source_stream_start) or, in any other
 * input, at the last page start tag in the chunk's bytes, found by a search
 * back from their end (a guess: in a dump '<' is escaped in text). Each such
 * chunk's worker lexes its chunk from its start (in the pass of the value
 * cap's filter, text_skip_between_pages, or without a cap page_split.h) and
 * tells whether it ends where the document can be cut; a worker parses its chunk
 * only once every chunk before it has been told a cut point, so a stream
 * start that is not one (any file can be cut into streams anywhere) never
 * lets a chunk's records out; nor does a guessed page start inside a
 * comment or a CDATA section. From the first such chunk on, the caller's
 * thread parses the rest of the document as one stream, as the single-
 * threaded path does. A stretch of PARSE_POOL_MAX_FACTOR * chunk_bytes
 * without a stream start or a page start tag goes back to the caller's
 * scanner, from the last cut (checked by then); guessing resumes once the
 * scanner cuts at a page start tag again (not in a document whose names
 * have a prefix, "<mw:page>").
 *
 * Errors are the single-threaded path's: the first in document order wins
 * (a sink error on a record before a parse error in the same chunk comes
 * first). A worker parses without knowing on which line its chunk starts;
 * the rare chunk that fails is parsed again by the caller's thread, once
 * the lines before it are counted, for the message with the right line.
 * A decompression error is reported instead of an XML error that it
 * follows within EXTRACT_DAMAGE_LOOKAHEAD bytes (see extract.c).
 */
#ifndef SSTPIPE_EXTRACT_PARSE_POOL_H
#define SSTPIPE_EXTRACT_PARSE_POOL_H

#include "stages/common/error.h"
#include "stages/common/record.h"
#include "stages/extract/extract.h"
#include "stages/extract/source.h"
#include "stages/extract/text_buffer.h"
#include "stages/extract/wikixml.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Chunk size when extract_options.chunk_bytes is 0. */
#define PARSE_POOL_DEFAULT_CHUNK ((size_t)1 << 20)
/* Once a chunk holds chunk_bytes it is cut at the last cut point read; it
 * grows to at most this many times chunk_bytes looking for one. */
#define PARSE_POOL_MAX_FACTOR 2
/* How far past an XML error to decompress looking for damaged data: more
 * than a bz2 block (900 kB compressed) expands to in practice. */
#define EXTRACT_DAMAGE_LOOKAHEAD ((uint64_t)8 << 20)

/* One page handed on in order: rec is the title and the kept text (in
 * memory or in a scratch file, see text_buffer.h); skip says why a page
 * has no record, and then rec is NULL. */
typedef int (*parse_pool_emit_fn)(void *ctx, wiki_skip skip, const sp_record *rec, sp_error *err);

/* Where parse_pool_page hands a page on. */
typedef struct parse_pool_sink {
    parse_pool_emit_fn emit;
    void *ctx;
} parse_pool_sink;

/* Counts a page handed on in st (pages, skipped_*): true when it is kept. */
bool parse_pool_count(extract_stats *st, wiki_skip skip);

/* A wiki_page_fn (ctx: a parse_pool_sink) for a parser whose pages go
 * straight on: the single-threaded path, and stretches parsed inline. */
int parse_pool_page(void *ctx, const wiki_page *page, sp_error *err);

typedef struct parse_pool_args {
    const extract_options *opts; /* filter, value_cap, chunk_bytes, progress */
    unsigned threads;            /* parsing threads (>= 2) */
    source *src;
    text_buffer *text; /* the caller's, for stretches parsed on its thread */
    parse_pool_emit_fn emit;
    void *emit_ctx;
    extract_stats
        *stats; /* xml_bytes, input_bytes kept up to date; parse_cpu_seconds, parse_chunks */
} parse_pool_args;

/* Reads src to its end, parsing on args->threads threads. */
int parse_pool_run(const parse_pool_args *args, sp_error *err);

#endif
