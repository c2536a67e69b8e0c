/*
 * client/lib/info.c — the server and its devices: unary calls (on a
 * channel, each on a completion queue of its own, with a deadline, outside
 * any session call: a session's Info and ListDevices, and the job calls of
 * job.c), the current device and its memory, and the kernels it offers
 * (Info). Owns s->dev (current device, device count); calls submit.c
 * (MemInfo), poll.c (whether the session ended) and error.c.
 */
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "client.h"
#include "rdev/clock.h"

#define UNARY_DEADLINE_MS 10000

void cl_device_init(rdev_session_t *s) {
  atomic_init(&s->dev.current, 0);
  atomic_init(&s->dev.count, -1);
}

int cl_device_current(rdev_session_t *s) { return atomic_load(&s->dev.current); }

void cl_device_count_known(rdev_session_t *s, int count) { atomic_store(&s->dev.count, count); }

void cl_device_names_locked(rdev_session_t *s, grpc_slice v) {
  const char *p = (const char *)GRPC_SLICE_START_PTR(v), *end = p + GRPC_SLICE_LENGTH(v);
  for (int dev = 0; dev < RDEV_WIRE_MAX_DEVICES; dev++) {
    const char *comma = memchr(p, ',', (size_t)(end - p));
    size_t len = (size_t)((comma ? comma : end) - p);
    snprintf(s->dev.names[dev], sizeof s->dev.names[dev], "%.*s", (int)len, p);
    if (!comma) break;
    p = comma + 1;
  }
  s->dev.named = true;
}

int cl_unary_call(grpc_channel *ch, cl_auth_t *auth, const char *method, int64_t deadline_ms,
                  const pb_msgdesc_t *req_fields, const void *req, const pb_msgdesc_t *rep_fields, void *rep,
                  const cl_reply_cap_t *cap, grpc_status_code *gstatus) {
  if (gstatus) *gstatus = GRPC_STATUS_UNKNOWN;
  grpc_byte_buffer *send = rdev_wire_encode(req_fields, req, NULL);
  if (!send) return cl_error(RDEV_INTERNAL_ERROR, "cannot encode request");
  grpc_completion_queue *cq = grpc_completion_queue_create_for_pluck(NULL);
  gpr_timespec deadline =
      deadline_ms > 0 ? gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_millis(deadline_ms, GPR_TIMESPAN))
                      : gpr_inf_future(GPR_CLOCK_REALTIME);
  grpc_call *call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
                                             grpc_slice_from_static_string(method), NULL, deadline, NULL);
  grpc_metadata_array init_md, trailing_md;
  grpc_metadata_array_init(&init_md);
  grpc_metadata_array_init(&trailing_md);
  grpc_byte_buffer *recv = NULL;
  grpc_status_code status = GRPC_STATUS_UNKNOWN;
  grpc_slice details = grpc_empty_slice();
  int rc = RDEV_OK;

  grpc_op ops[6];
  memset(ops, 0, sizeof ops);
  ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
  ops[0].flags = GRPC_INITIAL_METADATA_WAIT_FOR_READY | GRPC_INITIAL_METADATA_WAIT_FOR_READY_EXPLICITLY_SET;
  ops[0].data.send_initial_metadata.count = auth->n;
  ops[0].data.send_initial_metadata.metadata = &auth->md;
  ops[1].op = GRPC_OP_SEND_MESSAGE;
  ops[1].data.send_message.send_message = send;
  ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
  ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
  ops[3].data.recv_initial_metadata.recv_initial_metadata = &init_md;
  ops[4].op = GRPC_OP_RECV_MESSAGE;
  ops[4].data.recv_message.recv_message = &recv;
  ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
  ops[5].data.recv_status_on_client.trailing_metadata = &trailing_md;
  ops[5].data.recv_status_on_client.status = &status;
  ops[5].data.recv_status_on_client.status_details = &details;
  if (!call) {
    rc = cl_error(RDEV_UNAVAILABLE, "cannot create call %s", method);
  } else if (grpc_call_start_batch(call, ops, 6, (void *)1, NULL) != GRPC_CALL_OK) {
    rc = cl_error(RDEV_INTERNAL_ERROR, "cannot start call %s", method);
  } else {
    grpc_completion_queue_pluck(cq, (void *)1, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    if (gstatus) *gstatus = status;
    if (status != GRPC_STATUS_OK) {
      char *d = grpc_slice_to_c_string(details);
      rc = cl_grpc_status(status);
      cl_error(rc, "%s: %s (gRPC status %d)", method, *d ? d : "failed", (int)status);
      gpr_free(d);
    } else if (!recv) {
      rc = cl_error(RDEV_PROTOCOL, "%s: no reply message", method);
    } else {
      const char *err = NULL;
      size_t n = 0;
      if (cap && !rdev_wire_count_field(recv, cap->field, cap->max, &n, &err))
        rc = cl_error(RDEV_PROTOCOL, "%s: malformed reply (%s)", method, err ? err : "?");
      else if (cap && n > cap->max)
        rc = cl_error(RDEV_PROTOCOL, "%s: the server's %s holds more than %zu %s (refused before decoding)", method,
                      cap->what, cap->max, cap->items);
      else if (!rdev_wire_decode(recv, rep_fields, rep, &err))
        rc = cl_error(RDEV_PROTOCOL, "%s: malformed reply (%s)", method, err ? err : "?");
    }
  }
  if (call) grpc_call_unref(call);
  grpc_completion_queue_shutdown(cq);
  grpc_completion_queue_destroy(cq);
  grpc_byte_buffer_destroy(send);
  if (recv) grpc_byte_buffer_destroy(recv);
  grpc_metadata_array_destroy(&init_md);
  grpc_metadata_array_destroy(&trailing_md);
  grpc_slice_unref(details);
  return rc;
}

