#include "buf.h"

#include <stdlib.h>
#include <string.h>

void buf_init(struct buf *b, size_t max)
{
    memset(b, 0, sizeof(*b));
    b->max = max;
}

void buf_free(struct buf *b)
{
    free(b->data);
    b->data = NULL;
    b->head = b->len = b->cap = 0;
}

int buf_reserve(struct buf *b, size_t n)
{
    if (b->cap - b->len >= n)
        return 0;
    /* Compact first: the live bytes may fit once the consumed prefix is gone. */
    if (b->head > 0) {
        size_t used = buf_used(b);
        memmove(b->data, b->data + b->head, used);
        b->head = 0;
        b->len = used;
        if (b->cap - b->len >= n)
            return 0;
    }
    if (n > b->max || b->len > b->max - n)
        return -1;
    size_t want = b->len + n;
    size_t ncap = b->cap ? b->cap : 4096;
    while (ncap < want)
        ncap *= 2;
    if (ncap > b->max)
        ncap = b->max;
    uint8_t *p = realloc(b->data, ncap);
    if (!p)
        return -1;
    b->data = p;
    b->cap = ncap;
    return 0;
}

int buf_append(struct buf *b, const void *p, size_t n)
{
    if (n == 0)
        return 0;
    if (buf_reserve(b, n) < 0)
        return -1;
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

void buf_consume(struct buf *b, size_t n)
{
    if (n >= buf_used(b)) {
        b->head = b->len = 0;
        return;
    }
    b->head += n;
}

void buf_clear(struct buf *b)
{
    b->head = b->len = 0;
    /* Keep small allocations for reuse; give big ones back so an idle init stays small. */
    if (b->cap > 256 * 1024)
        buf_free(b);
}
