/*
 * main.c: the sstpipe binary. The commands, their flags and the dispatch
 * are the command table (pipeline/command/commands.h).
 */
#include "pipeline/command/commands.h"
#include "stages/common/cleanup.h"

int main(int argc, char **argv) {
    /* From the start, so every command exits 130 or 143 on SIGINT or
     * SIGTERM, having removed whatever temporary files it registered. */
    sp_cleanup_install();
    return sp_main(argc, argv);
}
