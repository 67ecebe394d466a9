/*
 * table_set.c: the table set manifest's reader and its rules (table_set.h;
 * TABLESET.md is the specification). Part of libsstpipe as well as of the
 * commands, since sstpipe_open takes a set.
 *
 * The manifest is small (a few hundred bytes a shard) and read whole, then
 * parsed with jansson; every member is checked for its type and range
 * before use, because a manifest is input like any other (it is fuzzed:
 * tests/fuzz/fuzz_tableset.c). Errors name the manifest, the shard (index
 * and file) and what is wrong, so a user can fix or rebuild the right
 * thing. Shard files are only looked at (stat), not opened: checking their
 * footers and key ranges is the set's open's job (sstpipe_set.c).
 */
#include "stages/sst/table_set.h"

#include "stages/common/fileio.h"
#include "stages/common/hex.h"
#include "stages/common/key.h"
#include "stages/common/path.h"
#include "stages/common/record.h"
#include "stages/sst/format.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

/* A manifest of a million shards is about 200 MB; anything near this is
 * not a manifest. */
#define MAX_MANIFEST_BYTES ((size_t)256 << 20)

struct table_set {
    char *manifest; /* the manifest's path */
    char *dir;      /* the directory shard names are under */
    size_t n;
    table_set_shard *shards; /* strings and bounds owned by the set */
    char **paths;            /* dir/file of each shard */
    table_set_options opt;
};

/* ------------------------------------------------------------------ rules */

/* No control characters either: a name is printed in one-line errors. */
static bool plain_name(const char *f) {
    if (!f || !f[0] || strcmp(f, ".") == 0 || strcmp(f, "..") == 0)
        return false;
    for (const unsigned char *p = (const unsigned char *)f; *p; p++)
        if (*p == '/' || *p < 0x20 || *p == 0x7f)
            return false;
    return true;
}

