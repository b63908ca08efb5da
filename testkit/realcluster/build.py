"""Build the cluster's binaries from the official sources, once per release, into a cache.

The sources come through the Go module proxy. k8s.io/kubernetes requires each of its staging
modules at v0.0.0 and replaces them with ./staging/... paths that a module download does not
have, so the wrapper module here replaces each with its published version; the list is read from
the release's own go.mod so it follows the release. One `go build` builds all six binaries so they
share the compiling. kube-state-metrics is a module of its own with its own client-go, so it is
a second build with its own cache directory (adding it leaves the Kubernetes build cached). Go is
used for this test cluster only, never in the product.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from testkit.realcluster import release

_STAGING_LINE = re.compile(r"^\s*(k8s\.io/[\w.-]+)\s*=>\s*\./staging/", re.MULTILINE)


class BuildError(RuntimeError):
    """The binaries could not be built; the message is one line."""


def cache_root() -> Path:
    """Where built releases live: outside any checkout, kept across clones on this machine."""
    root = os.environ.get("TFTA_CLUSTER_CACHE")
    if root:
        return Path(root)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tf-thread-advisor"


def bin_dir() -> Path:
    return cache_root() / f"kubernetes-{release.KUBERNETES}-etcd-{release.ETCD}" / "bin"


def kube_state_metrics_dir() -> Path:
    return cache_root() / f"kube-state-metrics-{release.KUBE_STATE_METRICS}" / "bin"


def kube_state_metrics() -> Path:
    """The kube-state-metrics binary (built by ``build``)."""
    return kube_state_metrics_dir() / "kube-state-metrics"


def built() -> bool:
    d = bin_dir()
    return (
        all((d / name).is_file() for name in release.BINARIES)
        and (d / "BUILT").is_file()
        and kube_state_metrics().is_file()
    )


def _go() -> str:
    go = shutil.which("go") or (
        "/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists() else None
    )
    if go is None:
        raise BuildError(
            "go: not found (the real-cluster tier builds Kubernetes from source with Go)"
        )
    return go


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise BuildError(f"{' '.join(cmd[:3])}: exit {proc.returncode}: {tail[0]}")
    return proc.stdout


def staging_modules(kubernetes_go_mod: str) -> list[str]:
    """The staging modules a k8s.io/kubernetes go.mod replaces with ./staging paths."""
    return sorted(set(_STAGING_LINE.findall(kubernetes_go_mod)))


def wrapper_go_mod(staging: list[str]) -> str:
    lines = [
        "module tfta.test/realcluster",
        "",
        "go 1.24.0",
        "",
        "require (",
        f"\tk8s.io/kubernetes {release.KUBERNETES}",
        f"\tgo.etcd.io/etcd/server/v3 {release.ETCD}",
        ")",
        "",
        "replace (",
    ]
    lines += [f"\t{mod} => {mod} {release.STAGING}" for mod in staging]
    lines += [")", ""]
    return "\n".join(lines)


def build(log=print) -> Path:  # type: ignore[no-untyped-def]
    """Build every binary unless this release is built already; returns the bin directory."""
    out = bin_dir()
    if not kube_state_metrics().is_file():
        _build_kube_state_metrics(log)
    if built():
        return out
    go = _go()
    work = out.parent / "src"
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, GOFLAGS="-mod=mod", CGO_ENABLED="1", GOTOOLCHAIN="local")
    started = time.monotonic()
    (work / "go.mod").write_text("module tfta.test/probe\n\ngo 1.24.0\n")
    info = json.loads(
        _run([go, "mod", "download", "-json", f"k8s.io/kubernetes@{release.KUBERNETES}"], work, env)
    )
    staging = staging_modules(Path(info["GoMod"]).read_text())
    if not staging:
        raise BuildError(
            f"k8s.io/kubernetes {release.KUBERNETES}: its go.mod names no staging module"
        )
    (work / "go.mod").write_text(wrapper_go_mod(staging))
    (work / "tools.go").write_text(
        "//go:build tools\n\npackage tools\n\nimport (\n"
        + "".join(f'\t_ "{pkg}"\n' for pkg in release.BINARIES.values())
        + ")\n"
    )
    log(
        f"realcluster: resolving {release.KUBERNETES} ({len(staging)} staging modules) "
        f"and etcd {release.ETCD}"
    )
    _run(
        [
            go,
            "get",
            f"k8s.io/kubernetes@{release.KUBERNETES}",
            f"go.etcd.io/etcd/server/v3@{release.ETCD}",
        ],
        work,
        env,
    )
    _run([go, "mod", "download"], work, env)
    minor = release.KUBERNETES.removeprefix("v").split(".")[1]
    ldflags = " ".join(
        [
            "-s -w",
            f"-X k8s.io/component-base/version.gitVersion={release.KUBERNETES}",
            "-X k8s.io/component-base/version.gitMajor=1",
            f"-X k8s.io/component-base/version.gitMinor={minor}",
            "-X k8s.io/component-base/version.gitTreeState=clean",
            f"-X k8s.io/client-go/pkg/version.gitVersion={release.KUBERNETES}",
        ]
    )
    tmp = out.parent / "bin.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    log(f"realcluster: building {', '.join(release.BINARIES)} (cold: tens of minutes on 2 cores)")
    _run(
        [
            go,
            "build",
            "-trimpath",
            "-ldflags",
            ldflags,
            "-o",
            str(tmp) + "/",
            *release.BINARIES.values(),
        ],
        work,
        env,
    )
    # etcd's main package is go.etcd.io/etcd/server/v3, which go names "server"
    if (tmp / "server").exists():
        (tmp / "server").rename(tmp / "etcd")
    missing = [name for name in release.BINARIES if not (tmp / name).is_file()]
    if missing:
        raise BuildError(f"go build left no {', '.join(missing)}")
    seconds = time.monotonic() - started
    (tmp / "BUILT").write_text(
        json.dumps(
            {"kubernetes": release.KUBERNETES, "etcd": release.ETCD, "seconds": round(seconds)}
        )
        + "\n"
    )
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    log(f"realcluster: built in {seconds:.0f} s into {out}")
    return out


def _build_kube_state_metrics(log) -> None:  # type: ignore[no-untyped-def]
    go = _go()
    out = kube_state_metrics_dir()
    work = out.parent / "src"
    work.mkdir(parents=True, exist_ok=True)
    module = "k8s.io/kube-state-metrics/v2"
    (work / "go.mod").write_text(
        f"module tfta.test/kubestatemetrics\n\ngo 1.24.0\n\n"
        f"require {module} {release.KUBE_STATE_METRICS}\n"
    )
    (work / "tools.go").write_text(f'//go:build tools\n\npackage tools\n\nimport _ "{module}"\n')
    env = dict(
        os.environ,
        GOFLAGS="-mod=mod",
        CGO_ENABLED="0",
        GOTOOLCHAIN="local",
        GONOSUMDB=release.KUBE_STATE_METRICS_NOSUMDB,
    )
    started = time.monotonic()
    log(f"realcluster: building kube-state-metrics {release.KUBE_STATE_METRICS}")
    tmp = out.parent / "bin.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    _run([go, "build", "-trimpath", "-ldflags", "-s -w", "-o", str(tmp / "kube-state-metrics"),
          module], work, env)  # fmt: skip
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    log(f"realcluster: kube-state-metrics built in {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    try:
        print(build(log=lambda m: print(m, file=sys.stderr)))
    except BuildError as exc:
        print(f"realcluster: {exc}", file=sys.stderr)
        sys.exit(2)
