"""``python -m advisor`` is the same as the ``tf-thread-advisor`` console script."""

from advisor.cli import main

raise SystemExit(main())
