"""Graph passes: pure ``Graph -> Graph`` functions run by one ordered pipeline (see ``manager.py``)."""

from jitgraph.passes.manager import DEFAULT_PIPELINE, PassReport, register_pass, run_pipeline

__all__ = ["DEFAULT_PIPELINE", "PassReport", "register_pass", "run_pipeline"]
