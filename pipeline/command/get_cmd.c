/*
 * get_cmd.c: `sstpipe get FILE KEY...`, point lookups through libsstpipe
 * (sstpipe.h): the in-memory index picks each key's block, which is read
 * and checked whole before a value is printed. One KEY prints its value and
 * a newline. Several, or "-" (keys one a line from stdin), print one JSON
 * object a line in the keys' order, {"key": "...", "value": "..."}, the
 * value null for a key not found; they are looked up in batches
 * (sstpipe_get_many), each batch's blocks read together, so that a disk
 * that serves reads in flight together serves them at once. Exit 0 every
 * key found, SP_EXIT_NO one or more not found, SP_EXIT_FAIL error,
 * SP_EXIT_USAGE an empty key or one longer than a key can be among them.
 *
 * Every KEY is a title as a person types it (sstpipe_lookup, and
 * sstpipe_lookup_many for several): tried exactly, then as MediaWiki would
 * store it, and a redirect followed to its target's record, which stderr
 * notes for one KEY and the JSON line names for several ("redirect_from",
 * "redirect_to"); --raw prints the record of the key itself (several: the
 * exact keys, as sstpipe_get_many answers them). A miss of one KEY says
 * "not found" on stderr with up to three suggestions.
 */
#include "pipeline/command/commands.h"
#include "pipeline/command/front.h"
#include "stages/common/cli.h"
#include "stages/common/record.h"
#include "stages/sst/sstpipe.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Keys looked up together: the blocks of a batch are held at once, so
 * keys from stdin, of any number, go in batches of this many. */
#define GET_BATCH 512

/* Suggestions printed with a miss. */
#define GET_SUGGESTIONS 3

enum { F_RAW };
static const sp_flag flags[] = {
    [F_RAW] = {"raw", 0, NULL, 0, NULL, "the record stored under KEY, a redirect not followed",
               SP_COMPLETE_NONE, NULL},
};

static const sp_operand operands[] = {{"FILE", SP_COMPLETE_FILE, NULL},
                                      {"KEY", SP_COMPLETE_NONE, NULL}};

/* A batch of keys: from the command line (pointing into argv) or read from
 * stdin (owned, to free after the batch). */
typedef struct batch {
    const void *keys[GET_BATCH];
    size_t klens[GET_BATCH];
    bool owned[GET_BATCH];
    const void *values[GET_BATCH];
    size_t vlens[GET_BATCH];
    sstpipe_lookup_result res[GET_BATCH]; /* titles followed (not --raw) */
    bool raw;
    size_t n;
    uint64_t seen; /* keys before this batch, to name a key by its place */
    bool missing;  /* a key was not found */
} batch;

static int check_key(size_t klen, uint64_t at) {
    if (klen == 0)
        return sp_cli_usage_error("get", "key %llu is empty", (unsigned long long)at + 1);
    if (klen > SP_MAX_KEY_BYTES)
        return sp_cli_usage_error("get", "key %llu is %zu bytes; a key is 1 to %d bytes",
                                  (unsigned long long)at + 1, klen, SP_MAX_KEY_BYTES);
    return 0;
}

/* One line: {"key": K, "value": V or null}, and where a redirect was
 * followed (res not NULL), "redirect_from" the title that redirected and
 * "redirect_to" its target. */
static int print_line(const void *key, size_t klen, const void *value, size_t vlen,
                      const sstpipe_lookup_result *res, uint64_t at) {
    sp_error err = {0};
    json_t *o = json_object(), *k = json_stringn(key, klen);
    json_t *v = value ? json_stringn(value, vlen) : json_null();
    bool redirected = res && res->redirect_from_len;
    const char *to = !res ? NULL : value ? res->title : res->missing_target;
    size_t to_len = !res ? 0 : value ? res->title_len : res->missing_target_len;
    if (!o || !k || !v || json_object_set_new(o, "key", k) || json_object_set_new(o, "value", v) ||
        (redirected &&
         (json_object_set_new(o, "redirect_from",
                              json_stringn(res->redirect_from, res->redirect_from_len)) ||
          json_object_set_new(o, "redirect_to", json_stringn(to, to_len))))) {
        json_decref(o);
        return sp_cli_usage_error("get", "key %llu: %s is not valid UTF-8; JSON cannot hold it",
                                  (unsigned long long)at + 1, !k ? "the key" : "its value");
    }
    char *text = json_dumps(o, 0);
    json_decref(o);
    int rc = text ? 0 : sp_errorf(&err, "out of memory");
    if (!rc && (sp_write_all(STDOUT_FILENO, text, strlen(text), "stdout", &err) ||
                sp_write_all(STDOUT_FILENO, "\n", 1, "stdout", &err)))
        rc = -1;
    free(text);
    return rc ? sp_cli_report(&err, SP_EXIT_FAIL) : 0;
}

/* Looks the batch up, prints it and empties it. */
static int flush(sstpipe_table *t, batch *b) {
    char *msg = NULL;
    int code = 0;
    if ((b->raw ? sstpipe_get_many(t, b->n, b->keys, b->klens, b->values, b->vlens, &msg)
                : sstpipe_lookup_many(t, b->n, b->keys, b->klens, 0, b->res, &msg)) < 0) {
        code = sp_cli_report_msg(msg, SP_EXIT_FAIL);
        sstpipe_free(msg);
    }
    for (size_t i = 0; i < b->n; i++) {
        if (!code && !b->raw) {
            b->missing |= !b->res[i].value;
            code = print_line(b->keys[i], b->klens[i], b->res[i].value, b->res[i].vlen, &b->res[i],
                              b->seen + i);
        } else if (!code) {
            b->missing |= !b->values[i];
            code =
                print_line(b->keys[i], b->klens[i], b->values[i], b->vlens[i], NULL, b->seen + i);
        }
        if (b->owned[i])
            free((void *)b->keys[i]);
    }
    b->seen += b->n;
    b->n = 0;
    return code;
}

