"""The pure parts of issue 23: the sentences the CLI prints (core/cli/_words.py) and the
did-you-mean ranking (core/base/suggest.py). The CLI tests in test_cli_people.py run them
through real subprocesses; these pin every branch."""

from __future__ import annotations

import pytest

from ackdeck.core.base.suggest import closest, did_you_mean, distance
from ackdeck.core.cli._words import ack_sentence, lines
from ackdeck.core.service.rooms import Acked


def acked(mode: str, n: int, kept: int, message: str = "", note: str | None = None) -> Acked:
    return Acked("inbox.txt", "/x/inbox.txt", mode, n, kept, message, None, None, note)


@pytest.mark.parametrize(
    ("result", "sentence"),
    [
        (acked("prefix", 2, 1), "acked 2 lines of inbox.txt; kept 1 unread"),
        (acked("prefix", 1, 0), "acked 1 line of inbox.txt"),
        (acked("all", 3, 0), "acked 3 lines of inbox.txt (every complete line)"),
        (
            acked("all", 0, 0, "no complete lines to ack"),
            "nothing acked: inbox.txt has no complete lines",
        ),
        (
            acked("noop", 0, 2, "already acked (by another session or an interrupted ack)"),
            "nothing acked: already acked (by another session or an interrupted ack); "
            "2 lines still in inbox.txt",
        ),
        (
            acked("noop", 0, 0, "the read returned no lines; nothing to ack"),
            "nothing acked: the read returned no lines",
        ),
        (
            acked(
                "stale",
                0,
                1,
                "the room was rewritten since this read; nothing was removed. Read the room "
                "again, then ack",
            ),
            "nothing acked: the room was rewritten since this read; read inbox.txt again, then ack",
        ),
        (
            acked("refused", 0, 1, "this read was already acked"),
            "nothing acked: this read was already acked; read inbox.txt again, then ack",
        ),
        (
            acked("noop", 0, 0, "room /x/inbox.txt does not exist; nothing to ack", note="N"),
            "nothing acked: N",
        ),
    ],
)
def test_each_ack_outcome_leads_with_what_happened(result: Acked, sentence: str) -> None:
    assert ack_sentence(result) == sentence


def test_lines_counts_in_words() -> None:
    assert (lines(0), lines(1), lines(2)) == ("0 lines", "1 line", "2 lines")


def test_distance_counts_a_swap_as_one_edit() -> None:
    assert distance("inbxo", "inbox") == 1
    assert distance("pusj", "push") == 1
    assert distance("", "abc") == 3
    assert distance("abc", "abc") == 0
    assert distance("kitten", "sitting") == 3


@pytest.mark.parametrize(
    ("word", "names", "found"),
    [
        ("rooom", ["room", "run", "ps"], ["room"]),
        ("stat", ["status", "start"], ["status", "start"]),  # a prefix is one edit; ties: both
        ("--sesion", ["--session", "--settle"], ["--session"]),
        ("ps", ["kill", "run"], []),  # too far for a two-letter word
        ("xyz", ["room"], []),
        ("room", ["room"], []),  # the word itself is not a suggestion
        ("rn", ["run", "rm", "rx"], ["run", "rm", "rx"]),  # ties, in the order given
    ],
)
def test_closest_names_within_a_typos_reach(word: str, names: list[str], found: list[str]) -> None:
    assert closest(word, names) == found


def test_did_you_mean_wording() -> None:
    assert did_you_mean("pusj", ["push", "read"]) == "; did you mean push?"
    assert did_you_mean("rn", ["run", "rm"]) == "; did you mean run or rm?"
    assert did_you_mean("zzz", ["push"]) == ""
