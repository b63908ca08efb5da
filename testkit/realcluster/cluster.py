"""Bring the single-node cluster up, take it down leaving nothing behind, say how it is.

`up` builds (or finds) the release's binaries, makes the network namespace, the certificates and
the configuration, starts etcd, the API server, the controller manager, the scheduler, containerd,
the kubelet and kube-proxy inside the namespace, starts the loopback forwarder, and waits until the
node is Ready and the `default` ServiceAccount and `kube-root-ca.crt` exist. Every process is
started in a session of its own with a pid file, so `down` (another process, later) finds each.

One module, one job: the cluster's lifecycle on this machine (its namespace, processes, cgroups and
mounts, made by `up` and found again by `down`, `leftovers` and `status`); what the components are
configured with is configs.py's, their identities pki.py's, their images images.py's.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from testkit.realcluster import build, configs, images, pki, release
from testkit.realcluster import layout as L

#: the kernel settings the kubelet changes on start (setupKernelTunables); `down` puts them back
KUBELET_SYSCTLS = ("vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops")
NETNS_PATH = Path("/run/netns") / L.NETNS
#: start order; `down` stops in the reverse order
COMPONENTS = (
    "forward",
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "containerd",
    "kubelet",
    "kube-proxy",
    # started on demand by prometheus.py
    "kube-state-metrics",
    "prometheus",
)
#: what `up` starts, every one of which must keep running
CORE = tuple(c for c in COMPONENTS if c not in ("kube-state-metrics", "prometheus"))


class ClusterError(RuntimeError):
    """One line naming the component that cannot run here, and why."""


Log = Callable[[str], None]


def _log(msg: str) -> None:
    print(f"realcluster: {msg}", file=sys.stderr, flush=True)


def _sh(*cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), capture_output=True, text=True, check=check)


def _in_ns(*cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return _sh("nsenter", f"--net={NETNS_PATH}", *cmd, check=check)


# -- the network namespace ------------------------------------------------------------------


def make_netns() -> None:
    if not NETNS_PATH.exists():
        _sh("ip", "netns", "add", L.NETNS)
    _sh("ip", "-n", L.NETNS, "link", "set", "lo", "up")
    if _sh("ip", "-n", L.NETNS, "link", "show", L.DUMMY, check=False).returncode != 0:
        # a veth pair with both ends inside: this kernel has no dummy device, and a link needs a
        # peer to have carrier
        _sh(
            "ip",
            "-n",
            L.NETNS,
            "link",
            "add",
            L.DUMMY,
            "type",
            "veth",
            "peer",
            "name",
            L.DUMMY + "p",
        )
        _sh("ip", "-n", L.NETNS, "addr", "add", f"{L.NODE_IP}/32", "dev", L.DUMMY)
    _sh("ip", "-n", L.NETNS, "link", "set", L.DUMMY + "p", "up")
    _sh("ip", "-n", L.NETNS, "link", "set", L.DUMMY, "up")
    # a default route, so the kubelet and the API server find the node's address as theirs
    _sh("ip", "-n", L.NETNS, "route", "replace", "default", "dev", L.DUMMY, "src", L.NODE_IP)
    for key, value in (
        ("net/ipv4/ip_forward", "1"),
        ("net/bridge/bridge-nf-call-iptables", "1"),
        ("net/ipv4/conf/all/route_localnet", "1"),
    ):
        _in_ns("sh", "-c", f"[ ! -e /proc/sys/{key} ] || echo {value} > /proc/sys/{key}")


def delete_netns() -> None:
    if NETNS_PATH.exists():
        _sh("ip", "netns", "delete", L.NETNS, check=False)


# -- processes --------------------------------------------------------------------------------


def _pidfile(lay: L.Layout, name: str) -> Path:
    return lay.run / f"{name}.pid"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    with contextlib.suppress(OSError):
        if stat.read_text().split(") ", 1)[1].startswith("Z"):
            return False
    return True


def _pid(lay: L.Layout, name: str) -> int | None:
    try:
        pid = int(_pidfile(lay, name).read_text())
    except (OSError, ValueError):
        return None
    return pid if _alive(pid) else None


def start(
    lay: L.Layout, name: str, argv: list[str], in_netns: bool = True, cwd: Path | None = None
) -> int:
    if (pid := _pid(lay, name)) is not None:
        return pid
    lay.logs.mkdir(parents=True, exist_ok=True)
    lay.run.mkdir(parents=True, exist_ok=True)
    cmd = (["nsenter", f"--net={NETNS_PATH}", "--"] if in_netns else []) + argv
    with (lay.logs / f"{name}.log").open("ab") as log:
        proc = subprocess.Popen(
            cmd,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=cwd,
        )
    _pidfile(lay, name).write_text(str(proc.pid))
    (lay.run / f"{name}.argv").write_text(
        json.dumps({"argv": cmd, "cwd": str(cwd) if cwd else None})
    )
    return proc.pid


def restart(name: str, pause_s: float = 0.0) -> None:
    """Stop one component (SIGTERM, then SIGKILL), wait ``pause_s`` and start it again as `up` did:
    the e2e tier's faults (an API server restarted during a run)."""
    lay = L.layout()
    saved = json.loads((lay.run / f"{name}.argv").read_text())
    pid = _pid(lay, name)
    if pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.1)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    time.sleep(pause_s)
    with (lay.logs / f"{name}.log").open("ab") as log:
        proc = subprocess.Popen(
            saved["argv"],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=saved["cwd"],
        )
    _pidfile(lay, name).write_text(str(proc.pid))


