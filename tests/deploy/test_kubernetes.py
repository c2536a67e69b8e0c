"""tests/deploy/test_kubernetes.py — deploy/kubernetes/ rendered and checked offline.

    test_kubernetes.py KUSTOMIZE_DIR RDEVD

Renders base/, overlays/example/ and overlays/tls/ (in a scratch copy, with
a throwaway certificate made by openssl for tls.crt and tls.key) with
`kubectl kustomize`, parses the YAML and checks: the kinds each one makes;
the DaemonSet asks the Ascend device plugin for huawei.com/Ascend910
(request = limit = 1), runs on Ascend nodes, names a pinned image (a tag,
never :latest), probes rdevd's gRPC health (grpc.health.v1) on its gRPC port
(TCP checks under TLS, which the kubelet's gRPC probe does not speak), and
carries the Prometheus scrape annotations on the metrics port rdevd.conf
gives; every ConfigMap and Secret a volume names is one rendered (hash
suffix included), and every file rdevd.conf names lies in a mounted volume;
the Service reaches the pods' ports. Last, the example tenants file is
given to rdevd, which must start with it. No cluster is needed.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

RESOURCE = "huawei.com/Ascend910"


def render(path):
    out = subprocess.run(["kubectl", "kustomize", path], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"kubectl kustomize {path}: {out.stderr}")
    for line in out.stderr.splitlines():  # deprecation notices only
        if line.strip() and "deprecated" not in line:
            raise SystemExit(f"kubectl kustomize {path}: {out.stderr}")
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def conf_of(docs):
    cms = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].startswith("rdevd-config")]
    assert len(cms) == 1, "one rdevd-config ConfigMap"
    conf = {}
    for line in cms[0]["data"]["rdevd.conf"].splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            k, v = (x.strip() for x in line.split("=", 1))
            conf[k] = v
    return conf


def check(name, docs, want_kinds, tls):
    kinds = sorted(d["kind"] for d in docs)
    assert kinds == sorted(want_kinds), f"{name}: kinds {kinds}, want {sorted(want_kinds)}"
    ds = next(d for d in docs if d["kind"] == "DaemonSet")
    pod = ds["spec"]["template"]
    spec = pod["spec"]
    assert spec.get("nodeSelector"), f"{name}: no nodeSelector"
    assert "Ascend910" in " ".join(f"{k}={v}" for k, v in spec["nodeSelector"].items()), spec["nodeSelector"]
    (c,) = [c for c in spec["containers"] if c["name"] == "rdevd"]
    res = c["resources"]
    assert str(res["limits"][RESOURCE]) == "1" and str(res["requests"][RESOURCE]) == "1", res
    image = c["image"]
    assert re.search(r":[\w][\w.-]*$", image.split("/")[-1]) and not image.endswith(":latest"), image
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        p = c[probe]
        if tls:
            assert "grpc" not in p and p["tcpSocket"]["port"] == ports["grpc"], (name, probe, p)
        else:
            assert p["grpc"]["port"] == ports["grpc"] and "tcpSocket" not in p, (name, probe, p)
    ann = pod["metadata"]["annotations"]
    assert ann["prometheus.io/scrape"] == "true", ann
    assert int(ann["prometheus.io/port"]) == ports["metrics"], (ann, ports)
    conf = conf_of(docs)
    assert conf["metrics-listen"].rsplit(":", 1)[1] == str(ports["metrics"]), conf
    assert conf["listen"].rsplit(":", 1)[1] == str(ports["grpc"]), conf
    if conf.get("bulk-listen", "off") != "off":
        assert conf["bulk-listen"].rsplit(":", 1)[1] == str(ports["bulk"]), conf
    assert ("tls-cert" in conf) == tls, conf
    # names: every volume's ConfigMap or Secret is rendered (overlays generate the Secrets)
    names = {(d["kind"], d["metadata"]["name"]) for d in docs}
    vols = {v["name"]: v for v in spec["volumes"]}
    for v in vols.values():
        if "configMap" in v:
            assert ("ConfigMap", v["configMap"]["name"]) in names, (name, v)
        if "secret" in v and (name != "base" and not v["secret"].get("optional")):
            assert ("Secret", v["secret"]["secretName"]) in names, (name, v)
    if tls:
        assert ("Secret", vols["tls"]["secret"]["secretName"]) in names, vols["tls"]
    # files rdevd.conf names live in mounted volumes; the job dir in a writable one
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    args = c.get("args", [])
    config_path = args[args.index("--config") + 1]
    for key, path in [("--config", config_path)] + [(k, conf[k]) for k in ("tenants", "tls-cert", "tls-key",
                                                                           "job-dir") if k in conf]:
        under = [m for p, m in mounts.items() if path.startswith(p.rstrip("/") + "/")]
        assert under, f"{name}: {key} {path} is in no mounted volume"
        if key == "job-dir":
            assert not under[0].get("readOnly"), f"{name}: job-dir on a read-only mount"
    # the Service selects the pods and targets their ports
    svc = next(d for d in docs if d["kind"] == "Service")
    for k, v in svc["spec"]["selector"].items():
        assert pod["metadata"]["labels"].get(k) == v, (svc["spec"]["selector"], pod["metadata"]["labels"])
    for p in svc["spec"]["ports"]:
        assert p["targetPort"] in ports, p
    if name != "base":
        for d in docs:
            if d["kind"] != "Namespace":
                assert d["metadata"].get("namespace") == "rdev", d["metadata"]
    print(f"{name}: {len(docs)} objects, checks pass")


def tenants_start(rdevd, tenants):
    log = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen([rdevd, "--listen", "127.0.0.1:0", "--tenants", tenants, "--log-level", "warn"],
                            stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and proc.poll() is None:
        log.seek(0)
        if "listening on" in log.read():
            proc.terminate()
            proc.wait(timeout=30)
            return
        time.sleep(0.05)
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    log.seek(0)
    raise SystemExit(f"rdevd refused the example tenants file: {log.read()}")


def main():
    src, rdevd = sys.argv[1:3]
    with tempfile.TemporaryDirectory(prefix="rdev-kustomize-") as work:
        tree = os.path.join(work, "kubernetes")
        shutil.copytree(src, tree, ignore=shutil.ignore_patterns("tls.crt", "tls.key"))
        tls = os.path.join(tree, "overlays", "tls")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                        "/CN=rdevd", "-keyout", os.path.join(tls, "tls.key"), "-out", os.path.join(tls, "tls.crt")],
                       check=True, capture_output=True)
        check("base", render(os.path.join(tree, "base")), ["ConfigMap", "DaemonSet", "Service"], False)
        check("overlays/example", render(os.path.join(tree, "overlays", "example")),
              ["ConfigMap", "DaemonSet", "Namespace", "Secret", "Service"], False)
        check("overlays/tls", render(tls), ["ConfigMap", "DaemonSet", "Namespace", "Secret", "Secret", "Service"], True)
    tenants_start(rdevd, os.path.join(src, "overlays", "example", "tenants"))
    print("test_kubernetes: PASS")


if __name__ == "__main__":
    main()
