"""What tests, benchmarks and the teaching notebooks share: event recording in Pi's trace notation, and a
fault-injecting HTTP server that speaks four streaming formats: OpenAI chat completions, Anthropic Messages, OpenAI
Responses and Google Generative AI.

The faux provider lives in :mod:`pi_notebook.ai.providers.faux`.
"""

from ._fault_script import (
    Api,
    Fault,
    RawResponse,
    Reply,
    ScriptEntry,
    StatusFault,
    StreamFault,
    TextBlock,
    ThinkingBlock,
    TokenUsage,
    ToolCallBlock,
)
from ._fault_server import FaultServer, RecordedRequest
from ._trace import EventRecorder, trace_label

__all__ = [
    "Api",
    "EventRecorder",
    "Fault",
    "FaultServer",
    "RawResponse",
    "RecordedRequest",
    "Reply",
    "ScriptEntry",
    "StatusFault",
    "StreamFault",
    "TextBlock",
    "ThinkingBlock",
    "TokenUsage",
    "ToolCallBlock",
    "trace_label",
]