def _last_lines(lay: L.Layout, name: str, n: int = 400) -> list[str]:
    try:
        return (lay.logs / f"{name}.log").read_text(errors="replace").splitlines()[-n:]
    except OSError:
        return []


def reason(lay: L.Layout, name: str) -> str:
    """The most telling line of a component's log: its last error or fatal, else its last line."""
    lines = _last_lines(lay, name)
    for line in reversed(lines):
        low = line.lower()
        if (
            (line.startswith(("E", "F")) and line[1:5].isdigit())
            or "error" in low
            or "fatal" in low
        ):
            return line.strip()[:300]
    return lines[-1].strip()[:300] if lines else "no output"


def _wait(
    what: str, ok: Callable[[], bool], seconds: float, lay: L.Layout, watch: tuple[str, ...]
) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if ok():
            return
        for name in watch:
            if _pid(lay, name) is None:
                raise ClusterError(f"{name} exited while waiting for {what}: {reason(lay, name)}")
        time.sleep(0.5)
    name = watch[-1] if watch else what
    raise ClusterError(f"{name}: {what} not reached in {seconds:.0f} s: {reason(lay, name)}")


def kubectl(
    lay: L.Layout, *args: str, check: bool = False, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_kubectl_bin(), f"--kubeconfig={lay.kubeconfig}", "--request-timeout=5s", *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=check,
    )


def _kubectl_bin() -> str:
    here = Path(__file__).resolve().parents[2] / ".tools" / "bin" / "kubectl"
    return str(here) if here.exists() else (shutil.which("kubectl") or "kubectl")


# -- up ------------------------------------------------------------------------------------------


def preflight() -> None:
    if os.geteuid() != 0:
        raise ClusterError("the real cluster needs root (network namespace, cgroups, mounts)")
    for tool, package in (
        ("containerd", "containerd"),
        ("runc", "runc"),
        ("iptables", "iptables"),
        ("nsenter", "util-linux"),
        ("openssl", "openssl"),
        ("gcc", "gcc"),
        ("ctr", "containerd"),
    ):
        if shutil.which(tool) is None:
            raise ClusterError(f"{tool}: not installed (apt-get install {package})")
    if not Path("/usr/lib/cni/bridge").exists():
        raise ClusterError(
            "CNI plugins: /usr/lib/cni/bridge missing (apt-get install containernetworking-plugins)"
        )
    if (
        not Path("/sys/fs/cgroup/cpu").is_dir()
        and not Path("/sys/fs/cgroup/cgroup.controllers").exists()
    ):
        raise ClusterError("kubelet: no cgroup cpu controller mounted")


