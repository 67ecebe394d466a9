/*
 * compression.h: which compression a file is in, told from its first
 * bytes (its magic), in one place: extract picks its decoder and names the
 * format by it, the cluster planner cuts a bzip2 input at its streams, and
 * the nightly records whether its input was compressed.
 */
#ifndef SSTPIPE_COMMON_COMPRESSION_H
#define SSTPIPE_COMMON_COMPRESSION_H

#include <stdbool.h>
#include <stddef.h>

typedef enum sp_compression {
    SP_COMPRESSION_NONE, /* none of those below: plain data, or unknown */
    SP_COMPRESSION_BZIP2,
    SP_COMPRESSION_GZIP,
    SP_COMPRESSION_XZ,
    SP_COMPRESSION_ZSTD,
} sp_compression;

/* The bytes at the start of a file that tell every kind apart. */
#define SP_COMPRESSION_HEAD 6

/* The compression whose magic the n bytes at head start with. */
sp_compression sp_compression_sniff(const void *head, size_t n);
/* "bzip2", "gzip", "xz", "zstd"; NULL for SP_COMPRESSION_NONE. */
const char *sp_compression_name(sp_compression c);
/* head starts a bzip2 stream with its level ("BZh1".."BZh9"), which the
 * parallel decoder and the planner's stream cuts take; a bare "BZh" is
 * named bzip2 but left to a decoder that reports the damage. */
bool sp_compression_bz2_stream(const void *head, size_t n);
/* The compression of the file at path; SP_COMPRESSION_NONE when it cannot
 * be read. */
sp_compression sp_compression_of_file(const char *path);

#endif
