/* Ring all-reduce over the native data plane, one poll loop per position.
 *
 * Reduce-scatter then all-gather, 2(N-1) ring steps. At step g, position p sends segment
 * (p-g) mod N and receives segment (p-g-1) mod N: during reduce-scatter (g < N-1) it adds what
 * it receives, during all-gather it stores it. What p sends at step g is what it received at
 * step g-1, so a send may go as soon as that many elements have arrived and been added: the
 * steps overlap chunk by chunk instead of waiting for whole segments, and every segment's sum is
 * computed once, in ring order (the same additions, in the same order, as the WebSocket path).
 *
 * Either phase also runs alone (sharded data parallelism): a reduce-scatter stops after its N-1
 * steps, each position holding the sum of segment (p+1) mod N; an all-gather starts at step N-1,
 * sending that segment as it stands.
 *
 * Each operation starts with a 32-byte header ("MTAR", version, format, phases, seq, element
 * count, 16-bit count) checked against this position's own; after it, each segment's leading elements
 * (those below the 16-bit count) as little-endian 16-bit values, the rest as float32. A 16-bit
 * segment is rounded once more by its owner when its sum is complete, so the all-gather hands
 * every position the same bits. */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include "dataplane.h"
#include "half.h"

#define HEADER 32
#define VERSION 2u

typedef struct {
  size_t off, len; /* in elements */
} span;

static span segment(size_t n, int parts, int idx) {
  size_t base = n / (size_t)parts, extra = n % (size_t)parts, i = (size_t)idx;
  span s = {i * base + (i < extra ? i : extra), base + (i < extra ? 1 : 0)};
  return s;
}

size_t dp_scratch_bytes(size_t n, int size, size_t chunk, int format) {
  size_t seg = size > 0 ? (n + (size_t)size - 1) / (size_t)size : n, el = chunk && chunk < seg ? chunk : seg;
  size_t bytes = 4 * el + (format ? 2 * el : 0);
  return bytes < DP_SCRATCH_MIN ? DP_SCRATCH_MIN : bytes;
}

static int mod(int a, int n) { return ((a % n) + n) % n; }

static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_u64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

static void header(unsigned char *h, const dp_ring *r, uint64_t n) {
  memcpy(h, "MTAR", 4);
  h[4] = (unsigned char)VERSION;
  h[5] = (unsigned char)(VERSION >> 8);
  h[6] = (unsigned char)r->format;
  h[7] = (unsigned char)r->phases;
  put_u64(h + 8, r->seq);
  put_u64(h + 16, n);
  put_u64(h + 24, r->format ? r->packed : 0);
}

static const char *format_name(int f) { return f == HALF_FP16 ? "fp16" : f == HALF_BF16 ? "bf16" : "float32"; }
static const char *phase_name(int p) { return p == DP_REDUCE_SCATTER ? "a reduce-scatter" : p == DP_ALL_GATHER ? "an all-gather" : p == DP_BOTH ? "an all-reduce" : "an unknown collective"; }

/* Plain IEEE additions (no flush-to-zero), which the compiler vectorises; src at any alignment. */
static void add(float *restrict dst, const unsigned char *restrict src, size_t k) {
  for (size_t i = 0; i < k; i++) {
    float v;
    memcpy(&v, src + 4 * i, 4);
    dst[i] += v;
  }
}

typedef struct {
  const dp_ring *r;
  float *data;
  size_t n;
  int first, steps; /* the ring steps run: [0, 2(N-1)), or one phase's half */
  /* sending */
  unsigned char hout[HEADER];
  size_t hout_sent;
  int sg;
  size_t sent; /* wire bytes of segment sseg(sg) */
  unsigned char *stage; /* 16-bit values encoded for sending */
  size_t stage_cap, stage_len, stage_pos;
  /* receiving */
  unsigned char hin[HEADER];
  size_t hin_got;
  int rg;
  size_t rbytes;  /* wire bytes of segment rseg(rg) received */
  size_t done;    /* wire bytes of it added (reduce-scatter) or stored (all-gather) */
  unsigned char *tmp;
  size_t tmp_cap, tmp_fill;
  size_t chunk_bytes;
  double first_byte;
  double bytes_sent;
} ring_op;

