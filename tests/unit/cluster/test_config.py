"""Finding the cluster from files written here: an explicit kubeconfig, KUBECONFIG as the
environment names it now, ~/.kube/config, and in-cluster config with and without its token. No
request is sent: loading a config only reads files."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from kubernetes.config import incluster_config, kube_config

from advisor.cluster.config import connect
from advisor.cluster.listing import default_namespace
from advisor.errors import Opt, UsageError


def kubeconfig(path: Path, server: str, namespace: str | None = None) -> Path:
    context = {"cluster": "c", "user": "u", **({"namespace": namespace} if namespace else {})}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": "t0ken"}}],
                "contexts": [{"name": "ctx", "context": context}],
                "current-context": "ctx",
            }
        ),
        encoding="utf-8",
    )
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home without a kubeconfig, where the client looks when KUBECONFIG was not set when it
    was imported; no KUBECONFIG and no in-cluster variables in the environment."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", "~/.kube/config")
    for name in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
        monkeypatch.delenv(name, raising=False)
    return home


def test_an_explicit_kubeconfig_is_loaded_with_our_retries_only(tmp_path: Path, home: Path) -> None:
    path = kubeconfig(tmp_path / "kc", "https://explicit.example:6443")
    kubeconfig(home / ".kube" / "config", "https://home.example:6443")
    found = connect(path, env={"KUBECONFIG": str(kubeconfig(tmp_path / "other", "https://x"))})
    assert (found.host, found.source) == ("https://explicit.example:6443", str(path))
    assert found.api_client.configuration.retries is False
    assert found.api_client.user_agent == "tf-thread-advisor"
    assert "Bearer t0ken" in found.api_client.configuration.api_key.values()


def test_an_explicit_kubeconfig_that_is_not_there_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as caught:
        connect(tmp_path / "nope")
    assert caught.value.exit_code == 2
    assert caught.value.parts == (Opt("kubeconfig"), f" {tmp_path / 'nope'}: no such file")
    assert isinstance(caught.value.parts[0], Opt)


@pytest.mark.parametrize(
    "text", ["{not yaml: [", "apiVersion: v1\nkind: Config\n", "- just\n- a list\n"]
)
def test_an_explicit_kubeconfig_that_does_not_load_says_why(tmp_path: Path, text: str) -> None:
    path = tmp_path / "kc"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UsageError) as caught:
        connect(path)
    first, rest = caught.value.parts
    assert first == Opt("kubeconfig") and isinstance(first, Opt)
    assert rest.startswith(f" {path}: cannot load it (") and rest.endswith(")")
    assert "\n" not in rest  # one line, whatever the loader's message spans


def test_kubeconfig_is_the_one_the_environment_names_now(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the client read KUBECONFIG when imported; another one is named now
    monkeypatch.setattr(kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(tmp_path / "stale"))
    kubeconfig(tmp_path / "stale", "https://stale.example")
    named = kubeconfig(tmp_path / "now", "https://now.example:6443")
    found = connect(env={"KUBECONFIG": str(named)})
    assert (found.host, found.source) == ("https://now.example:6443", str(named))
    # without env: os.environ as it is at the call
    monkeypatch.setenv("KUBECONFIG", str(named))
    assert connect().host == "https://now.example:6443"


def test_without_kubeconfig_the_home_config_is_loaded(home: Path) -> None:
    kubeconfig(home / ".kube" / "config", "https://home.example:6443")
    found = connect(env={})
    assert (found.host, found.source) == ("https://home.example:6443", "~/.kube/config")


def test_no_config_anywhere_says_what_was_tried_and_the_three_ways(home: Path) -> None:
    with pytest.raises(UsageError) as caught:
        connect(env={})
    text = str(caught.value)
    assert text.startswith(
        "no usable cluster config (tried ~/.kube/config, as KUBECONFIG is not set: "
    )
    assert text.endswith(
        "): give kubeconfig PATH, set KUBECONFIG, or run in a pod whose ServiceAccount token is "
        "mounted (in-cluster config)"
    )
    # the option is a part the CLI spells as its flag
    assert caught.value.spelled(lambda opt: f"--{opt}").count("--kubeconfig PATH") == 1


def test_a_kubeconfig_named_in_the_environment_that_is_missing_is_named(
    tmp_path: Path, home: Path
) -> None:
    missing = tmp_path / "missing"
    with pytest.raises(UsageError) as caught:
        connect(env={"KUBECONFIG": str(missing)})
    assert str(caught.value).startswith(f"no usable cluster config (tried KUBECONFIG={missing}: ")


@pytest.fixture
def pod_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the in-cluster loader looks for the ServiceAccount's token and CA (nothing there
    yet), with the service variables a pod has."""
    secrets = tmp_path / "serviceaccount"
    secrets.mkdir()
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(secrets / "token"))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(secrets / "ca.crt"))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    return secrets


def test_in_a_pod_without_a_token_is_a_usage_error_naming_in_cluster_config(
    home: Path, pod_files: Path
) -> None:
    # (home first: its clean environment, then the pod's variables)
    kubeconfig(home / ".kube" / "config", "https://home.example:6443")  # not a fallback
    with pytest.raises(UsageError) as caught:
        connect(env={"KUBERNETES_SERVICE_HOST": "10.96.0.1"})
    text = str(caught.value)
    assert text.startswith(
        "no usable cluster config (tried in-cluster config, as KUBERNETES_SERVICE_HOST is set: "
        "Service token file does not exist): give kubeconfig PATH"
    )


def test_in_a_pod_with_its_token_the_service_account_is_used(pod_files: Path) -> None:
    (pod_files / "token").write_text("sa-token", encoding="utf-8")
    (pod_files / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\n", encoding="utf-8")
    found = connect(env={"KUBERNETES_SERVICE_HOST": "10.96.0.1"})
    assert (found.host, found.source) == ("https://10.96.0.1:443", "in-cluster ServiceAccount")
    assert found.api_client.configuration.retries is False


def test_an_explicit_kubeconfig_wins_over_in_cluster_config(
    pod_files: Path, tmp_path: Path
) -> None:
    path = kubeconfig(tmp_path / "kc", "https://explicit.example:6443")
    found = connect(path, env={"KUBERNETES_SERVICE_HOST": "10.96.0.1"})
    assert found.host == "https://explicit.example:6443"


# --------------------------------------------------------------------------------------------------
# the namespace kubectl would use


def test_default_namespace_is_the_current_contexts(tmp_path: Path, home: Path) -> None:
    assert default_namespace(kubeconfig(tmp_path / "a", "https://a", namespace="ml")) == "ml"
    assert default_namespace(kubeconfig(tmp_path / "b", "https://b")) is None
    broken = tmp_path / "broken"
    broken.write_text("{not yaml: [", encoding="utf-8")
    assert default_namespace(broken) is None  # connect says what is wrong with it
    assert default_namespace(tmp_path / "absent") is None
