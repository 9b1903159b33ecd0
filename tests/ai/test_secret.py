"""Unit tests of key cleaning and scrubbing (``ai/_secret.py``); the HTTP and session paths are tested over real
loopback HTTP in ``tests/session/test_session_secrets.py``."""

from __future__ import annotations

import json
from urllib.parse import quote, quote_plus

import pytest

from pi_notebook.ai._secret import (
    ApiKeyError,
    clean_api_key,
    is_secret_name,
    mask_headers,
    scrub_secrets,
    strip_api_key,
)
from pi_notebook.ai._secret_env import secret_variables

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


SECRET_NAMES = [
    "Authorization",
    "Proxy-Authorization",
    "X-Api-Key",
    "api-key",
    "X-Auth-Token",
    "Ocp-Apim-Subscription-Key",
    "Set-Cookie",
    "X-Hub-Signature-256",
    "OPENAI_API_KEY",
    "LITELLM_KEY",
    "HF_TOKEN",
    "PGPASSWORD",
    "AWS_SECRET_ACCESS_KEY",
    "GOOGLE_APPLICATION_CREDENTIALS",
]
PLAIN_NAMES = ["Content-Type", "Keep-Alive", "X-Trace-Id", "GIT_AUTHOR_NAME", "XAUTHORITY", "SSH_AUTH_SOCK", "PATH"]


def test_one_rule_says_which_header_and_variable_names_hold_a_secret() -> None:
    """Issue 30 item 8: the rule every part of the package uses (reprs, error texts, cassettes, tool environments,
    redaction): a word of the name ends with key/token/secret/password/credential/cookie/signature/auth."""
    assert [name for name in SECRET_NAMES if not is_secret_name(name)] == []
    assert [name for name in PLAIN_NAMES if is_secret_name(name)] == []
    headers = dict.fromkeys(SECRET_NAMES[:8], "v") | {"Accept": "json"}
    assert mask_headers(headers) == dict.fromkeys(SECRET_NAMES[:8], "***") | {"Accept": "json"}


def test_the_environment_s_secret_variables_follow_the_rule_and_a_key_env_name() -> None:
    environ = {"LLM_PROXY": "sk-proxy-123456", "HF_TOKEN": "hf-123456789", "HOME": "/root", "SSH_AUTH_SOCK": "/s"}
    assert secret_variables(environ=environ) == {"HF_TOKEN": "hf-123456789"}
    assert secret_variables(["LLM_PROXY"], environ) == {"LLM_PROXY": "sk-proxy-123456", "HF_TOKEN": "hf-123456789"}
