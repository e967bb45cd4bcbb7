"""corral's values as JSON and back, directed by their declared types.

The store's operations travel over HTTP (store/remote/): their arguments and results are
corral's own records (frozen dataclasses, NamedTuples, enums, instants). Both ends encode
and decode by the type the operation declares, never by a type name the other end sends,
so a request can build only what the operation takes, each record through its own
constructor (whose `__post_init__` validates it as it does locally). A value of the wrong
shape is `InvalidInput` naming its path (`reports[0].token`), as any bad input is.

    records      {"field": value, ...}; unknown or missing fields refused
    a union of several records   the same, with "type": the record's class name
    datetime     ISO 8601 with its offset; a naive instant is refused
    enums        their value
    tuple/list/Sequence/frozenset   arrays; dict/Mapping: objects with text keys
    CorralError  {"error": class name, "message": line, "field": ...}
    Any          the JSON value as it is

Converters are built once per type and cached: a cycle's records are small, and building
them by introspection each time would cost more than the HTTP round trip.
"""

from __future__ import annotations

import ast
import collections.abc as cabc
import dataclasses
import datetime as dt
import enum
import functools
import importlib
import inspect
import re
import sys
import textwrap
import types
import typing
from collections.abc import Callable
from typing import Any

from corral.foundation import errors
from corral.foundation.durations import check_instant
from corral.foundation.errors import CorralError, InvalidInput

# Where a value sits in a document, for errors: text, or (its parent's path, its key or
# index), spelled out (`_text`) only when an error names it: a record's every field would
# otherwise build a string that nothing reads.
Path = str | tuple[Any, str | int]
Convert = Callable[[Any, Path], Any]  # (value, its path for errors) -> the converted value
TYPE_TAG = "type"
_ARRAYS = (list, tuple, cabc.Sequence, frozenset, set)
_MAPS = (dict, cabc.Mapping)


def encode(value: Any, tp: Any) -> Any:
    """`value`, declared as `tp`, as a JSON value."""
    return _encoder(tp)(value, "")


def decode(data: Any, tp: Any, path: str) -> Any:
    """The `tp` that JSON value `data` stands for; InvalidInput naming `path` if none."""
    return _decoder(tp)(data, path)


# A module's `if TYPE_CHECKING:` block (corral writes them at the top level): its lines.
_TYPE_CHECKING_BLOCK = re.compile(r"^if (?:typing\.)?TYPE_CHECKING:.*\n((?:[ \t]+.*\n|\n)+)", re.M)


class _Scope(cabc.Mapping[str, Any]):
    """The names a module's annotations use: its globals, then what it imports only for type
    checking (which corral keeps out of run-time imports to start commands fast), each
    imported when an annotation first names it. A remote command resolves the types of
    one or two operations: importing every module the store's annotations name cost it
    about 20 ms."""

    def __init__(self, module_name: str) -> None:
        self._globals = vars(sys.modules[module_name])
        self._deferred = _deferred_imports(module_name)

    def __getitem__(self, name: str) -> Any:
        if name in self._globals:
            return self._globals[name]
        if name in self._deferred:
            module, attribute = self._deferred[name]
            return getattr(importlib.import_module(module), attribute)
        if name == "datetime":
            return dt.datetime
        raise KeyError(name)

    def __iter__(self) -> cabc.Iterator[str]:
        return iter({**self._deferred, **self._globals})

    def __len__(self) -> int:
        return len({**self._deferred, **self._globals})


def _deferred_imports(module_name: str) -> dict[str, tuple[str, str]]:
    """name -> (module, attribute) of each `from M import A [as name]` in the module's
    `if TYPE_CHECKING:` blocks, read from its source (those blocks alone are parsed)."""
    found: dict[str, tuple[str, str]] = {}
    source = inspect.getsource(sys.modules[module_name])
    for block in _TYPE_CHECKING_BLOCK.finditer(source):
        for statement in ast.parse(textwrap.dedent(block.group(1))).body:
            if isinstance(statement, ast.ImportFrom) and statement.module:
                for alias in statement.names:
                    found[alias.asname or alias.name] = (statement.module, alias.name)
    return found


@functools.cache
def _scope(module_name: str) -> _Scope:
    return _Scope(module_name)


def hints(obj: Any) -> dict[str, Any]:
    """The resolved annotations of a function or record."""
    module = sys.modules[obj.__module__]
    return typing.get_type_hints(obj, globalns=vars(module), localns=_scope(obj.__module__))


