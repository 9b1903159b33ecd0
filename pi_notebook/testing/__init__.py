"""What tests, benchmarks and the teaching notebooks share: event recording in Pi's trace notation.

The faux provider lives in :mod:`pi_notebook.ai.providers.faux`.
"""

from ._trace import EventRecorder, trace_label

__all__ = ["EventRecorder", "trace_label"]
