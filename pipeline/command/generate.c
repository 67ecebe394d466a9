/* generate.c: `sstpipe --generate WHAT`; see generate.h. */
#include "pipeline/command/generate.h"

#include "stages/common/cli.h"

#include <string.h>

static const struct {
    const char *what;
    void (*write)(const sp_command *const *commands, FILE *out);
} generators[] = {
    {"man-commands", sp_generate_man_commands},
    {"man-config", sp_generate_man_config},
    {"bash-completion", sp_generate_bash_completion},
};

int sp_generate_main(const sp_command *const *commands, int argc, char **argv) {
    for (size_t i = 0; argc == 2 && i < sizeof generators / sizeof generators[0]; i++) {
        if (strcmp(argv[1], generators[i].what))
            continue;
        generators[i].write(commands, stdout);
        if (fflush(stdout) || ferror(stdout)) {
            fprintf(stderr, "sstpipe: --generate %s: write failed\n", argv[1]);
            return SP_EXIT_FAIL;
        }
        return SP_EXIT_OK;
    }
    fprintf(stderr, "sstpipe: usage: sstpipe --generate man-commands|man-config|bash-completion\n");
    return SP_EXIT_USAGE;
}
