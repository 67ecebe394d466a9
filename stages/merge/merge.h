/*
 * merge.h: the `sstpipe merge` command (merge_cmd.c; the merge itself is
 * table_merge.h).
 */
#ifndef SSTPIPE_MERGE_MERGE_H
#define SSTPIPE_MERGE_MERGE_H

int merge_cmd(int argc, char **argv);

#endif
