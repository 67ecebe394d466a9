/*
 * site_rules.h: a dump's title rules (<siteinfo>'s <case> and namespaces),
 * read from its head before the build reads the whole of it, so the table's
 * title index records the rules of the dump it came from (title_rules.h).
 */
#ifndef SSTPIPE_EXTRACT_SITE_RULES_H
#define SSTPIPE_EXTRACT_SITE_RULES_H

#include "stages/common/error.h"
#include "stages/common/title_rules.h"

/* The most of a dump's decompressed head read for its <siteinfo>: real
 * ones are a few KiB, before the first <page>. */
#define SITE_RULES_HEAD_MAX (4u << 20)

/*
 * Reads path's rules into *rules: MediaWiki's defaults when the dump has
 * no <siteinfo> before its first <page> or within SITE_RULES_HEAD_MAX
 * bytes, or when path is "-" (stdin cannot be read twice). -1 when the
 * file cannot be read or its head is not well-formed.
 */
int site_rules_read(const char *path, sp_title_rules *rules, sp_error *err);

#endif
