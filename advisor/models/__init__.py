"""The data the advisor measures and publishes, as pydantic v2 models, one module per area.

Limits and field docs live with the models: the probe fills ``NodeProfile`` (``node``), the user
asks with ``CalibrationOptions`` (``options``), calibration fills ``CalibrationResult``
(``calibration``; its events are ``progress``), publishing validates a ``Recommendation``
(``recommendation``) before anything is written anywhere, ``status`` reports ``Consumer``s
(``consumers``) in its ``AdviceStatus`` rows (``status``) and ``plan`` a ``PlanResult``
(``plan``). One thread setting is one
``ThreadSetting`` (``setting``) throughout, in the stored shapes too (``stored_setting``: the
models hold it, the JSON keeps its flat keys). All models forbid unknown fields so a typo in a
stored ConfigMap annotation or a hand-edited file is an error, not a silently ignored value.
The environment a setting reaches a runtime through is a ``Runtime`` (``runtime``); TensorFlow's
is ``TENSORFLOW`` (``tf_env``), which every reader and writer of an advice's env takes.

Every public name is re-exported here: import them from ``advisor.models``.
"""

from advisor.models.base import (
    StrictModel,
)
from advisor.models.calibration import (
    KERAS_SUFFIXES,
    OPEN_WORDS,
    CalibrationResult,
    Incumbent,
    IncumbentOutcome,
    IncumbentVerdict,
    InputsKind,
    InputsSource,
    Measurement,
    ModelFormat,
    NearBest,
    OnednnCode,
    OnednnVerdict,
    OpenReason,
    PairsVerdict,
    ReplacementEvidence,
    RequestsOrigin,
    SettingStats,
    SettingVerdict,
    StopReason,
    SubjectInfo,
    TimeSplit,
    TrialResult,
    TrialStatus,
    format_of,
    open_text,
)
from advisor.models.consumers import (
    Consumer,
    Problem,
    ProblemCode,
)
from advisor.models.node import (
    CPU_DECIMALS,
    CgroupInfo,
    CgroupLevel,
    DownwardAPI,
    NodeProfile,
    QuotaState,
    Topology,
)
from advisor.models.option_table import (
    DEFAULT_BUDGET_S,
    MIN_BUDGET_S,
    NO_FILE,
    OPTION,
    OPTIONS,
    RESTART,
    Option,
    PlanFlag,
    TrialMode,
    job_options,
    plan_defaults,
    plan_options,
)
from advisor.models.options import (
    QUOTA_TOLERANCE,
    CalibrationOptions,
    ObjectiveName,
)
from advisor.models.plan import (
    Decision,
    PlanDecision,
    PlanResult,
)
from advisor.models.production import (
    Production,
    ProductionVerdict,
    VerdictCause,
)
from advisor.models.progress import (
    Progress,
    ProgressFn,
)
from advisor.models.recommendation import (
    ENV_NAME_PATTERN,
    MAX_PROVENANCE_TRIALS,
    MAX_SPEC_FIELDS,
    SCHEMA_VERSION,
    CpuFrom,
    NearBestRange,
    Provenance,
    Recommendation,
    ServingTarget,
    TopologySummary,
    TrialSummary,
)
from advisor.models.runtime import (
    MIN_THREAD_CAP,
    THREAD_VALUE_PATTERN,
    Knob,
    Runtime,
    fits_cap,
    over_cap,
    thread_cap,
)
from advisor.models.setting import (
    MAX_THREADS,
    ThreadSetting,
)
from advisor.models.status import AdviceStatus, JobState, StatusResult
from advisor.models.tf_env import (
    ONEDNN,
    ONEDNN_VALUES,
    TENSORFLOW,
    OnednnValue,
)
from advisor.models.workload import (
    CALIBRATED_KINDS,
    KINDS,
    POD_OWNER_KINDS,
    KindFacts,
    WorkloadKind,
    WorkloadRef,
)

__all__ = [
    "CALIBRATED_KINDS",
    "CPU_DECIMALS",
    "DEFAULT_BUDGET_S",
    "ENV_NAME_PATTERN",
    "KERAS_SUFFIXES",
    "KINDS",
    "MAX_PROVENANCE_TRIALS",
    "MAX_SPEC_FIELDS",
    "MAX_THREADS",
    "MIN_BUDGET_S",
    "MIN_THREAD_CAP",
    "NO_FILE",
    "ONEDNN",
    "ONEDNN_VALUES",
    "OPEN_WORDS",
    "OPTION",
    "OPTIONS",
    "POD_OWNER_KINDS",
    "QUOTA_TOLERANCE",
    "RESTART",
    "SCHEMA_VERSION",
    "TENSORFLOW",
    "THREAD_VALUE_PATTERN",
    "AdviceStatus",
    "CalibrationOptions",
    "CalibrationResult",
    "CgroupInfo",
    "CgroupLevel",
    "Consumer",
    "CpuFrom",
    "Decision",
    "DownwardAPI",
    "Incumbent",
    "IncumbentOutcome",
    "IncumbentVerdict",
    "InputsKind",
    "InputsSource",
    "JobState",
    "KindFacts",
    "Knob",
    "Measurement",
    "ModelFormat",
    "NearBest",
    "NearBestRange",
    "NodeProfile",
    "ObjectiveName",
    "OnednnCode",
    "OnednnValue",
    "OnednnVerdict",
    "OpenReason",
    "Option",
    "PairsVerdict",
    "PlanDecision",
    "PlanFlag",
    "PlanResult",
    "Problem",
    "ProblemCode",
    "Production",
    "ProductionVerdict",
    "Progress",
    "ProgressFn",
    "Provenance",
    "QuotaState",
    "Recommendation",
    "ReplacementEvidence",
    "RequestsOrigin",
    "Runtime",
    "ServingTarget",
    "SettingStats",
    "SettingVerdict",
    "StatusResult",
    "StopReason",
    "StrictModel",
    "SubjectInfo",
    "ThreadSetting",
    "TimeSplit",
    "Topology",
    "TopologySummary",
    "TrialMode",
    "TrialResult",
    "TrialStatus",
    "TrialSummary",
    "VerdictCause",
    "WorkloadKind",
    "WorkloadRef",
    "fits_cap",
    "format_of",
    "job_options",
    "open_text",
    "over_cap",
    "plan_defaults",
    "plan_options",
    "thread_cap",
]
