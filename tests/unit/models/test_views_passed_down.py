"""The typed views are read once, where objects are listed, and passed down: only the views
themselves (advisor/models/kube.py), the cluster client (advisor/cluster/) and the stored advice's
parser (advisor/recommend/stored.py) read the dict a view keeps (``.raw``), and fleet/ and
consumers/ read no view of their own from a dict (``View.read``).

Checked on the source's syntax tree (a comment or a docstring naming ``.raw`` is no read), and
on a planted tree, so the check is known to find what it looks for."""

from __future__ import annotations

import ast
from pathlib import Path

import advisor
from advisor.models import kube

ADVISOR = Path(advisor.__file__).parent
#: where a view's dict may be read: the advice's parser reads a ConfigMap whole, by rules stricter
#: than a view's
RAW_READERS = (Path("models/kube.py"), Path("cluster"), Path("recommend/stored.py"))
#: the packages that take views and read none of their own
PASSED_VIEWS = (Path("fleet"), Path("consumers"))
#: every view class of advisor/models/kube.py
VIEWS = frozenset(
    name
    for name, value in vars(kube).items()
    if isinstance(value, type) and value.__module__ == kube.__name__
)


def _nodes(path: Path) -> list[ast.AST]:
    return list(ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))))


def _within(relative: Path, places: tuple[Path, ...]) -> bool:
    return any(relative == place or place in relative.parents for place in places)


def raw_reads(root: Path) -> list[str]:
    """``path:line`` of every ``.raw`` read under ``root`` outside the views and the cluster
    client."""
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if _within(relative, RAW_READERS):
            continue
        found += [
            f"{relative}:{node.lineno}"
            for node in _nodes(path)
            if isinstance(node, ast.Attribute) and node.attr == "raw"
        ]
    return found


def views_read(root: Path) -> list[str]:
    """``path:line`` of every view read from a dict (``PodSpec.read(...)``) in fleet/ and
    consumers/."""
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if not _within(relative, PASSED_VIEWS):
            continue
        found += [
            f"{relative}:{node.lineno}"
            for node in _nodes(path)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "read"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in VIEWS
        ]
    return found


def test_the_views_are_what_the_check_knows() -> None:
    assert {
        "ObjectMeta",
        "Container",
        "PodSpec",
        "KubeWorkload",
        "KubePod",
        "KubeJob",
        "KubeConfigMap",
    } <= VIEWS


def test_only_the_views_and_the_cluster_client_read_a_views_dict() -> None:
    assert raw_reads(ADVISOR) == []


def test_fleet_and_consumers_read_no_view_of_their_own() -> None:
    assert views_read(ADVISOR) == []


def test_the_checks_find_a_planted_read(tmp_path: Path) -> None:
    files = {
        # allowed: the views and the cluster client
        "models/kube.py": "def name(view):\n    return view.raw.get('name')\n",
        "cluster/inventory.py": "def kind(view):\n    return view.raw['kind']\n",
        # a comment or a string naming it reads nothing
        "pipeline/ok.py": "# view.raw is not read here\nTEXT = 'spec.raw'\n",
        # found: a view's dict read, and views read again from dicts below the pipeline
        "pipeline/status.py": "def name(pod):\n    return pod.metadata.raw.get('name')\n",
        "fleet/shape.py": "def spec(pod):\n\n    return PodSpec.read(pod)\n",
        "consumers/deep/fit.py": "import x\nview = Container.read({})\n",
        # not a view: read() of anything else is no view built
        "fleet/other.py": "data = sys.stdin.read()\nwords = Other.read(1)\n",
    }
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert raw_reads(tmp_path) == ["pipeline/status.py:2"]
    assert views_read(tmp_path) == ["consumers/deep/fit.py:2", "fleet/shape.py:3"]
