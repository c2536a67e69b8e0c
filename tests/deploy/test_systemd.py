"""tests/deploy/test_systemd.py — rdevd under systemd, without systemd.

    test_systemd.py verify UNIT_IN RDEVD DOCDIR   the unit (deploy/systemd/rdevd.service.in, its
                                                  ExecStart pointed at the built rdevd) passes
                                                  `systemd-analyze verify` with nothing to say, and
                                                  `systemd-analyze security --offline` rates it OK
    test_systemd.py notify RDEVD                  rdevd speaks the sd_notify protocol to the
                                                  $NOTIFY_SOCKET it is given: READY=1 once it
                                                  listens, RELOADING=1 then READY=1 around SIGHUP,
                                                  STOPPING=1 on SIGTERM, then exits 0; and the same
                                                  READY=1 to an abstract socket (@name)
"""
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time


def verify(unit_in, rdevd, docdir):
    with tempfile.TemporaryDirectory(prefix="rdev-unit-") as d:
        text = open(unit_in).read()
        text = text.replace("@RDEV_SBINDIR@", os.path.dirname(os.path.abspath(rdevd)))
        text = text.replace("@RDEV_DOCDIR@", docdir)
        leftover = [line for line in text.splitlines() if "@RDEV" in line]
        if leftover:
            raise SystemExit(f"unfilled template: {leftover}")
        unit = os.path.join(d, "rdevd.service")
        with open(unit, "w") as f:
            f.write(text)
        out = subprocess.run(["systemd-analyze", "verify", unit], capture_output=True, text=True)
        print(out.stdout + out.stderr)
        if out.returncode != 0 or out.stdout.strip() or out.stderr.strip():
            raise SystemExit(f"systemd-analyze verify: exit {out.returncode}")
        sec = subprocess.run(["systemd-analyze", "security", "--offline=true", "--no-pager", unit],
                             capture_output=True, text=True)
        m = re.search(r"Overall exposure level for rdevd.service: ([0-9.]+) (\w+)", sec.stdout + sec.stderr)
        if not m:
            print("systemd-analyze security --offline: not offered here; skipped")
        else:
            print(f"exposure {m.group(1)} {m.group(2)}")
            if float(m.group(1)) > 5.0:
                raise SystemExit(f"sandboxing weaker than expected: exposure {m.group(1)}")
    print("verify: PASS")


def expect(sock, want, timeout=15):
    sock.settimeout(timeout)
    msg = sock.recv(4096).decode()
    print(f"notify: {msg!r}")
    if not msg.split("\n")[0] == want:
        raise SystemExit(f"expected {want!r}, got {msg!r}")
    return msg


def notify(rdevd):
    with tempfile.TemporaryDirectory(prefix="rdev-notify-") as d:
        tenants = os.path.join(d, "tenants")
        with open(tenants, "w") as f:
            f.write("[tenant a]\ntoken = sha256:" + "0" * 64 + "\n")
        for addr in (os.path.join(d, "notify"), "@rdev-notify-%d" % os.getpid()):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            sock.bind(addr if addr[0] == "/" else "\0" + addr[1:])
            log = open(os.path.join(d, "stdout"), "w+")
            env = dict(os.environ, NOTIFY_SOCKET=addr)
            proc = subprocess.Popen([rdevd, "--listen", "127.0.0.1:0", "--tenants", tenants, "--log-level",
                                     "warn", "--drain-ms", "500"], stdout=log, env=env)
            try:
                expect(sock, "READY=1")
                log.seek(0)
                if "listening on" not in log.read():
                    raise SystemExit("READY=1 came before rdevd listened")
                if addr[0] == "/":
                    proc.send_signal(signal.SIGHUP)
                    msg = expect(sock, "RELOADING=1")
                    if "MONOTONIC_USEC=" not in msg:
                        raise SystemExit("RELOADING=1 without MONOTONIC_USEC")
                    expect(sock, "READY=1")
                proc.terminate()
                expect(sock, "STOPPING=1")
                code = proc.wait(timeout=30)
                if code != 0:
                    raise SystemExit(f"rdevd exited {code}")
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
                sock.close()
    print("notify: PASS")


if __name__ == "__main__":
    if sys.argv[1] == "verify":
        verify(*sys.argv[2:5])
    else:
        notify(sys.argv[2])