def make_cgroup_root() -> None:
    """The kubelet's cgroup root on every v1 hierarchy (it refuses to start without one)."""
    base = Path("/sys/fs/cgroup")
    for hierarchy in base.iterdir():
        if not hierarchy.is_dir() or hierarchy.name == "unified":
            continue
        root = hierarchy / L.CGROUP_ROOT
        root.mkdir(exist_ok=True)
        if hierarchy.name == "cpuset":
            # a new cpuset holds no CPU and no memory node until given its parent's
            for knob in ("cpuset.cpus", "cpuset.mems"):
                if not (root / knob).read_text().strip():
                    (root / knob).write_text((hierarchy / knob).read_text())


def _save_host_state(lay: L.Layout) -> None:
    if lay.state.exists():
        return
    saved = {
        key: Path("/proc/sys", key).read_text().strip()
        for key in KUBELET_SYSCTLS
        if Path("/proc/sys", key).exists()
    }
    lay.state.write_text(json.dumps({"sysctls": saved}))


def up(log: Log = _log, timeout: float = 240.0) -> Path:
    preflight()
    lay = L.layout()
    bins = build.build(log=log)
    started = time.monotonic()
    for d in (lay.root, lay.etcd, lay.kubelet, lay.containerd, lay.cni_state):
        d.mkdir(parents=True, exist_ok=True)
    _save_host_state(lay)
    make_netns()
    make_cgroup_root()
    pki.make(lay.pki)
    configs.write_all(lay)
    p, cfg = lay.pki, lay.config
    lay.etcd.chmod(0o700)
    # the host's way in, first: every wait below asks the API server through it
    start(
        lay,
        "forward",
        [
            sys.executable,
            "-m",
            "testkit.realcluster.forward",
            str(NETNS_PATH),
            f"{L.HOST_API_PORT}:{L.NODE_IP}:{L.API_PORT}",
            f"{L.HOST_PROMETHEUS_PORT}:{L.NODE_IP}:{L.PROMETHEUS_PORT}",
        ],
        in_netns=False,
        cwd=Path(__file__).resolve().parents[2],
    )
    start(
        lay,
        "etcd",
        [
            str(bins / "etcd"),
            "--name=tfta",
            f"--data-dir={lay.etcd}",
            "--listen-client-urls=http://127.0.0.1:2379",
            "--advertise-client-urls=http://127.0.0.1:2379",
            "--listen-peer-urls=http://127.0.0.1:2380",
            "--initial-advertise-peer-urls=http://127.0.0.1:2380",
            "--initial-cluster=tfta=http://127.0.0.1:2380",
            "--listen-metrics-urls=http://127.0.0.1:2381",
            # a throwaway test cluster: durability is not worth the disk's latency
            "--unsafe-no-fsync",
            "--log-level=warn",
        ],
    )
    start(
        lay,
        "kube-apiserver",
        [
            str(bins / "kube-apiserver"),
            "--etcd-servers=http://127.0.0.1:2379",
            "--bind-address=0.0.0.0",
            f"--secure-port={L.API_PORT}",
            f"--advertise-address={L.NODE_IP}",
            f"--service-cluster-ip-range={L.SERVICE_CIDR}",
            f"--client-ca-file={p / 'ca.crt'}",
            f"--tls-cert-file={p / 'apiserver.crt'}",
            f"--tls-private-key-file={p / 'apiserver.key'}",
            f"--kubelet-client-certificate={p / 'apiserver-kubelet-client.crt'}",
            f"--kubelet-client-key={p / 'apiserver-kubelet-client.key'}",
            f"--kubelet-certificate-authority={p / 'ca.crt'}",
            "--kubelet-preferred-address-types=InternalIP",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={p / 'sa.pub'}",
            f"--service-account-signing-key-file={p / 'sa.key'}",
            "--authorization-mode=Node,RBAC",
            "--enable-admission-plugins=NodeRestriction",
            "--allow-privileged=false",
            "--profiling=false",
            "--v=1",
        ],
    )
    _wait(
        "the API server's /readyz",
        lambda: kubectl(lay, "get", "--raw=/readyz").returncode == 0,
        90,
        lay,
        ("etcd", "kube-apiserver"),
    )
    start(
        lay,
        "kube-controller-manager",
        [
            str(bins / "kube-controller-manager"),
            f"--kubeconfig={cfg / 'controller-manager.kubeconfig'}",
            f"--authentication-kubeconfig={cfg / 'controller-manager.kubeconfig'}",
            f"--authorization-kubeconfig={cfg / 'controller-manager.kubeconfig'}",
            "--use-service-account-credentials",
            f"--root-ca-file={p / 'ca.crt'}",
            f"--service-account-private-key-file={p / 'sa.key'}",
            f"--cluster-signing-cert-file={p / 'ca.crt'}",
            f"--cluster-signing-key-file={p / 'ca.key'}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            "--profiling=false",
            "--v=1",
        ],
    )
    start(
        lay,
        "kube-scheduler",
        [
            str(bins / "kube-scheduler"),
            f"--kubeconfig={cfg / 'scheduler.kubeconfig'}",
            f"--authentication-kubeconfig={cfg / 'scheduler.kubeconfig'}",
            f"--authorization-kubeconfig={cfg / 'scheduler.kubeconfig'}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            "--profiling=false",
            "--v=1",
        ],
    )
    start(lay, "containerd", ["containerd", f"--config={cfg / 'containerd.toml'}"])
    _wait("containerd's socket", lay.containerd_socket.exists, 30, lay, ("containerd",))
    images.import_pause(lay, build.bin_dir().parent)
    start(
        lay,
        "kubelet",
        [
            str(bins / "kubelet"),
            f"--config={cfg / 'kubelet.yaml'}",
            f"--kubeconfig={cfg / 'kubelet.kubeconfig'}",
            f"--hostname-override={L.NODE_NAME}",
            f"--node-ip={L.NODE_IP}",
            # the kubelet's cAdvisor finds containers' names through containerd at this socket
            # (its default is /run/containerd): without it no series has a container label
            f"--containerd={lay.containerd_socket}",
            f"--root-dir={lay.kubelet}",
            f"--cert-dir={lay.kubelet / 'pki'}",
            "--v=1",
        ],
    )
    start(
        lay,
        "kube-proxy",
        [
            str(bins / "kube-proxy"),
            f"--config={cfg / 'kube-proxy.yaml'}",
            "--v=1",
        ],
    )
    every = CORE
    remaining = max(30.0, timeout - (time.monotonic() - started))
    _wait("node Ready", lambda: _node_ready(lay), remaining, lay, every)
    _wait(
        "the default ServiceAccount and kube-root-ca.crt",
        lambda: _namespace_ready(lay),
        60,
        lay,
        every,
    )
    log(f"up in {time.monotonic() - started:.0f} s ({release.KUBERNETES}); kubeconfig:")
    return lay.kubeconfig