def _records(tp: Any) -> bool:
    return isinstance(tp, type) and (dataclasses.is_dataclass(tp) or _is_namedtuple(tp))


def _is_namedtuple(tp: type) -> bool:
    return issubclass(tp, tuple) and hasattr(tp, "_fields")


_NAMED = {
    int: "a whole number",
    float: "a number",
    str: "text",
    bool: "true or false",
    dt.datetime: "an ISO 8601 instant with its offset",
}


def _expected(tp: Any) -> str:
    """How an error names what `tp` takes."""
    if tp in _NAMED:
        return _NAMED[tp]
    if _is(tp, enum.Enum):
        return "one of " + ", ".join(str(m.value) for m in tp)
    if _records(tp):
        return f"{_a(tp.__name__)} object"
    return _a(getattr(tp, "__name__", str(tp)))


def _a(name: str) -> str:
    """`name` after its indefinite article: "an EventFilter", "a Task"."""
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _is(tp: Any, base: type) -> bool:
    return isinstance(tp, type) and issubclass(tp, base)


def _fail(path: Path, tp: Any, got: Any) -> InvalidInput:
    shown = got if isinstance(got, (int, float, bool)) or got is None else type(got).__name__
    return InvalidInput(_text(path) or "value", _expected(tp), shown)


def _at(path: Path, part: str | int) -> Path:
    return (path, part)


def _text(path: Path) -> str:
    """`path` as errors name it: `reports[0].token`."""
    if isinstance(path, str):
        return path
    parent, part = path
    above = _text(parent)
    if isinstance(part, int):
        return f"{above}[{part}]"
    return f"{above}.{part}" if above else part


# ---- encoding ------------------------------------------------------------------------


@functools.cache
def _encoder(tp: Any) -> Convert:
    if tp is Any or tp in (str, int, float, bool, type(None), dict, list, tuple):
        return _same
    if tp is dt.datetime:
        return lambda v, p: None if v is None else v.isoformat()
    if _is(tp, enum.Enum):  # a name passed for a member too
        return lambda v, p: v.value if isinstance(v, enum.Enum) else v
    if _is(tp, CorralError):
        return _encode_error
    if _records(tp):
        return _encode_record(tp, tag=False)
    return _encoder_of_form(typing.get_origin(tp), typing.get_args(tp), tp)


def _encoder_of_form(origin: Any, args: tuple[Any, ...], tp: Any) -> Convert:
    """Encoders of the generic forms: Literal, unions, arrays, maps."""
    if origin is typing.Literal:
        return _same
    if origin in (typing.Union, types.UnionType):
        return _encode_union(args)
    if origin in _ARRAYS:
        return _encode_array(origin, args)
    if origin in _MAPS:
        value = _encoder(args[1])
        return lambda v, p: {
            str(k.value if isinstance(k, enum.Enum) else k): value(x, p) for k, x in v.items()
        }
    raise TypeError(f"no JSON form for {tp!r}")


def _same(value: Any, path: Path) -> Any:
    return value


def _encode_error(value: Any, path: Path) -> Any:
    return {"error": type(value).__name__, "message": value.message, **error_details(value)}


def error_details(exc: CorralError) -> dict[str, Any]:
    """What an error carries besides its line, as JSON: the field of bad input, the state
    a transition found (`current`), a worker's `status` ... (its plain attributes)."""
    return {
        key: value
        for key, value in vars(exc).items()
        if not key.startswith("_") and (value is None or isinstance(value, str | int | float))
    }


def _encode_union(args: tuple[Any, ...]) -> Convert:
    tagged = sum(1 for a in args if _records(a)) > 1
    choices = [
        (a, _encode_record(a, tag=True) if tagged and _records(a) else _encoder(a)) for a in args
    ]

    def convert(value: Any, path: Path) -> Any:
        if value is None:
            return None
        for tp, enc in choices:
            if _instance(value, tp):
                return enc(value, path)
        raise TypeError(f"{_text(path)}: {type(value).__name__} is none of {args}")

    return convert


def _instance(value: Any, tp: Any) -> bool:
    """Whether `value` is of `tp`, as far as choosing a union's member needs."""
    origin = typing.get_origin(tp) or tp
    if origin is typing.Literal:
        return value in typing.get_args(tp)
    if origin is Any:
        return True
    if origin is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if origin is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin in _ARRAYS:
        return isinstance(value, (list, tuple, frozenset, set))
    return isinstance(value, origin)


