/* Sockets of the native data plane: listen, dial, accept, and the token handshake.
 *
 * Handshake (fixed sizes, so nothing before authentication can make either side allocate):
 *   server -> client: "MTDP", u32 version, 32-byte server nonce                   (40 bytes)
 *   client -> server: "MTDP", u32 version, 32-byte client nonce, u32 rank, MAC_c  (76 bytes)
 *   server -> client: u8 status (0 welcome, 1 wrong token, 2 unexpected rank), MAC_s (33 bytes)
 * MAC_c = HMAC-SHA256(token, "meshtrain-data-v1|client|" nonce_s nonce_c rank) and
 * MAC_s = HMAC-SHA256(token, "meshtrain-data-v1|server|" nonce_s nonce_c): the token never
 * crosses the wire, and each side proves it to the other, as the control plane's handshake does. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "dataplane.h"

#define VERSION 1u
#define HANDSHAKE_MS 5000

void dp_fail(dp_error *e, int code, const char *fmt, ...) {
  if (e->code != DP_OK) return; /* the first cause is the one worth telling */
  e->code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof e->message, fmt, ap);
  va_end(ap);
}

double dp_now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

typedef unsigned char *(*hmac_fn)(const void *md, const void *key, int key_len, const unsigned char *d, size_t n, unsigned char *out, unsigned int *out_len);
typedef const void *(*md_fn)(void);
static hmac_fn hmac;
static md_fn sha256;

int dp_auth_available(void) {
  if (!hmac) {
    hmac = (hmac_fn)dlsym(RTLD_DEFAULT, "HMAC");
    sha256 = (md_fn)dlsym(RTLD_DEFAULT, "EVP_sha256");
  }
  return hmac != NULL && sha256 != NULL;
}

static void mac(const char *token, const char *role, const unsigned char *ns, const unsigned char *nc, const unsigned char *rank4, unsigned char out[32]) {
  unsigned char msg[128];
  size_t n = (size_t)snprintf((char *)msg, sizeof msg, "meshtrain-data-v1|%s|", role);
  memcpy(msg + n, ns, 32);
  memcpy(msg + n + 32, nc, 32);
  n += 64;
  if (rank4) {
    memcpy(msg + n, rank4, 4);
    n += 4;
  }
  unsigned int len = 32;
  hmac(sha256(), token, (int)strlen(token), msg, n, out, &len);
}

/* Constant time: how long a comparison takes must not tell an attacker how much matched. */
static int same32(const unsigned char *a, const unsigned char *b) {
  unsigned char d = 0;
  for (int i = 0; i < 32; i++) d |= (unsigned char)(a[i] ^ b[i]);
  return d == 0;
}

static int nonce(unsigned char out[32], dp_error *e) {
  if (getrandom(out, 32, 0) != 32) {
    dp_fail(e, DP_SYSTEM, "no random bytes for a nonce: %s", strerror(errno));
    return -1;
  }
  return 0;
}

static void put_u32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void tune(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK);
  fcntl(fd, F_SETFD, FD_CLOEXEC);
}

int dp_wait(int fd, short events, double deadline_ms) {
  for (;;) {
    double left = deadline_ms - dp_now_ms();
    if (left <= 0) return 0;
    struct pollfd p = {fd, events, 0};
    int r = poll(&p, 1, (int)(left + 1));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r > 0) return 1;
  }
}

int dp_read_full(int fd, void *buf, size_t n, double deadline_ms, const char *who, dp_error *e) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = recv(fd, (char *)buf + got, n - got, 0);
    if (r > 0) {
      got += (size_t)r;
      continue;
    }
    if (r == 0) return dp_fail(e, DP_CLOSED, "%s closed the data link", who), -1;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return dp_fail(e, DP_CLOSED, "reading from %s: %s", who, strerror(errno)), -1;
    int w = dp_wait(fd, POLLIN, deadline_ms);
    if (w == 0) return dp_fail(e, DP_TIMEOUT, "%s sent %zu of %zu bytes before the deadline", who, got, n), -1;
    if (w < 0) return dp_fail(e, DP_SYSTEM, "poll: %s", strerror(errno)), -1;
  }
  return 0;
}

