/*
 * title_lists.h: a title index's prefix lists (layouts 3 and 4, title_rules.h),
 * so that a suggestion for a short prefix reads one record instead of
 * ranking the thousands of titles that start with it.
 *
 * For every folded prefix (whole characters) that more than
 * SP_TITLE_LIST_FROM page records start with, the index holds a list
 * record: its key the prefix and U+10FFFF, the last character (every key
 * is UTF-8; no page record's key lacks the 0x00 after its fold, so the two
 * never meet); its value the best SP_TITLE_LIST_LEN of those titles in rank
 * order, each its kind (SP_TITLE_ARTICLE or SP_TITLE_REDIRECT), the title
 * and a 0x00. The rank is suggestions' without the exact match, which a
 * reader looks up itself: articles before redirects, then shorter titles,
 * then the index's order (by fold, and by title within one fold).
 *
 * A prefix's list sorts after every page record starting with it and
 * before the next prefix's records (no character of a fold comes after
 * U+10FFFF), and a longer prefix's before a shorter one's: the order in
 * which a walk of the page records in key order finishes them. So the
 * lists are made in one pass beside the page records, written between
 * them, with one list per character of the current fold in memory. Only a
 * fold holding U+10FFFF itself breaks that order: a list that would not
 * sort after the last record written is left out (its prefix's
 * suggestions are then ranked from a scan, as without lists).
 */
#ifndef SSTPIPE_COMMON_TITLE_LISTS_H
#define SSTPIPE_COMMON_TITLE_LISTS_H

#include "stages/common/error.h"
#include "stages/common/record.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A prefix has a list when more page records than this start with it, so
 * a suggestion without one ranks at most this many. */
#define SP_TITLE_LIST_FROM 256
/* The titles of a list: the most suggestions a call returns; and the
 * most bytes of its value (titles past them are left off, so it fits in
 * the index's blocks with any key: a list shorter than a suggestion's
 * limit is not used for it). */
#define SP_TITLE_LIST_LEN 100
#define SP_TITLE_LIST_BYTES 4096
/* What follows a list record's prefix: U+10FFFF in UTF-8. */
#define SP_TITLE_LIST_END "\xf4\x8f\xbf\xbf"
#define SP_TITLE_LIST_END_LEN 4

typedef struct sp_title_lists sp_title_lists;

/* A sink that hands each page record (key in that layout, in key order) on
 * to `to`, each list it completes first; NULL when out of memory. */
sp_title_lists *sp_title_lists_init(unsigned layout, const sp_sink *to);
sp_sink sp_title_lists_sink(sp_title_lists *b);
/* Hands on the lists still open: after the last page record. */
int sp_title_lists_finish(sp_title_lists *b, sp_error *err);
void sp_title_lists_destroy(sp_title_lists *b);

/* Whether key is a list record's: the prefix (*plen bytes) set. */
bool sp_title_list_key(const uint8_t *key, size_t klen, size_t *plen);

/* One title of a list. */
typedef struct sp_title_list_entry {
    const uint8_t *title; /* in the list's value */
    size_t title_len;
    bool redirect;
} sp_title_list_entry;

/* The entry at *at of a list's value, *at moved past it: 1, 0 at the end,
 * -1 when the bytes there are not an entry. */
int sp_title_list_next(const uint8_t *v, size_t vlen, size_t *at, sp_title_list_entry *e);

/* What is wrong with a list record (key and value as stored): NULL when
 * nothing; else a phrase (static) naming the first problem. */
const char *sp_title_list_problem(const uint8_t *key, size_t klen, const uint8_t *v, size_t vlen);

#endif
