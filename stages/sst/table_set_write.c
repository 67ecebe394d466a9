/*
 * table_set_write.c: writes a table set's manifest (table_set.h), the last
 * step of publishing a set, called by the sharded build's finishing step
 * once every shard file is complete.
 *
 * The manifest is what makes a directory a set, so it is written through
 * an output file (json_file.h, through fileio.h: temporary file in the directory, fsync, rename,
 * fsync of the directory): a crash leaves the old manifest or the new one.
 * Before anything is written the text is read back by the reader's own
 * parser (table_set_parse), so the writer can never publish a manifest
 * that a reader refuses: the rules are the reader's, stated once.
 */
#include "stages/sst/table_set.h"

#include "stages/common/json_file.h"
#include "stages/common/version.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *shard_json(const table_set_shard *s) {
    return json_pack("{s:s, s:o, s:o, s:I, s:I, s:s}", "file", s->file, "lo",
                     table_set_bound_json(s->has_lo ? s->lo : NULL, s->lo_len), "hi",
                     table_set_bound_json(s->has_hi ? s->hi : NULL, s->hi_len), "records",
                     (json_int_t)s->records, "bytes", (json_int_t)s->bytes, "checksum",
                     s->checksum);
}

/* The manifest, written and read back in this one encoding. */
#define MANIFEST_FLAGS (JSON_PRESERVE_ORDER | JSON_INDENT(1))

/* The manifest's JSON, or NULL with err set. */
static json_t *manifest_json(const char *name, const table_set_shard *shards, size_t n,
                             const char *options_json, const char *inputs_json, sp_error *err) {
    json_error_t je;
    json_t *options = json_loads(options_json ? options_json : "", 0, &je);
    if (!json_is_object(options)) {
        json_decref(options);
        sp_errorf(err, "%s: the options given are not a JSON object", name);
        return NULL;
    }
    json_t *inputs = json_loads(inputs_json ? inputs_json : "", 0, &je);
    if (!json_is_array(inputs)) {
        json_decref(options);
        json_decref(inputs);
        sp_errorf(err, "%s: the inputs given are not a JSON array", name);
        return NULL;
    }
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++)
        if (json_array_append_new(arr, shard_json(&shards[i])) != 0) {
            json_decref(arr);
            arr = NULL;
        }
    json_t *root = json_pack("{s:s, s:i, s:o, s:o, s:o, s:s}", "format", TABLE_SET_FORMAT,
                             "version", TABLE_SET_VERSION, "shards", arr, "options", options,
                             "inputs", inputs, "sstpipe_version", sp_version());
    if (!root)
        sp_errorf(err, "%s: out of memory (or a file name that is not UTF-8)", name);
    return root;
}

int table_set_write_manifest(const char *dir, const table_set_shard *shards, size_t n,
                             const char *options_json, const char *inputs_json, sp_error *err) {
    size_t plen = strlen(dir) + sizeof TABLE_SET_MANIFEST + 1;
    char *path = malloc(plen);
    if (!path)
        return sp_errorf(err, "%s: out of memory", dir);
    snprintf(path, plen, "%s/%s", dir, TABLE_SET_MANIFEST);
    json_t *root = NULL;
    char *text = NULL;
    table_set *check = NULL;
    int rc = -1;
    if (table_set_check_shards(path, shards, n, err) ||
        !(root = manifest_json(path, shards, n, options_json, inputs_json, err)))
        goto done;
    if (!(text = json_dumps(root, MANIFEST_FLAGS))) {
        sp_errorf(err, "%s: out of memory", path);
        goto done;
    }
    if (!(check = table_set_parse(text, strlen(text), path, dir, err)) ||
        sp_json_file_write(root, path, MANIFEST_FLAGS, err))
        goto done;
    rc = 0;
done:
    table_set_free(check);
    free(text);
    json_decref(root);
    free(path);
    return rc;
}
