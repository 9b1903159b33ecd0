"""Settings: Pi's defaults, TOML and environment loading, errors that name the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_notebook.session import Settings, SettingsError


def test_defaults_are_pis() -> None:
    settings = Settings()
    assert (settings.retry.enabled, settings.retry.max_retries, settings.retry.base_delay_ms) == (True, 3, 2000)
    assert settings.retry.provider.max_retries == 0
    assert settings.retry.provider.max_retry_delay_ms == 60_000
    assert settings.timeouts.http_idle_ms == 300_000
    compaction = settings.compaction
    assert (compaction.enabled, compaction.reserve_tokens, compaction.keep_recent_tokens) == (True, 16_384, 20_000)
    assert settings.steering_mode == settings.follow_up_mode == "one-at-a-time"
    assert settings.budget.max_cost_usd is None


def test_loads_a_toml_file_with_the_environment_on_top(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text("[retry]\nmax_retries = 5\nbaseDelayMs = 100\n\n[budget]\nmax_cost_usd = 0.5\n")
    settings = Settings.load(path, environ={"PI_NOTEBOOK_RETRY__MAX_RETRIES": "7", "UNRELATED": "x"})
    assert settings.retry.max_retries == 7
    assert settings.retry.base_delay_ms == 100
    assert settings.budget.max_cost_usd == 0.5


def test_environment_values_reach_nested_sections() -> None:
    settings = Settings.load(
        environ={"PI_NOTEBOOK_RETRY__PROVIDER__MAX_RETRIES": "2", "PI_NOTEBOOK_RETRY__ENABLED": "false"}
    )
    assert settings.retry.provider.max_retries == 2
    assert settings.retry.enabled is False


def test_a_bad_value_names_the_field() -> None:
    with pytest.raises(SettingsError) as info:
        Settings(retry={"max_retries": -1})
    assert "settings.retry.max_retries" in str(info.value)
    assert "-1" in str(info.value)


def test_an_unknown_field_is_rejected_by_name() -> None:
    with pytest.raises(SettingsError, match=r"unknown setting 'retry\.max_retrys' \(did you mean 'retry\.max_retries'"):
        Settings(retry={"max_retrys": 3})


def test_a_bad_environment_value_names_the_field() -> None:
    with pytest.raises(SettingsError, match=r"settings\.budget\.max_turns"):
        Settings.load(environ={"PI_NOTEBOOK_BUDGET__MAX_TURNS": "many"})


def test_unreadable_or_invalid_toml_is_a_settings_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.toml"
    broken.write_text("[retry\n")
    with pytest.raises(SettingsError, match="not valid TOML"):
        Settings.load(broken)
    with pytest.raises(SettingsError, match="cannot read"):
        Settings.load(tmp_path / "missing.toml")


def test_updated_deep_merges_and_validates() -> None:
    settings = Settings(retry={"max_retries": 5}).updated(retry={"enabled": False})
    assert (settings.retry.enabled, settings.retry.max_retries) == (False, 5)
    with pytest.raises(SettingsError):
        settings.updated(timeouts={"tool_ms": 0})


def test_a_session_takes_settings_as_a_dict_and_names_a_bad_field() -> None:
    from pi_notebook.ai.providers.faux import FauxProvider
    from pi_notebook.session import AgentSession

    model = FauxProvider().model
    session = AgentSession(model=model, settings={"retry": {"max_retries": 7}})
    assert session.settings.retry.max_retries == 7
    assert session.settings.retry.base_delay_ms == 2000  # the rest keeps Pi's defaults
    with pytest.raises(SettingsError, match=r"retry\.max_retries"):
        AgentSession(model=model, settings={"retry": {"max_retries": -1}})
    with pytest.raises(TypeError, match="settings must be Settings or a dict, not str"):
        AgentSession(model=model, settings="retry.max_retries=7")  # type: ignore[arg-type]
