/*
 * config_file.c: reading an INI file with inih, and taking -c/--set out of a
 * command's arguments.
 *
 * inih (as Debian builds it) does not pass line numbers to the handler, so
 * the file is fed to it through a reader that counts lines; inih handles
 * one line per read, so the count is the line of the key being handled. The
 * reader also checks section headers and syntax itself, because inih skips
 * an unknown empty section silently and keeps going after a syntax error:
 * this way the first problem in the file is the one reported.
 *
 * Comments: a line starting with ';' or '#', and from a ';' or '#' after a
 * blank to the end of a line ("memory = 16K  # the budget"). inih ends a
 * value at the ';' itself; the '#' the reader cuts off, as a user of INI
 * files writes both.
 */
#include "config/config.h"

#include "config/keys.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stdlib.h>
#include <string.h>

typedef struct ini_ctx {
    sp_config *cfg;
    FILE *file;
    const char *path;
    int line;
    bool line_open; /* the last chunk read did not end its line */
    sp_error *err;
} ini_ctx;

static char *trim(char *s) {
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* Cuts an inline '#' comment (one after a blank) off line, keeping its
 * newline; a '#' inside a word ("/data/a#b") stays. */
static void cut_hash_comment(char *line) {
    for (char *p = line; (p = strchr(p, '#')); p++)
        if (p > line && (p[-1] == ' ' || p[-1] == '\t')) {
            strcpy(p, strchr(p, '\n') ? "\n" : "");
            return;
        }
}

/* Checks one line; returns -1 (err set) when it is not a comment, blank,
 * [known section] or key = value. */
static int check_line(ini_ctx *c, const char *raw) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", raw);
    char *s = trim(buf);
    if (!*s || *s == ';' || *s == '#')
        return 0;
    if (*s == '[') {
        char *end = strchr(s, ']');
        if (!end)
            return sp_errorf(c->err, "%s:%d: section header without ']': %s", c->path, c->line, s);
        *end = '\0';
        char *name = trim(s + 1);
        if (config_find_section(name) < 0) {
            char hint[200];
            config_suggest_section(name, hint, sizeof hint);
            return sp_errorf(c->err, "%s:%d: unknown section [%s]%s", c->path, c->line, name, hint);
        }
        return 0;
    }
    if (!strchr(s, '=') && !strchr(s, ':'))
        return sp_errorf(c->err, "%s:%d: expected 'key = value' or '[section]', got: %s", c->path,
                         c->line, s);
    return 0;
}

static char *read_line(char *str, int num, void *stream) {
    ini_ctx *c = stream;
    if (c->err->set || !fgets(str, num, c->file))
        return NULL;
    size_t n = strlen(str);
    bool ends = n && str[n - 1] == '\n';
    if (!ends && !feof(c->file)) {
        sp_errorf(c->err, "%s:%d: line longer than %d bytes", c->path, c->line + 1, num - 3);
        return NULL;
    }
    c->line++;
    /* Leading blanks would make inih read the line as the continuation of
     * the previous value; here an indented line is just a line. */
    size_t lead = strspn(str, " \t");
    memmove(str, str + lead, n - lead + 1);
    cut_hash_comment(str);
    if (check_line(c, str))
        return NULL;
    return str;
}

static int on_key(void *user, const char *section, const char *name, const char *value) {
    ini_ctx *c = user;
    if (c->err->set)
        return 0;
    if (!*section) {
        sp_errorf(c->err, "%s:%d: key '%s' before any [section]", c->path, c->line, name);
        return 0;
    }
    int key = config_find_key(section, name);
    if (key < 0) {
        char hint[200];
        config_suggest_key(section, name, hint, sizeof hint);
        sp_errorf(c->err, "%s:%d: unknown key [%s] %s%s", c->path, c->line, section, name, hint);
        return 0;
    }
    char where[4200];
    snprintf(where, sizeof where, "%s:%d", c->path, c->line);
    if (c->cfg->origin[key] == CONFIG_FROM_FILE) {
        sp_errorf(c->err, "%s: [%s] %s is set twice (first at %s)", where, section, name,
                  c->cfg->where[key]);
        return 0;
    }
    char what[4400];
    snprintf(what, sizeof what, "%s: [%s] %s", where, section, name);
    if (config_store(c->cfg, (config_key)key, value, what, c->err) ||
        config_record(c->cfg, (config_key)key, CONFIG_FROM_FILE, where, c->err))
        return 0;
    return 1;
}

int config_load_file(sp_config *cfg, const char *path, sp_error *err) {
    FILE *f = fopen(path, "r");
    if (!f)
        return sp_errorf_errno(err, "%s: cannot open config file", path);
    ini_ctx c = {.cfg = cfg, .file = f, .path = path, .err = err};
    int rc = ini_parse_stream(read_line, &c, on_key, &c);
    bool read_failed = ferror(f);
    fclose(f);
    if (err->set)
        return -1;
    if (read_failed)
        return sp_errorf(err, "%s: read failed", path);
    if (rc > 0)
        return sp_errorf(err, "%s:%d: not a 'key = value' line or [section]", path, rc);
    if (rc < 0)
        return sp_errorf(err, "%s: inih could not parse it (%d)", path, rc);
    return 0;
}

/* If argv[i] is -c/--config or --set, sets *value to its argument and
 * returns how many argv entries it used (1 or 2); 0 when it is neither. */
static int match_opt(int argc, char **argv, int i, bool *is_set, const char **value,
                     sp_error *err) {
    const char *a = argv[i];
    static const struct {
        const char *name;
        bool is_set;
    } opts[] = {{"-c", false}, {"--config", false}, {"--set", true}};
    for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++) {
        size_t n = strlen(opts[k].name);
        if (strncmp(a, opts[k].name, n))
            continue;
        *is_set = opts[k].is_set;
        if (!a[n]) {
            if (i + 1 >= argc)
                return sp_errorf(err, "%s needs an argument", opts[k].name);
            *value = argv[i + 1];
            return 2;
        }
        /* -cFILE, --config=FILE, --set=A; but not --configure or --settle */
        if (a[n] == '=' && opts[k].name[1] == '-') {
            *value = a + n + 1;
            return 1;
        }
        if (opts[k].name[1] != '-') {
            *value = a + n;
            return 1;
        }
    }
    return 0;
}

int config_parse_args(sp_config *cfg, int *argc, char **argv, sp_error *err) {
    const char *file = NULL;
    const char **sets = calloc((size_t)*argc + 1, sizeof *sets);
    if (!sets)
        return sp_errorf(err, "out of memory");
    int nsets = 0, out = 1, i = 1;
    while (i < *argc) {
        if (!strcmp(argv[i], "--"))
            break;
        bool is_set = false;
        const char *value = NULL;
        int used = match_opt(*argc, argv, i, &is_set, &value, err);
        if (used < 0) {
            free(sets);
            return -1;
        }
        if (!used) {
            argv[out++] = argv[i++];
            continue;
        }
        if (is_set) {
            sets[nsets++] = value;
        } else if (file) {
            free(sets);
            return sp_errorf(err, "-c given twice ('%s' and '%s')", file, value);
        } else {
            file = value;
        }
        i += used;
    }
    while (i < *argc)
        argv[out++] = argv[i++];
    argv[out] = NULL;
    *argc = out;
    int rc = file ? config_load_file(cfg, file, err) : 0;
    for (int k = 0; !rc && k < nsets; k++)
        rc = config_set_arg(cfg, sets[k], err);
    free(sets);
    return rc;
}