static bool is_checksum(const char *c) {
    if (!c || strlen(c) != TABLE_SET_CHECKSUM_HEX - 1)
        return false;
    for (const char *p = c; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return false;
    return true;
}

static int cmp_name(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Each file name once: sorted copies of the names, neighbours compared. */
static int check_unique(const char *name, const table_set_shard *shards, size_t n, sp_error *err) {
    const char **names = malloc(n * sizeof *names);
    if (!names)
        return sp_errorf(err, "%s: out of memory for %zu shard names", name, n);
    for (size_t i = 0; i < n; i++)
        names[i] = shards[i].file;
    qsort(names, n, sizeof *names, cmp_name);
    int rc = 0;
    for (size_t i = 1; i < n && rc == 0; i++)
        if (strcmp(names[i - 1], names[i]) == 0)
            rc = sp_errorf(err, "%s: shard file %s is listed twice", name, names[i]);
    free(names);
    return rc;
}

int table_set_check_shards(const char *name, const table_set_shard *shards, size_t n,
                           sp_error *err) {
    if (n == 0)
        return sp_errorf(err, "%s: no shards", name);
    for (size_t i = 0; i < n; i++) {
        const table_set_shard *s = &shards[i];
        if (!plain_name(s->file))
            return sp_errorf(err,
                             "%s: shard %zu: file \"%s\" is not a plain file name in the "
                             "directory (empty, '/', '.', '..' or a control character)",
                             name, i, s->file && !strpbrk(s->file, "\n\r") ? s->file : "");
        if ((s->has_lo && (s->lo_len == 0 || s->lo_len > SP_MAX_KEY_BYTES)) ||
            (s->has_hi && (s->hi_len == 0 || s->hi_len > SP_MAX_KEY_BYTES)))
            return sp_errorf(err, "%s: shard %zu (%s): a bound must be 1 to %d bytes", name, i,
                             s->file, SP_MAX_KEY_BYTES);
        if (i == 0 && s->has_lo)
            return sp_errorf(err,
                             "%s: shard 0 (%s): lo must be null (the first shard holds every "
                             "key below the second's)",
                             name, s->file);
        if (i > 0 && !s->has_lo)
            return sp_errorf(err,
                             "%s: shard %zu (%s): lo is null but only shard 0 may be unbounded "
                             "below",
                             name, i, s->file);
        if (i == n - 1 && s->has_hi)
            return sp_errorf(err,
                             "%s: shard %zu (%s): hi must be null (the last shard holds every "
                             "key from its lo on)",
                             name, i, s->file);
        if (i < n - 1 && !s->has_hi)
            return sp_errorf(err,
                             "%s: shard %zu (%s): hi is null but only the last shard may be "
                             "unbounded above",
                             name, i, s->file);
        if (s->has_lo && s->has_hi && sp_key_cmp(s->lo, s->lo_len, s->hi, s->hi_len) >= 0)
            return sp_errorf(err, "%s: shard %zu (%s): empty or inverted range: lo is not below hi",
                             name, i, s->file);
        if (i > 0) {
            const table_set_shard *p = &shards[i - 1];
            int c = sp_key_cmp(p->hi, p->hi_len, s->lo, s->lo_len);
            if (c != 0)
                return sp_errorf(err,
                                 "%s: shard %zu (%s): ranges not contiguous: its lo %s shard "
                                 "%zu's hi (%s)",
                                 name, i, s->file, c > 0 ? "is below (overlap)" : "is above (gap)",
                                 i - 1, p->file);
        }
        if (!is_checksum(s->checksum))
            return sp_errorf(err,
                             "%s: shard %zu (%s): checksum is not 32 lowercase hex digits "
                             "(XXH3-128)",
                             name, i, s->file);
    }
    return check_unique(name, shards, n, err);
}

bool table_set_shard_holds(const table_set_shard *s, const uint8_t *key, size_t klen) {
    if (s->has_lo && sp_key_cmp(key, klen, s->lo, s->lo_len) < 0)
        return false;
    return !s->has_hi || sp_key_cmp(key, klen, s->hi, s->hi_len) < 0;
}

int table_set_file_checksum(const char *path, char out[TABLE_SET_CHECKSUM_HEX], sp_error *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sp_errorf_errno(err, "%s: cannot open", path);
    XXH3_state_t *st = XXH3_createState();
    size_t cap = (size_t)1 << 20;
    uint8_t *buf = malloc(cap);
    int rc = 0;
    if (!st || !buf || XXH3_128bits_reset(st) != XXH_OK) {
        rc = sp_errorf(err, "%s: out of memory for its checksum", path);
    } else {
        ssize_t got;
        while ((got = sp_read_full(fd, buf, cap, path, err)) > 0)
            XXH3_128bits_update(st, buf, (size_t)got);
        if (got < 0)
            rc = -1;
    }
    if (rc == 0) {
        XXH128_canonical_t c;
        XXH128_canonicalFromHash(&c, XXH3_128bits_digest(st));
        for (int i = 0; i < 16; i++)
            snprintf(out + 2 * i, 3, "%02x", c.digest[i]);
    }
    free(buf);
    XXH3_freeState(st);
    close(fd);
    return rc;
}

/* ----------------------------------------------------------------- parser */

void table_set_free(table_set *s) {
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        free((void *)s->shards[i].file);
        free((void *)s->shards[i].lo);
        free((void *)s->shards[i].hi);
        free((void *)s->shards[i].checksum);
        if (s->paths)
            free(s->paths[i]);
    }
    free(s->shards);
    free(s->paths);
    free(s->manifest);
    free(s->dir);
    free(s);
}

/* A bound member: null (unbounded) or lowercase hex, decoded into *out. */
static int parse_bound(const char *name, size_t i, const char *file, const char *member, json_t *v,
                       uint8_t **out, size_t *len, bool *has, sp_error *err) {
    *has = false;
    if (!v)
        return sp_errorf(err, "%s: shard %zu (%s): no \"%s\" (null for unbounded)", name, i, file,
                         member);
    if (json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return sp_errorf(err, "%s: shard %zu (%s): \"%s\" is neither null nor a hex string", name,
                         i, file, member);
    const char *h = json_string_value(v);
    size_t n = json_string_length(v);
    if (n == 0 || n % 2 || n / 2 > SP_MAX_KEY_BYTES)
        return sp_errorf(err,
                         "%s: shard %zu (%s): \"%s\" has %zu hex digits; a bound is 1 to %d bytes "
                         "(an even count of 2 to %d digits)",
                         name, i, file, member, n, SP_MAX_KEY_BYTES, 2 * SP_MAX_KEY_BYTES);
    uint8_t *b = malloc(n / 2);
    if (!b)
        return sp_errorf(err, "%s: out of memory", name);
    size_t bad = sp_hex_decode(h, n, b);
    if (bad != n) {
        free(b);
        return sp_errorf(err,
                         "%s: shard %zu (%s): \"%s\" is not lowercase hex: bad digit at "
                         "position %zu",
                         name, i, file, member, bad);
    }
    *out = b;
    *len = n / 2;
    *has = true;
    return 0;
}

json_t *table_set_bound_json(const void *b, size_t n) {
    if (!b)
        return json_null();
    char *h = sp_hex_encode(b, n);
    if (!h)
        return NULL;
    json_t *s = json_stringn(h, 2 * n);
    free(h);
    return s;
}

static int parse_count(const char *name, size_t i, const char *file, json_t *o, const char *member,
                       uint64_t *out, sp_error *err) {
    json_t *v = json_object_get(o, member);
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return sp_errorf(err, "%s: shard %zu (%s): \"%s\" is %s, not a whole number >= 0", name, i,
                         file, member, v ? "of the wrong type" : "missing");
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

static int parse_shard(const char *name, size_t i, json_t *o, table_set_shard *s, sp_error *err) {
    if (!json_is_object(o))
        return sp_errorf(err, "%s: shard %zu is not an object", name, i);
    json_t *f = json_object_get(o, "file");
    if (!json_is_string(f))
        return sp_errorf(err, "%s: shard %zu: \"file\" is missing or not a string", name, i);
    if (strlen(json_string_value(f)) != json_string_length(f) || !plain_name(json_string_value(f)))
        return sp_errorf(err,
                         "%s: shard %zu: \"file\" is not a plain file name in the directory "
                         "(empty, NUL, '/', '.', '..' or a control character)",
                         name, i);
    if (!(s->file = strdup(json_string_value(f))))
        return sp_errorf(err, "%s: out of memory", name);
    uint8_t *lo = NULL, *hi = NULL;
    int rc = parse_bound(name, i, s->file, "lo", json_object_get(o, "lo"), &lo, &s->lo_len,
                         &s->has_lo, err);
    s->lo = lo;
    if (rc == 0)
        rc = parse_bound(name, i, s->file, "hi", json_object_get(o, "hi"), &hi, &s->hi_len,
                         &s->has_hi, err);
    s->hi = hi;
    if (rc == 0)
        rc = parse_count(name, i, s->file, o, "records", &s->records, err);
    if (rc == 0)
        rc = parse_count(name, i, s->file, o, "bytes", &s->bytes, err);
    if (rc)
        return rc;
    json_t *c = json_object_get(o, "checksum");
    if (!json_is_string(c))
        return sp_errorf(err, "%s: shard %zu (%s): \"checksum\" is missing or not a string", name,
                         i, s->file);
    if (!(s->checksum = strdup(json_string_value(c))))
        return sp_errorf(err, "%s: out of memory", name);
    return 0;
}

static int parse_option(const char *name, json_t *o, const char *member, uint32_t *out,
                        sp_error *err) {
    json_t *v = json_object_get(o, member);
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > UINT32_MAX)
        return sp_errorf(err, "%s: options: \"%s\" is %s, not a whole number", name, member,
                         v ? "of the wrong type or out of range" : "missing");
    *out = (uint32_t)json_integer_value(v);
    return 0;
}

static int parse_options(const char *name, json_t *o, table_set_options *opt, sp_error *err) {
    if (!json_is_object(o))
        return sp_errorf(err, "%s: \"options\" is missing or not an object", name);
    if (parse_option(name, o, "format_version", &opt->format_version, err) ||
        parse_option(name, o, "block_size", &opt->block_size, err) ||
        parse_option(name, o, "cluster_size", &opt->cluster_size, err) ||
        parse_option(name, o, "max_value_bytes", &opt->max_value_bytes, err) ||
        parse_option(name, o, "restart_interval", &opt->restart_interval, err))
        return -1;
    if (opt->format_version != SST_FORMAT_VERSION &&
        opt->format_version != SST_FORMAT_VERSION_PACKED)
        return sp_errorf(err, "%s: options: format_version %u, this sstpipe reads %d and %d", name,
                         opt->format_version, SST_FORMAT_VERSION, SST_FORMAT_VERSION_PACKED);
    if (!sst_pow2_in(opt->block_size, SST_MIN_BLOCK_SIZE, SST_MAX_BLOCK_SIZE) ||
        !sst_pow2_in(opt->cluster_size, SST_MIN_CLUSTER_SIZE, SST_MAX_CLUSTER_SIZE))
        return sp_errorf(err,
                         "%s: options: block_size %u or cluster_size %u is not a power of two "
                         "in range",
                         name, opt->block_size, opt->cluster_size);
    json_t *c = json_object_get(o, "checksum");
    if (!json_is_string(c) || strcmp(json_string_value(c), "xxh3-64") != 0)
        return sp_errorf(err, "%s: options: \"checksum\" is not \"xxh3-64\"", name);
    return 0;
}

static int parse_root(table_set *s, json_t *root, sp_error *err) {
    const char *name = s->manifest;
    if (!json_is_object(root))
        return sp_errorf(err, "%s: not a JSON object", name);
    json_t *fmt = json_object_get(root, "format");
    if (!json_is_string(fmt) || strcmp(json_string_value(fmt), TABLE_SET_FORMAT) != 0)
        return sp_errorf(err, "%s: \"format\" is not \"%s\"", name, TABLE_SET_FORMAT);
    json_t *ver = json_object_get(root, "version");
    if (!json_is_integer(ver))
        return sp_errorf(err, "%s: \"version\" is missing or not a whole number", name);
    if (json_integer_value(ver) != TABLE_SET_VERSION)
        return sp_errorf(err, "%s: version %lld, this sstpipe reads version %d", name,
                         (long long)json_integer_value(ver), TABLE_SET_VERSION);
    json_t *shards = json_object_get(root, "shards");
    if (!json_is_array(shards))
        return sp_errorf(err, "%s: \"shards\" is missing or not an array", name);
    size_t n = json_array_size(shards);
    if (n == 0)
        return sp_errorf(err, "%s: no shards", name);
    if (!(s->shards = calloc(n, sizeof *s->shards)) || !(s->paths = calloc(n, sizeof *s->paths)))
        return sp_errorf(err, "%s: out of memory for %zu shards", name, n);
    s->n = n;
    for (size_t i = 0; i < n; i++) {
        if (parse_shard(name, i, json_array_get(shards, i), &s->shards[i], err))
            return -1;
        if (!(s->paths[i] = sp_path_join(s->dir, s->shards[i].file)))
            return sp_errorf(err, "%s: out of memory", name);
    }
    if (table_set_check_shards(name, s->shards, n, err))
        return -1;
    return parse_options(name, json_object_get(root, "options"), &s->opt, err);
}

table_set *table_set_parse(const char *text, size_t len, const char *name, const char *dir,
                           sp_error *err) {
    table_set *s = calloc(1, sizeof *s);
    if (!s || !(s->manifest = strdup(name)) || !(s->dir = strdup(dir))) {
        sp_errorf(err, "%s: out of memory", name);
        table_set_free(s);
        return NULL;
    }
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    int rc;
    if (!root)
        rc = sp_errorf(err, "%s: line %d, column %d: not valid JSON: %s", name, je.line, je.column,
                       je.text);
    else
        rc = parse_root(s, root, err);
    json_decref(root);
    if (rc) {
        table_set_free(s);
        return NULL;
    }
    return s;
}

bool table_set_is_set_path(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0)
        return false;
    if (S_ISDIR(st.st_mode))
        return true;
    const char *base = strrchr(path, '/');
    return strcmp(base ? base + 1 : path, TABLE_SET_MANIFEST) == 0;
}

/* The manifest's text, whole. */
static char *read_text(const char *path, size_t *len, sp_error *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        sp_errorf_errno(err, "%s: cannot open the table set's manifest", path);
        return NULL;
    }
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) != 0) {
        sp_errorf_errno(err, "%s: cannot stat", path);
    } else if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > MAX_MANIFEST_BYTES) {
        sp_errorf(err, "%s: not a regular file of at most %zu bytes", path, MAX_MANIFEST_BYTES);
    } else if (!(buf = malloc((size_t)st.st_size + 1))) {
        sp_errorf(err, "%s: out of memory", path);
    } else {
        ssize_t got = sp_read_full(fd, buf, (size_t)st.st_size + 1, path, err);
        if (got < 0) {
            free(buf);
            buf = NULL;
        } else {
            *len = (size_t)got;
        }
    }
    close(fd);
    return buf;
}