/* Adds a key (owned: the batch frees it), looking the batch up when full. */
static int add(sstpipe_table *t, batch *b, const void *key, size_t klen, bool owned) {
    b->keys[b->n] = key;
    b->klens[b->n] = klen;
    b->owned[b->n++] = owned;
    int code = check_key(klen, b->seen + b->n - 1);
    if (code) {
        b->seen += b->n;
        for (size_t i = 0; i < b->n; i++)
            if (b->owned[i])
                free((void *)b->keys[i]);
        b->n = 0;
        return code;
    }
    return b->n == GET_BATCH ? flush(t, b) : 0;
}

/* Adds stdin's keys, one a line (the newline is not part of the key). */
static int add_stdin(sstpipe_table *t, batch *b) {
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int code = 0;
    while (!code && (len = getline(&line, &cap, stdin)) >= 0) {
        if (len > 0 && line[len - 1] == '\n')
            len--;
        char *key = malloc((size_t)len + 1);
        if (!key) {
            sp_error err = {0};
            sp_errorf(&err, "out of memory");
            code = sp_cli_report(&err, SP_EXIT_FAIL);
            break;
        }
        memcpy(key, line, (size_t)len);
        code = add(t, b, key, (size_t)len, true);
    }
    free(line);
    if (!code && ferror(stdin)) {
        sp_error err = {0};
        sp_errorf_errno(&err, "stdin: cannot read the keys");
        code = sp_cli_report(&err, SP_EXIT_FAIL);
    }
    return code;
}

/* Several keys, or "-": JSON lines, in batches. */
static int get_many(sstpipe_table *t, char *const *keys, int n, bool raw) {
    batch *b = calloc(1, sizeof *b);
    if (!b) {
        sp_error err = {0};
        sp_errorf(&err, "out of memory");
        return sp_cli_report(&err, SP_EXIT_FAIL);
    }
    b->raw = raw;
    int code = 0;
    for (int i = 0; !code && i < n; i++)
        code = strcmp(keys[i], "-") ? add(t, b, keys[i], strlen(keys[i]), false) : add_stdin(t, b);
    if (!code)
        code = flush(t, b);
    if (!code && b->missing)
        code = SP_EXIT_NO;
    free(b);
    return code;
}

/* A miss, on stderr: why, and the titles the key may have meant. */
static void say_not_found(sstpipe_table *t, const char *key, const sstpipe_lookup_result *res) {
    if (res->missing_target_len)
        fprintf(stderr, "sstpipe: not found: %s redirects to %s, which is not in the table\n",
                res->redirect_from, res->missing_target);
    else
        fprintf(stderr, "sstpipe: not found: %s\n", key);
    sstpipe_suggestion s[GET_SUGGESTIONS];
    char *msg = NULL;
    int n = sstpipe_suggest(t, key, strlen(key), GET_SUGGESTIONS, s, &msg);
    sstpipe_free(msg);
    if (n > 0)
        fprintf(stderr, "did you mean:\n");
    for (int i = 0; i < n; i++)
        fprintf(stderr, "  %s%s\n", s[i].title, s[i].redirect ? " (a redirect)" : "");
}

/* One key: its record as it is, and a newline. */
static int get_one(sstpipe_table *t, const char *key, bool raw) {
    int code = check_key(strlen(key), 0);
    if (code)
        return code;
    sstpipe_lookup_result *res = malloc(sizeof *res);
    sp_error err = {0};
    if (!res) {
        sp_errorf(&err, "out of memory");
        return sp_cli_report(&err, SP_EXIT_FAIL);
    }
    char *msg = NULL;
    int found = sstpipe_lookup(t, key, strlen(key), raw ? SSTPIPE_LOOKUP_RAW : 0, res, &msg);
    if (found < 0) {
        code = sp_cli_report_msg(msg, SP_EXIT_FAIL);
        sstpipe_free(msg);
    } else if (found == 0) {
        say_not_found(t, key, res);
        code = SP_EXIT_NO;
    } else {
        if (res->redirect_from_len)
            fprintf(stderr, "sstpipe: %s redirects to %s\n", res->redirect_from, res->title);
        if (sp_write_all(STDOUT_FILENO, res->value, res->vlen, "stdout", &err) ||
            sp_write_all(STDOUT_FILENO, "\n", 1, "stdout", &err))
            code = sp_cli_report(&err, SP_EXIT_FAIL);
    }
    free(res);
    return code;
}

static int run(sp_cmdline *cl) {
    const char *path = cl->operands[0];
    int code = SP_EXIT_OK;
    sstpipe_table *t = sp_front_open_table(path, &code);
    if (!t)
        return code;
    char *const *keys = cl->operands + 1;
    int n = cl->n_operands - 1;
    bool raw = cl->count[F_RAW] > 0;
    code = n == 1 && strcmp(keys[0], "-") ? get_one(t, keys[0], raw) : get_many(t, keys, n, raw);
    sstpipe_close(t);
    return code;
}

const sp_command get_command = SP_COMMAND(
    get, run, SP_FLAGS(flags), SP_OPERANDS(operands, 2, -1, "expected FILE and one or more KEY"));
