"""`record`: a frozen, slotted, keyword-only dataclass made without `dataclasses` at start-up.

`dataclasses` writes each class's `__init__`, `__eq__`, `__hash__`, `__repr__`,
`__setattr__` and `__delattr__` as source and compiles them when the class is made, at
every start of every process: 0.5 to 5 ms a record; and importing it imports `inspect`
(with `ast`, `dis` and `tokenize`), a tenth of a command's start-up. A `corral` command
lives for tens of milliseconds (bench/cli_latency.py, docs/benchmarks.md section 2).
`record` makes the same class, with its slots, from the class's annotations and defaults;
its methods are written once, below, and walk its fields.

    @record(frozen=True, slots=True, kw_only=True)
    class Figures:
        name: str
        tags: list[str] = field(default_factory=list)

Type checkers read `record`, `field` and `replace` as `dataclasses`' (they are, at type-
checking time), so the class is checked as the dataclass it declares. At run time the
class is a dataclass too: `dataclasses.fields`, `replace`, `asdict` and `is_dataclass`
work on it, the first of them importing `dataclasses` and making its `Field`s then
(`__dataclass_fields__`, made on first use). `field` and `replace` here do what
`dataclasses`' do, without importing it. Only the three options are accepted; a field
takes a default or a factory, and may be left out of `__init__`, `repr` or comparisons.

`__init__` walks the fields for the first records of a class (`COMPILE_AT`); a class that
makes more (a task per row read, a runner's thousands a second) then gets an `__init__`
compiled for its fields, as dataclass would have compiled it at start-up, and setting each
slot by its own descriptor, which makes it faster than dataclass's (tests/unit/test_records.py).
So a command pays for the records it makes, never for the classes it only imports.
"""

from __future__ import annotations

import sys
from types import FunctionType
from typing import TYPE_CHECKING, Any, TypeVar

__all__ = ["COMPILE_AT", "field", "record", "replace"]

_R = TypeVar("_R")

# Records of one class made by walking its fields before its `__init__` is compiled: past
# what a command makes of its settings or filters, well short of a listing's rows.
COMPILE_AT = 32


class _Missing:
    """No default, no factory: as dataclasses.MISSING."""

    def __repr__(self) -> str:
        return "MISSING"


_MISSING: Any = _Missing()


class _Spec:
    """One field of a record: what `field()` was told, and its name and annotation."""

    __slots__ = (
        "compare",
        "default",
        "default_factory",
        "hash",
        "init",
        "metadata",
        "name",
        "repr",
        "type",
    )

    def __init__(self, **options: Any) -> None:
        self.name: str = options.get("name", "")
        self.type: Any = options.get("type")
        self.default = options.get("default", _MISSING)
        self.default_factory = options.get("default_factory", _MISSING)
        self.init: bool = options.get("init", True)
        self.repr: bool = options.get("repr", True)
        self.hash: bool | None = options.get("hash")
        self.compare: bool = options.get("compare", True)
        self.metadata: Any = options.get("metadata")
        if self.default is not _MISSING and self.default_factory is not _MISSING:
            raise ValueError("cannot specify both default and default_factory")


if TYPE_CHECKING:
    from dataclasses import dataclass as record
    from dataclasses import field, replace
else:

    def record(*, frozen: bool, slots: bool, kw_only: bool) -> Any:
        """`dataclass(frozen=True, slots=True, kw_only=True)`, made as the module says."""
        if not (frozen and slots and kw_only):
            raise TypeError("record makes frozen, slotted, keyword-only dataclasses only")
        return _make

    def field(**options: Any) -> Any:
        """`dataclasses.field`: default, default_factory, init, repr, hash, compare, metadata."""
        known = {"default", "default_factory", "init", "repr", "hash", "compare", "metadata"}
        unknown = options.keys() - known
        if unknown:
            raise TypeError(f"field() got an unexpected keyword argument {min(unknown)!r}")
        return _Spec(**options)

    def replace(obj: Any, /, **changes: Any) -> Any:
        """`dataclasses.replace`: a copy of `obj` with `changes`; any dataclass."""
        specs = getattr(type(obj), "__record_fields__", None)
        if specs is None:
            import dataclasses  # not a record: dataclasses' own  # noqa: PLC0415

            return dataclasses.replace(obj, **changes)
        for spec in specs:
            if not spec.init:
                if spec.name in changes:
                    raise ValueError(
                        f"field {spec.name} is declared with init=False, "
                        "it cannot be specified with replace()"
                    )
            elif spec.name not in changes:
                changes[spec.name] = getattr(obj, spec.name)
        return obj.__class__(**changes)


