"""``python -m jitgraph``: see :mod:`jitgraph.cli`."""

from jitgraph.cli import main

raise SystemExit(main())
