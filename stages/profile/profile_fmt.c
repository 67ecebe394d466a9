/* profile_fmt.c: human durations; see profile_fmt.h. */
#include "stages/profile/profile_fmt.h"

#include <stdio.h>

const char *profile_fmt_ns(double ns, char *buf, size_t cap) {
    static const char *units[] = {"ns", "us", "ms", "s"};
    int u = 0;
    while (u < 3 && ns >= 1000) {
        ns /= 1000;
        u++;
    }
    /* Three significant digits. */
    snprintf(buf, cap, ns >= 100 ? "%.0f %s" : ns >= 10 ? "%.1f %s" : "%.2f %s", ns, units[u]);
    return buf;
}
