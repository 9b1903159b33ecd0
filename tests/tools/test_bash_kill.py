"""Nothing a command started survives abort or timeout (DESIGN §5; Pi #9460, #6787, kimchi#833): the process
group, a child that ignores SIGTERM, a grandchild that left the group with ``setsid``, an orphan of a double
fork, and an escapee with a scrubbed environment. Checked by PID with psutil."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import anyio
import pytest
from bash_helpers import DOUBLE_FORK, SCRUBBED, SETSID, TREE, TREE_NAMES, Watcher, is_gone, reaping, run, survivors

from pi_notebook.agent import Agent, AgentEvent, ToolExecutionUpdateEvent
from pi_notebook.ai import AbortController, AbortSignal
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
from pi_notebook.tools import BashError, bash_tool

pytestmark = pytest.mark.skipif(SETSID is None, reason="needs setsid(1)")


async def start(command: str, names: tuple[str, ...], **args: Any) -> tuple[asyncio.Task[Any], AbortController, Any]:
    controller = AbortController()
    watcher = Watcher()
    task = asyncio.create_task(run(bash_tool(), command, signal=controller.signal, on_update=watcher, **args))
    procs = await watcher.until_named(*names)
    return task, controller, procs


async def test_abort_kills_the_whole_tree_including_a_term_ignoring_child_and_a_setsid_grandchild() -> None:
    with reaping() as seen:
        task, controller, procs = await start(TREE, TREE_NAMES)
        seen.extend(procs.values())
        assert os.getsid(procs["grandchild"].pid) != os.getsid(procs["child"].pid)  # it really left the session
        controller.abort()
        with pytest.raises(BashError, match=r"Command aborted$"):
            await task
        assert await survivors(seen) == []


async def test_timeout_kills_the_whole_tree() -> None:
    with reaping() as seen:
        task, _, procs = await start(TREE, TREE_NAMES, timeout=1)
        seen.extend(procs.values())
        with pytest.raises(BashError, match=r"Command timed out after 1 seconds$"):
            await task
        assert await survivors(seen) == []


async def test_abort_kills_an_orphan_of_a_double_fork_found_by_its_environment_marker() -> None:
    with reaping() as seen:
        task, controller, procs = await start(DOUBLE_FORK, ("orphan", "shell"))
        seen.extend(procs.values())
        assert procs["orphan"].ppid() != procs["shell"].pid
        controller.abort()
        with pytest.raises(BashError, match=r"Command aborted$"):
            await task
        assert await survivors(seen) == []


async def test_abort_kills_an_escapee_with_a_scrubbed_environment_found_by_parentage() -> None:
    with reaping() as seen:
        task, controller, procs = await start(SCRUBBED, ("child", "scrubbed"))
        seen.extend(procs.values())
        assert "PI_NOTEBOOK_BASH_RUN" not in procs["scrubbed"].environ()
        controller.abort()
        with pytest.raises(BashError, match=r"Command aborted$"):
            await task
        assert await survivors(seen) == []


async def test_timeout_is_enforced_while_a_detached_descendant_keeps_writing_after_the_shell_exits() -> None:
    # Pi #6787 / kimchi#833: the writer left the group and writes every 20 ms, re-arming the quiet wait forever.
    command = f"{SETSID} sh -c 'echo writer $$; while :; do echo tick; sleep 0.02; done' &"
    with reaping() as seen, anyio.fail_after(5):
        controller = AbortController()
        watcher = Watcher()
        task = asyncio.create_task(run(bash_tool(), command, signal=controller.signal, on_update=watcher, timeout=1))
        seen.extend((await watcher.until_named("writer")).values())
        with pytest.raises(BashError, match=r"Command timed out after 1 seconds$"):
            await task
        assert await survivors(seen) == []


async def test_cancelling_the_calling_task_kills_the_tree_at_once() -> None:
    with reaping() as seen:
        task, _, procs = await start(TREE, TREE_NAMES)
        seen.extend(procs.values())
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await survivors(seen) == []


async def test_aborting_one_command_leaves_a_parallel_one_running() -> None:
    with reaping() as seen:
        task, controller, procs = await start(TREE, TREE_NAMES)
        other, other_controller, other_procs = await start(TREE, TREE_NAMES)
        seen.extend([*procs.values(), *other_procs.values()])
        controller.abort()
        with pytest.raises(BashError):
            await task
        assert await survivors(procs.values()) == []
        assert not any(is_gone(p) for p in other_procs.values())
        other_controller.abort()
        with pytest.raises(BashError):
            await other
        assert await survivors(seen) == []


async def test_an_agent_abort_kills_the_tree_and_the_tool_result_says_command_aborted() -> None:
    faux = FauxProvider()
    faux.set_responses(
        [
            faux_assistant_message([faux_tool_call("bash", {"command": TREE}, id="run-tree")], "toolUse"),
            faux_assistant_message("never reached"),
        ]
    )
    agent = Agent(stream_fn=faux.stream, model=faux.model, tools=[bash_tool()])
    watcher = Watcher()

    def listen(event: AgentEvent, _signal: AbortSignal) -> None:
        if isinstance(event, ToolExecutionUpdateEvent):
            watcher(event.partial_result)

    agent.subscribe(listen)
    with reaping() as seen:
        run_task = asyncio.create_task(agent.prompt("start the tree"))
        seen.extend((await watcher.until_named(*TREE_NAMES)).values())
        agent.abort()
        await run_task
        assert await survivors(seen) == []
    results = [m for m in agent.state.messages if m.role == "toolResult"]
    assert len(results) == 1
    assert results[0].is_error  # type: ignore[union-attr]
    assert results[0].content[0].text.endswith("Command aborted")  # type: ignore[union-attr]
