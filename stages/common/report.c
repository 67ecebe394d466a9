/* report.c: JSON report files; see report.h. */
#include "stages/common/report.h"

#include "stages/common/cli.h"
#include "stages/common/version.h"

#include <stdlib.h>
#include <string.h>

int sp_report_write_json(json_t *root, const char *path, sp_error *err) {
    if (root && json_object_set_new(root, "sstpipe_version", json_string(sp_version()))) {
        json_decref(root);
        root = NULL;
    }
    char *text = root ? json_dumps(root, JSON_INDENT(2)) : NULL;
    json_decref(root);
    if (!text)
        return sp_errorf(err, "%s: cannot build the JSON report (out of memory)", path);
    sp_output out;
    int rc = sp_output_open(&out, path, err);
    if (rc == 0 && (sp_write_all(out.fd, text, strlen(text), path, err) ||
                    sp_write_all(out.fd, "\n", 1, path, err))) {
        sp_output_abort(&out);
        rc = -1;
    } else if (rc == 0) {
        rc = sp_output_commit(&out, err);
    }
    free(text);
    return rc;
}