def _encode_array(origin: Any, args: tuple[Any, ...]) -> Convert:
    if (origin is tuple and len(args) != 2) or (origin is tuple and args[1] is not Ellipsis):
        items = [_encoder(a) for a in args]
        return lambda v, p: [enc(x, p) for enc, x in zip(items, v, strict=True)]
    item = _encoder(args[0]) if args else _same
    return lambda v, p: [item(x, p) for x in v]


def _encode_record(tp: type, *, tag: bool) -> Convert:
    fields = [(name, _encoder(kind)) for name, kind in _fields(tp).items()]
    name = tp.__name__

    def convert(value: Any, path: Path) -> Any:
        data = {field: enc(getattr(value, field), path) for field, enc in fields}
        if tag:
            data[TYPE_TAG] = name
        return data

    return convert


@functools.cache
def _fields(tp: type) -> dict[str, Any]:
    """A record's fields that its constructor takes, with their types, in order."""
    resolved = hints(tp)
    if _is_namedtuple(tp):
        return {name: resolved[name] for name in tp._fields}  # type: ignore[attr-defined]
    assert dataclasses.is_dataclass(tp)
    return {f.name: resolved[f.name] for f in dataclasses.fields(tp) if f.init}


# ---- decoding ------------------------------------------------------------------------


@functools.cache
def _decoder(tp: Any) -> Convert:
    if tp is Any or tp in (dict, list, tuple):
        return _same
    simple = _SIMPLE.get(tp)
    if simple is not None:
        return simple
    if _is(tp, enum.Enum):
        return _decode_enum(tp)
    if _is(tp, CorralError):
        return _decode_error
    if _records(tp):
        return _decode_record(tp)
    return _decoder_of_form(typing.get_origin(tp), typing.get_args(tp), tp)


def _decoder_of_form(origin: Any, args: tuple[Any, ...], tp: Any) -> Convert:
    """Decoders of the generic forms: Literal, unions, arrays, maps."""
    if origin is typing.Literal:
        return _checked(tp, lambda v: v in args)
    if origin in (typing.Union, types.UnionType):
        return _decode_union(args)
    if origin in _ARRAYS:
        return _decode_array(origin, args)
    if origin in _MAPS:
        return _decode_map(args)
    raise TypeError(f"no JSON form for {tp!r}")


def _checked(tp: Any, ok: Callable[[Any], bool]) -> Convert:
    def convert(value: Any, path: Path) -> Any:
        if not ok(value):
            raise _fail(path, tp, value)
        return value

    return convert


def _decode_float(value: Any, path: Path) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _fail(path, float, value)
    return float(value)


def _decode_instant(value: Any, path: Path) -> Any:
    if isinstance(value, str):
        try:
            instant = dt.datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            if instant.tzinfo is not None:
                # Within the calendar every reader handles: the door of every instant a
                # request carries (a store operation's argument, a record's field).
                return check_instant(_text(path) or "value", instant)
    raise _fail(path, dt.datetime, value)


_SIMPLE: dict[Any, Convert] = {
    type(None): _checked(type(None), lambda v: v is None),
    bool: _checked(bool, lambda v: isinstance(v, bool)),
    int: _checked(int, lambda v: isinstance(v, int) and not isinstance(v, bool)),
    float: _decode_float,
    str: _checked(str, lambda v: isinstance(v, str)),
    dt.datetime: _decode_instant,
}


def _decode_enum(tp: type[enum.Enum]) -> Convert:
    def convert(value: Any, path: Path) -> Any:
        try:
            return tp(value)
        except (ValueError, TypeError):
            raise _fail(path, tp, value) from None

    return convert


def _decode_error(value: Any, path: Path) -> Any:
    if not isinstance(value, dict) or not isinstance(value.get("message"), str):
        raise _fail(path, CorralError, value)
    return error_of(value.get("error"), value["message"], value)


# What each error class's constructor sets, for one rebuilt without it.
_ATTRIBUTES: dict[type[CorralError], dict[str, Any]] = {
    errors.InvalidInput: {"field": "value", "expected": "", "got": None},
    errors.InvalidTransition: {"current": ""},
    errors.WorkerUnavailable: {"status": None},
}


