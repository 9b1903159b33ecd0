"""A run's checkpoint of variables (``_checkpoint_vars``, ``_in_place``): the objects names held before the agent's
code, by reference; changes inside objects read from the code (copied back where cheap, named otherwise) or seen from
a size that changed; and a rewind's plan giving them back (``pi_notebook.notebook._rewind_plan``)."""

from __future__ import annotations

import ast
from collections import deque
from typing import Any

import numpy
import pandas
import pytest

from pi_notebook.kernel._checkpoint import Checkpoint
from pi_notebook.kernel._checkpoint_files import CheckpointBudget
from pi_notebook.kernel._in_place import suspects
from pi_notebook.notebook._rewind_plan import RewindReceipt, plan


def run(checkpoint: Checkpoint, namespace: dict[str, Any], code: str) -> None:
    """``code`` run in ``namespace`` as the python tool runs it, watched by ``checkpoint``."""
    watch = checkpoint.variables.watch(namespace, code)
    try:
        exec(code, namespace)
    finally:
        watch.finish()


def rewound(checkpoint: Checkpoint, *, overwrite: bool = False) -> RewindReceipt:
    receipt = RewindReceipt([checkpoint.run])
    plan([checkpoint]).restore_variables(receipt, overwrite=overwrite)
    return receipt


def fresh(limit: int = 10_000_000) -> Checkpoint:
    return Checkpoint(1, None, CheckpointBudget(limit))


class Model:
    def __init__(self) -> None:
        self.size = 1


def test_rebound_created_and_deleted_names_get_their_very_objects_back() -> None:
    df, keep = object(), [1, 2]
    namespace: dict[str, Any] = {"df": df, "keep": keep, "other": 3}
    checkpoint = fresh()
    run(checkpoint, namespace, "df = 'new'\nmodel = object()\ndel keep")
    run(checkpoint, namespace, "df = 'newer'")  # the first "before" of the run is kept
    receipt = rewound(checkpoint)
    assert namespace["df"] is df and namespace["keep"] is keep and "model" not in namespace
    assert namespace["other"] == 3
    assert receipt.restored == {
        "variables given their objects back": ["`df`", "`keep`"],
        "variables removed (the run made them)": ["`model`"],
    }


def test_ipython_history_names_are_not_the_users_variables() -> None:
    namespace: dict[str, Any] = {"_": 1, "_i3": "x", "Out": {}}
    checkpoint = fresh()
    run(checkpoint, namespace, "_ = 2\n_i4 = 'y'\n_5 = 3\nOut = {}")
    assert checkpoint.variables.bindings == {}


@pytest.mark.parametrize(
    ("code", "start"),
    [
        ("lst.append(4)", [1, 2, 3]),
        ("lst += [4, 5]", [1, 2, 3]),
        ("lst[0] = 'x'\ndel lst[1]", [1, 2, 3]),
        ("lst.sort(reverse=True)", [1, 3, 2]),
        ("d['new'] = 1\nd.pop('a')", {"a": 1}),
        ("d.update(b=2)", {"a": 1}),
        ("s.add(9)\ns.discard(1)", {1, 2}),
        ("q.appendleft(0)", deque([1])),
        ("import random\nrandom.shuffle(lst)", list(range(50))),
    ],
)
def test_a_change_inside_a_builtin_container_is_put_back_into_the_same_object(code: str, start: Any) -> None:
    value = start.copy() if not isinstance(start, deque) else deque(start)
    names: dict[type, str] = {list: "lst", dict: "d", set: "s", deque: "q"}
    name = names[type(value)]
    namespace = {name: value}
    checkpoint = fresh()
    run(checkpoint, namespace, code)
    assert value != start or code.startswith("import random")  # it did change in place
    receipt = rewound(checkpoint)
    assert namespace[name] is value and value == start
    assert receipt.restored["objects put back as they were (changed in place)"] == [f"`{name}`"]


def test_an_attribute_set_on_an_object_is_put_back_and_a_new_one_removed() -> None:
    model = Model()
    namespace: dict[str, Any] = {"model": model}
    checkpoint = fresh()
    run(checkpoint, namespace, "model.size = 5")
    run(checkpoint, namespace, "model.fitted = True")
    rewound(checkpoint)
    assert vars(model) == {"size": 1}


