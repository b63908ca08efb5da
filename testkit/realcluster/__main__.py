"""`python -m testkit.realcluster build|up|down|status`: see cluster.py."""

from __future__ import annotations

import json
import sys

from testkit.realcluster import build, cluster


def main(argv: list[str]) -> int:
    verb = argv[0] if argv else "status"
    try:
        if verb == "build":
            print(build.build(log=lambda m: print(m, file=sys.stderr)))
        elif verb == "up":
            print(cluster.up())
        elif verb == "down":
            cluster.down()
            left = cluster.leftovers()
            if left:
                print("realcluster: left behind: " + "; ".join(left), file=sys.stderr)
                return 3
        elif verb == "status":
            print(json.dumps(cluster.status(), indent=2))
        else:
            print("usage: python -m testkit.realcluster build|up|down|status", file=sys.stderr)
            return 2
    except (build.BuildError, cluster.ClusterError) as exc:
        print(f"realcluster: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
