/* report.c: report files, text and JSON; see report.h. */
#include "stages/common/report.h"

#include "stages/common/cli.h"
#include "stages/common/version.h"

#include <stdlib.h>
#include <string.h>

int sp_report_write_text(const char *path, const char *text, size_t len, sp_error *err) {
    sp_output out;
    if (sp_output_open(&out, path, err))
        return -1;
    if (sp_write_all(out.fd, text, len, path, err)) {
        sp_output_abort(&out);
        return -1;
    }
    return sp_output_commit(&out, err);
}

int sp_report_write_json(json_t *root, const char *path, sp_error *err) {
    if (root && json_object_set_new(root, "sstpipe_version", json_string(sp_version()))) {
        json_decref(root);
        root = NULL;
    }
    char *text = root ? json_dumps(root, JSON_INDENT(2)) : NULL;
    json_decref(root);
    if (!text)
        return sp_errorf(err, "%s: cannot build the JSON report (out of memory)", path);
    size_t len = strlen(text);
    char *line = realloc(text, len + 2);
    if (!line) {
        free(text);
        return sp_errorf(err, "%s: cannot build the JSON report (out of memory)", path);
    }
    memcpy(line + len, "\n", 2);
    int rc = sp_report_write_text(path, line, len + 1, err);
    free(line);
    return rc;
}
