"""Graph passes: pure ``Graph -> Graph`` functions run by one ordered pipeline (see ``manager.py``).

Importing this package registers the built-in passes; ``fuse`` and ``plan_memory`` are loaded by the manager
from their own modules when the pipeline first asks for them.
"""

from jitgraph.passes import eliminate_common, eliminate_dead, fold_constants, layout, simplify  # noqa: F401
from jitgraph.passes.manager import DEFAULT_PIPELINE, PassError, PassReport, register_pass, run_pipeline

__all__ = ["DEFAULT_PIPELINE", "PassError", "PassReport", "register_pass", "run_pipeline"]
