/*
 * title_rules.h: MediaWiki's title rules, as a dump's <siteinfo> gives them,
 * and the title index that records them next to a table (<table>.titles).
 *
 * A person types "abraham_lincoln " where the table holds "Abraham
 * Lincoln": an underscore is a space, surrounding spaces go, and where the
 * title's namespace is first-letter its first letter is upper-cased (by
 * Unicode's rules, from utf8proc, never an ASCII table). Which namespaces
 * are first-letter, and their names, are the site's: the rules are read
 * from the dump and written into the title index, so lookups apply the
 * rules of the dump the table came from.
 *
 * The title index is an ordinary table. Its first record, under a key of
 * one 0x00 byte (no title holds that byte, so it sorts first), is the
 * rules as text, one a line: "table=SIZE CHECKSUM" (the identity of the
 * table it was built for, below), "case=first-letter" (or
 * "case-sensitive"), then "ns=KEY CASE NAME" for each namespace. Every
 * page then has a record
 * keyed by its folded title (casefolded and accents stripped, so a prefix
 * typed any way finds it in key order), a 0x00 byte and the exact title in
 * the index's layout; its value is "a" for an article or "r" for a
 * redirect, followed in layouts 1 to 3 by the redirect's normalised target.
 *
 * The layout is the rules record's "layout=N" line, 1 when there is none
 * (the indexes written before layout 2). Layout 1 stores the title as it
 * is. Layout 2 stores it as a difference from its fold, as most titles are
 * their fold with a few ASCII letters upper-cased: SP_TITLE_UPPER and, for
 * each such letter, its byte offset past the previous one's (a byte,
 * 1..255, the first counted from -1); else the title as it is, after
 * SP_TITLE_VERBATIM only when its first byte is one of these two. That
 * takes a title index's keys from twice a fold to little more than one.
 * Two titles of one fold sort by this difference, not by title: a reader
 * that ranks ties on title order compares the titles. Layout 3 keys its
 * page records as layout 2 and adds the prefix lists of title_lists.h.
 * Layout 4 is layout 3 without the redirects' targets, which were most of
 * a compressed index's bytes (a target is as long as a title, and its
 * neighbours in fold order share nothing with it): a reader takes a
 * redirect's target from its page's text in the table, as the build did
 * (sp_title_redirect_normalised), whatever the layout.
 */
#ifndef SSTPIPE_COMMON_TITLE_RULES_H
#define SSTPIPE_COMMON_TITLE_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a title index's name adds to its table's. */
#define SP_TITLES_SUFFIX ".titles"
/* The title index's path beside table_path (malloc'd; NULL when out of
 * memory): the one place the name is made. */
char *sp_titles_path(const char *table_path);

/* The key of the rules record: one 0x00 byte. */
#define SP_TITLES_RULES_KEY ""
#define SP_TITLES_RULES_KEY_LEN 1

/* Namespaces kept (Wikipedia's have about forty), and the longest name
 * kept: longer ones are not recognised as prefixes. */
#define SP_TITLE_NS_MAX 128
#define SP_TITLE_NS_NAME_MAX 255

/* The title index's layout written (above); an index without a layout
 * line has layout 1. */
#define SP_TITLES_LAYOUT 4
/* Layouts 2 and 3: the first byte after a page record's fold. */
#define SP_TITLE_UPPER 0x01
#define SP_TITLE_VERBATIM 0x02

/* The value of a title index's page record: its first byte. */
#define SP_TITLE_ARTICLE 'a'
#define SP_TITLE_REDIRECT 'r'

typedef struct sp_title_ns {
    long key;
    bool first_letter;
    size_t name_len;
    uint8_t name[SP_TITLE_NS_NAME_MAX];
} sp_title_ns;

/*
 * The table a title index was built for: its file size and footer
 * checksum, taken from the table's complete file before either is
 * published. The two files are published one after the other, so a
 * process stopped between the renames can leave a new index beside the
 * old table; an index whose identity is not its table's is ignored by
 * every reader (and reported by verify), never used for another table.
 */
typedef struct sp_table_identity {
    uint64_t file_size;
    uint64_t footer_checksum;
} sp_table_identity;

/* Whether a and b name the same table. */
bool sp_table_identity_equal(const sp_table_identity *a, const sp_table_identity *b);

