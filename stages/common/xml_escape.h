/*
 * xml_escape.h: text put into the SVG charts (file names, labels) as XML
 * character data, so every chart stays well-formed whatever a path holds.
 */
#ifndef SSTPIPE_COMMON_XML_ESCAPE_H
#define SSTPIPE_COMMON_XML_ESCAPE_H

#include <stdio.h>

/* Writes s to o with & < > " escaped and control characters (not allowed
 * in XML 1.0) replaced by '?'. */
void sp_xml_escape(FILE *o, const char *s);

#endif
