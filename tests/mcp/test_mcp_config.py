"""MCP server configuration (``mcp/_server_config.py``): the ``mcpServers`` shape other clients write, ``${VAR}`` read
from the kernel's environment, the agent's tool names, what a description shows (never a secret); and the site
policy's ``[mcp]`` section (allow by command line or URL, tools off or asking by pattern)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_notebook.mcp import McpConfigError, ServerConfig, agent_tool_name, read_config_file, servers_from_json
from pi_notebook.mcp._server_config import config_path, server_configs
from pi_notebook.session import Policy, PolicyError

CLAUDE_DESKTOP = {
    "mcpServers": {
        "time": {"command": "uvx", "args": ["mcp-server-time", "--local-timezone", "UTC"]},
        "git": {"command": "mcp-server-git", "args": ["--repository", "."], "env": {"GIT_TOKEN": "${GIT_TOKEN}"}},
        "docs": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${KEY}"}},
        "off": {"command": "never-started", "disabled": True},
        "cursor-style": {"command": "npx", "args": ["-y", "server"], "autoApprove": ["x"], "timeout": 5000},
    }
}


def test_the_mcp_servers_shape_of_claude_desktop_cursor_and_claude_code_is_read() -> None:
    servers = {server.name: server for server in servers_from_json(CLAUDE_DESKTOP)}
    assert list(servers) == ["time", "git", "docs", "cursor-style"]  # disabled: left out
    assert servers["time"].command == "uvx" and servers["time"].args == ("mcp-server-time", "--local-timezone", "UTC")
    assert servers["git"].env == {"GIT_TOKEN": "${GIT_TOKEN}"}
    assert servers["docs"].transport == "http" and servers["docs"].headers == {"Authorization": "Bearer ${KEY}"}
    assert servers["cursor-style"].timeout_ms == 5000  # other clients' keys (autoApprove) are ignored


def test_vs_codes_servers_key_and_the_inner_mapping_alone_are_read_too() -> None:
    vscode = {"servers": {"fs": {"type": "stdio", "command": "fs-server"}}}
    assert [s.name for s in servers_from_json(vscode)] == ["fs"]
    assert [s.name for s in servers_from_json({"fs": {"command": "fs-server"}})] == ["fs"]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"type": "sse", "url": "http://x"}, "the SSE transport is not supported"),
        ({"type": "websocket", "url": "http://x"}, "unknown type 'websocket'"),
        ({"command": "x", "args": "not a list"}, "args must be a list of strings"),
        ({"command": "x", "env": {"A": 1}}, "env must map names to strings"),
        ({"command": "x", "timeout": -5}, "timeout must be a positive number"),
        ({"url": "ftp://x"}, "the url must start with http:// or https://"),
        ({"command": ""}, "command must be a non-empty string"),
    ],
)
def test_a_wrong_entry_is_one_line_naming_the_server(entry: dict[str, object], message: str) -> None:
    with pytest.raises(McpConfigError, match="server 'bad'") as info:
        servers_from_json({"mcpServers": {"bad": entry}}, source="mcp.json")
    assert message in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("name", ["", "a__b", "-x", "has space", "dots.in.it", "x" * 33, "é"])
def test_a_server_name_is_letters_and_digits_with_single_separators(name: str) -> None:
    with pytest.raises(McpConfigError, match="bad MCP server name"):
        ServerConfig(name, command="x")


def test_variables_are_read_from_the_environment_when_resolved_and_an_unset_one_is_named() -> None:
    config = ServerConfig(
        "s", command="${BIN:-server}", args=("--token", "${env:TOKEN}"), env={"A": "${A}-x"}, headers={}, cwd="${HOME}"
    )
    resolved = config.resolved({"TOKEN": "t0k", "A": "a", "HOME": "/home/me"})
    assert (resolved.command, resolved.args, resolved.env, resolved.cwd) == (
        "server",
        ("--token", "t0k"),
        {"A": "a-x"},
        "/home/me",
    )
    with pytest.raises(McpConfigError, match=r"the environment variable TOKEN is not set \(named as \$\{TOKEN\}\)"):
        config.resolved({"A": "a", "HOME": "/h"})


def test_the_secrets_are_credential_headers_and_env_values_under_secret_names() -> None:
    config = ServerConfig("s", url="https://x", headers={"Authorization": "Bearer abcdefghij", "X-Trace": "on"})
    assert config.secrets() == ["Bearer abcdefghij", "abcdefghij"]
    stdio = ServerConfig("s", command="x", env={"GITHUB_TOKEN": "ghp_123456789", "TZ": "Europe/Berlin"})
    assert stdio.secrets() == ["ghp_123456789"]


def test_a_description_shows_what_runs_and_the_names_it_is_given_never_their_values() -> None:
    config = ServerConfig("s", command="srv", args=("a b", "c"), env={"API_KEY": "secret-value-1"}, timeout_ms=5)
    assert config.describe() == "srv 'a b' c; env API_KEY; timeout 5 ms"
    remote = ServerConfig("r", url="https://x/mcp", headers={"Authorization": "Bearer sk-123456789"})
    assert remote.describe() == "https://x/mcp; headers Authorization"


def test_agent_tool_names_carry_the_server_and_stay_within_64_safe_characters() -> None:
    assert agent_tool_name("git", "git_status") == "mcp__git__git_status"
    assert agent_tool_name("my-server", "get.thing/now") == "mcp__my-server__get_thing_now"
    long = agent_tool_name("server", "x" * 100)
    assert len(long) == 64 and long.startswith("mcp__server__xxx") and long != agent_tool_name("server", "x" * 99)


def test_the_config_file_is_the_users_unless_the_variable_names_another_or_none(tmp_path: Path) -> None:
    assert config_path({}) == Path("~/.pi_notebook/mcp.json").expanduser()
    assert config_path({"PI_NOTEBOOK_MCP_CONFIG": str(tmp_path / "m.json")}) == tmp_path / "m.json"
    assert config_path({"PI_NOTEBOOK_MCP_CONFIG": "none"}) is None
    assert read_config_file(tmp_path / "missing.json") == []
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(McpConfigError, match=r"cannot read the MCP servers file .*broken.json"):
        read_config_file(broken)
    good = tmp_path / "good.json"
    good.write_text(json.dumps(CLAUDE_DESKTOP))
    assert [s.name for s in read_config_file(good)] == ["time", "git", "docs", "cursor-style"]


def test_configure_takes_the_shape_or_configs_and_refuses_a_name_twice() -> None:
    assert [s.name for s in server_configs({"a": {"command": "x"}})] == ["a"]
    with pytest.raises(McpConfigError, match="named twice"):
        server_configs([ServerConfig("a", command="x"), ServerConfig("a", command="y")])
    with pytest.raises(McpConfigError, match="mcp_servers takes"):
        server_configs("a")


POLICY = """
[mcp]
allow = ["mcp-server-time", "uvx mcp-server-git *", "https://mcp.internal.example/"]
disabled = ["mcp__*__git_push"]
ask = ["mcp__time__*"]
"""


def test_the_policy_allows_servers_by_command_line_or_url_and_nothing_else(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY)
    policy = Policy.read([path])
    policy.check_mcp_server("t", "mcp-server-time", url=False)
    policy.check_mcp_server("g", "uvx mcp-server-git --repository /repo", url=False)
    policy.check_mcp_server("d", "https://mcp.internal.example/mcp", url=True)
    refused = [
        ("mcp-server-time --evil", False),
        ("bash -c 'mcp-server-time'", False),
        ("https://mcp.internal.example.evil.com/mcp", True),
        ("http://mcp.internal.example/mcp", True),
    ]
    for target, url in refused:
        with pytest.raises(PolicyError, match="is not allowed by policy"):
            policy.check_mcp_server("x", target, url=url)


def test_the_policy_switches_mcp_tools_off_and_makes_them_ask_by_pattern(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY)
    policy = Policy.read([path])
    assert policy.is_disabled("mcp__git__git_push") and not policy.is_disabled("mcp__git__git_status")
    assert policy.must_ask("mcp__time__get_current_time") and not policy.must_ask("mcp__git__git_status")
    with pytest.raises(PolicyError, match="mcp__git__git_push is switched off by policy"):
        policy.check_tools(["mcp__git__git_push"])


def test_an_empty_allow_list_allows_no_server_and_two_files_must_both_allow(tmp_path: Path) -> None:
    none = tmp_path / "none.toml"
    none.write_text("[mcp]\nallow = []\n")
    with pytest.raises(PolicyError):
        Policy.read([none]).check_mcp_server("t", "mcp-server-time", url=False)
    one, two = tmp_path / "one.toml", tmp_path / "two.toml"
    one.write_text('[mcp]\nallow = ["a", "b"]\n')
    two.write_text('[mcp]\nallow = ["b"]\n')
    both = Policy.read([one, two])
    both.check_mcp_server("b", "b", url=False)
    with pytest.raises(PolicyError):
        both.check_mcp_server("a", "a", url=False)


def test_an_unknown_key_in_the_mcp_section_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text('[mcp]\nallowed = ["x"]\n')
    with pytest.raises(PolicyError, match=r"unknown key 'allowed' in \[mcp\]"):
        Policy.read([path])