def _node_ready(lay: L.Layout) -> bool:
    out = kubectl(
        lay,
        "get",
        "node",
        L.NODE_NAME,
        "-o",
        "jsonpath={.status.conditions[?(@.type=='Ready')].status}",
    )
    return out.returncode == 0 and out.stdout.strip() == "True"


def _namespace_ready(lay: L.Layout) -> bool:
    sa = kubectl(lay, "-n", "default", "get", "serviceaccount", "default", "-o", "name")
    ca = kubectl(lay, "-n", "default", "get", "configmap", "kube-root-ca.crt", "-o", "name")
    return sa.returncode == 0 and ca.returncode == 0


# -- down ----------------------------------------------------------------------------------------


def _cgroup_dirs() -> Iterator[Path]:
    """Every cgroup directory below the kubelet's root, deepest first, on every hierarchy."""
    base = Path("/sys/fs/cgroup")
    roots = [base / L.CGROUP_ROOT] + [h / L.CGROUP_ROOT for h in base.iterdir() if h.is_dir()]
    for root in roots:
        if root.is_dir():
            yield from sorted(
                (d for d in root.rglob("*") if d.is_dir()), key=lambda d: -len(d.parts)
            )
            yield root


def _cgroup_pids() -> set[int]:
    pids: set[int] = set()
    for d in _cgroup_dirs():
        with contextlib.suppress(OSError):
            pids |= {int(x) for x in (d / "cgroup.procs").read_text().split()}
    return pids


