/* write_text.c: atomic report files; see write_text.h. */
#include "stages/tune/write_text.h"

#include "stages/common/cli.h"

#include <stdlib.h>
#include <string.h>

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

int tune_write_json_doc(json_t *root, const char *path, sp_error *err) {
    char *text = root ? json_dumps(root, JSON_INDENT(2)) : NULL;
    json_decref(root);
    if (!text)
        return sp_errorf(err, "%s: cannot build the JSON report (out of memory)", path);
    size_t n = strlen(text);
    char *line = realloc(text, n + 2);
    if (!line) {
        free(text);
        return sp_errorf(err, "%s: cannot build the JSON report (out of memory)", path);
    }
    memcpy(line + n, "\n", 2);
    int rc = tune_write_text(path, line, n + 1, err);
    free(line);
    return rc;
}
