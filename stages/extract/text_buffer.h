/*
 * text_buffer.h: the text of one page, held in bounded memory.
 *
 * Pages in real dumps reach tens of MiB, so the text may not simply grow in
 * RAM. The buffer keeps at most `cap` bytes (0: all of them); the first
 * mem_limit bytes stay in memory and anything beyond goes to an anonymous
 * scratch file, through the same memory used as a write buffer. One buffer
 * serves every page of a dump: reset it at each <revision>.
 */
#ifndef SSTPIPE_EXTRACT_TEXT_BUFFER_H
#define SSTPIPE_EXTRACT_TEXT_BUFFER_H

#include "stages/common/error.h"
#include "stages/common/record.h"

#include <stddef.h>
#include <stdint.h>

/* In-memory part of a page's text before it spills to a scratch file. */
#define TEXT_BUFFER_MEM_LIMIT ((size_t)4 << 20)

typedef struct text_buffer text_buffer;

/*
 * cap: bytes kept (0: all). mem_limit: bytes held in memory before spilling
 * (0: TEXT_BUFFER_MEM_LIMIT); a cap within it never spills. tmp_dir: where
 * the scratch file goes (NULL: $TMPDIR or /tmp).
 */
text_buffer *text_buffer_init(uint64_t cap, size_t mem_limit, const char *tmp_dir, sp_error *err);
void text_buffer_reset(text_buffer *t);
/* Appends text; bytes beyond the cap are dropped. */
int text_buffer_append(text_buffer *t, const void *p, size_t n, sp_error *err);
/*
 * Points rec's value at the text: in memory (value_fd = -1) or, once it has
 * spilled, at offset 0 of the scratch file (value_fd >= 0). Valid until the
 * next reset or append.
 */
int text_buffer_value(text_buffer *t, sp_record *rec, sp_error *err);
void text_buffer_destroy(text_buffer *t);

#endif