def _our_mounts(lay: L.Layout) -> list[str]:
    root = str(lay.root)
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point == root or point.startswith(root + "/"):
            points.append(point)
    return sorted(points, key=len, reverse=True)


def _processes_naming(lay: L.Layout) -> list[int]:
    marks = (str(lay.root) + "/", str(build.bin_dir()) + "/", str(NETNS_PATH))
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if any(mark in cmdline for mark in marks):
            found.append(int(proc.name))
    return found


def _kill_everything(lay: L.Layout) -> None:
    # the pods' processes first (they sit in the kubelet's cgroups), then the shims, then the
    # components in reverse start order
    for _ in range(3):
        pids = _cgroup_pids()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if not pids:
            break
        time.sleep(0.3)
    shims = _sh(
        "pgrep", "-f", f"containerd-shim.*-address {lay.containerd_socket}", check=False
    ).stdout.split()
    for name in reversed(COMPONENTS):
        running = _pid(lay, name)
        if running is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(running, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_pid(lay, n) for n in COMPONENTS):
        time.sleep(0.2)
    for name in COMPONENTS:
        left = _pid(lay, name)
        if left is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(left, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                os.kill(left, signal.SIGKILL)
    # anything else still naming the cluster's files (a component started by hand, say)
    for pid in _processes_naming(lay):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for shim in shims:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(shim), signal.SIGKILL)
    # whatever a shim still held
    for pid in _cgroup_pids():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def down(log: Log = _log) -> None:
    lay = L.layout()
    _kill_everything(lay)
    for point in _our_mounts(lay):
        _sh("umount", "-l", point, check=False)
    for d in _cgroup_dirs():
        for _ in range(20):
            try:
                d.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.1)
    delete_netns()
    if lay.state.exists():
        saved = json.loads(lay.state.read_text()).get("sysctls", {})
        for key, value in saved.items():
            with contextlib.suppress(OSError):
                Path("/proc/sys", key).write_text(value)
    if lay.root.exists():
        shutil.rmtree(lay.root, ignore_errors=True)
    log("down: nothing left")


def leftovers(lay: L.Layout | None = None) -> list[str]:
    """What of the cluster is still on this machine (empty after a clean `down`)."""
    lay = lay or L.layout()
    found = []
    if NETNS_PATH.exists():
        found.append(f"network namespace {L.NETNS}")
    if lay.root.exists():
        found.append(f"data directory {lay.root}")
    found += [f"mount {m}" for m in _our_mounts(lay)]
    found += [f"cgroup {d}" for d in _cgroup_dirs()]
    for name in COMPONENTS:
        if _pid(lay, name) is not None:
            found.append(f"process {name}")
    for pid in _processes_naming(lay):
        with contextlib.suppress(OSError):
            cmd = (
                Path(f"/proc/{pid}/cmdline")
                .read_bytes()
                .replace(b"\0", b" ")
                .decode(errors="replace")
            )
            found.append(f"process {pid} {cmd[:120]}")
    return found


def status() -> dict[str, object]:
    lay = L.layout()
    running = {name: _pid(lay, name) is not None for name in COMPONENTS}
    ready = all(running[name] for name in CORE) and _node_ready(lay)
    return {
        "release": release.KUBERNETES,
        "built": build.built(),
        "running": running,
        "ready": ready,
        "kubeconfig": str(lay.kubeconfig) if lay.kubeconfig.exists() else None,
    }
