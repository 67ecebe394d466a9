/* freespace.c: the free-space check; see freespace.h. */
#include "stages/common/freespace.h"

#include <sys/statvfs.h>

int sp_free_bytes(const char *path, uint64_t *out, sp_error *err) {
    struct statvfs vfs;
    if (statvfs(path, &vfs))
        return sp_errorf_errno(err, "%s: cannot check free space", path);
    *out = (uint64_t)vfs.f_bavail * vfs.f_frsize;
    return 0;
}
