#!/usr/bin/python3
"""tests/jobs/test_hooks.py — webhook delivery is fair per tenant (docs/jobs.md,
server/jobs/job_hook.c): a real rdevd and httpd.py through test_jobs.py's
harness.

  - tenants whose receivers hang (as many as the fixed pool of four
    webhook workers rdevd once had) delay only their own events: another
    tenant's events all arrive within seconds, in order and signed, and
    each hanging receiver still got its tenant's first event, one at a time;
  - a job whose tenant is gone (removed from the tenants file across a
    restart) still has its final event taken up, its delivery recorded
    (refused: such a job has no allow list).

Every rdevd stopped with SIGTERM must exit 0 (checked by the harness).

usage: test_hooks.py RDEVD RDEV PROTO_DIR [unittest args]
"""
import hashlib
import hmac
import json
import os
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# test_jobs takes RDEVD RDEV PROTO_DIR off sys.argv as it is imported
from test_jobs import FAILED, RUNNING, SUCCEEDED, JobTest, bearer, jpb, tenants_text  # noqa: E402

# As many as the fixed pool of webhook workers that rdevd once had
# (SRV_JOB_HOOK_WORKERS, 4): hanging receivers held all of its threads.
HANGING = 4
EVENTS = ["queued", "fetching", "running", "delivering", "succeeded"]


class FairHooks(JobTest):
    DRAIN_MS = 500

    def tenants(self):
        allow = self.http.url("/")
        names = [f"hang{i}" for i in range(HANGING)] + ["ok", "gone"]
        return {n: {"allow": allow, "max_running_jobs": 4} for n in names}

    def delay_wire(self, us, **more):
        return jpb.JobSpec(name="hooked", buffers=[jpb.JobBuffer(name="b", size=64)],
                           steps=[jpb.JobStep(launch=jpb.JobLaunch(kernel="delay_us", blocks=1,
                                                                   args=[jpb.JobArg(u32=us)]))], **more)

    def submit_hooked(self, tenant, path, us=1000):
        rep = self.srv.stub.SubmitJob(jpb.SubmitJobRequest(spec=self.delay_wire(us, callback_url=self.http.url(path))),
                                      metadata=bearer(tenant), timeout=20)
        return rep.id, rep.secret

    def wait_hooks(self, name, n, within, what):
        t0 = time.monotonic()
        while len(self.http.hooks(name)) < n:
            self.assertLess(time.monotonic() - t0, within,
                            f"{what}: {len(self.http.hooks(name))} of {n} arrived within {within} s{self.ctx()}")
            time.sleep(0.05)
        time.sleep(0.2)  # an extra (wrong) event would arrive by now
        return self.http.hooks(name)

    def check_signed(self, hooks, secret):
        """Each record signed with secret over "<ts>.<body>"; the events, parsed."""
        events = []
        for h in hooks:
            body = bytes.fromhex(h["body_hex"])
            mac = hmac.new(secret.encode(), h["timestamp"].encode() + b"." + body, hashlib.sha256).hexdigest()
            self.assertEqual(h["signature"], "v1=" + mac, f"bad signature on {body!r}")
            self.assertEqual(h["content_type"], "application/json")
            events.append(json.loads(body))
        return events

    def test_hanging_receivers_delay_only_their_tenants(self):
        """HANGING tenants' receivers never answer; tenant ok's events still arrive at once."""
        hanging = {}
        for i in range(HANGING):
            jid, _ = self.submit_hooked(f"hang{i}", f"/slow/60000/hook/h{i}")
            hanging[jid] = i
        # every hanging tenant's first event is attempted: its receiver holds the request
        t0 = time.monotonic()
        while True:
            seen = [i for i in range(HANGING) if self.http.requested(f"/slow/60000/hook/h{i}")]
            if len(seen) == HANGING:
                break
            self.assertLess(time.monotonic() - t0, 10, f"only the receivers of {seen} saw a request{self.ctx()}")
            time.sleep(0.05)
        for jid in hanging:
            self.assert_state(self.wait_final(jid, tenant=f"hang{hanging[jid]}"), SUCCEEDED)

        jid, secret = self.submit_hooked("ok", "/hook/ok")
        self.assert_state(self.wait_final(jid, tenant="ok"), SUCCEEDED)
        hooks = self.wait_hooks("ok", len(EVENTS), 5, "tenant ok's events waited for other tenants' receivers")
        events = self.check_signed(hooks, secret)
        self.assertEqual([e["state"] for e in events], EVENTS, events)
        self.assertEqual([e["seq"] for e in events], list(range(1, len(EVENTS) + 1)))
        self.assertTrue(all(e["id"] == jid for e in events), events)
        st = self.wait_for(jid, lambda s: len(s.hooks) == len(EVENTS), "its deliveries recorded", tenant="ok")
        self.assertTrue(all(h.delivered and h.http_status == 200 for h in st.hooks), st.hooks)

        # a hanging tenant's job still has one event out at a time: its first
        for i in range(HANGING):
            self.assertEqual(len(self.http.requested(f"/hook/h{i}")), 1, f"tenant hang{i}'s receiver")
            self.assertEqual(self.http.hooks(f"h{i}"), [], f"tenant hang{i}'s receiver answered")
        for jid, i in hanging.items():
            self.assertEqual(len(self.get(jid, tenant=f"hang{i}").hooks), 0, "a delivery recorded as done")

    def test_job_of_a_gone_tenant_still_has_its_events_handled(self):
        """A running job whose tenant is removed across a restart fails; that event is taken
        up and its delivery recorded: refused, as a job without a tenant has no allow list."""
        jid, secret = self.submit_hooked("gone", "/hook/gone", us=30_000_000)
        self.wait_for(jid, lambda s: s.state == RUNNING and len(s.hooks) >= 3, "running, its hooks sent",
                      tenant="gone")
        self.wait_record(jid, RUNNING)
        spec = self.tenants()
        del spec["gone"]
        with open(self.tenants_path, "w") as f:
            f.write(tenants_text(spec))
        self.restart()
        rec = self.wait_record(jid, FAILED)
        self.assertEqual(rec.status.message, "its tenant is gone")
        deadline = time.monotonic() + 10
        while not any(h.state == FAILED for h in rec.status.hooks):  # the delivery's record is saved
            self.assertLess(time.monotonic(), deadline, f"the failed event's delivery not on disk: {rec.status}")
            time.sleep(0.05)
            rec = self.record(jid) or rec
        last = [h for h in rec.status.hooks if h.state == FAILED][0]
        self.assertFalse(last.delivered, last)
        self.assertIn("URL not allowed", last.error)
        events = self.check_signed(self.http.hooks("gone"), secret)
        self.assertEqual([e["state"] for e in events], ["queued", "fetching", "running"], events)

if __name__ == "__main__":
    unittest.main(verbosity=2)
