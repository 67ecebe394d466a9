/* error.c: formatting of sp_error; see error.h. Thread-safe (strerror_r,
 * not strerror's static buffer): the library's lookups fail in many
 * threads at once. */
#include "stages/common/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void sp_error_set(sp_error *err, const char *fmt, ...) {
    if (err && !err->set) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
        err->set = true;
    }
}

void sp_error_set_errno(sp_error *err, const char *fmt, ...) {
    int saved = errno;
    if (err && !err->set) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < sizeof(err->msg)) {
            char buf[256];
            /* The GNU strerror_r (_GNU_SOURCE): returns the message, which
             * need not be in buf. */
            const char *s = strerror_r(saved, buf, sizeof buf);
            snprintf(err->msg + n, sizeof(err->msg) - (size_t)n, ": %s", s);
        }
        err->set = true;
    }
    errno = saved;
}
