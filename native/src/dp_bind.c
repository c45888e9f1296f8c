/* N-API bindings of the native data plane. Dialling, accepting and all-reducing block, so each
 * runs as async work on libuv's thread pool and settles a promise; the Float32Array being
 * reduced is held by a reference until then, and is read and written in place. A failure
 * rejects with an Error whose `code` says which kind ("timeout", "auth", "protocol", "closed",
 * "system") so the JavaScript side can throw the matching typed error. */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "dataplane.h"
#include "napi_call.h"

enum { JOB_ACCEPT, JOB_DIAL, JOB_ALLREDUCE };

typedef struct {
  napi_async_work work;
  napi_deferred deferred;
  napi_ref data_ref, scratch_ref;
  int kind;
  char *host, *token, *who, *who2;
  int fd_a, fd_b, port, rank, timeout_ms, position, size;
  size_t chunk, n, packed;
  int format, phases;
  uint64_t seq;
  float *data;
  unsigned char *scratch;
  size_t scratch_len;
  int result_fd;
  dp_stats st;
  dp_error err;
} job;

static char *str(call *c, size_t i) {
  size_t len = 0;
  if (c->failed) return NULL;
  if (napi_get_value_string_utf8(c->env, c->argv[i], NULL, 0, &len) != napi_ok) {
    fail(c, "meshtrain native: expected a string");
    return NULL;
  }
  char *s = malloc(len + 1);
  napi_get_value_string_utf8(c->env, c->argv[i], s, len + 1, &len);
  return s;
}

static const char *code_name(int code) {
  switch (code) {
    case DP_TIMEOUT: return "timeout";
    case DP_AUTH: return "auth";
    case DP_PROTOCOL: return "protocol";
    case DP_CLOSED: return "closed";
    default: return "system";
  }
}

static napi_value error_value(napi_env env, const dp_error *e) {
  napi_value msg, code, err;
  napi_create_string_utf8(env, e->message, NAPI_AUTO_LENGTH, &msg);
  napi_create_string_utf8(env, code_name(e->code), NAPI_AUTO_LENGTH, &code);
  napi_create_error(env, code, msg, &err);
  return err;
}

static void execute(napi_env env, void *p) {
  (void)env;
  job *j = p;
  j->err.code = DP_OK;
  if (j->kind == JOB_ACCEPT) j->result_fd = dp_accept(j->fd_a, j->token, j->rank, j->timeout_ms, j->who, &j->err);
  else if (j->kind == JOB_DIAL) j->result_fd = dp_dial(j->host, j->port, j->token, j->rank, j->timeout_ms, j->who, &j->err);
  else {
    dp_ring r = {j->fd_a, j->fd_b, j->position, j->size, j->chunk, j->seq, j->timeout_ms, j->who, j->who2, j->format, j->packed, j->phases, j->scratch, j->scratch_len};
    dp_allreduce(&r, j->data, j->n, &j->st, &j->err);
  }
}

static void put_number(napi_env env, napi_value obj, const char *name, double v) {
  napi_value x;
  napi_create_double(env, v, &x);
  napi_set_named_property(env, obj, name, x);
}

/* A job's strings, its hold on the arrays, and itself. */
static void free_job(napi_env env, job *j) {
  if (j->data_ref) napi_delete_reference(env, j->data_ref);
  if (j->scratch_ref) napi_delete_reference(env, j->scratch_ref);
  free(j->host);
  free(j->token);
  free(j->who);
  free(j->who2);
  free(j);
}

static void complete(napi_env env, napi_status status, void *p) {
  job *j = p;
  if (status != napi_ok && j->err.code == DP_OK) dp_fail(&j->err, DP_SYSTEM, "the data plane's work was cancelled");
  if (j->err.code != DP_OK) napi_reject_deferred(env, j->deferred, error_value(env, &j->err));
  else if (j->kind == JOB_ALLREDUCE) {
    napi_value stats;
    napi_create_object(env, &stats);
    put_number(env, stats, "waitMs", j->st.wait_ms);
    put_number(env, stats, "commMs", j->st.comm_ms);
    put_number(env, stats, "bytesSent", j->st.bytes_sent);
    napi_resolve_deferred(env, j->deferred, stats);
  } else {
    napi_value fd;
    napi_create_int32(env, j->result_fd, &fd);
    napi_resolve_deferred(env, j->deferred, fd);
  }
  napi_delete_async_work(env, j->work);
  free_job(env, j);
}

static napi_value start(call *c, job *j) {
  napi_value promise, name;
  if (c->failed) {
    free_job(c->env, j);
    return undef(c->env);
  }
  napi_create_promise(c->env, &j->deferred, &promise);
  napi_create_string_utf8(c->env, "meshtrain-data-plane", NAPI_AUTO_LENGTH, &name);
  napi_create_async_work(c->env, NULL, name, execute, complete, j, &j->work);
  napi_queue_async_work(c->env, j->work);
  return promise;
}

/* dataPlaneProblem(): why this process cannot run the data plane, or null. */
static napi_value problem(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value v;
  if (dp_auth_available()) napi_get_null(env, &v);
  else napi_create_string_utf8(env, "this Node exports no HMAC from its OpenSSL, which the data plane's handshake needs", NAPI_AUTO_LENGTH, &v);
  return v;
}