def _make(cls: type[_R]) -> type[_R]:
    specs: dict[str, _Spec] = {}
    for base in reversed(cls.__mro__[1:]):  # a record's fields after its bases' own
        specs.update((s.name, s) for s in base.__dict__.get("__record_fields__", ()))
    # The class's own annotations, as dataclasses reads them (inspect.get_annotations would
    # import inspect, which is what this module spares).
    annotations = cls.__dict__.get("__annotations__", {})  # noqa: RUF063
    own = [_spec(cls, name, kind) for name, kind in annotations.items()]
    specs.update((s.name, s) for s in own)
    body = {k: v for k, v in cls.__dict__.items() if k not in specs}
    body.pop("__dict__", None)
    body.pop("__weakref__", None)
    body["__slots__"] = tuple(s.name for s in own)
    body["__record_fields__"] = tuple(specs.values())
    body["__dataclass_fields__"] = _DataclassFields()
    body["__match_args__"] = ()
    body.update(_METHODS)
    maker: Any = type(cls)  # the class's metaclass, as dataclass's slots make it
    made: Any = maker(cls.__name__, cls.__bases__, body)
    made.__qualname__ = cls.__qualname__
    # Its own copy of the walking __init__ (no compiling), named as its errors name it.
    init = FunctionType(_walk_init.__code__, _walk_init.__globals__, "__init__")
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    made.__init__ = init
    return made  # type: ignore[no-any-return]


def _spec(cls: type, name: str, kind: Any) -> _Spec:
    """The field `name` of `cls` from its annotation and its class attribute, if any."""
    if "ClassVar" in str(kind) or "InitVar" in str(kind):
        raise TypeError(f"{cls.__qualname__}.{name}: a record has no ClassVar or InitVar")
    value = cls.__dict__.get(name, _MISSING)
    if isinstance(value, _Spec):
        spec = value
    elif type(value).__name__ == "Field" and type(value).__module__ == "dataclasses":
        spec = _from_field(value)  # dataclasses.field(), already imported by the caller
    else:
        spec = _Spec(default=value)
    if spec.default is not _MISSING and type(spec.default).__hash__ is None:
        raise ValueError(
            f"mutable default {type(spec.default)} for field {name} is not allowed: "
            "use default_factory"
        )
    spec.name, spec.type = name, kind
    return spec


def _from_field(f: Any) -> _Spec:
    missing = sys.modules["dataclasses"].MISSING
    options = {k: getattr(f, k) for k in ("init", "repr", "hash", "compare", "metadata")}
    for key in ("default", "default_factory"):
        if getattr(f, key) is not missing:
            options[key] = getattr(f, key)
    return _Spec(**options)


class _DataclassFields:
    """`__dataclass_fields__`, made on first use by dataclasses itself, from a class of the
    same fields: what `dataclasses.fields`, `replace`, `asdict` and `is_dataclass` read."""

    def __get__(self, obj: Any, cls: type) -> Any:
        import dataclasses  # only where a caller asks dataclasses about a record  # noqa: PLC0415

        body: dict[str, Any] = {"__module__": cls.__module__, "__qualname__": cls.__qualname__}
        body["__annotations__"] = {s.name: s.type for s in cls.__record_fields__}  # type: ignore[attr-defined]
        for s in cls.__record_fields__:  # type: ignore[attr-defined]
            options = {"init": s.init, "repr": s.repr, "hash": s.hash, "compare": s.compare}
            if s.default is not _MISSING:
                options["default"] = s.default
            if s.default_factory is not _MISSING:
                options["default_factory"] = s.default_factory
            body[s.name] = dataclasses.field(metadata=s.metadata, **options)
        twin: Any = dataclasses.dataclass(
            frozen=True, kw_only=True, init=False, repr=False, eq=False
        )(type(cls.__name__, (), body))
        fields = twin.__dataclass_fields__
        type.__setattr__(cls, "__dataclass_fields__", fields)
        type.__setattr__(cls, "__dataclass_params__", twin.__dataclass_params__)
        return fields


class _Required:
    """The fallback of a field that has no default: its absence is a TypeError."""


class _Factory:
    """The fallback of a field with a default factory: called for each record made."""

    __slots__ = ("make",)

    def __init__(self, make: Any) -> None:
        self.make = make


_REQUIRED = _Required()


class _Plan:
    """How a record class's `__init__` sets its fields, worked out once per class."""

    __slots__ = ("kept", "made", "taken")

    def __init__(self, cls: Any) -> None:
        every = cls.__record_fields__
        # A slot's own descriptor sets it: what object.__setattr__ finds after a lookup.
        setter = {s.name: getattr(cls, s.name).__set__ for s in every}
        # (name, fallback, setter) for each field __init__ takes ...
        self.taken = tuple((s.name, _fallback(s), setter[s.name]) for s in every if s.init)
        # ... and (setter, fallback) for each field(init=False) with a default or a factory.
        self.kept = tuple(
            (setter[s.name], _fallback(s))
            for s in every
            if not s.init and _fallback(s) is not _REQUIRED
        )
        self.made = 0


