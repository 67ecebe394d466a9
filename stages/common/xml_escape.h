/*
 * xml_escape.h: text put into XML or HTML as character data or a
 * double-quoted attribute value (file names and labels in the SVG charts,
 * titles and records on serve's search page), so every document stays
 * well-formed and no text becomes markup, whatever it holds.
 */
#ifndef SSTPIPE_COMMON_XML_ESCAPE_H
#define SSTPIPE_COMMON_XML_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

/* Writes s to o with & < > " escaped and control characters (not allowed
 * in XML 1.0) replaced by '?'. */
void sp_xml_escape(FILE *o, const char *s);

/* The same for the n bytes at s, which may hold NULs, keeping tabs and
 * line ends: text shown as it is (a record), lines and all. */
void sp_xml_escape_text(FILE *o, const void *s, size_t n);

#endif
