#include "proto.h"

#include <string.h>

uint32_t be32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

uint64_t be64(const uint8_t *p)
{
    return ((uint64_t)be32(p) << 32) | be32(p + 4);
}

void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)(v >> 32));
    put32(p + 4, (uint32_t)v);
}

static int rd_need(struct rd *r, size_t n)
{
    if (r->err || rd_left(r) < n) {
        r->err = 1;
        return 0;
    }
    return 1;
}

uint8_t rd_u8(struct rd *r)
{
    if (!rd_need(r, 1))
        return 0;
    return r->p[r->pos++];
}

uint32_t rd_u32(struct rd *r)
{
    if (!rd_need(r, 4))
        return 0;
    uint32_t v = be32(r->p + r->pos);
    r->pos += 4;
    return v;
}

uint64_t rd_u64(struct rd *r)
{
    if (!rd_need(r, 8))
        return 0;
    uint64_t v = be64(r->p + r->pos);
    r->pos += 8;
    return v;
}

void rd_raw(struct rd *r, void *dst, size_t n)
{
    if (!rd_need(r, n)) {
        memset(dst, 0, n);
        return;
    }
    memcpy(dst, r->p + r->pos, n);
    r->pos += n;
}

const uint8_t *rd_bytes(struct rd *r, uint32_t *n)
{
    uint32_t len = rd_u32(r);
    if (r->err || !rd_need(r, len)) {
        *n = 0;
        return (const uint8_t *)"";
    }
    const uint8_t *p = r->p + r->pos;
    r->pos += len;
    *n = len;
    return p;
}

const uint8_t *rd_rest(struct rd *r, size_t *n)
{
    *n = rd_left(r);
    const uint8_t *p = r->p + r->pos;
    r->pos = r->len;
    return p;
}

/* ---- encoding ---- */

void msg_begin(struct msg *m, struct buf *b, uint8_t type, uint32_t chan)
{
    m->b = b;
    m->err = 0;
    if (buf_reserve(b, FRAME_HDR) < 0) {
        m->err = 1;
        m->start = b->len;
        return;
    }
    m->start = b->len;
    uint8_t *h = b->data + b->len;
    put32(h, 0);
    h[4] = type;
    put32(h + 5, chan);
    b->len += FRAME_HDR;
}

uint8_t *msg_reserve(struct msg *m, size_t n)
{
    if (m->err)
        return NULL;
    size_t frame = m->b->len - m->start;
    if (frame + n > OUT_FRAME_MAX) {
        m->err = 1;
        return NULL;
    }
    /* buf_reserve may compact the buffer, which moves our frame start along with the head. */
    size_t head_before = m->b->head;
    if (buf_reserve(m->b, n) < 0) {
        m->err = 1;
        return NULL;
    }
    m->start -= head_before - m->b->head;
    uint8_t *p = m->b->data + m->b->len;
    m->b->len += n;
    return p;
}

void msg_unreserve(struct msg *m, size_t n)
{
    if (!m->err)
        m->b->len -= n;
}

void msg_raw(struct msg *m, const void *p, size_t n)
{
    uint8_t *d = msg_reserve(m, n);
    if (d && n)
        memcpy(d, p, n);
}

void msg_u8(struct msg *m, uint8_t v)
{
    msg_raw(m, &v, 1);
}

void msg_u32(struct msg *m, uint32_t v)
{
    uint8_t *d = msg_reserve(m, 4);
    if (d)
        put32(d, v);
}

void msg_u64(struct msg *m, uint64_t v)
{
    uint8_t *d = msg_reserve(m, 8);
    if (d)
        put64(d, v);
}

void msg_bytes(struct msg *m, const void *p, size_t n)
{
    if (n > UINT32_MAX) {
        m->err = 1;
        return;
    }
    msg_u32(m, (uint32_t)n);
    msg_raw(m, p, n);
}

void msg_abort(struct msg *m)
{
    if (m->b->len >= m->start && m->start >= m->b->head)
        m->b->len = m->start;
    m->err = 1;
}

int msg_end(struct msg *m)
{
    if (m->err) {
        msg_abort(m);
        return -1;
    }
    put32(m->b->data + m->start, (uint32_t)(m->b->len - m->start - 4));
    return 0;
}

/* ---- frames ---- */

long frame_split(const uint8_t *p, size_t n, size_t max_frame)
{
    if (n < 4)
        return 0;
    uint32_t l = be32(p);
    if (l < 5 || (size_t)l + 4 > max_frame)
        return -1;
    if (n < (size_t)l + 4)
        return 0;
    return (long)l + 4;
}

void asm_init(struct assembler *a)
{
    memset(a, 0, sizeof(*a));
    buf_init(&a->msg, MSG_MAX);
}

void asm_reset(struct assembler *a)
{
    buf_clear(&a->msg);
    a->active = 0;
    a->discarding = 0;
}

enum asm_result asm_feed(struct assembler *a, const uint8_t *frame, size_t n, struct frame *out)
{
    uint8_t raw_type = frame[4];
    uint8_t type = raw_type & (uint8_t)~TYPE_MORE;
    uint32_t chan = be32(frame + 5);
    const uint8_t *payload = frame + FRAME_HDR;
    size_t plen = n - FRAME_HDR;
    int more = (raw_type & TYPE_MORE) != 0;

    /* A frame of another message while one is being assembled: the sender broke the rule that
     * fragments follow each other directly. Drop the partial message and start over. */
    if (a->active && (type != a->type || chan != a->chan))
        asm_reset(a);

    if (!a->active && !more) {
        /* The common case: a single-frame message, no copy. */
        out->type = type;
        out->chan = chan;
        out->payload = payload;
        out->len = plen;
        return ASM_MESSAGE;
    }
    if (!a->active) {
        a->active = 1;
        a->type = type;
        a->chan = chan;
        a->discarding = 0;
        buf_clear(&a->msg);
    }
    if (!a->discarding && buf_append(&a->msg, payload, plen) < 0) {
        a->discarding = 1;
        buf_clear(&a->msg);
    }
    if (more)
        return ASM_NONE;
    out->type = type;
    out->chan = chan;
    a->active = 0;
    if (a->discarding) {
        a->discarding = 0;
        out->payload = NULL;
        out->len = 0;
        return ASM_TOO_BIG;
    }
    out->payload = buf_start(&a->msg);
    out->len = buf_used(&a->msg);
    /* The data stays in a->msg until the next call; asm_feed clears it when a new message starts. */
    return ASM_MESSAGE;
}
