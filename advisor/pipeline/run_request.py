"""What one run measures and where it publishes: ``run``'s request, apart from the run itself
(``advisor.pipeline.run``) so that building ``run``'s flags, whose defaults are the request's,
imports none of the calibration's modules."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from advisor.models import CalibrationOptions, ServingTarget, WorkloadRef
from advisor.pipeline.source import CLUSTER_TIMEOUT_S
from advisor.recommend import DEFAULT_CONFIGMAP_NAME

#: ``RunRequest.output`` for "print it": the caller prints ``PublishedRun.text``
STDOUT = "-"


@dataclass(frozen=True)
class RunRequest:
    """What one run measures and where it publishes (the flags of ``run``).

    With ``configmap`` the advice goes to the cluster (``namespace`` is then required: the CLI
    fills it from $TFTA_POD_NAMESPACE; without ``configmap`` it is refused, as it would name
    nothing); ``output`` is a file, or ``STDOUT`` for the caller to print ``PublishedRun.text``;
    ``restart`` names workloads in the ConfigMap's namespace whose pods are replaced when the
    advice changes; ``node_selector`` is the Job's, recorded for ``status`` to compare consumers
    with; ``target`` the serving container measured for (``serving_target`` builds it from
    run's options), recorded for ``plan`` and ``status``.
    """

    options: CalibrationOptions = field(default_factory=CalibrationOptions)
    configmap: str | None = None
    namespace: str | None = None
    output: str | None = None
    env_file: Path | None = None
    node_labels: Mapping[str, str] = field(default_factory=dict)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    restart: Sequence[WorkloadRef] = ()
    target: ServingTarget | None = None
    force: bool = False
    kubeconfig: Path | None = None
    cluster_timeout_s: float = CLUSTER_TIMEOUT_S
    host_root: Path = Path("/")

    @property
    def name(self) -> str:
        return self.configmap or DEFAULT_CONFIGMAP_NAME

    @property
    def writes_nothing(self) -> bool:
        """No file and no cluster target: the ConfigMap YAML is the result, for stdout."""
        return self.output is None and self.env_file is None and self.configmap is None

    @property
    def output_file(self) -> Path | None:
        """The file ``output`` names (None: no ``output``, or ``STDOUT``)."""
        return None if self.output is None or self.output == STDOUT else Path(self.output)

    @property
    def prints(self) -> bool:
        """The ConfigMap YAML is for the caller to print: ``output`` is ``STDOUT``, or nothing
        is written."""
        return self.output == STDOUT or self.writes_nothing
