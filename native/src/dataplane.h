/* The native data plane: bulk tensor traffic between workers over plain TCP, moved and reduced
 * by C on libuv's worker threads, never through JavaScript. The WebSocket control plane stays in
 * charge (handshake with the driver, heartbeats, plans); it tells each worker where its
 * neighbours' data ports are. Every connection proves the cluster token by challenge-response
 * before a byte of tensor data is accepted, and every frame after that is checked against what
 * the operation expects, so garbage on the socket is a clean error, never a crash. */
#ifndef MESHTRAIN_DATAPLANE_H
#define MESHTRAIN_DATAPLANE_H
#include <stddef.h>
#include <stdint.h>

/* What went wrong, so JavaScript can throw the matching typed error. */
enum { DP_OK = 0, DP_TIMEOUT = 1, DP_AUTH = 2, DP_PROTOCOL = 3, DP_CLOSED = 4, DP_SYSTEM = 5 };

#define DP_ERR_LEN 512

typedef struct {
  int code;
  char message[DP_ERR_LEN];
} dp_error;

typedef struct {
  double wait_ms;  /* entering the operation to the first byte from the previous position */
  double comm_ms;  /* the rest: sending, receiving, adding */
  double bytes_sent;
} dp_stats;

void dp_fail(dp_error *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
double dp_now_ms(void);

/* The HMAC from the OpenSSL inside Node, found at run time; 0 when this Node has none. */
int dp_auth_available(void);

/* Binds a listening socket on host (port 0: the kernel picks); returns the fd, or -1 and e. */
int dp_listen(const char *host, int *port_out, dp_error *e);

/* Waits for a connection from `expect_rank` that proves the token; refuses (and closes) any
 * other until the deadline. Returns the connection's fd, non-blocking, or -1 and e. */
int dp_accept(int listen_fd, const char *token, int expect_rank, int timeout_ms, const char *who, dp_error *e);

/* Connects to host:port and proves the token as `my_rank`; returns the fd or -1 and e. */
int dp_dial(const char *host, int port, const char *token, int my_rank, int timeout_ms, const char *who, dp_error *e);

/* Waits (poll) until fd is readable (events POLLIN) or writable (POLLOUT) or the deadline. */
int dp_wait(int fd, short events, double deadline_ms);

/* Reads or writes exactly n bytes before the deadline (handshakes and headers). 0, or -1 and e. */
int dp_read_full(int fd, void *buf, size_t n, double deadline_ms, const char *who, dp_error *e);
int dp_write_full(int fd, const void *buf, size_t n, double deadline_ms, const char *who, dp_error *e);

typedef struct {
  int prev_fd;           /* frames from the previous position arrive here */
  int next_fd;           /* this position sends to the next one here */
  int position, size;
  size_t chunk;          /* elements per send, the pipelining grain */
  uint64_t seq;
  int timeout_ms;
  const char *prev_name, *next_name;
  int format;            /* HALF_NONE, or the 16-bit format (half.h) of the leading elements */
  size_t packed;         /* how many leading elements travel in it; the rest as float32 */
  int phases;            /* DP_BOTH, or one phase alone (sharded data parallelism) */
  /* Where received bytes wait to be added, and 16-bit values to be sent: the caller's, kept
   * from one operation to the next. A buffer taken fresh from malloc on every operation came
   * back from the kernel each time, and faulting its pages in cost a 1 MiB all-reduce 4-5 ms
   * of its 5 on a 2-core VM, ten times the bytes' own time. Any size of at least
   * DP_SCRATCH_MIN works; a chunk's worth (dp_scratch_bytes) is all one operation can use. */
  unsigned char *scratch;
  size_t scratch_len;
} dp_ring;

#define DP_SCRATCH_MIN 64

enum { DP_BOTH = 0, DP_REDUCE_SCATTER = 1, DP_ALL_GATHER = 2 };

/* Sums data[0..n) in place across the ring: reduce-scatter then all-gather, pipelined by chunk.
 * With a 16-bit format, data[0..packed) travels in it and every position ends with the same bits.
 * One phase alone: after DP_REDUCE_SCATTER position p holds the sum of segment (p+1) mod N (the
 * rest is left partly summed); DP_ALL_GATHER sends each position's segment (p+1) mod N to all. */
int dp_allreduce(const dp_ring *r, float *data, size_t n, dp_stats *st, dp_error *e);

/* The scratch bytes an operation over n elements can use: a chunk, or a segment if smaller,
 * and half as much again for staging 16-bit values. */
size_t dp_scratch_bytes(size_t n, int size, size_t chunk, int format);

#endif
