"""``Settings.updated`` takes Pi's camelCase keys as the docs say, and an error names the field that was given."""

from __future__ import annotations

import pytest

from pi_notebook.session import Settings, SettingsError


def test_camel_case_keys_update_their_fields_at_every_level() -> None:
    settings = Settings().updated(retry={"maxRetries": "2", "provider": {"maxRetryDelayMs": 5}})
    assert settings.retry.max_retries == 2
    assert settings.retry.provider.max_retry_delay_ms == 5
    assert Settings().updated(timeouts={"abortGraceMs": 7}).timeouts.abort_grace_ms == 7


def test_a_bad_camel_case_value_names_its_field_not_a_neighbour() -> None:
    with pytest.raises(SettingsError) as info:
        Settings().updated(retry={"maxRetries": "x"})
    assert str(info.value) == (
        "invalid settings: settings.retry.max_retries: Input should be a valid integer, "
        "unable to parse string as an integer (got 'x')"
    )


def test_an_unknown_key_is_still_refused_by_its_own_name() -> None:
    with pytest.raises(SettingsError, match=r"settings\.retry\.maxRetrys: Extra inputs are not permitted"):
        Settings().updated(retry={"maxRetrys": "2"})
