"""The error tree: exit codes, HTTP statuses and messages."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import pytest

from corral.foundation import errors


@pytest.mark.parametrize(
    ("cls", "exit_code", "http_status"),
    [
        (errors.CorralError, 1, 500),
        (errors.InvalidInput, 2, 422),
        (errors.NotFound, 2, 404),
        (errors.Refused, 1, 409),
        (errors.InvalidTransition, 1, 409),
        (errors.StaleToken, 1, 409),
        (errors.WorkerUnavailable, 1, 409),
        (errors.LimitReached, 1, 409),
        (errors.StoreError, 3, 503),
        (errors.SchemaTooNew, 3, 503),
        (errors.WaitEnded, 3, 503),
    ],
)
def test_each_error_class_knows_its_exit_code_and_http_status(
    cls: type[errors.CorralError], exit_code: int, http_status: int
) -> None:
    """Exit codes are 2 for bad input, 1 for refusals, 3 for the store; HTTP statuses follow."""
    assert (exit_code, http_status) == (cls.exit_code, cls.http_status)


@pytest.mark.parametrize(
    ("child", "parent"),
    [
        (errors.InvalidInput, errors.CorralError),
        (errors.NotFound, errors.InvalidInput),
        (errors.Refused, errors.CorralError),
        (errors.InvalidTransition, errors.Refused),
        (errors.StaleToken, errors.Refused),
        (errors.WorkerUnavailable, errors.Refused),
        (errors.LimitReached, errors.Refused),
        (errors.StoreError, errors.CorralError),
        (errors.SchemaTooNew, errors.StoreError),
        (errors.WaitEnded, errors.StoreError),
    ],
)
def test_the_error_tree(child: type[Exception], parent: type[Exception]) -> None:
    """Each error sits where the module docstring draws it."""
    assert issubclass(child, parent)


@pytest.mark.parametrize(
    "cls",
    [
        errors.CorralError,
        errors.Refused,
        errors.StaleToken,
        errors.WorkerUnavailable,
        errors.LimitReached,
        errors.StoreError,
        errors.SchemaTooNew,
        errors.WaitEnded,
    ],
)
def test_the_docstring_is_the_default_message(cls: type[errors.CorralError]) -> None:
    """An error raised without a message shows its class docstring."""
    assert (cls.__doc__ or "").strip() == cls().message


def test_invalid_input_names_field_expectation_and_value() -> None:
    """InvalidInput reads `field: expected X, got V` and keeps the parts."""
    error = errors.InvalidInput("priority", "a whole number", "high")
    assert "priority: expected a whole number, got 'high'" == error.message
    assert ("priority", "a whole number") == (error.field, error.expected)
    assert (
        "title: expected a non-empty title"
        == errors.InvalidInput("title", "a non-empty title").message
    )


def test_not_found_names_what_and_which() -> None:
    """NotFound reads `task 't-x' not found`."""
    error = errors.NotFound("task", "t-x")
    assert ("task 't-x' not found", "task", 2) == (error.message, error.field, error.exit_code)


def test_invalid_transition_names_the_current_state() -> None:
    """InvalidTransition says what was refused and the state the task is in."""
    error = errors.InvalidTransition("t-1", "cancel", "done")
    assert ("cannot cancel task t-1: it is done", "done") == (error.message, error.current)