int cl_unary(rdev_session_t *s, const char *method, const pb_msgdesc_t *req_fields, const void *req,
             const pb_msgdesc_t *rep_fields, void *rep) {
  /* A call whose connection broke under it (UNAVAILABLE) goes again, with
   * backoff, for as long as the session may resume: the channel connects
   * anew, as the session's call does. Each of these calls may run twice. */
  uint64_t until = 0;
  for (int ms = 10;; ms = ms < 500 ? ms * 2 : 500) {
    char why[CL_MSG_MAX];
    if (cl_poll_dead(s, why, sizeof why)) /* the server is gone or ended the session: do not wait for it */
      return cl_error(RDEV_UNAVAILABLE, "%s", why);
    int rc =
        cl_unary_call(s->channel, &s->auth, method, UNARY_DEADLINE_MS, req_fields, req, rep_fields, rep, NULL, NULL);
    pthread_mutex_lock(&s->mu);
    int64_t window = s->poll.resume_ms;
    pthread_mutex_unlock(&s->mu);
    uint64_t now = rdev_clock_now_ns();
    if (rc != RDEV_UNAVAILABLE || window <= 0 || (until && now >= until)) return rc;
    if (!until) until = now + (uint64_t)window * 1000000u;
    struct timespec t = {0, (long)ms * 1000000L};
    nanosleep(&t, NULL);
  }
}

int cl_health_check(const char *target, const char *service, const rdev_options_t *opts, rdev_health_t *status) {
  if (!target || !*target || !status) return cl_error(RDEV_INVALID_PARAM, "target or status is NULL");
  *status = RDEV_HEALTH_UNKNOWN;
  grpc_health_v1_HealthCheckRequest q = grpc_health_v1_HealthCheckRequest_init_zero;
  if (service && strlen(service) >= sizeof q.service) return cl_error(RDEV_INVALID_PARAM, "service name too long");
  snprintf(q.service, sizeof q.service, "%s", service ? service : "");
  grpc_init();
  static const cl_int_arg_t iargs[] = {{GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100},
                                       {GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100},
                                       {GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500},
                                       {GRPC_ARG_ENABLE_RETRIES, 0}};
  cl_auth_t auth;
  memset(&auth, 0, sizeof auth);
  grpc_channel *ch = NULL;
  int rc = cl_channel_create(target, opts, iargs, (int)(sizeof iargs / sizeof iargs[0]), &auth, &ch);
  if (!rc) {
    grpc_health_v1_HealthCheckResponse r = grpc_health_v1_HealthCheckResponse_init_zero;
    grpc_status_code gs;
    int64_t ms = opts && opts->connect_timeout_ms > 0 ? opts->connect_timeout_ms : 5000;
    rc = cl_unary_call(ch, &auth, RDEV_WIRE_METHOD_HEALTH_CHECK, ms, grpc_health_v1_HealthCheckRequest_fields, &q,
                       grpc_health_v1_HealthCheckResponse_fields, &r, NULL, &gs);
    if (!rc)
      *status = r.status == grpc_health_v1_HealthCheckResponse_ServingStatus_SERVING       ? RDEV_HEALTH_SERVING
                : r.status == grpc_health_v1_HealthCheckResponse_ServingStatus_NOT_SERVING ? RDEV_HEALTH_NOT_SERVING
                                                                                           : RDEV_HEALTH_UNKNOWN;
    else if (gs == GRPC_STATUS_DEADLINE_EXCEEDED)
      rc = cl_error(RDEV_UNAVAILABLE, "no answer from %s within %lld ms", target, (long long)ms);
  }
  if (ch) grpc_channel_destroy(ch);
  cl_auth_release(&auth);
  grpc_shutdown();
  return rc;
}

