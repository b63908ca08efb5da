"""The cluster's certificates and keys, made with openssl: one CA, one identity per component.

Each client identity is the subject the API server's authenticators read (CN = user, O = group),
so RBAC and the Node authorizer evaluate each component as itself.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from testkit.realcluster import layout as L


@dataclass(frozen=True)
class Identity:
    name: str
    cn: str
    org: str = ""
    server_sans: tuple[str, ...] = ()


def identities() -> list[Identity]:
    node = f"system:node:{L.NODE_NAME}"
    api_sans = (
        f"IP:{L.NODE_IP}",
        f"IP:{L.API_SERVICE_IP}",
        "IP:127.0.0.1",
        "DNS:localhost",
        "DNS:kubernetes",
        "DNS:kubernetes.default",
        "DNS:kubernetes.default.svc",
        "DNS:kubernetes.default.svc.cluster.local",
    )
    return [
        Identity("apiserver", "kube-apiserver", server_sans=api_sans),
        # the API server's client identity towards the kubelet (logs, exec, port-forward)
        Identity("apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters"),
        Identity("admin", "tfta-admin", "system:masters"),
        Identity("controller-manager", "system:kube-controller-manager"),
        Identity("scheduler", "system:kube-scheduler"),
        Identity("kubelet", node, "system:nodes"),
        Identity(
            "kubelet-serving",
            node,
            "system:nodes",
            server_sans=(f"IP:{L.NODE_IP}", f"DNS:{L.NODE_NAME}"),
        ),
        Identity("kube-proxy", "system:kube-proxy"),
        # Prometheus scrapes the kubelet's cAdvisor endpoint as itself (a ClusterRole grants it
        # nodes/metrics)
        Identity("prometheus", "tfta-prometheus"),
        # kube-state-metrics lists and watches pods and ReplicaSets as itself (prometheus.py)
        Identity("kube-state-metrics", "tfta-kube-state-metrics"),
    ]


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make(pki: Path) -> None:
    """Write ca.{crt,key}, sa.{key,pub} and NAME.{crt,key} for every identity (idempotent)."""
    pki.mkdir(parents=True, exist_ok=True)
    if not (pki / "ca.crt").exists():
        _openssl(
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-days",
            "3650",
            "-subj",
            "/CN=tfta-realcluster-ca",
            cwd=pki,
        )
    if not (pki / "sa.key").exists():
        _openssl(
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
            "sa.key",
            cwd=pki,
        )
        _openssl("pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)
    for ident in identities():
        if (pki / f"{ident.name}.crt").exists():
            continue
        subject = (f"/O={ident.org}" if ident.org else "") + f"/CN={ident.cn}"
        usage = "serverAuth" if ident.server_sans else "clientAuth"
        ext = [
            "basicConstraints=critical,CA:FALSE",
            "keyUsage=critical,digitalSignature,keyEncipherment",
            f"extendedKeyUsage={usage}",
        ]
        if ident.server_sans:
            ext.append("subjectAltName=" + ",".join(ident.server_sans))
        (pki / f"{ident.name}.ext").write_text("\n".join(ext) + "\n")
        _openssl(
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            f"{ident.name}.key",
            "-out",
            f"{ident.name}.csr",
            "-subj",
            subject,
            cwd=pki,
        )
        _openssl(
            "x509",
            "-req",
            "-in",
            f"{ident.name}.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            f"{ident.name}.crt",
            "-days",
            "365",
            "-extfile",
            f"{ident.name}.ext",
            cwd=pki,
        )
