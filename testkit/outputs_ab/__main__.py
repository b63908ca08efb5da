"""``python -m testkit.outputs_ab --base CHECKOUT --branch CHECKOUT``: see the package."""

from testkit.outputs_ab.harness import main

raise SystemExit(main())
