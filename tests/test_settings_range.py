"""Numbers people and files set are checked for range as well as type: a value that makes no
sense (a dashboard tick of 1e-7 s, a cooldown of 1e20 ms, NaN or infinity anywhere) is one
line and a non-zero exit before anything starts or is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from ackdeck.core.base.ranges import in_range, parse_in_range
from ackdeck.core.errors import InvalidInput
from ackdeck.tui.config import DashConfig, load_config
from tests.helpers.cli import ackdeck


@pytest.mark.parametrize("tick", ["1e-7", "0.01", "-1.0", "nan", "inf", "1e9", "true", '"1"'])
def test_a_dashboard_tick_that_makes_no_sense_is_refused_in_one_line(
    tmp_path: Path, tick: str
) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"tick_seconds = {tick}\n")
    with pytest.raises(InvalidInput) as err:
        load_config(cfg)
    assert "tick_seconds" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("tick, want", [("0", 0.0), ("0.05", 0.05), ("1", 1.0), ("3600", 3600.0)])
def test_a_dashboard_tick_in_range_or_off_is_kept(tmp_path: Path, tick: str, want: float) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"tick_seconds = {tick}\n")
    assert load_config(cfg).tick_seconds == want


def test_the_dashboard_refuses_a_busy_loop_tick_before_it_starts(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("tick_seconds = 1e-7\n")
    out = ackdeck(cli_env, "tui", "--config", str(cfg), timeout=120, input="")
    assert out.returncode != 0 and out.stderr.count("\n") == 1, out
    assert "tick_seconds" in out.stderr


def test_keywords_are_checked_as_the_file_is() -> None:
    with pytest.raises(ValueError, match="tick_seconds"):
        DashConfig(tick_seconds=1e-7)


@pytest.mark.parametrize(
    "args",
    [
        ["run", "x", "--monitor", "a", "--cooldown-ms", "100000000000000000000", "--", "true"],
        ["run", "x", "--monitor", "a", "--max-events", "100000000000000000000", "--", "true"],
    ],
)
def test_a_monitor_number_out_of_range_starts_nothing(
    home: Path, cli_env: dict[str, str], args: list[str]
) -> None:
    out = ackdeck(cli_env, *args)
    assert out.returncode != 0 and out.stderr.count("\n") == 1, out
    assert not (home / "procs" / "x").exists()


def test_a_nudge_idle_time_out_of_range_is_refused(cli_env: dict[str, str]) -> None:
    args = ["nudge", "--session", "s", "--tmux", "nosuch:0", "--idle-ms", "100000000000000"]
    out = ackdeck(cli_env, *args)
    assert out.returncode != 0 and "--idle-ms" in out.stderr, out


@pytest.mark.parametrize("pace", ["x", "nan", "inf", "0", "-1"])
def test_a_demo_pace_that_makes_no_sense_is_one_line(
    pace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ackdeck.tui import demo

    monkeypatch.setenv("ACKDECK_DEMO_PACE", pace)
    with pytest.raises(InvalidInput, match="ACKDECK_DEMO_PACE"):
        demo.pace()


@pytest.mark.parametrize("value", [True, "3", float("nan"), float("inf"), -1, 11, 2.5])
def test_in_range_refuses_what_is_not_a_number_in_range(value: object) -> None:
    with pytest.raises(InvalidInput):
        in_range(value, "n", 0, 10, integer=True)


def test_in_range_and_its_text_form_keep_what_is_in_range() -> None:
    assert in_range(10, "n", 0, 10, integer=True) == 10
    assert in_range(2.0, "n", 0, 10, integer=True) == 2
    assert parse_in_range("0.5", "n", 0, 1) == 0.5
