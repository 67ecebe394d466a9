/*
 * keys.c: the table of configuration keys, made from the rows of
 * config/keys.def, and the parsing of each key's value into the member of
 * sp_config its row names.
 */
#include "config/keys.h"

#include "stages/common/record.h"
#include "stages/common/size.h"
#include "stages/sort/sorter.h"
#include "stages/sst/block_cache.h"
#include "stages/sst/format.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define KIB 1024ull
#define MIB (1024ull * KIB)
#define GIB (1024ull * MIB)

/* The member of cfg that key sets. */
#define FIELD(cfg, key, type) ((type *)((char *)(cfg) + config_keys[key].offset))

const key_info config_keys[CONFIG_KEY_COUNT] = {
#define CONFIG_KEY(id, section, name, type, min, max, def, def_text, field, help)                  \
    [CONFIG_##id] = {section,                                                                      \
                     name,                                                                         \
                     type,                                                                         \
                     min,                                                                          \
                     max,                                                                          \
                     def,                                                                          \
                     def_text,                                                                     \
                     offsetof(sp_config, field),                                                   \
                     sizeof(((sp_config *)0)->field),                                              \
                     help},
#include "config/keys.def"
#undef CONFIG_KEY
};

static const char *const progress_names[] = {"auto", "always", "never"};

const char *const config_sections[] = {"input", "extract", "truncate", "sort",   "build",
                                       "sst",   "verify",  "profile",  "output", "progress",
                                       "serve", "cluster", NULL};

/* Nightly writes these beside the SSTable; the table must not overwrite them. */
static const char *const reserved_names[] = {"manifest.json", "verify.json", "profile.json",
                                             "nightly.log", NULL};

static int parse_bool(const char *text, const char *what, bool *out, sp_error *err) {
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    for (size_t i = 0; i < 4; i++) {
        if (!strcasecmp(text, yes[i])) {
            *out = true;
            return 0;
        }
        if (!strcasecmp(text, no[i])) {
            *out = false;
            return 0;
        }
    }
    return sp_errorf(err, "%s: '%s' is not a boolean (true/false, yes/no, on/off, 1/0)", what,
                     text);
}

static int parse_namespaces(const char *text, const char *what, int *out, int *count,
                            sp_error *err) {
    *count = 0;
    if (!*text || !strcasecmp(text, "all"))
        return 0;
    const char *p = text;
    for (;;) {
        while (isspace((unsigned char)*p))
            p++;
        if (!isdigit((unsigned char)*p))
            return sp_errorf(err, "%s: '%s' is not a namespace list (all, or numbers like 0,14)",
                             what, text);
        errno = 0;
        char *end;
        long n = strtol(p, &end, 10);
        if (errno || n > INT32_MAX)
            return sp_errorf(err, "%s: namespace '%.*s' is too large", what, (int)(end - p), p);
        for (int i = 0; i < *count; i++)
            if (out[i] == (int)n)
                return sp_errorf(err, "%s: namespace %ld is listed twice", what, n);
        if (*count == CONFIG_MAX_NAMESPACES)
            return sp_errorf(err, "%s: more than %d namespaces", what, CONFIG_MAX_NAMESPACES);
        out[(*count)++] = (int)n;
        p = end;
        while (isspace((unsigned char)*p))
            p++;
        if (!*p)
            return 0;
        if (*p != ',')
            return sp_errorf(err, "%s: '%s' is not a namespace list (all, or numbers like 0,14)",
                             what, text);
        p++;
    }
}

static int parse_percent(const char *text, const char *what, double *out, sp_error *err) {
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (!*text || *end || errno || !isfinite(v) || v < 0 || v > 100)
        return sp_errorf(err, "%s: '%s' must be a number from 0 to 100", what, text);
    *out = v;
    return 0;
}

static int check_filename(const char *text, const char *what, sp_error *err) {
    if (!*text || strchr(text, '/') || !strcmp(text, ".") || !strcmp(text, ".."))
        return sp_errorf(err, "%s: '%s' must be a plain file name", what, text);
    for (size_t i = 0; reserved_names[i]; i++)
        if (!strcmp(text, reserved_names[i]))
            return sp_errorf(err, "%s: '%s' is the name of nightly's %s", what, text,
                             reserved_names[i]);
    return 0;
}

