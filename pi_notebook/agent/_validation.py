"""Validate a tool call's arguments against the tool's JSON schema or pydantic model (Pi's rules).

Before a JSON schema check, primitive values are coerced the way Pi does for models that send ``"5"`` for a
number or ``"true"`` for a boolean. The arguments are copied first, so the transcript keeps what the model
sent. Failures raise ``ValueError`` with Pi's message shape; the loop turns it into an error tool result.

jsonschema is imported on the first JSON-schema check, not with this module (``%load_ext pi_notebook`` does
not need it), and without ``rfc3987_syntax``: jsonschema imports every optional format library it finds, and
that one builds a Lark grammar at import (seconds of CPU, 14 s on a loaded machine) for the ``iri`` formats,
which we never check (our validators have no format checker). If jsonschema is first imported here, a
``FormatChecker`` in the same process does not check ``iri``/``iri-reference`` unless ``rfc3987`` or
``rfc3987_syntax`` was imported before.
"""

from __future__ import annotations

import copy
import importlib
import json
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

__all__ = ["validate_arguments"]

_validators: dict[int, tuple[Mapping[str, Any], Validator]] = {}
_MAX_VALIDATORS = 256  # schemas built per call (a new bash_tool() each time) must not pile up for a kernel's life


def validate_arguments(
    parameters: Mapping[str, Any] | type[BaseModel], name: str, raw: dict[str, Any], unparsed: str | None = None
) -> Any:
    """The validated arguments, or ``ValueError`` with Pi's message. ``unparsed`` is the text the model sent when
    it was not valid JSON (``raw`` is then what could be salvaged from it); the message quotes it as well."""
    if isinstance(parameters, type) and issubclass(parameters, BaseModel):
        try:
            return parameters.model_validate(raw)
        except ValidationError as exc:
            lines = [f"  - {'.'.join(map(str, e['loc'])) or 'root'}: {e['msg']}" for e in exc.errors()]
            raise ValueError(_message(name, lines, raw, unparsed)) from None
    args = _coerce(_copy(raw), parameters)
    validator = _validator(parameters)
    errors = sorted(validator.iter_errors(args), key=lambda e: list(e.absolute_path))
    if not errors:
        return args
    lines = [f"  - {'.'.join(map(str, e.absolute_path)) or 'root'}: {e.message}" for e in errors]
    raise ValueError(_message(name, lines, raw, unparsed))


_SCALARS = frozenset((str, int, float, bool, type(None)))


def _copy(value: Any) -> Any:
    """A deep copy of JSON data (what a model's arguments are) in one cheap pass; anything else (a
    ``prepare_arguments`` may return other objects) goes through ``copy.deepcopy``."""
    kind = type(value)
    if kind is dict:
        return {key: _copy(item) for key, item in value.items()}
    if kind is list:
        return [_copy(item) for item in value]
    if kind in _SCALARS:
        return value
    return copy.deepcopy(value)


_UNPARSED_SHOWN = 2000


def _message(name: str, lines: list[str], raw: Any, unparsed: str | None) -> str:
    errors = "\n".join(lines) or "Unknown validation error"
    received = json.dumps(raw, indent=2, default=str)
    text = f'Validation failed for tool "{name}":\n{errors}\n\nReceived arguments:\n{received}'
    if unparsed is not None:
        shown = unparsed if len(unparsed) <= _UNPARSED_SHOWN else unparsed[:_UNPARSED_SHOWN] + "…"
        text += f"\n\nThe arguments sent were not valid JSON:\n{shown}"
    return text


def _validator(schema: Mapping[str, Any]) -> Validator:
    """The validator of a schema, built once per schema object (kept while the schema is)."""
    cached = _validators.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    _load_jsonschema()
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    validator: Validator = cls(schema)
    if len(_validators) >= _MAX_VALIDATORS:
        _validators.clear()
    _validators[id(schema)] = (schema, validator)  # keeps the schema alive, so the id stays unique
    return validator


def _load_jsonschema() -> None:
    """Import jsonschema, without ``rfc3987_syntax`` if neither is loaded yet (see the module docstring)."""
    if "jsonschema" not in sys.modules and "rfc3987_syntax" not in sys.modules:
        sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]  # import raises ImportError: skipped
        try:
            importlib.import_module("jsonschema")
        finally:
            if sys.modules.get("rfc3987_syntax", 0) is None:
                del sys.modules["rfc3987_syntax"]  # a later ``import rfc3987_syntax`` works as usual


def _types(schema: Mapping[str, Any]) -> list[str]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list):
        return [k for k in kind if isinstance(k, str)]
    return []


_JSON_TYPES: dict[str, Any] = {
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "null": lambda v: v is None,
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def _coerce(value: Any, schema: Mapping[str, Any]) -> Any:
    for nested in schema.get("allOf", ()):
        value = _coerce(value, nested)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            value = _coerce_union(value, schema[key])
    kinds = _types(schema)
    if kinds and not (len(kinds) > 1 and any(_JSON_TYPES.get(k, lambda v: False)(value) for k in kinds)):
        for kind in kinds:
            candidate = _coerce_primitive(value, kind)
            if candidate is not value:
                value = candidate
                break
    if "object" in kinds and isinstance(value, dict):
        properties = schema.get("properties") or {}
        for key, sub in properties.items():
            if key in value:
                value[key] = _coerce(value[key], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key in value:
                if key not in properties:
                    value[key] = _coerce(value[key], extra)
    if "array" in kinds and isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, list):
            for i, sub in enumerate(items[: len(value)]):
                value[i] = _coerce(value[i], sub)
        elif isinstance(items, dict):
            for i in range(len(value)):
                value[i] = _coerce(value[i], items)
    return value


def _coerce_union(value: Any, schemas: list[Mapping[str, Any]]) -> Any:
    _load_jsonschema()
    from jsonschema.exceptions import SchemaError

    for sub in schemas:
        candidate = _coerce(_copy(value), sub)
        try:
            if _validator(sub).is_valid(candidate):
                return candidate
        except SchemaError:
            continue
    return value


def _coerce_primitive(value: Any, kind: str) -> Any:
    if kind in ("number", "integer"):
        if value is None:
            return 0
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, str) and value.strip():
            try:
                number = float(value)
            except ValueError:
                return value
            if kind == "integer":
                return int(number) if number.is_integer() else value
            return int(number) if number.is_integer() and "." not in value and "e" not in value.lower() else number
        return value
    if kind == "boolean":
        if value is None:
            return False
        if value in ("true", "false"):
            return value == "true"
        if isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
            return value == 1
        return value
    if kind == "string":
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int | float):
            return str(value)
        return value
    if kind == "null" and (value == "" or value == 0 or value is False):
        return None
    return value
