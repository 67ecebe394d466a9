/*
 * text_aside.c: decoded page text beside the document; see text_aside.h.
 *
 * An entry is a header (the element's number, the length) and the bytes,
 * back to back in one buffer; `head` is where the first entry not taken
 * begins. The buffer grows as the filter needs (a chunk's or a feed's
 * worth of page text at most) and is kept for the next one.
 */
#include "stages/extract/text_aside.h"

#include <stdlib.h>
#include <string.h>

typedef struct entry_header {
    uint64_t index;
    uint64_t len;
} entry_header;

struct text_aside {
    uint8_t *buf;
    size_t len, cap;
    size_t head; /* the next entry to take */
    size_t open; /* with an entry begun: where its header is */
};

text_aside *text_aside_init(void) {
    return calloc(1, sizeof(text_aside));
}

void text_aside_destroy(text_aside *a) {
    if (!a)
        return;
    free(a->buf);
    free(a);
}

void text_aside_reset(text_aside *a) {
    a->len = a->head = 0;
}

uint8_t *text_aside_begin(text_aside *a, uint64_t index, size_t max) {
    size_t need = a->len + sizeof(entry_header) + max;
    if (need > a->cap) {
        size_t cap = a->cap ? a->cap : 64 << 10;
        while (cap < need)
            cap *= 2;
        uint8_t *grown = realloc(a->buf, cap);
        if (!grown)
            return NULL;
        a->buf = grown;
        a->cap = cap;
    }
    entry_header h = {.index = index};
    memcpy(a->buf + a->len, &h, sizeof h);
    a->open = a->len;
    return a->buf + a->len + sizeof h;
}

void text_aside_commit(text_aside *a, size_t len) {
    entry_header h;
    memcpy(&h, a->buf + a->open, sizeof h);
    h.len = len;
    memcpy(a->buf + a->open, &h, sizeof h);
    a->len = a->open + sizeof h + len;
}

bool text_aside_has(text_aside *a, uint64_t index) {
    while (a->head < a->len) {
        entry_header h;
        memcpy(&h, a->buf + a->head, sizeof h);
        if (h.index >= index)
            return h.index == index;
        a->head += sizeof h + (size_t)h.len;
    }
    return false;
}

const uint8_t *text_aside_take(text_aside *a, size_t *len) {
    entry_header h;
    memcpy(&h, a->buf + a->head, sizeof h);
    const uint8_t *bytes = a->buf + a->head + sizeof h;
    a->head += sizeof h + (size_t)h.len;
    *len = (size_t)h.len;
    return bytes;
}

void text_aside_compact(text_aside *a) {
    if (!a->head)
        return;
    memmove(a->buf, a->buf + a->head, a->len - a->head);
    a->len -= a->head;
    a->head = 0;
}
