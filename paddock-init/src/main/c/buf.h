/* Growable byte buffers with a hard maximum size.
 *
 * Every buffer in the init has an explicit upper bound: a peer (or tenant code) that floods us makes
 * buf_reserve() fail, never makes the init allocate without limit. */
#ifndef PADDOCK_BUF_H
#define PADDOCK_BUF_H

#include <stddef.h>
#include <stdint.h>

struct buf {
    uint8_t *data;
    size_t head; /* first live byte */
    size_t len;  /* end of live bytes: live = data[head..len) */
    size_t cap;  /* allocated size */
    size_t max;  /* hard limit on allocated size */
};

void buf_init(struct buf *b, size_t max);
void buf_free(struct buf *b);
/* Live byte count. */
static inline size_t buf_used(const struct buf *b) { return b->len - b->head; }
static inline uint8_t *buf_start(const struct buf *b) { return b->data + b->head; }
/* Makes room for n more bytes after len (compacting or growing up to max). 0 on success, -1 if impossible. */
int buf_reserve(struct buf *b, size_t n);
/* Appends n bytes; -1 (and nothing appended) when the buffer would pass its maximum. */
int buf_append(struct buf *b, const void *p, size_t n);
/* Drops n bytes from the front. */
void buf_consume(struct buf *b, size_t n);
/* Empties the buffer and gives large allocations back. */
void buf_clear(struct buf *b);

#endif