int dp_write_full(int fd, const void *buf, size_t n, double deadline_ms, const char *who, dp_error *e) {
  size_t put = 0;
  while (put < n) {
    ssize_t r = send(fd, (const char *)buf + put, n - put, MSG_NOSIGNAL);
    if (r > 0) {
      put += (size_t)r;
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return dp_fail(e, DP_CLOSED, "writing to %s: %s", who, strerror(errno)), -1;
    int w = dp_wait(fd, POLLOUT, deadline_ms);
    if (w == 0) return dp_fail(e, DP_TIMEOUT, "%s took %zu of %zu bytes before the deadline", who, put, n), -1;
    if (w < 0) return dp_fail(e, DP_SYSTEM, "poll: %s", strerror(errno)), -1;
  }
  return 0;
}

int dp_listen(const char *host, int *port_out, dp_error *e) {
  struct addrinfo hints = {0}, *ai = NULL;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  int g = getaddrinfo(host, "0", &hints, &ai);
  if (g != 0) return dp_fail(e, DP_SYSTEM, "cannot resolve %s to listen on: %s", host, gai_strerror(g)), -1;
  int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 16) != 0) {
    dp_fail(e, DP_SYSTEM, "cannot listen on %s: %s", host, strerror(errno));
    if (fd >= 0) close(fd);
    freeaddrinfo(ai);
    return -1;
  }
  freeaddrinfo(ai);
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  getsockname(fd, (struct sockaddr *)&ss, &len);
  *port_out = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port : ((struct sockaddr_in *)&ss)->sin_port);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK);
  return fd;
}

/* The server's half of the handshake on a fresh connection; 0 when the peer proved the token. */
static int serve_handshake(int fd, const char *token, int expect_rank, dp_error *e) {
  double deadline = dp_now_ms() + HANDSHAKE_MS;
  unsigned char hello[40], reply[76], verdict[33] = {0}, want[32];
  memcpy(hello, "MTDP", 4);
  put_u32(hello + 4, VERSION);
  if (nonce(hello + 8, e) || dp_write_full(fd, hello, sizeof hello, deadline, "a connecting peer", e)) return -1;
  if (dp_read_full(fd, reply, sizeof reply, deadline, "a connecting peer", e)) return -1;
  if (memcmp(reply, "MTDP", 4) != 0 || get_u32(reply + 4) != VERSION) return dp_fail(e, DP_PROTOCOL, "a connection that does not speak meshtrain's data plane (version %u)", VERSION), -1;
  mac(token, "client", hello + 8, reply + 8, reply + 40, want);
  int rank = (int)get_u32(reply + 40);
  if (!same32(want, reply + 44)) verdict[0] = 1;
  else if (rank != expect_rank) verdict[0] = 2;
  else mac(token, "server", hello + 8, reply + 8, NULL, verdict + 1);
  dp_write_full(fd, verdict, sizeof verdict, deadline, "a connecting peer", e);
  if (verdict[0] == 1) return dp_fail(e, DP_AUTH, "a connection failed authentication (wrong token)"), -1;
  if (verdict[0] == 2) return dp_fail(e, DP_PROTOCOL, "rank %d connected where rank %d was expected", rank, expect_rank), -1;
  return e->code == DP_OK ? 0 : -1;
}