static span send_seg(const ring_op *o, int g) { return segment(o->n, o->r->size, mod(o->r->position - g, o->r->size)); }
static span recv_seg(const ring_op *o, int g) { return segment(o->n, o->r->size, mod(o->r->position - g - 1, o->r->size)); }

/* A segment on the wire: its first k16 elements as 16-bit values, the rest as float32. */
static size_t k16_of(const ring_op *o, span s) {
  size_t p = o->r->format ? o->r->packed : 0;
  return p <= s.off ? 0 : p - s.off < s.len ? p - s.off : s.len;
}
static size_t wire_len(const ring_op *o, span s) { return 2 * k16_of(o, s) + 4 * (s.len - k16_of(o, s)); }
/* Whole elements held by the first b wire bytes of a segment. */
static size_t elems_in(const ring_op *o, span s, size_t b) {
  size_t k = k16_of(o, s);
  return b <= 2 * k ? b / 2 : k + (b - 2 * k) / 4;
}

/* Bytes of the current send segment that are final enough to send. */
static size_t sendable(const ring_op *o) {
  size_t all = wire_len(o, send_seg(o, o->sg));
  if (o->sg == o->first || o->rg > o->sg - 1) return all;
  return o->rg == o->sg - 1 ? o->done : 0;
}

/* Bytes to send now: 0 until a whole chunk is final or the segment is, since many tiny sends
 * cost more than they overlap. */
static size_t send_ready(const ring_op *o) {
  if (o->sg >= o->steps) return 0;
  if (o->stage_pos < o->stage_len) return o->stage_len - o->stage_pos;
  size_t ready = sendable(o), all = wire_len(o, send_seg(o, o->sg));
  if (ready <= o->sent) return 0;
  if (ready < all && ready - o->sent < o->chunk_bytes) return 0;
  return ready - o->sent;
}

static void skip_empty(ring_op *o) {
  while (o->sg < o->steps && send_seg(o, o->sg).len == 0) o->sg++;
  while (o->rg < o->steps && recv_seg(o, o->rg).len == 0) o->rg++;
}

static int check_header(ring_op *o, dp_error *e) {
  const dp_ring *r = o->r;
  const unsigned char *h = o->hin;
  if (memcmp(h, "MTAR", 4) != 0) return dp_fail(e, DP_PROTOCOL, "%s sent bytes that are not an all-reduce frame of meshtrain's data plane", r->prev_name), -1;
  if ((h[4] | h[5] << 8) != VERSION) return dp_fail(e, DP_PROTOCOL, "%s speaks version %d of the data plane's all-reduce, this worker version %u: run one meshtrain version on every worker", r->prev_name, h[4] | h[5] << 8, VERSION), -1;
  if (get_u64(h + 8) != r->seq) return dp_fail(e, DP_PROTOCOL, "%s is at all-reduce %llu where this position is at %llu", r->prev_name, (unsigned long long)get_u64(h + 8), (unsigned long long)r->seq), -1;
  if (get_u64(h + 16) != o->n) return dp_fail(e, DP_PROTOCOL, "%s all-reduces %llu elements where this position has %zu: the replicas' gradients differ in size", r->prev_name, (unsigned long long)get_u64(h + 16), o->n), -1;
  if (h[7] != r->phases) return dp_fail(e, DP_PROTOCOL, "%s runs %s where this position runs %s: the replicas' collectives differ", r->prev_name, phase_name(h[7]), phase_name(r->phases)), -1;
  if (h[6] != r->format || get_u64(h + 24) != (r->format ? r->packed : 0)) return dp_fail(e, DP_PROTOCOL, "%s sends %llu elements as %s where this position sends %zu as %s: the replicas' compression differs", r->prev_name, (unsigned long long)get_u64(h + 24), format_name(h[6]), r->format ? r->packed : 0, format_name(r->format)), -1;
  return 1;
}

/* Adds (reduce-scatter) or stores (all-gather) the whole elements in tmp; the owner of a
 * segment, at the last reduce-scatter step, rounds its 16-bit part to the format. */