static int parse_number(const key_info *k, const char *text, const char *what, uint64_t *out,
                        sp_error *err) {
    char lo[32], hi[32];
    switch (k->type) {
    case KT_POW2:
        return sp_parse_pow2_size(text, what, k->min, k->max, out, err);
    case KT_SIZE:
        if (sp_parse_size(text, what, out, err))
            return -1;
        if (*out < k->min || *out > k->max)
            return sp_errorf(err, "%s: '%s' must be from %s to %s", what, text,
                             sp_format_size(k->min, lo, sizeof lo),
                             sp_format_size(k->max, hi, sizeof hi));
        return 0;
    case KT_FAN_IN:
        if (!strcmp(text, "0")) {
            *out = 0;
            return 0;
        }
        if (sp_parse_count(text, what, k->min, k->max, out, err)) {
            sp_error_clear(err);
            return sp_errorf(err,
                             "%s: '%s' must be 0 (automatic) or a whole number from %llu "
                             "to %llu",
                             what, text, (unsigned long long)k->min, (unsigned long long)k->max);
        }
        return 0;
    default:
        return sp_parse_count(text, what, k->min, k->max, out, err);
    }
}

static char **string_field(sp_config *cfg, config_key key) {
    return FIELD(cfg, key, char *);
}

static bool *bool_field(sp_config *cfg, config_key key) {
    return FIELD(cfg, key, bool);
}

static uint64_t *number_field(sp_config *cfg, config_key key) {
    return FIELD(cfg, key, uint64_t);
}

int config_store(sp_config *cfg, config_key key, const char *text, const char *what,
                 sp_error *err) {
    const key_info *k = &config_keys[key];
    switch (k->type) {
    case KT_FILENAME:
        if (check_filename(text, what, err))
            return -1;
        /* fall through */
    case KT_STRING: {
        char *copy = strdup(text);
        if (!copy)
            return sp_errorf(err, "%s: out of memory", what);
        char **field = string_field(cfg, key);
        free(*field);
        *field = copy;
        return 0;
    }
    case KT_BOOL:
        return parse_bool(text, what, bool_field(cfg, key), err);
    case KT_REDIRECTS:
        if (strcasecmp(text, "keep") && strcasecmp(text, "skip"))
            return sp_errorf(err, "%s: '%s' must be keep or skip", what, text);
        cfg->extract.skip_redirects = !strcasecmp(text, "skip");
        return 0;
    case KT_NAMESPACES: {
        int list[CONFIG_MAX_NAMESPACES], n;
        if (parse_namespaces(text, what, list, &n, err))
            return -1;
        memcpy(cfg->extract.namespaces, list, sizeof list);
        cfg->extract.namespace_count = n;
        return 0;
    }
    case KT_PERCENT:
        return parse_percent(text, what, &cfg->profile.misses, err);
    case KT_PROGRESS:
        for (int i = 0; i < 3; i++)
            if (!strcasecmp(text, progress_names[i])) {
                cfg->progress.show = (config_progress)i;
                return 0;
            }
        return sp_errorf(err, "%s: '%s' must be auto, always or never", what, text);
    case KT_RUNNER:
        if (!sp_runner_kind_parse(text, &cfg->cluster.runner))
            return 0;
        return sp_errorf(err, "%s: '%s' must be " SP_RUNNER_CHOICES, what, text);
    case KT_COMPRESSION:
        if (strcasecmp(text, "none") && strcasecmp(text, "zstd"))
            return sp_errorf(err, "%s: '%s' must be none or zstd", what, text);
        cfg->sst.compress = !strcasecmp(text, "zstd");
        return 0;
    case KT_SIZE:
    case KT_POW2:
    case KT_COUNT:
    case KT_FAN_IN:
        return parse_number(k, text, what, number_field(cfg, key), err);
    }
    return sp_errorf(err, "%s: unknown key type", what);
}