def error_of(name: Any, message: str, details: dict[str, Any] | None = None) -> CorralError:
    """The CorralError a remote end reported: its own class when corral has one by that
    name, built without its constructor (whose arguments only the sender had), with the
    details it sent (`error_details`)."""
    cls = getattr(errors, name, None) if isinstance(name, str) else None
    if not (isinstance(cls, type) and issubclass(cls, CorralError)):
        cls = CorralError
    exc = cls.__new__(cls)
    CorralError.__init__(exc, message)
    for base, defaults in _ATTRIBUTES.items():
        if issubclass(cls, base):
            for key, default in defaults.items():
                value = (details or {}).get(key, default)
                setattr(
                    exc,
                    key,
                    value if value is None or isinstance(value, str | int | float) else default,
                )
    return exc


def _decode_union(args: tuple[Any, ...]) -> Convert:
    nullable = type(None) in args
    members = [a for a in args if a is not type(None)]
    by_tag = {a.__name__: _decode_record(a) for a in members if _records(a)}
    tagged = len(by_tag) > 1
    others = [_decoder(a) for a in members if not (tagged and _records(a))]

    def convert(value: Any, path: Path) -> Any:
        if value is None and nullable:
            return None
        if tagged and isinstance(value, dict) and value.get(TYPE_TAG) in by_tag:
            body = {k: v for k, v in value.items() if k != TYPE_TAG}
            return by_tag[value[TYPE_TAG]](body, path)
        first: InvalidInput | None = None
        for dec in others:
            try:
                return dec(value, path)
            except InvalidInput as exc:
                first = first or exc
        if first is not None and len(others) == 1:
            raise first
        raise InvalidInput(
            _text(path) or "value", "one of " + ", ".join(_expected(a) for a in members)
        )

    return convert


def _decode_array(origin: Any, args: tuple[Any, ...]) -> Convert:
    fixed = origin is tuple and not (len(args) == 2 and args[1] is Ellipsis)
    items = [_decoder(a) for a in args] if fixed else []
    item = _decoder(args[0]) if args and not fixed else _same
    make: Callable[[Any], Any] = {list: list, frozenset: frozenset, set: frozenset}.get(
        origin, tuple
    )

    def convert(value: Any, path: Path) -> Any:
        if not isinstance(value, list):
            raise InvalidInput(_text(path) or "value", "an array", type(value).__name__)
        if fixed:
            if len(value) != len(items):
                raise InvalidInput(_text(path) or "value", f"an array of {len(items)}", len(value))
            return tuple(
                dec(x, _at(path, i)) for i, (dec, x) in enumerate(zip(items, value, strict=True))
            )
        return make(item(x, _at(path, i)) for i, x in enumerate(value))

    return convert


def _decode_map(args: tuple[Any, ...]) -> Convert:
    key = _decoder(args[0]) if args else _same
    value = _decoder(args[1]) if args else _same

    def convert(data: Any, path: Path) -> Any:
        if not isinstance(data, dict):
            raise InvalidInput(_text(path) or "value", "an object", type(data).__name__)
        return {key(k, path): value(v, _at(path, k)) for k, v in data.items()}

    return convert


def _decode_record(tp: type) -> Convert:
    fields = {name: _decoder(kind) for name, kind in _fields(tp).items()}
    required = _required(tp)

    def convert(value: Any, path: Path) -> Any:
        if not isinstance(value, dict):
            raise _fail(path, tp, value)
        for name in value:
            if name not in fields:
                raise InvalidInput(
                    _text(_at(path, str(name))), "one of the fields " + ", ".join(fields)
                )
        for name in required:
            if name not in value:
                raise InvalidInput(_text(_at(path, name)), "a value: the field is required")
        kwargs = {name: fields[name](v, _at(path, name)) for name, v in value.items()}
        try:
            return tp(**kwargs)
        except InvalidInput as exc:
            raise InvalidInput(_text(_at(path, exc.field)), exc.expected, exc.got) from None
        except (TypeError, ValueError) as exc:
            raise InvalidInput(_text(path) or "value", f"a valid {tp.__name__}", str(exc)) from None

    return convert


@functools.cache
def _required(tp: type) -> tuple[str, ...]:
    if _is_namedtuple(tp):
        defaults = tp._field_defaults  # type: ignore[attr-defined]
        return tuple(n for n in tp._fields if n not in defaults)  # type: ignore[attr-defined]
    return tuple(
        f.name
        for f in dataclasses.fields(tp)
        if f.init and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    )