int cl_server_info(rdev_session_t *s, rdev_server_info_t *info) {
  if (!s || !info) return cl_error(RDEV_INVALID_PARAM, "session or info is NULL");
  rdev_v1_InfoRequest req = rdev_v1_InfoRequest_init_zero;
  rdev_v1_InfoReply rep = rdev_v1_InfoReply_init_zero;
  int rc = cl_unary(s, RDEV_WIRE_METHOD_INFO, rdev_v1_InfoRequest_fields, &req, rdev_v1_InfoReply_fields, &rep);
  if (rc) return rc;
  memset(info, 0, sizeof *info);
  snprintf(info->version, sizeof info->version, "%s", rep.version);
  snprintf(info->backend, sizeof info->backend, "%s", rep.backend);
  snprintf(info->identity, sizeof info->identity, "%s", rep.identity);
  info->device_count = rep.device_count;
  info->max_chunk = rep.max_chunk;
  pthread_mutex_lock(&s->mu); /* a resume may replace the call */
  grpc_call *call = s->call;
  grpc_call_ref(call);
  pthread_mutex_unlock(&s->mu);
  info->tls = cl_auth_tls_of(call);
  grpc_call_unref(call);
  return RDEV_OK;
}

static rdev_arg_type_t arg_type_of(const char *name) {
  for (int t = RDEV_ARG_PTR; t <= RDEV_ARG_F64; t++)
    if (!strcmp(name, rdev_arg_type_name((rdev_arg_type_t)t))) return (rdev_arg_type_t)t;
  return (rdev_arg_type_t)0;
}

int cl_server_kernels(rdev_session_t *s, rdev_kernel_info_t *kernels, int max, int *count) {
  if (!s || !count || max < 0 || (max > 0 && !kernels))
    return cl_error(RDEV_INVALID_PARAM, "session, kernels or count is NULL, or max < 0");
  rdev_v1_InfoRequest req = rdev_v1_InfoRequest_init_zero;
  rdev_v1_InfoReply rep = rdev_v1_InfoReply_init_zero;
  int rc = cl_unary(s, RDEV_WIRE_METHOD_INFO, rdev_v1_InfoRequest_fields, &req, rdev_v1_InfoReply_fields, &rep);
  if (rc) return rc;
  *count = (int)rep.kernels_count;
  for (int i = 0; i < max && i < (int)rep.kernels_count; i++) {
    const rdev_v1_KernelInfo *k = &rep.kernels[i];
    rdev_kernel_info_t *o = &kernels[i];
    memset(o, 0, sizeof *o);
    snprintf(o->name, sizeof o->name, "%s", k->name);
    snprintf(o->doc, sizeof o->doc, "%s", k->doc);
    o->nparams = (int)k->params_count < RDEV_MAX_KERNEL_ARGS ? (int)k->params_count : RDEV_MAX_KERNEL_ARGS;
    for (int j = 0; j < o->nparams; j++) {
      snprintf(o->params[j].name, sizeof o->params[j].name, "%s", k->params[j].name);
      o->params[j].type = arg_type_of(k->params[j].type);
    }
  }
  return RDEV_OK;
}

static int list_devices(rdev_session_t *s, rdev_v1_ListDevicesReply *rep) {
  rdev_v1_ListDevicesRequest req = rdev_v1_ListDevicesRequest_init_zero;
  *rep = (rdev_v1_ListDevicesReply)rdev_v1_ListDevicesReply_init_zero;
  int rc = cl_unary(s, RDEV_WIRE_METHOD_LIST_DEVICES, rdev_v1_ListDevicesRequest_fields, &req,
                    rdev_v1_ListDevicesReply_fields, rep);
  if (!rc) atomic_store(&s->dev.count, (int)rep->devices_count);
  return rc;
}

