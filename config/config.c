/*
 * config.c: setting keys from --set and flags, recording where each value
 * came from, finding keys (with a suggestion for a typo), and printing the
 * effective configuration as text or JSON.
 */
#include "config/config.h"

#include "config/keys.h"

#include <stdlib.h>
#include <string.h>

const char *config_key_section(config_key key) {
    return config_keys[key].section;
}

const char *config_key_name(config_key key) {
    return config_keys[key].name;
}

const char *config_key_help(config_key key) {
    return config_keys[key].help;
}

int config_find_key(const char *section, const char *name) {
    for (int i = 0; i < CONFIG_KEY_COUNT; i++)
        if (!strcmp(config_keys[i].section, section) && !strcmp(config_keys[i].name, name))
            return i;
    return -1;
}

int config_find_section(const char *section) {
    for (int i = 0; config_sections[i]; i++)
        if (!strcmp(config_sections[i], section))
            return i;
    return -1;
}

/* A typo is worth a suggestion when at most about a third of it is wrong. */
void config_suggest_key(const char *section, const char *name, char *out, size_t cap) {
    size_t best = (size_t)-1;
    int best_key = -1;
    for (int i = 0; i < CONFIG_KEY_COUNT; i++) {
        /* The right name in the wrong section is a near miss too. */
        size_t d = config_edit_distance(name, config_keys[i].name) +
                   (section && strcmp(section, config_keys[i].section) ? 1 : 0);
        if (d < best) {
            best = d;
            best_key = i;
        }
    }
    out[0] = '\0';
    if (best_key >= 0 && best <= config_typo_limit(name) + 1)
        snprintf(out, cap, " (did you mean [%s] %s?)", config_keys[best_key].section,
                 config_keys[best_key].name);
}

void config_suggest_section(const char *section, char *out, size_t cap) {
    size_t best = (size_t)-1;
    int best_i = -1;
    for (int i = 0; config_sections[i]; i++) {
        size_t d = config_edit_distance(section, config_sections[i]);
        if (d < best) {
            best = d;
            best_i = i;
        }
    }
    out[0] = '\0';
    if (best_i >= 0 && best <= config_typo_limit(section))
        snprintf(out, cap, " (did you mean [%s]?)", config_sections[best_i]);
    else {
        size_t used = (size_t)snprintf(out, cap, " (sections:");
        for (int i = 0; config_sections[i] && used < cap; i++)
            used += (size_t)snprintf(out + used, cap - used, " [%s]", config_sections[i]);
        if (used < cap)
            snprintf(out + used, cap - used, ")");
    }
}

int config_record(sp_config *cfg, config_key key, config_origin origin, const char *where,
                  sp_error *err) {
    char *copy = NULL;
    if (where && !(copy = strdup(where)))
        return sp_errorf(err, "%s: out of memory", where);
    free(cfg->where[key]);
    cfg->where[key] = copy;
    cfg->origin[key] = origin;
    return 0;
}

int config_set_arg(sp_config *cfg, const char *assignment, sp_error *err) {
    char where[512];
    snprintf(where, sizeof where, "--set %s", assignment);
    const char *eq = strchr(assignment, '=');
    const char *dot = strchr(assignment, '.');
    char hint[160];
    if (!eq || !dot || dot > eq) {
        /* Without a section, the key name alone may still say which was meant. */
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)(eq ? eq - assignment : (long)strlen(assignment)),
                 assignment);
        config_suggest_key(NULL, name, hint, sizeof hint);
        return sp_errorf(err, "%s: expected section.key=value%s", where, hint);
    }
    char section[128], name[128];
    snprintf(section, sizeof section, "%.*s", (int)(dot - assignment), assignment);
    snprintf(name, sizeof name, "%.*s", (int)(eq - dot - 1), dot + 1);
    int key = config_find_key(section, name);
    if (key < 0) {
        if (config_find_section(section) < 0) {
            config_suggest_section(section, hint, sizeof hint);
            return sp_errorf(err, "%s: unknown section [%s]%s", where, section, hint);
        }
        config_suggest_key(section, name, hint, sizeof hint);
        return sp_errorf(err, "%s: unknown key [%s] %s%s", where, section, name, hint);
    }
    char what[800];
    snprintf(what, sizeof what, "%s: [%s] %s", where, section, name);
    if (config_store(cfg, (config_key)key, eq + 1, what, err))
        return -1;
    return config_record(cfg, (config_key)key, CONFIG_FROM_SET, where, err);
}

int config_set_flag(sp_config *cfg, config_key key, const char *flag, const char *value,
                    sp_error *err) {
    if (config_store(cfg, key, value, flag, err))
        return -1;
    return config_record(cfg, key, CONFIG_FROM_FLAG, flag, err);
}

const char *config_origin_text(const sp_config *cfg, config_key key) {
    return cfg->where[key] ? cfg->where[key] : "default";
}

void config_print(const sp_config *cfg, FILE *out) {
    const char *section = NULL;
    for (int i = 0; i < CONFIG_KEY_COUNT; i++) {
        const key_info *k = &config_keys[i];
        if (!section || strcmp(section, k->section)) {
            fprintf(out, "%s[%s]\n", section ? "\n" : "", k->section);
            section = k->section;
        }
        char value[1024], line[1200];
        snprintf(line, sizeof line, "%s = %s", k->name,
                 config_value_text(cfg, (config_key)i, value, sizeof value));
        fprintf(out, "%-34s ; %s\n", line, config_origin_text(cfg, (config_key)i));
    }
}

json_t *config_to_json(const sp_config *cfg) {
    json_t *root = json_object();
    for (int i = 0; i < CONFIG_KEY_COUNT; i++) {
        const key_info *k = &config_keys[i];
        json_t *sec = json_object_get(root, k->section);
        if (!sec) {
            sec = json_object();
            json_object_set_new(root, k->section, sec);
        }
        json_object_set_new(sec, k->name,
                            json_pack("{s:o, s:s}", "value", config_value_json(cfg, (config_key)i),
                                      "origin", config_origin_text(cfg, (config_key)i)));
    }
    return root;
}

bool config_cluster_set(const sp_config *cfg) {
    /* Set to its default (config/default.ini lists every key so) does not
     * count: a copy of default.ini must not turn builds into cluster builds. */
    sp_config defaults;
    config_init(&defaults);
    bool set = false;
    for (int k = CONFIG_CLUSTER_RUNNER; k <= CONFIG_CLUSTER_PARALLEL_SSHLOGIN && !set; k++) {
        char a[1024], b[1024];
        set = cfg->origin[k] != CONFIG_FROM_DEFAULT &&
              strcmp(config_value_text(cfg, (config_key)k, a, sizeof a),
                     config_value_text(&defaults, (config_key)k, b, sizeof b));
    }
    config_destroy(&defaults);
    return set;
}
