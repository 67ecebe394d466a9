/*
 * verify_problems.c: the bounded problem list and the report's problems;
 * see verify_problems.h.
 */
#include "stages/verify/verify_problems.h"

#include "stages/verify/verify_check.h"

#include <stdio.h>
#include <stdlib.h>

void problem_list_add(verify_problem **list, size_t *n, size_t *cap, size_t limit, int64_t block,
                      uint64_t offset, const char *fmt, va_list ap) {
    if (*n >= limit)
        return;
    if (*n == *cap) {
        size_t grown = *cap ? 2 * *cap : 16;
        verify_problem *p = realloc(*list, grown * sizeof *p);
        if (!p)
            return; /* still counted; the list is only shorter */
        *list = p;
        *cap = grown;
    }
    verify_problem *p = &(*list)[(*n)++];
    p->block = block;
    p->offset = offset;
    vsnprintf(p->what, sizeof p->what, fmt, ap);
}

void checker_problem(checker *c, int64_t block, uint64_t offset, const char *fmt, ...) {
    c->rep->problem_count++;
    va_list ap;
    va_start(ap, fmt);
    problem_list_add(&c->rep->problems, &c->rep->n_problems, &c->problems_cap,
                     c->rep->opts.max_problems, block, offset, fmt, ap);
    va_end(ap);
}