int cl_device_count(rdev_session_t *s, int *count) {
  if (!s || !count) return cl_error(RDEV_INVALID_PARAM, "session or count is NULL");
  int known = atomic_load(&s->dev.count); /* from the open's answer */
  if (known < 0) {
    int rc = cl_poll_wait_open(s, NULL);
    if (rc) return rc;
    known = atomic_load(&s->dev.count);
  }
  if (known >= 0) {
    *count = known;
    return RDEV_OK;
  }
  rdev_v1_ListDevicesReply rep; /* a server that did not say */
  int rc = list_devices(s, &rep);
  if (!rc) *count = (int)rep.devices_count;
  return rc;
}

int cl_device_info(rdev_session_t *s, int dev, rdev_device_info_t *info) {
  if (!s || !info) return cl_error(RDEV_INVALID_PARAM, "session or info is NULL");
  rdev_v1_ListDevicesReply rep;
  int rc = list_devices(s, &rep);
  if (rc) return rc;
  for (pb_size_t i = 0; i < rep.devices_count; i++) {
    if (rep.devices[i].index != dev) continue;
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "%s", rep.devices[i].name);
    info->total_bytes = (size_t)rep.devices[i].total_bytes;
    info->free_bytes = (size_t)rep.devices[i].free_bytes;
    info->quota_bytes = (size_t)rep.devices[i].quota_bytes;
    info->used_bytes = (size_t)rep.devices[i].used_bytes;
    return RDEV_OK;
  }
  return cl_error(RDEV_RT_INVALID_DEVICEID, "device %d out of range (%d devices)", dev, (int)rep.devices_count);
}

int cl_device_props(rdev_session_t *s, int dev, rdev_device_props_t *props) {
  if (!s || !props) return cl_error(RDEV_INVALID_PARAM, "session or props is NULL");
  int count;
  int rc = cl_device_count(s, &count); /* after the open's answer */
  if (rc) return rc;
  if (dev < 0 || dev >= count)
    return cl_error(RDEV_RT_INVALID_DEVICEID, "device %d out of range (%d devices)", dev, count);
  memset(props, 0, sizeof *props);
  pthread_mutex_lock(&s->mu);
  bool known = s->dev.named && (props->total_bytes = (size_t)cl_addr_total_locked(s, dev)) > 0;
  if (known) snprintf(props->name, sizeof props->name, "%s", s->dev.names[dev]);
  pthread_mutex_unlock(&s->mu);
  if (known) return RDEV_OK;
  rdev_device_info_t info; /* a server that did not say */
  if ((rc = cl_device_info(s, dev, &info))) return rc;
  snprintf(props->name, sizeof props->name, "%s", info.name);
  props->total_bytes = info.total_bytes;
  return RDEV_OK;
}

int cl_device_set(rdev_session_t *s, int dev) {
  if (!s) return cl_error(RDEV_INVALID_PARAM, "session is NULL");
  if (dev == 0 && atomic_load(&s->dev.count) != 0) { /* every session has one, known or not yet */
    atomic_store(&s->dev.current, 0);
    return RDEV_OK;
  }
  int count;
  int rc = cl_device_count(s, &count);
  if (rc) return rc;
  if (dev < 0 || dev >= count)
    return cl_error(RDEV_RT_INVALID_DEVICEID, "device %d out of range (%d devices)", dev, count);
  atomic_store(&s->dev.current, dev);
  return RDEV_OK;
}

int cl_device_get(rdev_session_t *s, int *dev) {
  if (!s || !dev) return cl_error(RDEV_INVALID_PARAM, "session or dev is NULL");
  *dev = cl_device_current(s);
  return RDEV_OK;
}

int cl_mem_info(rdev_session_t *s, size_t *free_bytes, size_t *total_bytes) {
  if (!s || !free_bytes || !total_bytes) return cl_error(RDEV_INVALID_PARAM, "NULL argument");
  rdev_v1_Request req = rdev_v1_Request_init_zero;
  req.which_op = rdev_v1_Request_mem_info_tag;
  req.op.mem_info.device = cl_device_current(s);
  cl_result_t res;
  int rc = cl_call(s, &req, &res);
  if (rc) return rc;
  *free_bytes = (size_t)res.value;
  *total_bytes = (size_t)res.value2;
  return RDEV_OK;
}
