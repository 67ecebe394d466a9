/* size.c: parsing and printing of sizes; see size.h. */
#include "stages/common/size.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int sp_parse_size(const char *text, const char *what, uint64_t *out, sp_error *err) {
    if (!text || !*text || !isdigit((unsigned char)*text))
        return sp_errorf(err, "%s: '%s' is not a size (examples: 4096, 8K, 64M, 1G)", what,
                         text ? text : "");
    errno = 0;
    char *end;
    unsigned long long n = strtoull(text, &end, 10);
    if (errno)
        return sp_errorf(err, "%s: '%s' is too large", what, text);
    unsigned shift = 0;
    switch (toupper((unsigned char)*end)) {
    case 'K':
        shift = 10;
        end++;
        break;
    case 'M':
        shift = 20;
        end++;
        break;
    case 'G':
        shift = 30;
        end++;
        break;
    case 'T':
        shift = 40;
        end++;
        break;
    default:
        break;
    }
    if (shift && (!strcasecmp(end, "iB") || !strcasecmp(end, "B")))
        end += strlen(end);
    else if (!shift && !strcasecmp(end, "B"))
        end++;
    if (*end)
        return sp_errorf(err, "%s: '%s' is not a size (examples: 4096, 8K, 64M, 1G)", what, text);
    if (shift && n > (UINT64_MAX >> shift))
        return sp_errorf(err, "%s: '%s' is too large", what, text);
    *out = (uint64_t)n << shift;
    return 0;
}

int sp_parse_pow2_size(const char *text, const char *what, uint64_t min, uint64_t max,
                       uint64_t *out, sp_error *err) {
    uint64_t n;
    if (sp_parse_size(text, what, &n, err))
        return -1;
    char lo[32], hi[32];
    if (n < min || n > max || (n & (n - 1)))
        return sp_errorf(err, "%s: '%s' must be a power of two from %s to %s", what, text,
                         sp_format_size(min, lo, sizeof lo), sp_format_size(max, hi, sizeof hi));
    *out = n;
    return 0;
}

int sp_parse_count(const char *text, const char *what, uint64_t min, uint64_t max, uint64_t *out,
                   sp_error *err) {
    char *end;
    errno = 0;
    unsigned long long n = strtoull(text, &end, 10);
    if (!isdigit((unsigned char)*text) || *end || errno || n < min || n > max)
        return sp_errorf(err, "%s: '%s' must be a whole number from %llu to %llu", what, text,
                         (unsigned long long)min, (unsigned long long)max);
    *out = n;
    return 0;
}

const char *sp_format_size(uint64_t n, char *buf, size_t cap) {
    static const char units[] = "KMGT";
    if (n < 1024) {
        snprintf(buf, cap, "%llu", (unsigned long long)n);
        return buf;
    }
    int u = -1;
    double v = (double)n;
    while (v >= 1024 && u < 3) {
        v /= 1024;
        u++;
    }
    if (v == (double)(uint64_t)v)
        snprintf(buf, cap, "%llu%c", (unsigned long long)v, units[u]);
    else
        snprintf(buf, cap, "%.1f%c", v, units[u]);
    return buf;
}

const char *sp_format_seconds(double seconds, char *buf, size_t cap) {
    static const struct {
        double scale;
        const char *unit;
    } units[] = {{1, "s"}, {1e-3, "ms"}, {1e-6, "us"}, {1e-9, "ns"}};
    size_t u = 0;
    while (u + 1 < sizeof units / sizeof units[0] && seconds < units[u].scale)
        u++;
    double v = seconds / units[u].scale;
    snprintf(buf, cap, "%.*f %s", v >= 99.95 ? 0 : v >= 9.995 ? 1 : 2, v, units[u].unit);
    return buf;
}

const char *sp_format_bytes(double n, char *buf, size_t cap) {
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
    if (n < 1024) {
        snprintf(buf, cap, "%.0f bytes", n);
        return buf;
    }
    int u = -1;
    while (n >= 1024 && u < 3) {
        n /= 1024;
        u++;
    }
    /* Whole sizes (256 MiB) without decimals; others to 3 digits. */
    snprintf(buf, cap, "%.*f %s",
             n == floor(n) || n >= 99.95 ? 0
             : n >= 9.995                ? 1
                                         : 2,
             n, units[u]);
    return buf;
}
