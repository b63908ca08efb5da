"""Images for a cluster that pulls nothing: the pause image built here, others imported.

The pause image is a static binary in a one-layer image written as a `docker save` archive,
which containerd imports under its tag. Images built with podman (the advisor's) are saved from
podman's store and imported the same way, into containerd's `k8s.io` namespace where the CRI
plugin looks.
"""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import tarfile
import tempfile
from pathlib import Path

from testkit.realcluster import layout as L

HERE = Path(__file__).resolve().parent


def _ctr(
    lay: L.Layout, *args: str, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["ctr", "--address", str(lay.containerd_socket), "--namespace", "k8s.io", *args],
        input=stdin,
        capture_output=True,
        check=True,
    )


def pause_archive(binary: Path, tag: str) -> bytes:
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as tar:
        info = tarfile.TarInfo("pause")
        data = binary.read_bytes()
        info.size = len(data)
        info.mode = 0o755
        tar.addfile(info, io.BytesIO(data))
    layer_bytes = layer.getvalue()
    diff_id = "sha256:" + hashlib.sha256(layer_bytes).hexdigest()
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {"Entrypoint": ["/pause"], "User": "65535:65535"},
            "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        }
    ).encode()
    config_name = hashlib.sha256(config).hexdigest() + ".json"
    manifest = json.dumps(
        [{"Config": config_name, "RepoTags": [tag], "Layers": ["layer/layer.tar"]}]
    ).encode()
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, blob in (
            (config_name, config),
            ("layer/layer.tar", layer_bytes),
            ("manifest.json", manifest),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    return out.getvalue()


def build_pause(cache: Path) -> Path:
    binary = cache / "pause"
    if not binary.exists():
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["gcc", "-static", "-O2", "-o", str(binary), str(HERE / "pause.c")],
            check=True,
            capture_output=True,
        )
    return binary


def has_image(lay: L.Layout, ref: str) -> bool:
    out = _ctr(lay, "images", "list", "--quiet").stdout.decode().split()
    return ref in out or f"docker.io/{ref}" in out


def import_pause(lay: L.Layout, cache: Path) -> None:
    if has_image(lay, L.SANDBOX_IMAGE):
        return
    _ctr(lay, "images", "import", "-", stdin=pause_archive(build_pause(cache), L.SANDBOX_IMAGE))


def import_archive(lay: L.Layout, archive: Path) -> None:
    """Import a `docker save` / `podman save` archive into the CRI's namespace."""
    _ctr(lay, "images", "import", str(archive))


def import_from_podman(lay: L.Layout, ref: str, podman: list[str]) -> None:
    """Save REF from podman's store (``podman``: its command line, store flags included) and
    import it, unless containerd already holds that very image (same podman image ID): a tag
    rebuilt since is imported again."""
    image_id = subprocess.run(
        [*podman, "image", "inspect", "--format", "{{.Id}}", ref],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    marker = lay.containerd / "imported" / hashlib.sha256(ref.encode()).hexdigest()
    if marker.exists() and marker.read_text() == image_id and has_image(lay, ref):
        return
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "image.tar"
        subprocess.run(
            [*podman, "save", "--format", "docker-archive", "-o", str(archive), ref],
            check=True,
            capture_output=True,
        )
        import_archive(lay, archive)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(image_id)
