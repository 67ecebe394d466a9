/*
 * fuzz_config.c: libFuzzer target for the configuration parser.
 *
 * The input is an INI file: config_load_file reads it (inih plus sstpipe's
 * own line checks and value parsers for every key), and a loaded config
 * is printed as `config show` and the nightly manifest would print it,
 * which walks every value and origin. Each line is also tried as a
 * `--set section.key=value` argument. Errors are expected; crashes,
 * sanitizer reports, leaks and broken promises are findings.
 */
#include "config/config.h"
#include "fuzz_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Walks what config show and the manifest print; the output is discarded. */
static void print_config(const sp_config *cfg) {
    FILE *sink = fopen("/dev/null", "w");
    if (!sink)
        fuzz_fail("cannot open /dev/null");
    config_print(cfg, sink);
    fclose(sink);
    json_t *j = config_to_json(cfg);
    if (!j)
        fuzz_fail("config_to_json returned NULL");
    char *text = json_dumps(j, 0);
    if (!text)
        fuzz_fail("config JSON does not serialise");
    free(text);
    json_decref(j);
}

static void set_each_line(const uint8_t *data, size_t size) {
    sp_config cfg;
    config_init(&cfg);
    /* --set arguments are short; long lines and many of them only spend
     * the fuzzer's time in the typo hints' edit distances. */
    char line[128];
    int tried = 0;
    for (size_t at = 0; at < size && tried < 16;) {
        const uint8_t *nl = memchr(data + at, '\n', size - at);
        size_t len = nl ? (size_t)(nl - (data + at)) : size - at;
        if (len < sizeof line && !memchr(data + at, '\0', len)) {
            tried++;
            memcpy(line, data + at, len);
            line[len] = '\0';
            sp_error err = {0};
            if (config_set_arg(&cfg, line, &err))
                fuzz_check_error(&err, NULL);
        }
        at += len + 1;
    }
    print_config(&cfg);
    config_destroy(&cfg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_file file;
    fuzz_file_init(&file, data, size);
    sp_config cfg;
    config_init(&cfg);
    sp_error err = {0};
    if (config_load_file(&cfg, file.path, &err))
        fuzz_check_error(&err, file.path);
    print_config(&cfg);
    config_destroy(&cfg);
    fuzz_file_destroy(&file);
    set_each_line(data, size);
    return 0;
}