/* dataListen(host) -> { fd, port } */
static napi_value listen_on(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 1);
  char *host = str(&c, 0);
  if (c.failed) return undef(env);
  dp_error e = {DP_OK, ""};
  int port = 0, fd = dp_listen(host, &port, &e);
  free(host);
  if (fd < 0) {
    napi_throw(env, error_value(env, &e));
    return undef(env);
  }
  napi_value out;
  napi_create_object(env, &out);
  put_number(env, out, "fd", fd);
  put_number(env, out, "port", port);
  return out;
}

/* dataAccept(listenFd, token, expectRank, timeoutMs, who) -> Promise<fd> */
static napi_value accept_one(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 5);
  job *j = calloc(1, sizeof *j);
  j->kind = JOB_ACCEPT;
  j->fd_a = (int)num(&c, 0);
  j->token = str(&c, 1);
  j->rank = (int)num(&c, 2);
  j->timeout_ms = (int)num(&c, 3);
  j->who = str(&c, 4);
  return start(&c, j);
}

/* dataDial(host, port, token, myRank, timeoutMs, who) -> Promise<fd> */
static napi_value dial(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 6);
  job *j = calloc(1, sizeof *j);
  j->kind = JOB_DIAL;
  j->host = str(&c, 0);
  j->port = (int)num(&c, 1);
  j->token = str(&c, 2);
  j->rank = (int)num(&c, 3);
  j->timeout_ms = (int)num(&c, 4);
  j->who = str(&c, 5);
  return start(&c, j);
}

/* dataAllReduce(prevFd, nextFd, data, position, size, chunk, seq, timeoutMs, prevName, nextName,
 * format, packed, phases, scratch) -> Promise<stats>: data[0..packed) travels as format (0 none,
 * 1 fp16, 2 bf16); phases 0 both, 1 the reduce-scatter alone, 2 the all-gather alone; scratch a
 * Uint8Array the caller keeps for the next operation (dataScratchBytes says how much it can use). */
static napi_value all_reduce(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 14);
  job *j = calloc(1, sizeof *j);
  j->kind = JOB_ALLREDUCE;
  j->fd_a = (int)num(&c, 0);
  j->fd_b = (int)num(&c, 1);
  j->data = (float *)typed(&c, 2, napi_float32_array, 0, &j->n);
  j->position = (int)num(&c, 3);
  j->size = (int)num(&c, 4);
  j->chunk = (size_t)num(&c, 5);
  j->seq = (uint64_t)num(&c, 6);
  j->timeout_ms = (int)num(&c, 7);
  j->who = str(&c, 8);
  j->who2 = str(&c, 9);
  j->format = (int)num(&c, 10);
  j->packed = (size_t)num(&c, 11);
  j->phases = (int)num(&c, 12);
  if (!c.failed && (j->phases < DP_BOTH || j->phases > DP_ALL_GATHER)) fail(&c, "meshtrain native: phases must be 0 (both), 1 (reduce-scatter) or 2 (all-gather)");
  if (!c.failed && (j->position < 0 || j->position >= j->size)) fail(&c, "meshtrain native: ring position outside the ring");
  if (!c.failed && (j->format < 0 || j->format > 2 || j->packed > j->n)) fail(&c, "meshtrain native: 16-bit format or count outside the data");
  j->scratch = (unsigned char *)typed(&c, 13, napi_uint8_array, DP_SCRATCH_MIN, &j->scratch_len);
  if (!c.failed) napi_create_reference(env, c.argv[2], 1, &j->data_ref);
  if (!c.failed) napi_create_reference(env, c.argv[13], 1, &j->scratch_ref);
  return start(&c, j);
}

/* dataScratchBytes(n, size, chunk, format): the scratch an all-reduce of n elements can use. */
static napi_value scratch_bytes(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 4);
  size_t n = (size_t)num(&c, 0), chunk = (size_t)num(&c, 2);
  int size = (int)num(&c, 1), format = (int)num(&c, 3);
  if (c.failed) return undef(env);
  napi_value v;
  napi_create_double(env, (double)dp_scratch_bytes(n, size, chunk, format), &v);
  return v;
}

/* dataShutdown(fd): wakes whatever blocks on the socket (it fails as "closed"); the fd stays open. */
static napi_value shut(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 1);
  int fd = (int)num(&c, 0);
  if (!c.failed && fd >= 0) shutdown(fd, SHUT_RDWR);
  return undef(env);
}

/* dataClose(fd): only once nothing uses it any more. */
static napi_value close_fd(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 1);
  int fd = (int)num(&c, 0);
  if (!c.failed && fd >= 0) close(fd);
  return undef(env);
}

void mt_register_data_plane(napi_env env, napi_value exports) {
  static const struct {
    const char *name;
    napi_callback fn;
  } fns[] = {{"dataPlaneProblem", problem}, {"dataListen", listen_on}, {"dataAccept", accept_one}, {"dataDial", dial},
             {"dataAllReduce", all_reduce}, {"dataScratchBytes", scratch_bytes}, {"dataShutdown", shut}, {"dataClose", close_fd}};
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
    napi_value f;
    napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].fn, NULL, &f);
    napi_set_named_property(env, exports, fns[i].name, f);
  }
}
