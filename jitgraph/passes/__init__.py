"""Graph passes: pure ``Graph -> Graph`` functions run by one ordered pipeline (see ``manager.py``).

Importing this package registers every built-in pass, the lowering ones (``fuse``, ``plan_memory``) included.
"""

from jitgraph.passes import (  # noqa: F401 - imported to register their passes
    eliminate_common,
    eliminate_dead,
    fold_constants,
    fuse,
    layout,
    plan_memory,
    simplify,
)
from jitgraph.passes.manager import DEFAULT_PIPELINE, PassError, PassReport, register_pass, run_pipeline

__all__ = ["DEFAULT_PIPELINE", "PassError", "PassReport", "register_pass", "run_pipeline"]