/* Each shard file is there, a regular file of the size listed. */
static int check_files(const table_set *s, sp_error *err) {
    for (size_t i = 0; i < s->n; i++) {
        const table_set_shard *sh = &s->shards[i];
        struct stat st;
        if (stat(s->paths[i], &st) != 0)
            return sp_errorf_errno(err, "%s: shard %zu: %s: missing or unreadable", s->manifest, i,
                                   s->paths[i]);
        if (!S_ISREG(st.st_mode))
            return sp_errorf(err, "%s: shard %zu: %s: not a regular file", s->manifest, i,
                             s->paths[i]);
        if ((uint64_t)st.st_size != sh->bytes)
            return sp_errorf(err, "%s: shard %zu: %s: %llu bytes, the manifest says %llu",
                             s->manifest, i, s->paths[i], (unsigned long long)st.st_size,
                             (unsigned long long)sh->bytes);
    }
    return 0;
}

table_set *table_set_read_manifest(const char *path, sp_error *err) {
    struct stat st;
    if (stat(path, &st) != 0) {
        sp_errorf_errno(err, "%s: cannot open", path);
        return NULL;
    }
    char *manifest, *dir;
    if (S_ISDIR(st.st_mode)) {
        manifest = sp_path_join(path, TABLE_SET_MANIFEST);
        dir = strdup(path);
    } else {
        const char *slash = strrchr(path, '/');
        manifest = strdup(path);
        dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    }
    table_set *s = NULL;
    size_t len = 0;
    char *text = NULL;
    if (!manifest || !dir) {
        sp_errorf(err, "%s: out of memory", path);
    } else if (S_ISDIR(st.st_mode) && access(manifest, F_OK) != 0 && errno == ENOENT) {
        sp_errorf(err,
                  "%s: a directory, not a regular file; and without %s, not a table set "
                  "(or one not finished)",
                  path, TABLE_SET_MANIFEST);
    } else if ((text = read_text(manifest, &len, err)) != NULL) {
        s = table_set_parse(text, len, manifest, dir, err);
    }
    free(text);
    free(manifest);
    free(dir);
    return s;
}

