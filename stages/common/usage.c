/* usage.c: resource usage of this process and its children; see usage.h. */
#include "stages/common/usage.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

static double seconds_of(struct timeval tv) {
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

int sp_usage_get(sp_usage_who who, sp_usage *u) {
    struct rusage ru;
    memset(u, 0, sizeof *u);
    if (getrusage(who == SP_USAGE_CHILDREN ? RUSAGE_CHILDREN : RUSAGE_SELF, &ru))
        return -1;
    /* Linux counts ru_maxrss in KiB. */
    u->peak_rss_bytes = (uint64_t)ru.ru_maxrss * 1024;
    u->user_seconds = seconds_of(ru.ru_utime);
    u->system_seconds = seconds_of(ru.ru_stime);
    return 0;
}

uint64_t sp_usage_image_peak_rss(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    unsigned long long kib = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %llu kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return (uint64_t)kib * 1024;
}
