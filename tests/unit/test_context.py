"""The CLI's context reads the settings before the store whenever something may change them."""

from __future__ import annotations

from corral.foundation.settings import SPEC
from corral.foundation.variables import INERT, NOT_SETTINGS


def test_no_variable_taken_for_a_non_setting_names_a_setting() -> None:
    """A CORRAL_<SETTING> variable, or CORRAL_CONFIG, always has the settings read (and checked)."""
    settings = {f"CORRAL_{name.upper()}" for name in SPEC} | {"CORRAL_CONFIG"}
    assert set() == settings & INERT
    assert {"CORRAL_CONFIG"} == settings & NOT_SETTINGS
