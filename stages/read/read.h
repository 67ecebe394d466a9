/*
 * read.h: the commands that read an SSTable back: get (one key), dump (every
 * record, as JSON lines) and info (what the footer says).
 */
#ifndef SSTPIPE_READ_READ_H
#define SSTPIPE_READ_READ_H

int get_cmd(int argc, char **argv);
int dump_cmd(int argc, char **argv);
int info_cmd(int argc, char **argv);

#endif