const char *config_value_text(const sp_config *cfg, config_key key, char *buf, size_t cap) {
    const key_info *k = &config_keys[key];
    sp_config *c = (sp_config *)cfg; /* the field lookups do not write */
    switch (k->type) {
    case KT_STRING:
    case KT_FILENAME:
        snprintf(buf, cap, "%s", *string_field(c, key));
        break;
    case KT_BOOL:
        snprintf(buf, cap, "%s", *bool_field(c, key) ? "true" : "false");
        break;
    case KT_REDIRECTS:
        snprintf(buf, cap, "%s", cfg->extract.skip_redirects ? "skip" : "keep");
        break;
    case KT_NAMESPACES: {
        if (!cfg->extract.namespace_count) {
            snprintf(buf, cap, "all");
            break;
        }
        size_t used = 0;
        buf[0] = '\0';
        for (int i = 0; i < cfg->extract.namespace_count && used < cap; i++)
            used += (size_t)snprintf(buf + used, cap - used, "%s%d", i ? "," : "",
                                     cfg->extract.namespaces[i]);
        break;
    }
    case KT_PERCENT:
        snprintf(buf, cap, "%g", cfg->profile.misses);
        break;
    case KT_PROGRESS:
        snprintf(buf, cap, "%s", progress_names[cfg->progress.show]);
        break;
    case KT_RUNNER:
        snprintf(buf, cap, "%s", sp_runner_kind_name(cfg->cluster.runner));
        break;
    case KT_COMPRESSION:
        snprintf(buf, cap, "%s", cfg->sst.compress ? "zstd" : "none");
        break;
    case KT_SIZE:
    case KT_POW2:
        sp_format_size(*number_field(c, key), buf, cap);
        break;
    case KT_COUNT:
    case KT_FAN_IN:
        snprintf(buf, cap, "%llu", (unsigned long long)*number_field(c, key));
        break;
    }
    return buf;
}

json_t *config_value_json(const sp_config *cfg, config_key key) {
    const key_info *k = &config_keys[key];
    sp_config *c = (sp_config *)cfg;
    switch (k->type) {
    case KT_STRING:
    case KT_FILENAME:
        return json_string(*string_field(c, key));
    case KT_BOOL:
        return json_boolean(*bool_field(c, key));
    case KT_REDIRECTS:
        return json_string(cfg->extract.skip_redirects ? "skip" : "keep");
    case KT_NAMESPACES: {
        if (!cfg->extract.namespace_count)
            return json_string("all");
        json_t *a = json_array();
        for (int i = 0; i < cfg->extract.namespace_count; i++)
            json_array_append_new(a, json_integer(cfg->extract.namespaces[i]));
        return a;
    }
    case KT_PERCENT:
        return json_real(cfg->profile.misses);
    case KT_PROGRESS:
        return json_string(progress_names[cfg->progress.show]);
    case KT_RUNNER:
        return json_string(sp_runner_kind_name(cfg->cluster.runner));
    case KT_COMPRESSION:
        return json_string(cfg->sst.compress ? "zstd" : "none");
    default:
        return json_integer((json_int_t)*number_field(c, key));
    }
}

void config_init(sp_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    for (int i = 0; i < CONFIG_KEY_COUNT; i++) {
        const key_info *k = &config_keys[i];
        if (k->def_text) {
            sp_error err = {0};
            /* The defaults are in the table above and a unit test parses each. */
            config_store(cfg, (config_key)i, k->def_text, k->name, &err);
        } else if (k->type == KT_BOOL) {
            *bool_field(cfg, (config_key)i) = k->def != 0;
        } else if (k->type == KT_PERCENT) {
            cfg->profile.misses = (double)k->def;
        } else {
            *number_field(cfg, (config_key)i) = k->def;
        }
    }
}

void config_destroy(sp_config *cfg) {
    for (int i = 0; i < CONFIG_KEY_COUNT; i++) {
        if (config_keys[i].type == KT_STRING || config_keys[i].type == KT_FILENAME)
            free(*string_field(cfg, (config_key)i));
        free(cfg->where[i]);
    }
    memset(cfg, 0, sizeof *cfg);
}

size_t config_edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return la > lb ? la : lb;
    size_t row[65];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            size_t best = diag + cost;
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

size_t config_typo_limit(const char *s) {
    size_t n = strlen(s) / 3;
    return n < 2 ? 2 : n;
}
