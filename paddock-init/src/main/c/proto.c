#include "proto.h"

#include <stdlib.h>
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

/* ---- SPAWN ---- */


void spawn_req_free(struct spawn_req *s)
{
    if (s->argv)
        for (char **a = s->argv; *a; a++)
            free(*a);
    if (s->envp)
        for (char **a = s->envp; *a; a++)
            free(*a);
    free(s->argv);
    free(s->envp);
    free(s->cwd);
    free(s->rlim);
}

/* A wire str as a C string; fails on embedded NUL (it cannot be passed to execve). */
static char *rd_cstr(struct rd *r)
{
    uint32_t n;
    const uint8_t *p = rd_bytes(r, &n);
    if (r->err || memchr(p, 0, n))
        return NULL;
    char *s = malloc((size_t)n + 1);
    if (!s)
        return NULL;
    memcpy(s, p, n);
    s[n] = 0;
    return s;
}

static char **rd_cstrlist(struct rd *r, int need_one)
{
    uint32_t count = rd_u32(r);
    /* Each entry takes at least 4 bytes on the wire: this bounds the allocation by the message size. */
    if (r->err || count > rd_left(r) / 4 || (need_one && count == 0))
        return NULL;
    char **v = calloc((size_t)count + 1, sizeof(char *));
    if (!v)
        return NULL;
    for (uint32_t i = 0; i < count; i++) {
        v[i] = rd_cstr(r);
        if (!v[i]) {
            for (uint32_t j = 0; j < i; j++)
                free(v[j]);
            free(v);
            return NULL;
        }
    }
    return v;
}

int spawn_decode(struct spawn_req *s, const uint8_t *p, size_t n)
{
    struct rd r;
    rd_init(&r, p, n);
    memset(s, 0, sizeof(*s));
    s->flags = rd_u32(&r);
    s->uid = rd_u32(&r);
    s->gid = rd_u32(&r);
    s->timeout_ms = rd_u64(&r);
    s->cap[0] = rd_u64(&r);
    s->cap[1] = rd_u64(&r);
    s->win[0] = rd_u32(&r);
    s->win[1] = rd_u32(&r);
    if (r.err)
        return -1;
    s->cwd = rd_cstr(&r);
    if (!s->cwd || s->cwd[0] != '/')
        return -1;
    s->argv = rd_cstrlist(&r, 1);
    if (!s->argv || !s->argv[0][0])
        return -1;
    s->envp = rd_cstrlist(&r, 0);
    if (!s->envp)
        return -1;
    s->n_rlim = rd_u32(&r);
    if (r.err || s->n_rlim > 64 || (size_t)s->n_rlim * 20 > rd_left(&r))
        return -1;
    s->rlim = calloc(s->n_rlim ? s->n_rlim : 1, sizeof(*s->rlim));
    if (!s->rlim)
        return -1;
    for (uint32_t i = 0; i < s->n_rlim; i++) {
        s->rlim[i].res = rd_u32(&r);
        s->rlim[i].soft = rd_u64(&r);
        s->rlim[i].hard = rd_u64(&r);
    }
    if (s->flags & SPAWN_PTY) {
        s->rows = rd_u32(&r);
        s->cols = rd_u32(&r);
        if (s->rows < 1 || s->rows > 65535 || s->cols < 1 || s->cols > 65535)
            return -1;
    }
    if (r.err)
        return -1;
    /* uid/gid (u32)-1 would mean "unchanged" to setresuid: refuse it. */
    if (s->uid == UINT32_MAX || s->gid == UINT32_MAX)
        return -1;
    return 0;
}


/* ---- init -> engine encoders ---- */

void enc_hello_ack(struct buf *b, const uint8_t nonce[16], const char *build_id)
{
    struct msg m;
    msg_begin(&m, b, R_HELLO_ACK, 0);
    msg_u32(&m, PDK_MAGIC);
    msg_raw(&m, nonce, 16);
    msg_u32(&m, PDK_VERSION);
    msg_bytes(&m, build_id, strlen(build_id));
    msg_end(&m);
}

void enc_exit(struct buf *b, uint32_t chan, const struct exit_report *x)
{
    struct msg m;
    msg_begin(&m, b, R_EXIT, chan);
    msg_u8(&m, x->kind);
    msg_u32(&m, (uint32_t)x->code);
    msg_u32(&m, x->flags);
    msg_u64(&m, x->duration_ns);
    msg_u64(&m, x->user_us);
    msg_u64(&m, x->sys_us);
    msg_u64(&m, x->max_rss_kb);
    const char *s = x->message ? x->message : "";
    msg_bytes(&m, s, strlen(s));
    msg_end(&m);
}

void enc_info(struct msg *m, uint8_t type, uint32_t mode, uint64_t size, int64_t mtime_ns, const char *name,
              const char *link, size_t link_len)
{
    msg_u8(m, type);
    msg_u32(m, mode);
    msg_u64(m, size);
    msg_u64(m, (uint64_t)mtime_ns);
    msg_bytes(m, name, strlen(name));
    msg_bytes(m, link, link_len);
}
