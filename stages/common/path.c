/* path.c: file names from parts; see path.h. */
#include "stages/common/path.h"

#include <stdlib.h>
#include <string.h>

char *sp_path_join(const char *dir, const char *name) {
    size_t ld = strlen(dir), ln = strlen(name);
    char *s = malloc(ld + ln + 2);
    if (s) {
        memcpy(s, dir, ld);
        s[ld] = '/';
        memcpy(s + ld + 1, name, ln + 1);
    }
    return s;
}
