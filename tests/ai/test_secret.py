"""Unit tests of key cleaning and scrubbing (``ai/_secret.py``); the HTTP and session paths are tested over real
loopback HTTP in ``tests/session/test_session_secrets.py``."""

from __future__ import annotations

import json
from urllib.parse import quote, quote_plus

import pytest

from pi_notebook.ai._secret import ApiKeyError, clean_api_key, mask_headers, scrub_secrets, strip_api_key

KEY = "sk-ab+c/d=e%f g\n"  # characters that each encoding spells differently


@pytest.mark.parametrize(
    "spelling",
    [
        KEY,
        KEY.strip(),
        repr(KEY),
        repr(KEY.encode()),
        json.dumps(KEY),
        quote(KEY, safe=""),
        quote(KEY, safe="").lower(),  # lower-case percent escapes (the key itself is lower case)
        quote_plus(KEY),
        quote(KEY),
    ],
)
def test_every_spelling_of_a_key_is_scrubbed(spelling: str) -> None:
    text = f"before {spelling} after"
    scrubbed = scrub_secrets(text, [KEY])
    assert scrubbed.startswith("before ") and scrubbed.endswith(" after")
    assert "ab+c" not in scrubbed and "ab%2" not in scrubbed.lower()
    assert "***" in scrubbed


def test_short_or_missing_secrets_scrub_nothing() -> None:
    assert scrub_secrets("a short key abc", ["abc", None, ""]) == "a short key abc"


def test_a_key_is_stripped_and_a_key_with_a_control_character_inside_is_refused_without_showing_it() -> None:
    stripped = strip_api_key(" \tsk-canary-123\r\n")
    assert stripped is not None and stripped.get_secret_value() == "sk-canary-123"
    assert strip_api_key(" \n") is None
    with pytest.raises(ApiKeyError) as caught:
        clean_api_key("sk-canary\x00-123", source="api_key")
    assert str(caught.value) == "The API key passed as api_key contains a control character (U+0000)"


def test_credential_headers_are_masked() -> None:
    headers = {"Authorization": "Bearer x", "X-Goog-Api-Key": "y", "Cookie": "z", "Accept": "json"}
    assert mask_headers(headers) == {"Authorization": "***", "X-Goog-Api-Key": "***", "Cookie": "***", "Accept": "json"}
