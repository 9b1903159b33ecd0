"""What ``%pi fork`` is given (``notebook/_fork.find_prompt``): a prompt's number, ``#N``, an entry id or the start of
one — including an id that starts with digits, which a bare number also looks like (ids are hex)."""

from __future__ import annotations

import secrets

import pytest

from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message
from pi_notebook.notebook._fork import find_prompt
from pi_notebook.session import AgentSession, Settings, TreeError


@pytest.fixture
async def agent(monkeypatch: pytest.MonkeyPatch) -> AgentSession:
    """Two prompts and their replies, with ids given in order (the model change, then the messages): the second
    prompt's id is all digits and the second reply's id reads as a number (1)."""
    ids = iter(["c0c0c0c0", "a1b2c3d4", "e5e5e5e5", "75659012", "00000001"])
    monkeypatch.setattr(secrets, "token_hex", lambda _n: next(ids))  # what EntryIndex.new_id draws from
    faux = FauxProvider(token_size=(1, 1))
    faux.set_responses([faux_assistant_message(text) for text in ("one", "two")])
    session = AgentSession(model=faux.model, stream_fn=faux.stream, settings=Settings(compaction={"enabled": False}))
    await session.prompt("first")
    await session.prompt("second")
    prompts = {node.entry.text: node.entry.id for _, node in session.tree().walk() if node.entry.is_user}
    assert prompts == {"first": "a1b2c3d4", "second": "75659012"}  # the ids this test is about
    return session


@pytest.mark.parametrize("given", ["2", "#2", "75659", "75659012", " 7565 "])
async def test_a_number_an_id_or_the_digits_an_id_starts_with_each_find_the_prompt(
    agent: AgentSession, given: str
) -> None:
    assert find_prompt(agent, given).text == "second"


async def test_a_number_the_session_has_is_the_prompt_of_that_number_before_an_id(agent: AgentSession) -> None:
    assert find_prompt(agent, "1").text == "first"
    assert find_prompt(agent, "7").text == "second"  # no prompt #7: the start of the second prompt's id


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("#7", "no prompt #7 in this session (%pi tree lists them)"),
        ("#0", "no prompt #0 in this session (%pi tree lists them)"),  # (entries that are not prompts have no number)
        ("#75659", "no prompt #75659 in this session (%pi tree lists them)"),
        ("9", "no prompt #9 and no entry id starting with '9' in this session (%pi tree lists the prompts)"),
        ("zz", "no entry 'zz' in this session (%pi tree lists the prompts)"),
        ("3", "no prompt #3 and no entry id starting with '3' in this session (%pi tree lists the prompts)"),
        ("e5", "entry e5e5e5e5 is a reply, not a prompt: %pi fork continues from before a prompt (%pi tree)"),
        ("", "fork needs the number or id of a prompt (%pi tree lists them)"),
        ("²", "no entry '²' in this session (%pi tree lists the prompts)"),  # a digit to isdigit(), not to int()
        ("#٣", "no entry '#٣' in this session (%pi tree lists the prompts)"),
        ("9" * 5000, f"no entry '{'9' * 40}…' in this session (%pi tree lists the prompts)"),  # past int()'s limit
    ],
)
async def test_what_names_no_prompt_is_said_in_one_line(agent: AgentSession, given: str, said: str) -> None:
    with pytest.raises(TreeError) as raised:
        find_prompt(agent, given)
    assert str(raised.value) == said


async def test_a_whole_id_is_that_entry_even_when_it_reads_as_a_prompt_number(agent: AgentSession) -> None:
    assert find_prompt(agent, "1").text == "first"  # the number
    with pytest.raises(TreeError, match="entry 00000001 is a reply, not a prompt"):  # the id (a widget sends ids)
        find_prompt(agent, "00000001")
