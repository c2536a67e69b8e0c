/*
 * tests/bench/rdev_bench/main.c — rdev_bench, the data-plane benchmark of
 * rdev: its entry point, which owns the order of a run and the state the
 * phases share (bench_t). Every figure of the C API is measured through the
 * public API (rdev/rdev.h) only, the ACL library's and the Python package's
 * through their own (behind clients.h); the baselines they are compared
 * with (raw TCP, bare gRPC, the in-process runtime, local memcpy) are behind
 * baseline.h. `rdev bench` runs this program.
 *
 *   rdev_bench [--target ADDR] [--rdevd PATH] [--quick] [--sizes LIST] [--reps N] [--malloc-tune]
 *              [--python-path DIR] [--guard]
 *
 * Files: options.c (command line), rdevd.c (the rdevds it starts), the
 * phases phase_memory.c, phase_copies.c, phase_latency.c, phase_sessions.c,
 * phase_same_host.c, phase_operators.c (with oper.c, the operators'
 * problem), report.c (tables, summary line), targets.c (the
 * targets and the guard's floors, one table), the baselines
 * baseline_tcp.c, baseline_grpc*.c, baseline_rt.c, baseline_rt_ops.c, the
 * other clients client_acl.c, client_aclnn.c, client_py.c (with
 * py_peer.py, which the build copies next to the binary as
 * rdev_bench_py_peer.py), and common.c.
 *
 * Without --target the bench starts its own rdevd on 127.0.0.1:0 (the binary
 * from --rdevd, else ../server/rdevd next to this binary; 1 sim device) and
 * stops it at the end; only then can it measure the server's memory and
 * the same-host fast path (for which it starts a second rdevd, on a unix
 * socket).
 * $RDEV_TARGET is not read here: measuring a server someone else runs must
 * be asked for; the bench sets it, in its own environment, to the rdevd it
 * measures, for the ACL library's aclInit. The rdev client runs in this
 * process with glibc's malloc defaults, as in a user's program
 * (--malloc-tune: keep freed memory, to see what trimming costs the
 * client), and so does the ACL library, with a session of its own; the
 * Python package runs in a python3 child (/usr/bin/python3, else the first
 * on PATH; the package from --python-path, else ../python next to this
 * binary, the build's), with a session of its own, driven line by line over
 * a pipe; when Python, numpy or the package cannot be found its figures are
 * "na", with a note. The bare-gRPC baseline's server and client run in two
 * forked helper processes, tuned (baseline_grpc.c says how and why).
 *
 * What one run measures (clock_gettime(CLOCK_MONOTONIC); 1 GB = 1e9 bytes;
 * copies move chunks of the server's max_chunk (1 MiB), as rdev's wire does,
 * and so do the baselines' writes and messages; --quick values in []):
 * 1. Server memory (own rdevd only, first, on the fresh server): rdevd's
 *    VmRSS after a session allocated a 256 MiB [64 MiB] buffer and memset it
 *    (the arena pages are touched: the baseline), then the peak while the
 *    session moves 4 GiB [256 MiB] through it (at most 60 s [8 s]), rounds
 *    alternating sync memcpy H2D+D2H and async H2D+D2H+synchronize. Peak =
 *    max(VmRSS sampled every 2 ms, VmHWM reset via /proc/PID/clear_refs at
 *    the baseline); server_rss_mib = peak - baseline.
 * 2. Copies per size (4 KiB..256 MiB [..64 MiB]). Methods: rdev_memcpy H2D
 *    and D2H (sync; the headline figures); k x rdev_memcpy_async + one
 *    rdev_stream_synchronize ("-a"); raw TCP; bare gRPC upload and download
 *    on one long-lived stream; the ACL library's aclrtMemcpy H2D and D2H
 *    (from and to malloc'd host memory, touched once); the Python package's
 *    d.set(a) and d.get(out=a) (an existing numpy array and DeviceArray;
 *    timed in the child); rdev_rt_memcpy in-process ("rt"). TCP, gRPC, ACL
 *    and Python from one chunk on (below it TCP and gRPC measure something
 *    else than rdev's round trips). From the headline size on (and above
 *    32 MiB, where malloc maps each block anew) also D2H into fresh memory:
 *    rdev_memcpy D2H into a buffer just malloc'd, and its
 *    baseline, memcpy from the warm source into one; each transfer mallocs
 *    its buffer and frees it after, the copy alone timed. Each method is
 *    calibrated (k doubled) so that a sample takes ~0.1 s [0.02 s; 0.05 s
 *    from 64 MiB]; the methods' samples are interleaved in each of 9 [3; 7
 *    from 64 MiB] reps (fewer, down to 3, when a size's reps would take over
 *    15 s [1.5 s; 15 s from 64 MiB]). A rep runs the other methods in a
 *    random order, then the two runtime copies: those move the most memory,
 *    and on this VM whichever method ran right after them was 25-40% slower
 *    at 256 MiB. So the method that opens a rep (right after the runtime
 *    copies of the rep before, or of calibration) takes turns: none opens
 *    more than ceil(reps / L) reps, L the number of those other methods at
 *    the size (13 from the headline size on, 11 from one chunk, 4 below it;
 *    2 fewer without Python). The tables show medians. A ratio (e.g.
 *    h2d/tcp, acl-h2d/tcp, d2h-fresh/memcpy-fresh) is the median over reps
 *    of the ratio of the two samples of the same rep, so slow drifts of the
 *    VM cancel. Every size is then verified byte for byte: rdev sync and
 *    async H2D+D2H, D2H into fresh memory and its memcpy, the ACL library's
 *    and the Python package's H2D+D2H (each into memory set to other bytes
 *    before), and the runtime, TCP and gRPC paths.
 * 3. Latency: write_i32 launch (blocks=1) + rdev_stream_synchronize, a bare
 *    gRPC empty unary call from the same thread (a channel of the bench
 *    process to the bare server helper) and from the client helper process,
 *    and a synchronous rdev call (rdev_mem_info), sampled interleaved;
 *    medians and p99 of 2000 [200]. rtt_vs_grpc_unary is, like the copy
 *    ratios, the median of the paired ratios (launch+sync sample i / the
 *    same thread's unary sample i, taken back to back); rtt_medians_ratio
 *    is the ratio of the two medians.
 * 4. Pipelined small ops: 100000 [50000] 64-byte rdev_memset_async on one
 *    stream, then one synchronize; ops/s = N / total, median of 3 runs;
 *    the device bytes are checked.
 * 5. Concurrent sessions: 1, 2 and 4 threads, each with its own session and
 *    64 MiB [16 MiB] device buffer, doing sync H2D of it for 1 s [0.2 s]
 *    from one barrier; aggregate GB/s = all bytes / (last end - first
 *    start); 7 [2] reps, each running the three counts in a random order;
 *    the table shows medians, and scale_4_sessions is, like the copy
 *    ratios, the median of the paired ratios (4 sessions / 1 session of the
 *    same rep); read back and checked.
 * 6. Same host (own rdevd only): a second rdevd with --listen
 *    unix:DIR/rdevd.sock (DIR from mkdtemp, removed after), a session
 *    opened there (its bulk connection, DIR/rdevd.sock.bulk, must be
 *    attached: rdev_session_bulk 1, else the bench fails), host buffers from
 *    rdev_malloc_host (a memfd shared with rdevd: copies move no byte over a
 *    socket) and a device buffer, all of the headline size: sync
 *    rdev_memcpy H2D and D2H against a local memcpy between two warm host
 *    buffers of the same size, interleaved in each of 9 [7] reps (fewer,
 *    down to 3, past 15 s; H2D before D2H, the memcpy first, between or last
 *    in turn), samples calibrated as the copies' from 64 MiB; each rep's
 *    source holds a new pattern and its D2H bytes are checked.
 *    same_host_vs_memcpy is the median over reps of min(H2D, D2H) / memcpy
 *    of the same rep.
 * 7. Operators: Add of two float32 vectors of 64 MiB [8 MiB] into a third,
 *    and Matmul of two float32 matrices of 2048 x 2048 [512 x 512] (16 MiB
 *    [1 MiB] each) into a third, each timed as launch + synchronize with
 *    the data already on the device, through the in-process runtime (the
 *    baseline: rdev_rt_op_launch on a sim of the bench's own, what the
 *    device itself takes), the C API (rdev_op_launch), the ACL library's
 *    operator library (aclnn<Op>GetWorkspaceSize + aclnn<Op> +
 *    aclrtSynchronizeStream, libopapi.so next to libascendcl.so) and the
 *    Python package (rdev.ops.add / matmul(a, b, out=c) + synchronize, in
 *    the child); Add also as the sim's kernel add_f32, remote (rdev_launch)
 *    and in-process (rdev_rt_launch, its baseline). The inputs are small
 *    integers, so that results are exact in float32. A method that is not
 *    offered (an operator this build's table lacks, one rdevd's backend
 *    refuses with RDEV_UNKNOWN_KERNEL, no rdev.ops) is "na" with a note.
 *    A sample is k launch + synchronize pairs, k from the method's
 *    baseline's first runs so that a sample takes ~0.1 s [0.05 s] (at
 *    least one pair); 9 [7] reps per problem (fewer, down to 3, past 30 s
 *    [2.5 s]), each running the methods in a random order; medians, and
 *    ratios to the baseline paired per rep. Then each method runs once
 *    more onto an output set to NaN, read back: Add checked element by
 *    element, Matmul on a grid of 16 x 16 elements.
 *
 * The last line is one summary of key=value pairs: the ratios h2d_vs_tcp,
 * d2h_vs_tcp, h2d_vs_grpc, d2h_vs_grpc (sizes >= 64 MiB, or the largest size
 * when all are smaller: ratio_sizes_from_mib), rtt_vs_grpc_unary,
 * ops_per_s, server_rss_mib ("na" against --target), scale_4_sessions, the
 * raw figures behind them, then acl_h2d_vs_tcp, acl_d2h_vs_tcp,
 * py_h2d_vs_tcp, py_d2h_vs_tcp ("na" without Python),
 * d2h_fresh_vs_memcpy_fresh ("na" without a size above 32 MiB) and their
 * raw figures, same_host_vs_memcpy and its raw figures ("na" against
 * --target), the operators' ratios op_add_vs_rt, acl_add_vs_rt,
 * py_add_vs_rt, kernel_add_vs_rt_kernel, op_matmul_vs_rt,
 * acl_matmul_vs_rt, py_matmul_vs_rt and their ms figures ("na" where not
 * offered), guard=off|ok|FAILED and
 * targets_met=M/N (targets.c). Targets are reported (met/MISSED), never
 * fatal. --guard (ctest's rdev_bench_quick) adds the Guard block: each bulk
 * ratio (every client against raw TCP, D2H fresh against memcpy fresh,
 * same host against memcpy) must reach half its target (same host: skipped
 * against --target), and each remote operator's or kernel's time but
 * Python's must stay within twice its target against the in-process
 * runtime's (skipped where not offered). Exit status: 0; 1 when any rdev, ACL, Python or
 * baseline call fails, data differ, the same-host session has no bulk
 * connection, or an rdevd the bench started died or did not exit cleanly;
 * 2 on bad usage; 3 with --guard when a guarded ratio is beyond its floor
 * or missing.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "rdev_bench.h"
#include "rdevd.h"

rdev_session_t *bench_open_session(const bench_t *b) {
  rdev_session_t *s = NULL;
  int rc = rdev_session_open(b->cfg->addr, NULL, &s);
  if (rc) check_fail("rdev_session_open", rc, __LINE__);
  return s;
}

int main(int argc, char **argv) {
  cfg_t cfg;
  memset(&cfg, 0, sizeof cfg);
  int prc = bench_parse_args(&cfg, argc - 1, argv + 1);
  if (prc) return prc < 0 ? 0 : prc;
  double t_start = now_s();
  size_t max_size = 0;
  for (int i = 0; i < cfg.nsizes; i++)
    if (cfg.sizes[i] > max_size) max_size = cfg.sizes[i];
  size_t big = BIG_SIZE <= max_size ? BIG_SIZE : max_size;
  size_t host_len = max_size;
  if (cfg.rss_buf > host_len) host_len = cfg.rss_buf;
  if (cfg.sess_buf > host_len) host_len = cfg.sess_buf;

  if (cfg.malloc_tune) {
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
  }
  bench_t b = {.cfg = &cfg, .chunk = MiB, .host_len = host_len};
  b.src = xalloc(host_len);
  b.dst = xalloc(host_len);
  memset(b.src, 0x11, host_len);
  memset(b.dst, 0x22, host_len);
  /* both forks before this process has threads */
  BL(bl_grpc_start(&b.grpc, b.dst, host_len, b.src, host_len));

  if (!cfg.target) {
    char rdevd[PATH_MAX];
    if (cfg.rdevd)
      snprintf(rdevd, sizeof rdevd, "%s", cfg.rdevd);
    else
      rdevd_default_path(rdevd, sizeof rdevd);
    size_t arena = (size_t)1 << 30;
    oper_shape_t os = opers_shape(&cfg);
    size_t oper = (3 * os.add_n + (size_t)(os.mm_m * os.mm_k + os.mm_k * os.mm_n + os.mm_m * os.mm_n)) * sizeof(float);
    size_t need = 4 * max_size + 4 * cfg.sess_buf + cfg.rss_buf + 64 * MiB + 3 * oper; /* C API, ACL, Python */
    if (need > arena) arena = need;
    b.server_pid = rdevd_start(rdevd, "127.0.0.1:0", NULL, arena, cfg.addr, sizeof cfg.addr);
  } else {
    snprintf(cfg.addr, sizeof cfg.addr, "%s", cfg.target);
  }

  /* what we talk to */
  rdev_server_info_t info;
  {
    rdev_session_t *s = bench_open_session(&b);
    CHECK(rdev_server_info(s, &info));
    rdev_session_close(s);
  }
  if (info.max_chunk) b.chunk = info.max_chunk;
  report_start(&b, &info, max_size);

  /* 1. server memory, on the fresh server */
  rss_result_t rss = {0};
  if (!cfg.target) {
    rss = phase_memory(&b);
    report_memory(&cfg, &rss);
  }

  /* baselines and the main session */
  BL(bl_tcp_open(&b.tcp));
  BL(bl_rt_open(&b.rt, max_size));
  b.s = bench_open_session(&b);
  CHECK(rdev_stream_create(b.s, &b.st));
  CHECK(rdev_malloc(b.s, &b.dev, max_size, RDEV_MEM_MALLOC_HUGE_FIRST));
  CHECK(rdev_memset(b.s, b.dev, max_size, 0x33, max_size));
  /* the other clients, each with its own session */
  CL(cl_acl_open(&b.acl, cfg.addr, max_size));
  {
    char script[PATH_MAX], pkg[PATH_MAX];
    exe_relative("rdev_bench_py_peer.py", script, sizeof script);
    if (cfg.python_dir)
      snprintf(pkg, sizeof pkg, "%s", cfg.python_dir);
    else
      exe_relative("../python", pkg, sizeof pkg);
    CL(cl_py_open(&b.py, script, pkg, cfg.addr, b.py_note, sizeof b.py_note));
  }

  /* 2. copies */
  report_copies_start(&b, big);
  copies_result_t copies = phase_copies(&b, big, report_copies_row);
  report_copies_end();
  report_clients(&b, &copies);

  /* 3. latency, 4. small ops */
  void *small;
  CHECK(rdev_malloc(b.s, &small, 4096, RDEV_MEM_MALLOC_HUGE_FIRST));
  lat_result_t lat = phase_latency(&b, small);
  report_latency(&cfg, &lat);
  ops_result_t ops = phase_ops(&b, small);
  report_ops(&cfg, &ops);
  CHECK(rdev_free(b.s, small));

  /* 5. sessions */
  sessions_result_t sess = phase_sessions(&b);
  report_sessions(&cfg, &sess);

  /* 6. the same-host fast path: a second rdevd of its own, on a unix socket */
  same_host_result_t same_host = {0};
  if (!cfg.target) {
    same_host = phase_same_host(&b, big);
    report_same_host(&same_host);
  }

  /* 7. operators */
  opers_result_t opers = phase_opers(&b);
  report_opers(&cfg, &opers);

  /* teardown */
  CL(cl_py_close(b.py));
  CL(cl_acl_close(b.acl));
  CHECK(rdev_free(b.s, b.dev));
  CHECK(rdev_stream_destroy(b.st));
  rdev_session_close(b.s);
  bl_rt_close(b.rt);
  BL(bl_grpc_stop(b.grpc));
  bl_tcp_close(b.tcp);
  int server_bad = rdevd_stop();
  munmap(b.src, host_len);
  munmap(b.dst, host_len);

  /* targets and the summary line */
  summary_t sum = summary_make(&cfg, big, &rss, &copies, &lat, &ops, &sess, b.py != NULL, &same_host, &opers);
  int below = report_end(&sum, big, now_s() - t_start, cfg.guard);
  return server_bad || same_host.server_bad ? 1 : below ? 3 : 0;
}