static void consume(ring_op *o, span s, int store) {
  size_t k = k16_of(o, s), el = elems_in(o, s, o->done), pos = 0;
  if (el < k) {
    size_t m = o->tmp_fill / 2 < k - el ? o->tmp_fill / 2 : k - el;
    int mode = store ? 0 : o->rg == o->r->size - 2 ? 2 : 1;
    half_decode(o->r->format, o->tmp, o->data + s.off + el, m, mode);
    pos = 2 * m;
    el += m;
  }
  if (el >= k) {
    size_t m = (o->tmp_fill - pos) / 4 < s.len - el ? (o->tmp_fill - pos) / 4 : s.len - el;
    if (store) memcpy(o->data + s.off + el, o->tmp + pos, 4 * m);
    else add(o->data + s.off + el, o->tmp + pos, m);
    pos += 4 * m;
  }
  o->done += pos;
  o->tmp_fill -= pos;
  memmove(o->tmp, o->tmp + pos, o->tmp_fill);
}

/* One recv() call; >0 progress, 0 would block, -1 error. */
static int recv_some(ring_op *o, dp_error *e) {
  const dp_ring *r = o->r;
  ssize_t k;
  if (o->hin_got < HEADER) {
    k = recv(r->prev_fd, o->hin + o->hin_got, HEADER - o->hin_got, 0);
    if (k <= 0) goto io;
    if (o->first_byte == 0) o->first_byte = dp_now_ms();
    o->hin_got += (size_t)k;
    return o->hin_got == HEADER ? check_header(o, e) : 1;
  }
  span s = recv_seg(o, o->rg);
  size_t all = wire_len(o, s), left = all - o->rbytes, k16 = k16_of(o, s);
  int store = o->rg >= r->size - 1;
  if (store && o->tmp_fill == 0 && o->rbytes >= 2 * k16) {
    /* float32 values of an all-gather go straight to their place */
    k = recv(r->prev_fd, (unsigned char *)(o->data + s.off + k16) + (o->rbytes - 2 * k16), left, 0);
    if (k <= 0) goto io;
    o->rbytes += (size_t)k;
    o->done = o->rbytes;
  } else {
    size_t room = o->tmp_cap - o->tmp_fill;
    k = recv(r->prev_fd, o->tmp + o->tmp_fill, left < room ? left : room, 0);
    if (k <= 0) goto io;
    o->rbytes += (size_t)k;
    o->tmp_fill += (size_t)k;
    consume(o, s, store);
  }
  if (o->rbytes == all) {
    o->rg++;
    o->rbytes = o->done = 0;
  }
  return 1;
io:
  if (k == 0) return dp_fail(e, DP_CLOSED, "%s closed the data link during all-reduce %llu", r->prev_name, (unsigned long long)r->seq), -1;
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return 0;
  return dp_fail(e, DP_CLOSED, "the data link from %s failed: %s", r->prev_name, strerror(errno)), -1;
}

/* Encodes the next ready 16-bit values of the send segment into the stage. */
static void restage(ring_op *o, span s, size_t ready) {
  size_t k = k16_of(o, s), el = o->sent / 2, upto = elems_in(o, s, o->sent + ready);
  size_t m = (upto < k ? upto : k) - el;
  if (m > o->stage_cap / 2) m = o->stage_cap / 2;
  half_encode(o->r->format, o->data + s.off + el, o->stage, m);
  o->stage_len = 2 * m;
  o->stage_pos = 0;
}

/* One send() call; >0 progress, 0 nothing to send or would block, -1 error. */
static int send_some(ring_op *o, dp_error *e) {
  const dp_ring *r = o->r;
  ssize_t k;
  if (o->hout_sent < HEADER) {
    k = send(r->next_fd, o->hout + o->hout_sent, HEADER - o->hout_sent, MSG_NOSIGNAL);
    if (k < 0) goto io;
    o->hout_sent += (size_t)k;
    return 1;
  }
  size_t ready = send_ready(o);
  if (ready == 0) return 0;
  span s = send_seg(o, o->sg);
  size_t all = wire_len(o, s), k16 = k16_of(o, s);
  if (o->sent < 2 * k16) {
    if (o->stage_pos == o->stage_len) restage(o, s, ready);
    k = send(r->next_fd, o->stage + o->stage_pos, o->stage_len - o->stage_pos, MSG_NOSIGNAL);
    if (k < 0) goto io;
    o->stage_pos += (size_t)k;
  } else {
    k = send(r->next_fd, (const unsigned char *)(o->data + s.off + k16) + (o->sent - 2 * k16), ready, MSG_NOSIGNAL);
    if (k < 0) goto io;
  }
  o->sent += (size_t)k;
  o->bytes_sent += (double)k;
  if (o->sent == all) {
    o->sg++;
    o->sent = 0;
  }
  return 1;
io:
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return 0;
  return dp_fail(e, DP_CLOSED, "the data link to %s failed: %s", r->next_name, strerror(errno)), -1;
}

