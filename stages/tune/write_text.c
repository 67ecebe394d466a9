/* write_text.c: atomic report files; see write_text.h. */
#include "stages/tune/write_text.h"

#include "stages/common/cli.h"

int tune_write_text(const char *path, const char *text, size_t len, sp_error *err) {
    sp_output out;
    if (sp_output_open(&out, path, err))
        return -1;
    if (sp_write_all(out.fd, text, len, path, err)) {
        sp_output_abort(&out);
        return -1;
    }
    return sp_output_commit(&out, err);
}
