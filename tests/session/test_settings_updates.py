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
    with pytest.raises(
        SettingsError, match=r"^unknown setting 'retry\.maxRetrys' \(did you mean 'retry\.max_retries'\?\)$"
    ):
        Settings().updated(retry={"maxRetrys": "2"})


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        (
            {"no": {"such": {"setting": "1"}}},
            f"unknown setting 'no.such.setting' (the settings are under {', '.join(Settings.model_fields)})",
        ),
        ({"budget": {"max_cost": "1"}}, "unknown setting 'budget.max_cost' (did you mean 'budget.max_cost_usd'?)"),
        (
            {"retry": "1"},
            "retry is a group of settings, not one: set one of retry.enabled, retry.max_retries, "
            "retry.base_delay_ms, retry.provider",
        ),
    ],
)
def test_a_change_that_names_no_setting_says_so_in_words(changes: dict[str, object], said: str) -> None:
    """Issue 37 item 14: ``%pi settings no.such.setting=1`` showed pydantic's "Extra inputs are not permitted"."""
    with pytest.raises(SettingsError) as info:
        Settings().updated(**changes)
    assert str(info.value) == said