_PLANS: dict[type, _Plan] = {}


def _fallback(s: _Spec) -> Any:
    if s.default is not _MISSING:
        return s.default
    if s.default_factory is not _MISSING:
        return _Factory(s.default_factory)
    return _REQUIRED


def _walk_init(self: Any, **values: Any) -> None:
    """Each field from `values`, else its default or its factory's; then `__post_init__`."""
    cls = self.__class__
    plan = _PLANS.get(cls) or _PLANS.setdefault(cls, _Plan(cls))
    for name, fallback, put in plan.taken:
        value = values.pop(name, fallback)
        if value.__class__ is _Factory:
            value = value.make()
        elif value is _REQUIRED:
            raise TypeError(f"{_named(self)} missing 1 required keyword-only argument: {name!r}")
        put(self, value)
    for put, fallback in plan.kept:
        put(self, fallback.make() if fallback.__class__ is _Factory else fallback)
    if values:
        raise TypeError(f"{_named(self)} got an unexpected keyword argument {next(iter(values))!r}")
    plan.made += 1
    if plan.made >= COMPILE_AT:  # >=: two threads may count past it together
        cls.__init__ = _compiled_init(cls, plan)
    post_init = getattr(self, "__post_init__", None)
    if post_init is not None:
        post_init()


def _named(self: Any) -> str:
    return f"{type(self).__qualname__}.__init__()"


def _compiled_init(cls: type, plan: _Plan) -> Any:
    """`cls.__init__` written for its fields and compiled, as dataclass writes it."""
    scope: dict[str, Any] = {"__record_make__": _REQUIRED}
    params, lines = [], []
    for i, (name, fallback, put) in enumerate(plan.taken):
        scope[f"__record_put{i}__"] = put
        if fallback is _REQUIRED:
            params.append(name)
        elif fallback.__class__ is _Factory:
            scope[f"__record_factory{i}__"] = fallback.make
            params.append(f"{name}=__record_make__")
            lines.append(f"if {name} is __record_make__: {name} = __record_factory{i}__()")
        else:
            scope[f"__record_default{i}__"] = fallback
            params.append(f"{name}=__record_default{i}__")
        lines.append(f"__record_put{i}__(__record_self__, {name})")
    for i, (put, fallback) in enumerate(plan.kept):
        scope[f"__record_keep{i}__"] = put
        scope[f"__record_kept{i}__"] = fallback
        value = f"__record_kept{i}__"
        if fallback.__class__ is _Factory:
            value += ".make()"
        lines.append(f"__record_keep{i}__(__record_self__, {value})")
    if hasattr(cls, "__post_init__"):
        lines.append("__record_self__.__post_init__()")
    signature = ", ".join(["__record_self__", *(["*", *params] if params else [])])
    body = "\n".join(f"    {line}" for line in lines or ["pass"])
    exec(f"def __init__({signature}):\n{body}\n", scope)  # noqa: S102 - our text, as dataclass's
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _compared(self: Any) -> tuple[Any, ...]:
    return tuple(getattr(self, s.name) for s in self.__record_fields__ if s.compare)


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _compared(self) == _compared(other)


def _hash(self: Any) -> int:
    return hash(_compared(self))


def _repr(self: Any) -> str:
    shown = ", ".join(
        f"{s.name}={getattr(self, s.name)!r}" for s in self.__record_fields__ if s.repr
    )
    return f"{type(self).__qualname__}({shown})"


def _setattr(self: Any, name: str, value: Any) -> None:
    raise _frozen(f"cannot assign to field {name!r}")


def _delattr(self: Any, name: str) -> None:
    raise _frozen(f"cannot delete field {name!r}")


def _frozen(message: str) -> AttributeError:
    """dataclasses.FrozenInstanceError, as a frozen dataclass raises it."""
    import dataclasses  # a mistake's path only  # noqa: PLC0415

    return dataclasses.FrozenInstanceError(message)


def _getstate(self: Any) -> list[Any]:
    return [getattr(self, s.name) for s in self.__record_fields__]


def _setstate(self: Any, state: list[Any]) -> None:
    for s, value in zip(self.__record_fields__, state, strict=True):
        object.__setattr__(self, s.name, value)


_METHODS = {
    "__eq__": _eq,
    "__hash__": _hash,
    "__repr__": _repr,
    "__setattr__": _setattr,
    "__delattr__": _delattr,
    "__getstate__": _getstate,
    "__setstate__": _setstate,
}
