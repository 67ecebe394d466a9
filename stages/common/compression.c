/* compression.c: compression told from magic bytes; see compression.h. */
#include "stages/common/compression.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static const struct {
    const char *magic;
    size_t len;
    sp_compression kind;
    const char *name;
} magics[] = {
    {"BZh", 3, SP_COMPRESSION_BZIP2, "bzip2"},
    {"\x1f\x8b", 2, SP_COMPRESSION_GZIP, "gzip"},
    {"\xfd"
     "7zXZ",
     5, SP_COMPRESSION_XZ, "xz"},
    {"\x28\xb5\x2f\xfd", 4, SP_COMPRESSION_ZSTD, "zstd"},
};
#define N_MAGICS (sizeof magics / sizeof magics[0])

sp_compression sp_compression_sniff(const void *head, size_t n) {
    for (size_t i = 0; i < N_MAGICS; i++)
        if (n >= magics[i].len && !memcmp(head, magics[i].magic, magics[i].len))
            return magics[i].kind;
    return SP_COMPRESSION_NONE;
}

const char *sp_compression_name(sp_compression c) {
    for (size_t i = 0; i < N_MAGICS; i++)
        if (magics[i].kind == c)
            return magics[i].name;
    return NULL;
}

bool sp_compression_bz2_stream(const void *head, size_t n) {
    const unsigned char *p = head;
    return n >= 4 && sp_compression_sniff(p, n) == SP_COMPRESSION_BZIP2 && p[3] >= '1' &&
           p[3] <= '9';
}

sp_compression sp_compression_of_file(const char *path) {
    unsigned char head[SP_COMPRESSION_HEAD];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return SP_COMPRESSION_NONE;
    ssize_t n = read(fd, head, sizeof head);
    close(fd);
    return n > 0 ? sp_compression_sniff(head, (size_t)n) : SP_COMPRESSION_NONE;
}