typedef struct sp_title_rules {
    /* The table the index holding these rules was built for (zero when
     * the record names none: then it matches no table). */
    sp_table_identity table;
    unsigned layout;   /* of the index's page records' keys (above) */
    bool first_letter; /* the site's <case>, for namespaces not listed */
    size_t ns_count;
    sp_title_ns ns[SP_TITLE_NS_MAX];
} sp_title_rules;

/* MediaWiki's default: every namespace first-letter, none named; the
 * layout written, SP_TITLES_LAYOUT. */
void sp_title_rules_init(sp_title_rules *r);

/* Adds namespace key with its name and case rule (names past
 * SP_TITLE_NS_MAX namespaces, or longer than SP_TITLE_NS_NAME_MAX bytes,
 * are dropped: such a prefix is then taken as part of a main-namespace
 * title). */
void sp_title_rules_add(sp_title_rules *r, long key, bool first_letter, const uint8_t *name,
                        size_t name_len);

/* Whether a <case> or case="" attribute names the first-letter rule. */
bool sp_title_case_first_letter(const char *text, size_t len);

/* The rules as the text of the rules record, malloc'd (*len set); NULL
 * when out of memory. */
uint8_t *sp_title_rules_encode(const sp_title_rules *r, size_t *len);
/* Reads the rules record's value (no layout line: layout 1); -1 when it
 * is not one, or names a layout this reader does not know. */
int sp_title_rules_decode(const uint8_t *text, size_t len, sp_title_rules *r);

/*
 * The title as MediaWiki would store it: underscores are spaces, runs of
 * spaces one space, surrounding spaces dropped, a namespace prefix matched
 * without regard to case and written as the site writes it, and the first
 * letter after it upper-cased where that namespace is first-letter. Into
 * out (cap bytes); its length, or 0 when the result is empty, not valid
 * UTF-8 or longer than cap.
 */
size_t sp_title_normalise(const sp_title_rules *r, const uint8_t *in, size_t n, uint8_t *out,
                          size_t cap);

/*
 * The folded title: casefolded, marks stripped after a compatibility
 * decomposition ("Ångström" and "angstrom" fold alike), underscores as
 * spaces. Into out (cap bytes), cut at a character boundary when longer;
 * its length, or 0 when the input is not valid UTF-8 or holds a 0x00.
 */
size_t sp_title_fold(const uint8_t *in, size_t n, uint8_t *out, size_t cap);

/*
 * A title's key in a title index of that layout (1 to 3): its fold, 0x00,
 * the title as the layout stores it; the fold cut where the whole would
 * pass SP_MAX_KEY_BYTES (a prefix of that length still finds it). key
 * holds SP_MAX_KEY_BYTES; its length, or 0 when the title has no index key
 * (not valid UTF-8, or over SP_MAX_KEY_BYTES - 2).
 */
size_t sp_title_index_key(unsigned layout, const uint8_t *title, size_t n, uint8_t *key);

/* The length of the title that a page record's key of that layout holds,
 * without writing it; 0 when the key holds none. */
size_t sp_title_index_title_len(unsigned layout, const uint8_t *key, size_t klen);

/* The title that a page record's key of that layout holds, into title
 * (SP_MAX_KEY_BYTES); its length, or 0 when the key holds none. */
size_t sp_title_index_title(unsigned layout, const uint8_t *key, size_t klen, uint8_t *title);

/*
 * Where a page's text makes it a redirect: "#WORD [[Target]]" at its start
 * (WORD is the site's redirect word, "REDIRECT" or a translation; the
 * link's "#section" and "|label" are not part of the target). True with
 * *target, *target_len set to the target as written.
 */
bool sp_title_redirect_target(const uint8_t *text, size_t n, const uint8_t **target,
                              size_t *target_len);

/*
 * Where a page's text makes it a redirect in a title index: its target
 * (sp_title_redirect_target) normalised under r, into out (cap bytes); its
 * length, or 0 when the text is no redirect or its target does not
 * normalise (the page is then an article). The build decides a page's kind
 * by it and a lookup finds the target by it, so the two always agree.
 */
size_t sp_title_redirect_normalised(const sp_title_rules *r, const uint8_t *text, size_t n,
                                    uint8_t *out, size_t cap);

#endif