table_set *table_set_read(const char *path, sp_error *err) {
    table_set *s = table_set_read_manifest(path, err);
    if (s && check_files(s, err)) {
        table_set_free(s);
        s = NULL;
    }
    return s;
}

const char *table_set_manifest_path(const table_set *s) {
    return s->manifest;
}

size_t table_set_count(const table_set *s) {
    return s->n;
}

const table_set_shard *table_set_shard_at(const table_set *s, size_t i) {
    return &s->shards[i];
}

const char *table_set_shard_path(const table_set *s, size_t i) {
    return s->paths[i];
}

const table_set_options *table_set_get_options(const table_set *s) {
    return &s->opt;
}

/* A key in errors: hex, as the manifest writes bounds; long ones cut. */
#define KEY_HEX_SHOWN 48
#define KEY_HEX_CAP (2 * KEY_HEX_SHOWN + sizeof "...")
static const char *key_hex(const uint8_t *k, size_t n, char buf[KEY_HEX_CAP]) {
    size_t shown = n > KEY_HEX_SHOWN ? KEY_HEX_SHOWN : n;
    sp_hex_write(k, shown, buf);
    if (shown < n)
        memcpy(buf + 2 * shown, "...", 4);
    return buf;
}

int table_set_check_key(const table_set *s, size_t i, const char *which, const uint8_t *k,
                        size_t klen, sp_error *err) {
    const table_set_shard *sh = table_set_shard_at(s, i);
    if (table_set_shard_holds(sh, k, klen))
        return 0;
    char kb[KEY_HEX_CAP], lb[KEY_HEX_CAP], hb[KEY_HEX_CAP];
    return sp_errorf(err, "%s: shard %zu (%s): its %s key %s lies outside its range [%s, %s)",
                     table_set_manifest_path(s), i, sh->file, which, key_hex(k, klen, kb),
                     sh->has_lo ? key_hex(sh->lo, sh->lo_len, lb) : "null",
                     sh->has_hi ? key_hex(sh->hi, sh->hi_len, hb) : "null");
}

