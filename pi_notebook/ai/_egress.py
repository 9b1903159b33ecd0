"""Whether a request may leave: one check of the model and the URL actually requested, before any byte (or key) is
sent.

The providers' shared driver (``providers/_sse_api``) asks :func:`refusal` right before each request, so the check
sees what is really requested, whoever asked for it: a ``stream_fn`` that relays a faux-labelled model to a real
server, a compaction summary, a model a resumed session named. Checks are added by the floor that knows the rules
(the site policy's is added by ``session/_policy``); a check raises to refuse, and its message becomes the reply's
error, which no retry layer repeats. Without checks every request may leave.
"""

from __future__ import annotations

from collections.abc import Callable

from ._request import Model

__all__ = ["RequestCheck", "add_request_check", "refusal"]

RequestCheck = Callable[[Model, str], None]
"""``check(model, url)``: raises (any ``Exception``, whose text says why) when ``model`` may not be sent a request
at ``url``."""

_checks: list[RequestCheck] = []


def add_request_check(check: RequestCheck) -> Callable[[], None]:
    """Check every provider request of this process with ``check`` from now on; returns a function that removes it."""
    _checks.append(check)

    def remove() -> None:
        if check in _checks:
            _checks.remove(check)

    return remove


def refusal(model: Model, url: str) -> str | None:
    """Why a request of ``model`` to ``url`` may not be sent (the first check's text), or ``None``."""
    for check in tuple(_checks):
        try:
            check(model, url)
        except Exception as exc:  # a check's refusal, or a check that failed: neither lets the request go
            return str(exc) or type(exc).__name__
    return None
