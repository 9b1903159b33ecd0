"""The fault server's wire formats (``pi_notebook/testing/formats/``): one record each, routed by path, and a name
the server does not know is an error instead of another format's events."""

from __future__ import annotations

import pytest

from pi_notebook.testing import Fault, Reply
from pi_notebook.testing.formats import FORMATS, WireFormat, route, wire_format


def test_an_unknown_format_is_an_error_not_googles_events() -> None:
    with pytest.raises(ValueError, match=r"no wire format 'bedrock' \(known: openai, anthropic, responses, google\)"):
        Reply.text("hello").wire_events("bedrock")
    with pytest.raises(ValueError, match="no wire format 'bedrock'"):
        Fault.rate_limit().spec_for("bedrock")


@pytest.mark.parametrize("wire", FORMATS, ids=lambda wire: wire.name)
def test_each_format_is_found_by_its_name_and_its_routes(wire: WireFormat) -> None:
    assert wire_format(wire.name) is wire
    for ending in wire.routes:
        assert route(f"{wire.path}/some/prefix{ending}") is wire


def test_names_and_apis_are_each_one_formats() -> None:
    assert len({wire.name for wire in FORMATS}) == len({wire.api for wire in FORMATS}) == len(FORMATS)