def test_a_numpy_array_changed_in_place_gets_its_data_back() -> None:
    array = numpy.arange(6.0)
    namespace: dict[str, Any] = {"arr": array}
    checkpoint = fresh()
    run(checkpoint, namespace, "arr[2:4] = -1\narr *= 2")
    rewound(checkpoint)
    assert namespace["arr"] is array and array.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_a_pandas_frame_changed_in_place_over_several_calls_is_the_same_frame_with_its_data_back() -> None:
    original = pandas.DataFrame({"a": [1, 2, 3], "b": [4.0, 5.0, None]})
    df = original.copy()
    namespace: dict[str, Any] = {"df": df}
    checkpoint = fresh()
    for code in ("df['c'] = df.a * 2", "df.loc[0, 'a'] = 99", "del df['b']"):
        run(checkpoint, namespace, code)
    assert list(df.columns) == ["a", "c"]
    receipt = rewound(checkpoint)
    assert namespace["df"] is df and df.equals(original)
    assert receipt.restored == {"objects put back as they were (changed in place)": ["`df`"]}
    assert receipt.not_restored == []  # its size changed, but it was named and put back: nothing else to say


def test_what_cannot_be_put_back_is_named_with_why() -> None:
    nested, big = [[1], [2]], list(range(100_000))
    namespace: dict[str, Any] = {"nested": nested, "big": big, "frozen": frozenset()}
    checkpoint = fresh(limit=1000)
    run(checkpoint, namespace, "nested[0].append(9)\nbig.append(1)")
    receipt = rewound(checkpoint)
    assert nested == [[1, 9], [2]] and len(big) == 100_001  # left as the code made them, and said so
    assert receipt.not_restored == [
        "`big` changed in place (big.append(...)): too large to keep a copy of (0.8 MB, checkpoints.max_run_bytes)",
        "`nested` changed in place (nested[0].append(...)): the change is inside an object it holds",
    ]


def test_a_size_change_through_another_name_is_named_not_hidden() -> None:
    data = [1, 2]
    namespace: dict[str, Any] = {"data": data}
    checkpoint = fresh()
    run(checkpoint, namespace, "alias = data\nalias.append(3)")
    receipt = rewound(checkpoint)
    assert "alias" not in namespace and data == [1, 2, 3]
    assert receipt.not_restored == ["`data` changed in place (2 → 3) by code that did not name it"]


def test_a_second_name_of_an_object_put_back_in_place_is_not_named_as_not_restored() -> None:
    prices = [1, 2]
    namespace: dict[str, Any] = {"prices": prices, "prices_before": prices}  # two names, one list
    checkpoint = fresh()
    run(checkpoint, namespace, "prices.append(3)")
    receipt = rewound(checkpoint)
    assert namespace["prices_before"] is prices and prices == [1, 2]  # put back through either name
    assert receipt.restored == {"objects put back as they were (changed in place)": ["`prices`"]}
    assert receipt.not_restored == []


def test_an_object_the_code_named_but_did_not_change_holds_no_copy() -> None:
    lst = [1, 2]
    namespace: dict[str, Any] = {"lst": lst}
    checkpoint = fresh()
    run(checkpoint, namespace, "if False:\n    lst.append(3)")
    assert checkpoint.variables.in_place == [] and checkpoint.budget.used == 0


def test_a_name_the_user_rebound_since_the_run_is_kept_unless_they_overwrite() -> None:
    df = object()
    namespace: dict[str, Any] = {"df": df}
    checkpoint = fresh()
    run(checkpoint, namespace, "df = 'agent'")
    namespace["df"] = "mine"
    conflicts = plan([checkpoint]).conflicts(None)
    assert [c.line() for c in conflicts] == ["variable `df`: rebound since the run"]
    receipt = rewound(checkpoint)
    assert namespace["df"] == "mine" and receipt.kept == ["variable `df`"]
    rewound(checkpoint, overwrite=True)
    assert namespace["df"] is df


def test_code_interrupted_midway_still_records_what_it_bound_first() -> None:
    namespace: dict[str, Any] = {"x": 1}
    checkpoint = fresh()
    with pytest.raises(KeyboardInterrupt):
        run(checkpoint, namespace, "x = 2\ny = 3\nraise KeyboardInterrupt")
    rewound(checkpoint)
    assert namespace == {"x": 1, "__builtins__": namespace["__builtins__"]}


def test_the_code_is_read_for_changes_at_each_depth() -> None:
    tree = ast.parse(
        "df['c'] = 0\ndf.loc[0, 'a'] = 1\nx.a.b = 2\nobj.size = 3\nlst += [1]\nm.drop(columns=['a'], inplace=True)\n"
        "del d[k]\nheapq.heappush(h, 1)\nnot_a_change = y.copy()"
    )
    found = {name: (s.depth, s.attribute) for name, s in suspects(tree).items()}
    assert found == {
        "df": (1, None),
        "x": (2, None),
        "obj": (1, "size"),
        "lst": (1, None),
        "m": (1, None),
        "d": (1, None),
        "h": (1, None),
    }
