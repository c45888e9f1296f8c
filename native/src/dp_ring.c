/* Ring all-reduce over the native data plane, one poll loop per position.
 *
 * Reduce-scatter then all-gather, 2(N-1) ring steps. At step g, position p sends segment
 * (p-g) mod N and receives segment (p-g-1) mod N: during reduce-scatter (g < N-1) it adds what
 * it receives, during all-gather it stores it. What p sends at step g is what it received at
 * step g-1, so a send may go as soon as that many elements have arrived and been added: the
 * steps overlap chunk by chunk instead of waiting for whole segments, and every segment's sum is
 * computed once, in ring order (the same additions, in the same order, as the WebSocket path).
 *
 * Each operation starts with a 24-byte header ("MTAR", version, seq, element count) checked
 * against this position's own; after it the stream is raw little-endian floats. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "dataplane.h"

#define HEADER 24
#define VERSION 1u

typedef struct {
  size_t off, len; /* in elements */
} span;

static span segment(size_t n, int parts, int idx) {
  size_t base = n / (size_t)parts, extra = n % (size_t)parts, i = (size_t)idx;
  span s = {i * base + (i < extra ? i : extra), base + (i < extra ? 1 : 0)};
  return s;
}

static int mod(int a, int n) { return ((a % n) + n) % n; }

static void header(unsigned char *h, uint64_t seq, uint64_t n) {
  memcpy(h, "MTAR", 4);
  for (int i = 0; i < 4; i++) h[4 + i] = (unsigned char)(VERSION >> (8 * i));
  for (int i = 0; i < 8; i++) h[8 + i] = (unsigned char)(seq >> (8 * i));
  for (int i = 0; i < 8; i++) h[16 + i] = (unsigned char)(n >> (8 * i));
}

static uint64_t get_u64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

/* Plain IEEE additions (no flush-to-zero), which the compiler vectorises. */
static void add(float *restrict dst, const float *restrict src, size_t k) {
  for (size_t i = 0; i < k; i++) dst[i] += src[i];
}

typedef struct {
  const dp_ring *r;
  float *data;
  size_t n;
  int steps; /* 2(N-1) */
  /* sending */
  unsigned char hout[HEADER];
  size_t hout_sent;
  int sg;
  size_t sent; /* bytes of segment sseg(sg) */
  /* receiving */
  unsigned char hin[HEADER];
  size_t hin_got;
  int rg;
  size_t rbytes;  /* bytes of segment rseg(rg) received */
  size_t done;    /* bytes of it added (reduce-scatter) or stored (all-gather) */
  unsigned char *tmp;
  size_t tmp_cap, tmp_fill;
  size_t chunk_bytes;
  double first_byte;
  double bytes_sent;
} ring_op;

static span send_seg(const ring_op *o, int g) { return segment(o->n, o->r->size, mod(o->r->position - g, o->r->size)); }
static span recv_seg(const ring_op *o, int g) { return segment(o->n, o->r->size, mod(o->r->position - g - 1, o->r->size)); }

/* Bytes of the current send segment that are final enough to send. */
static size_t sendable(const ring_op *o) {
  size_t all = send_seg(o, o->sg).len * 4;
  if (o->sg == 0 || o->rg > o->sg - 1) return all;
  return o->rg == o->sg - 1 ? o->done : 0;
}

/* Bytes to send now: 0 until a whole chunk is final or the segment is, since many tiny sends
 * cost more than they overlap. */
static size_t send_ready(const ring_op *o) {
  if (o->sg >= o->steps) return 0;
  size_t ready = sendable(o), all = send_seg(o, o->sg).len * 4;
  if (ready <= o->sent) return 0;
  if (ready < all && ready - o->sent < o->chunk_bytes) return 0;
  return ready - o->sent;
}

static void skip_empty(ring_op *o) {
  while (o->sg < o->steps && send_seg(o, o->sg).len == 0) o->sg++;
  while (o->rg < o->steps && recv_seg(o, o->rg).len == 0) o->rg++;
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
    if (o->hin_got == HEADER) {
      unsigned char want[HEADER];
      header(want, r->seq, o->n);
      if (memcmp(o->hin, want, 8) != 0) return dp_fail(e, DP_PROTOCOL, "%s sent bytes that are not an all-reduce frame of meshtrain's data plane", r->prev_name), -1;
      if (get_u64(o->hin + 8) != r->seq) return dp_fail(e, DP_PROTOCOL, "%s is at all-reduce %llu where this position is at %llu", r->prev_name, (unsigned long long)get_u64(o->hin + 8), (unsigned long long)r->seq), -1;
      if (get_u64(o->hin + 16) != o->n) return dp_fail(e, DP_PROTOCOL, "%s all-reduces %llu elements where this position has %zu: the replicas' gradients differ in size", r->prev_name, (unsigned long long)get_u64(o->hin + 16), o->n), -1;
    }
    return 1;
  }
  span s = recv_seg(o, o->rg);
  size_t left = s.len * 4 - o->rbytes;
  int store = o->rg >= r->size - 1;
  if (store) {
    k = recv(r->prev_fd, (unsigned char *)(o->data + s.off) + o->rbytes, left, 0);
    if (k <= 0) goto io;
    o->rbytes += (size_t)k;
    o->done = o->rbytes;
  } else {
    size_t room = o->tmp_cap - o->tmp_fill;
    k = recv(r->prev_fd, o->tmp + o->tmp_fill, left < room ? left : room, 0);
    if (k <= 0) goto io;
    o->rbytes += (size_t)k;
    o->tmp_fill += (size_t)k;
    size_t whole = o->tmp_fill / 4;
    add(o->data + s.off + o->done / 4, (const float *)o->tmp, whole);
    o->done += whole * 4;
    o->tmp_fill -= whole * 4;
    memmove(o->tmp, o->tmp + whole * 4, o->tmp_fill);
  }
  if (o->rbytes == s.len * 4) {
    o->rg++;
    o->rbytes = o->done = 0;
  }
  return 1;
io:
  if (k == 0) return dp_fail(e, DP_CLOSED, "%s closed the data link during all-reduce %llu", r->prev_name, (unsigned long long)r->seq), -1;
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return 0;
  return dp_fail(e, DP_CLOSED, "the data link from %s failed: %s", r->prev_name, strerror(errno)), -1;
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
  size_t all = s.len * 4;
  k = send(r->next_fd, (const unsigned char *)(o->data + s.off) + o->sent, ready, MSG_NOSIGNAL);
  if (k < 0) goto io;
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
  o.steps = 2 * (r->size - 1);
  o.chunk_bytes = (r->chunk ? r->chunk : 262144) * 4;
  o.tmp_cap = o.chunk_bytes;
  o.tmp = malloc(o.tmp_cap);
  if (!o.tmp) return dp_fail(e, DP_SYSTEM, "out of memory for a %zu-byte receive buffer", o.tmp_cap), -1;
  header(o.hout, r->seq, n);
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
  free(o.tmp);
  double end = dp_now_ms();
  double first = o.first_byte ? o.first_byte : end;
  st->wait_ms = first - start;
  st->comm_ms = end - first;
  st->bytes_sent = o.bytes_sent + (double)o.hout_sent;
  return rc;
}