int table_set_check_footer(const table_set *s, size_t i, uint64_t records, uint64_t file_size,
                           const table_set_options *f, sp_error *err) {
    const char *m = table_set_manifest_path(s);
    const table_set_shard *sh = table_set_shard_at(s, i);
    const table_set_options *o = table_set_get_options(s);
    if (records != sh->records || file_size != sh->bytes)
        return sp_errorf(err,
                         "%s: shard %zu (%s): its footer says %llu records in %llu bytes, the "
                         "manifest %llu in %llu",
                         m, i, sh->file, (unsigned long long)records, (unsigned long long)file_size,
                         (unsigned long long)sh->records, (unsigned long long)sh->bytes);
    if (f->block_size != o->block_size || f->cluster_size != o->cluster_size ||
        f->max_value_bytes != o->max_value_bytes || f->restart_interval != o->restart_interval ||
        f->format_version != o->format_version)
        return sp_errorf(err,
                         "%s: shard %zu (%s): its options (block_size %u, cluster_size %u, "
                         "max_value_bytes %u, restart_interval %u, format_version %u) are not "
                         "the set's (%u, %u, %u, %u, %u)",
                         m, i, sh->file, f->block_size, f->cluster_size, f->max_value_bytes,
                         f->restart_interval, f->format_version, o->block_size, o->cluster_size,
                         o->max_value_bytes, o->restart_interval, o->format_version);
    return 0;
}

size_t table_set_find(const table_set *s, const uint8_t *key, size_t klen) {
    /* The last shard whose lo is <= key; shard 0 has none and holds the rest. */
    size_t lo = 1, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const table_set_shard *m = &s->shards[mid];
        if (sp_key_cmp(m->lo, m->lo_len, key, klen) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo - 1;
}