int dp_accept(int listen_fd, const char *token, int expect_rank, int timeout_ms, const char *who, dp_error *e) {
  double deadline = dp_now_ms() + timeout_ms;
  int refused = 0;
  char last[DP_ERR_LEN] = "";
  for (;;) {
    int w = dp_wait(listen_fd, POLLIN, deadline);
    if (w == 0) {
      dp_fail(e, DP_TIMEOUT, "waited %d ms for %s to connect its data link%s%s", timeout_ms, who, refused ? "; refused meanwhile: " : "", last);
      return -1;
    }
    if (w < 0) return dp_fail(e, DP_SYSTEM, "poll: %s", strerror(errno)), -1;
    int fd = accept(listen_fd, NULL, NULL);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED) continue;
      return dp_fail(e, DP_SYSTEM, "accept: %s", strerror(errno)), -1;
    }
    tune(fd);
    dp_error mine = {DP_OK, ""};
    if (serve_handshake(fd, token, expect_rank, &mine) == 0) return fd;
    /* Someone else knocked (a scanner, a stale peer, a wrong token): refuse it and wait on. */
    close(fd);
    refused++;
    snprintf(last, sizeof last, "%s", mine.message);
  }
}

static int connect_to(const char *host, int port, double deadline, const char *who, dp_error *e) {
  struct addrinfo hints = {0}, *ai = NULL;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  char service[16];
  snprintf(service, sizeof service, "%d", port);
  int g = getaddrinfo(host, service, &hints, &ai);
  if (g != 0) return dp_fail(e, DP_SYSTEM, "cannot resolve %s (%s): %s", host, who, gai_strerror(g)), -1;
  int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    freeaddrinfo(ai);
    return dp_fail(e, DP_SYSTEM, "socket: %s", strerror(errno)), -1;
  }
  tune(fd);
  int r = connect(fd, ai->ai_addr, ai->ai_addrlen);
  freeaddrinfo(ai);
  if (r != 0 && errno != EINPROGRESS) {
    dp_fail(e, DP_CLOSED, "cannot reach the data port of %s at %s:%d: %s", who, host, port, strerror(errno));
    close(fd);
    return -1;
  }
  if (r != 0) {
    int w = dp_wait(fd, POLLOUT, deadline);
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (w <= 0 || err != 0) {
      if (w == 0) dp_fail(e, DP_TIMEOUT, "the data port of %s at %s:%d did not answer in time", who, host, port);
      else dp_fail(e, DP_CLOSED, "cannot reach the data port of %s at %s:%d: %s", who, host, port, strerror(err ? err : errno));
      close(fd);
      return -1;
    }
  }
  return fd;
}

int dp_dial(const char *host, int port, const char *token, int my_rank, int timeout_ms, const char *who, dp_error *e) {
  double deadline = dp_now_ms() + timeout_ms;
  int fd = connect_to(host, port, deadline, who, e);
  if (fd < 0) return -1;
  unsigned char hello[40], reply[76], verdict[33], want[32];
  if (dp_read_full(fd, hello, sizeof hello, deadline, who, e)) goto fail;
  if (memcmp(hello, "MTDP", 4) != 0 || get_u32(hello + 4) != VERSION) {
    dp_fail(e, DP_PROTOCOL, "%s at %s:%d does not speak meshtrain's data plane (version %u)", who, host, port, VERSION);
    goto fail;
  }
  memcpy(reply, "MTDP", 4);
  put_u32(reply + 4, VERSION);
  if (nonce(reply + 8, e)) goto fail;
  put_u32(reply + 40, (uint32_t)my_rank);
  mac(token, "client", hello + 8, reply + 8, reply + 40, reply + 44);
  if (dp_write_full(fd, reply, sizeof reply, deadline, who, e) || dp_read_full(fd, verdict, sizeof verdict, deadline, who, e)) goto fail;
  if (verdict[0] == 1) {
    dp_fail(e, DP_AUTH, "%s refused the cluster token on its data link", who);
    goto fail;
  }
  if (verdict[0] != 0) {
    dp_fail(e, DP_PROTOCOL, "%s did not expect rank %d on its data link", who, my_rank);
    goto fail;
  }
  mac(token, "server", hello + 8, reply + 8, NULL, want);
  if (!same32(want, verdict + 1)) {
    dp_fail(e, DP_AUTH, "%s at %s:%d could not prove it knows the cluster token", who, host, port);
    goto fail;
  }
  return fd;
fail:
  close(fd);
  return -1;
}
