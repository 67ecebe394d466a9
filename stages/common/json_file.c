/* json_file.c: a JSON document written whole; see json_file.h. */
#include "stages/common/json_file.h"

#include "stages/common/cli.h"
#include "stages/common/fileio.h"

#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

int sp_json_file_write(const json_t *root, const char *path, size_t flags, sp_error *err) {
    static char newline[] = "\n";
    char *text = root ? json_dumps(root, flags) : NULL;
    if (!text)
        return sp_errorf(err, "%s: cannot build the JSON (out of memory)", path);
    struct iovec iov[2] = {{text, strlen(text)}, {newline, 1}};
    sp_output out;
    int rc = sp_output_open(&out, path, err);
    if (rc == 0 && (rc = sp_writev_all(out.fd, iov, 2, out.name, err)) == 0)
        rc = sp_output_commit(&out, err);
    if (rc)
        sp_output_abort(&out);
    free(text);
    return rc;
}