static int waiting(const ring_op *o, short *send_events) {
  *send_events = (o->hout_sent < HEADER || send_ready(o) > 0) ? POLLOUT : 0;
  return o->hin_got < HEADER || o->rg < o->steps;
}

int dp_allreduce(const dp_ring *r, float *data, size_t n, dp_stats *st, dp_error *e) {
  double start = dp_now_ms(), deadline = start + r->timeout_ms;
  memset(st, 0, sizeof *st);
  if (r->size <= 1 || n == 0) return 0;
  ring_op o;
  memset(&o, 0, sizeof o);
  o.r = r;
  o.data = data;
  o.n = n;
  o.first = r->phases == DP_ALL_GATHER ? r->size - 1 : 0;
  o.steps = r->phases == DP_REDUCE_SCATTER ? r->size - 1 : 2 * (r->size - 1);
  o.sg = o.rg = o.first;
  o.chunk_bytes = (r->chunk ? r->chunk : 262144) * 4;
  if (!r->scratch || r->scratch_len < DP_SCRATCH_MIN) return dp_fail(e, DP_SYSTEM, "a scratch buffer of %zu bytes is below the %d an all-reduce needs", r->scratch_len, DP_SCRATCH_MIN), -1;
  /* 16-bit values take a third of the scratch for staging (half as much as receiving needs) */
  o.stage_cap = r->format ? (r->scratch_len / 3) & ~(size_t)3 : 0;
  o.stage = r->format ? r->scratch : NULL;
  o.tmp = r->scratch + o.stage_cap;
  o.tmp_cap = r->scratch_len - o.stage_cap;
  header(o.hout, r, n);
  int rc = 0;
  for (;;) {
    skip_empty(&o);
    short send_events;
    int want_recv = waiting(&o, &send_events);
    if (!want_recv && o.hout_sent == HEADER && o.sg >= o.steps) break;
    int a = want_recv ? recv_some(&o, e) : 0;
    int b = a < 0 ? 0 : send_some(&o, e);
    if (a < 0 || b < 0) {
      rc = -1;
      break;
    }
    if (a > 0 || b > 0) continue;
    want_recv = waiting(&o, &send_events);
    /* A negative fd is skipped by poll: a hang-up on a link not waited on must not spin the loop. */
    struct pollfd pf[2] = {{want_recv ? r->prev_fd : -1, POLLIN, 0}, {send_events ? r->next_fd : -1, POLLOUT, 0}};
    double left = deadline - dp_now_ms();
    int p = left > 0 ? poll(pf, 2, (int)(left + 1)) : 0;
    if (p < 0 && errno == EINTR) continue;
    if (p < 0) {
      rc = -1;
      dp_fail(e, DP_SYSTEM, "poll: %s", strerror(errno));
      break;
    }
    if (p == 0 && dp_now_ms() >= deadline) {
      rc = -1;
      if (want_recv) {
        size_t got = o.rg >= o.steps ? 0 : o.rbytes;
        dp_fail(e, DP_TIMEOUT, "all-reduce %llu: position %d waited %d ms for data from %s (at ring step %d of %d, %zu bytes into its segment)", (unsigned long long)r->seq, r->position, r->timeout_ms, r->prev_name, o.rg + 1, o.steps, got);
      } else {
        dp_fail(e, DP_TIMEOUT, "all-reduce %llu: position %d waited %d ms for %s to take its data", (unsigned long long)r->seq, r->position, r->timeout_ms, r->next_name);
      }
      break;
    }
    if ((pf[0].revents | pf[1].revents) & POLLNVAL) {
      rc = -1;
      dp_fail(e, DP_CLOSED, "the data links were closed during all-reduce %llu", (unsigned long long)r->seq);
      break;
    }
  }
  double end = dp_now_ms();
  double first = o.first_byte ? o.first_byte : end;
  st->wait_ms = first - start;
  st->comm_ms = end - first;
  st->bytes_sent = o.bytes_sent + (double)o.hout_sent;
  return rc;
}
