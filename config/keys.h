/*
 * keys.h: the table of configuration keys (section, name, type, range,
 * default, one-line help) that every part of the config library works from,
 * so that parsing, `config show`, the JSON form and config/default.ini all
 * agree on one list. Internal to config/.
 */
#ifndef SSTPIPE_CONFIG_KEYS_H
#define SSTPIPE_CONFIG_KEYS_H

#include "config/config.h"

#include <stddef.h>
#include <stdint.h>

typedef enum key_type {
    KT_STRING,      /* any text */
    KT_FILENAME,    /* one path component, not one of nightly's own file names */
    KT_SIZE,        /* 4096, 8K, 64M, 1G; in [min, max] */
    KT_POW2,        /* a size that is a power of two in [min, max] */
    KT_COUNT,       /* a whole number in [min, max] */
    KT_FAN_IN,      /* 0 (automatic) or a whole number in [min, max] */
    KT_BOOL,        /* true/false, yes/no, on/off, 1/0 */
    KT_REDIRECTS,   /* keep or skip */
    KT_NAMESPACES,  /* "all" or a comma list of namespace numbers */
    KT_PERCENT,     /* a number from 0 to 100 */
    KT_PROGRESS,    /* auto, always or never */
    KT_RUNNER,      /* a runner name (stages/common/runner_kind.h) */
    KT_COMPRESSION, /* none or zstd */
} key_type;

/* A key's row of config/keys.def. */
typedef struct key_info {
    const char *section;
    const char *name;
    key_type type;
    uint64_t min, max;
    uint64_t def;         /* default of numeric and bool keys */
    const char *def_text; /* default of text keys */
    size_t offset;        /* of the sp_config member the key sets */
    size_t size;          /* of that member, held against type by a unit test */
    const char *help;     /* the one-line comment of config/default.ini */
} key_info;

extern const key_info config_keys[CONFIG_KEY_COUNT];

/* The distinct section names, in table order, NULL-terminated. */
extern const char *const config_sections[];

/*
 * Parses text as key's value and stores it in cfg (nothing changes on
 * error). what starts the error message: "nightly.ini:12: [sst] block_size".
 */
int config_store(sp_config *cfg, config_key key, const char *text, const char *what, sp_error *err);

/* The effective value as JSON: numbers, booleans, strings, a namespace array. */
json_t *config_value_json(const sp_config *cfg, config_key key);

/* Index of section in config_sections, or -1. */
int config_find_section(const char *section);
/* " (did you mean [sst] block_size?)" for the closest key, or "" when none is close. */
void config_suggest_key(const char *section, const char *name, char *out, size_t cap);
/* " (did you mean [sst]?)", or the list of sections when none is close. */
void config_suggest_section(const char *section, char *out, size_t cap);
/* Records where key's value came from (where is copied; NULL for defaults). */
int config_record(sp_config *cfg, config_key key, config_origin origin, const char *where,
                  sp_error *err);

/* Levenshtein distance, case-insensitive; used to suggest the closest key. */
size_t config_edit_distance(const char *a, const char *b);
/* The distance up to which s is taken as a typo of a name, which "did you
 * mean" then suggests: the command line's as well as the config's. */
size_t config_typo_limit(const char *s);

#endif
