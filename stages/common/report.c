/* report.c: report files, text and JSON; see report.h. */
#include "stages/common/report.h"

#include "stages/common/cli.h"
#include "stages/common/fileio.h"
#include "stages/common/json_file.h"
#include "stages/common/version.h"

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
    /* Twelve significant digits: a measured figure to far below its own
     * precision, without a double's binary noise (0.0031842649999999999). */
    int rc = sp_json_file_write(root, path, JSON_INDENT(2) | JSON_REAL_PRECISION(12), err);
    json_decref(root);
    return rc;
}
