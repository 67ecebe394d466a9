/*
 * write.h: the fourth stage. Reads a sorted record stream (from `sstpipe
 * sort`) and writes it as an SSTable with table_writer (stages/sst/).
 */
#ifndef SSTPIPE_WRITE_WRITE_H
#define SSTPIPE_WRITE_WRITE_H

/* `sstpipe write` */
int write_cmd(int argc, char **argv);

#endif
