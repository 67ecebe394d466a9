/*
 * serve_get_many.c: POST /v1/get_many; see serve_get_many.h.
 *
 * The body is parsed whole by jansson (it is bounded), every key checked
 * before any lookup, so a bad request costs no read; then one
 * sstpipe_lookup_many answers all the keys (as titles: the exact keys
 * together, redirects followed), and the reply's JSON copies the values at
 * once (with direct I/O they live in this thread's buffer only until its
 * next lookup).
 */
#include "stages/serve/serve_get_many.h"

#include "stages/common/record.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool serve_get_many_wants_body(const char *method, const char *path) {
    return !strcmp(method, "POST") && !strcmp(path, SERVE_GET_MANY_PATH);
}

/* The keys of the array a into keys and klens: 0, or a 400 with reason. */
static unsigned check_keys(json_t *a, const void **keys, size_t *klens,
                           char reason[SERVE_REASON_CAP]) {
    size_t n = json_array_size(a);
    if (n == 0) {
        snprintf(reason, SERVE_REASON_CAP, "body: no keys (a JSON array of 1 to %d keys)",
                 SERVE_GET_MANY_MAX_KEYS);
        return 400;
    }
    if (n > SERVE_GET_MANY_MAX_KEYS) {
        snprintf(reason, SERVE_REASON_CAP, "body: %zu keys; at most %d in one request", n,
                 SERVE_GET_MANY_MAX_KEYS);
        return 400;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *k = json_array_get(a, i);
        if (!json_is_string(k)) {
            snprintf(reason, SERVE_REASON_CAP, "body: key %zu is not a string", i + 1);
            return 400;
        }
        keys[i] = json_string_value(k);
        klens[i] = json_string_length(k);
        if (klens[i] == 0 || klens[i] > SP_MAX_KEY_BYTES) {
            snprintf(reason, SERVE_REASON_CAP, "body: key %zu is %zu bytes; a key is 1 to %d bytes",
                     i + 1, klens[i], SP_MAX_KEY_BYTES);
            return 400;
        }
    }
    return 0;
}

/* The reply's array: {"key", "value" or null} for each key, in order,
 * with "redirect_from" and "redirect_to" where a redirect was followed. */
static unsigned reply(json_t *a, const sstpipe_lookup_result *res, char **json, size_t *json_len,
                      bool *missed, char reason[SERVE_REASON_CAP]) {
    json_t *out = json_array();
    size_t n = json_array_size(a);
    for (size_t i = 0; out && i < n; i++) {
        const sstpipe_lookup_result *r = &res[i];
        json_t *v = r->value ? json_stringn(r->value, r->vlen) : json_null();
        json_t *rec = v ? json_object() : NULL;
        *missed |= !r->value;
        bool bad = !rec || json_object_set(rec, "key", json_array_get(a, i)) ||
                   json_object_set_new(rec, "value", v);
        if (!bad && r->redirect_from_len)
            bad = json_object_set_new(rec, "redirect_from",
                                      json_stringn(r->redirect_from, r->redirect_from_len)) ||
                  json_object_set_new(rec, "redirect_to",
                                      r->value
                                          ? json_stringn(r->title, r->title_len)
                                          : json_stringn(r->missing_target, r->missing_target_len));
        if (bad || json_array_append_new(out, rec)) {
            json_decref(rec);
            json_decref(out);
            snprintf(reason, SERVE_REASON_CAP,
                     "value %zu of the answer is not valid UTF-8 or out of memory", i + 1);
            return 500;
        }
    }
    *json = out ? json_dumps(out, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(out);
    if (!*json) {
        snprintf(reason, SERVE_REASON_CAP, "out of memory");
        return 503;
    }
    *json_len = strlen(*json);
    return 200;
}

/* The keys' records into res: as titles, or raw the exact keys'. */
static int lookup(sstpipe_table *t, bool raw, size_t n, const void **keys, const size_t *klens,
                  sstpipe_lookup_result *res, char **msg) {
    if (!raw)
        return sstpipe_lookup_many(t, n, keys, klens, 0, res, msg);
    const void *values[SERVE_GET_MANY_MAX_KEYS];
    size_t vlens[SERVE_GET_MANY_MAX_KEYS];
    if (sstpipe_get_many(t, n, keys, klens, values, vlens, msg) < 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        res[i] = (sstpipe_lookup_result){.value = values[i], .vlen = vlens[i]};
    return 0;
}

unsigned serve_get_many(sstpipe_table *t, bool raw, const uint8_t *body, size_t len, bool over,
                        char **json, size_t *json_len, bool *missed,
                        char reason[SERVE_REASON_CAP]) {
    *json = NULL;
    *missed = false;
    if (over) {
        snprintf(reason, SERVE_REASON_CAP, "body over %d bytes", SERVE_GET_MANY_MAX_BODY);
        return 413;
    }
    json_error_t jerr;
    /* NUL is a byte a key may hold: "\u0000" is taken, as the length says. */
    json_t *a = json_loadb((const char *)body, len, JSON_ALLOW_NUL | JSON_DECODE_ANY, &jerr);
    if (!a || !json_is_array(a)) {
        if (a)
            snprintf(reason, SERVE_REASON_CAP, "body: expected a JSON array of keys");
        else
            snprintf(reason, SERVE_REASON_CAP, "body: malformed JSON at line %d column %d: %s",
                     jerr.line, jerr.column, jerr.text);
        json_decref(a);
        return 400;
    }
    const void *keys[SERVE_GET_MANY_MAX_KEYS];
    size_t klens[SERVE_GET_MANY_MAX_KEYS];
    unsigned status = check_keys(a, keys, klens, reason);
    /* A result holds three titles: too many for a server thread's stack. */
    sstpipe_lookup_result *res = status ? NULL : malloc(json_array_size(a) * sizeof *res);
    if (status == 0 && !res) {
        snprintf(reason, SERVE_REASON_CAP, "out of memory");
        status = 503;
    } else if (status == 0) {
        char *msg = NULL;
        if (lookup(t, raw, json_array_size(a), keys, klens, res, &msg) < 0) {
            snprintf(reason, SERVE_REASON_CAP, "%s", msg ? msg : "lookup failed");
            sstpipe_free(msg);
            status = 500;
        } else {
            status = reply(a, res, json, json_len, missed, reason);
        }
    }
    free(res);
    json_decref(a);
    return status;
}
