"""Issue 31 item 1, in real kernels against a real loopback server: ``%pi resume`` after a restart puts the session's
model back (spec, base URL, context window, key variable; never the key) and says which model is active, so the next
prompt goes to that model and no faux reply lands in the real session's file. A file whose model cannot be rebuilt
refuses prompts until ``%pi model`` sets one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kernel_harness import Kernel

from pi_notebook.session import list_sessions, load_session, session_folder
from pi_notebook.testing import FaultServer, Reply

pytestmark = pytest.mark.timeout(180)

KEY = "sk-resume-model-canary-7f3a"


@pytest.fixture
def sessions_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PI_NOTEBOOK_SESSIONS__DIR", str(tmp_path))
    monkeypatch.setenv("RESUME_TEST_KEY", KEY)
    return session_folder(tmp_path)


def entries(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_resume_restores_the_sessions_model_and_the_next_prompt_goes_to_it(
    sessions_dir: Path, server: FaultServer
) -> None:
    spec = f"openai-compatible:{server.openai_base_url}:smollm2"
    server.script([Reply.text("the first real answer"), Reply.text("the second real answer")])
    first = Kernel()
    try:
        first.run("%load_ext pi_notebook")
        first.run(f"%pi model {spec} --context-window 2048 --key-env RESUME_TEST_KEY")
        assert "the first real answer" in first.run("run = %pi hello\nawait run").text
    finally:
        first.shutdown()
    [saved] = list_sessions(sessions_dir)

    second = Kernel()
    try:
        second.run("%load_ext pi_notebook")
        resumed = second.run("%pi resume").stdout
        active = f"pi: model {spec} --context-window 2048 --key-env RESUME_TEST_KEY ("
        assert active in resumed and "restored from the session" in resumed
        assert "context window 2048" in resumed and "key from RESUME_TEST_KEY" in resumed
        assert f"model: {spec} --context-window 2048" in second.run("%pi status").stdout
        assert "the second real answer" in second.run("run = %pi and again\nawait run").text
    finally:
        second.shutdown()
    assert len(server.requests) == 2 and server.requests[1].api_key == KEY
    assert "hello" in str(server.requests[1].json["messages"])  # the resumed transcript went with it
    loaded = load_session(saved.path)
    providers = {getattr(m, "provider", None) for m in loaded.messages} - {None}
    assert providers == {"openai-compatible"}  # no faux reply in the real session's file
    changes = [e for e in entries(saved.path) if e["type"] == "model_change"]
    assert changes == [
        {**changes[0], "provider": "openai-compatible", "modelId": "smollm2", "contextWindow": 2048}
    ]  # written once: the resumed kernel uses the same model
    assert changes[0]["baseUrl"] == server.openai_base_url and changes[0]["keyEnv"] == "RESUME_TEST_KEY"
    assert KEY not in saved.path.read_text()


def test_a_model_that_cannot_be_restored_refuses_prompts_until_one_is_set(
    sessions_dir: Path, server: FaultServer
) -> None:
    # A session file that names a local server's model without its base URL (Pi's own entries, or a file written
    # before model_change entries were): there is nothing to rebuild the model from.
    sessions_dir.mkdir(parents=True)
    path = sessions_dir / "2026-12-01T10-00-00-000Z_0123456789abcdef.jsonl"
    reply = {
        "role": "assistant",
        "content": [{"type": "text", "text": "an old answer"}],
        "api": "openai-completions",
        "provider": "openai-compatible",
        "model": "smollm2",
        "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2},
        "stopReason": "stop",
        "timestamp": 1,
    }
    lines = [
        {"type": "session", "version": 3, "id": "0123456789abcdef", "timestamp": "2026-12-01T10:00:00Z", "cwd": "/"},
        {"type": "message", "id": "a1", "parentId": None, "timestamp": "2026-12-01T10:00:01.000Z",
         "message": {"role": "user", "content": [{"type": "text", "text": "an old question"}], "timestamp": 1}},
        {"type": "message", "id": "a2", "parentId": "a1", "timestamp": "2026-12-01T10:00:02.000Z", "message": reply},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    before = path.read_text()
    server.script([Reply.text("an answer from the model set by hand")])
    kernel = Kernel()
    try:
        kernel.run("%load_ext pi_notebook")
        resumed = kernel.run("%pi resume").stdout
        assert "pi: the resumed session's model openai-compatible:smollm2 cannot be restored" in resumed
        assert "set it with %pi model SPEC" in resumed
        refused = kernel.run("%pi a new question").stdout
        assert refused.startswith("pi: the resumed session's model openai-compatible:smollm2 cannot be restored")
        assert "%pi continue" not in refused
        assert path.read_text() == before  # nothing written: no faux reply in the real session's file
        kernel.run(f"%pi model openai-compatible:{server.openai_base_url}:smollm2 --context-window 2048")
        answered = kernel.run("run = %pi a new question\nawait run").text
        assert "an answer from the model set by hand" in answered
    finally:
        kernel.shutdown()
    assert "an old question" in str(server.requests[0].json["messages"])
