"""The cost sums `toolscope cost` keeps in a session's line index (`app.report.cost_record`): a
second run prices them without scanning, and a record that is not for this file, these routes and
this estimator — or that is not sealed by this account — changes no answer. And the first run's
single pass still refuses a corrupt line before printing anything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli import _build_parser
from app.commands.cost import run as run_cost
from app.llm.routes import load_catalog
from app.report import cost_record
from app.report.cost import session_cost
from app.report.cost_json import cost_json
from app.report.prices import PriceBook
from app.session.line_index import COSTS, index_path
from app.session.session import Session
from benchmarks.sessions import write_large_session


def cost_of(capsys: pytest.CaptureFixture[str], path: Path, *routes: str) -> dict:
    argv = ["cost", str(path), "--json", *(part for route in routes for part in ("--route", route))]
    assert run_cost(_build_parser().parse_args(argv)) == 0
    return json.loads(capsys.readouterr().out)


def scanned_afresh(path: Path, *routes: str) -> dict:
    """The answer of a scan of the full fold, the record not read."""
    catalog = load_catalog()
    chosen = [catalog.get(route) for route in routes] if routes else list(catalog)
    session = Session.open(path)
    cost = session_cost(session.folded_view().requests, chosen, PriceBook.of(None))
    return {"session": session.id, "requests": cost.requests, **cost_json(cost)}


def counted_scans(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    scans: list[int] = []
    scanned = cost_record.scanned_sums
    monkeypatch.setattr(cost_record, "scanned_sums", lambda *args, **kwargs: scans.append(1) or scanned(*args, **kwargs))
    return scans


@pytest.fixture
def session_path(tmp_path: Path) -> Path:
    path = tmp_path / "sessions" / "costed.jsonl"
    path.parent.mkdir()
    write_large_session(path, 1_500, seed=3)
    return path


class TestRecordedCost:
    def test_a_second_run_prices_the_record_and_scans_nothing(self, session_path, capsys, monkeypatch) -> None:
        scans = counted_scans(monkeypatch)
        first = cost_of(capsys, session_path)
        second = cost_of(capsys, session_path)
        assert scans == [1]
        assert first == second == scanned_afresh(session_path)
        assert first["requests"] > 100 and len(first["routes"]) == len(load_catalog())

    def test_other_routes_get_their_own_scan(self, session_path, capsys, monkeypatch) -> None:
        scans = counted_scans(monkeypatch)
        cost_of(capsys, session_path)
        only = cost_of(capsys, session_path, "openai/gpt")
        assert scans == [1, 1]
        assert only == scanned_afresh(session_path, "openai/gpt")

    def test_a_file_that_grew_is_scanned_again(self, session_path, capsys, monkeypatch) -> None:
        scans = counted_scans(monkeypatch)
        cost_of(capsys, session_path)
        # The same session, grown: the generator with the same seed writes the same lines first.
        longer = session_path.parent.parent / "longer" / session_path.name
        longer.parent.mkdir()
        write_large_session(longer, 3_000, seed=3)
        old, grown = session_path.read_bytes(), longer.read_bytes()
        assert grown.startswith(old) and len(grown) > len(old)
        with session_path.open("ab") as handle:
            handle.write(grown[len(old) :])
        assert cost_of(capsys, session_path) == scanned_afresh(session_path)
        assert scans == [1, 1]

    def test_a_record_of_another_estimator_changes_no_answer(self, session_path, capsys, monkeypatch) -> None:
        """A record sealed by this account but keyed by another estimator (an older toolscope)
        whose sums are wrong is not believed."""
        truth = cost_of(capsys, session_path)
        session = Session.open(session_path)
        raw = session.chain.own.index.extra.raw(COSTS)
        assert raw is not None
        document = json.loads(raw)
        document["key"]["estimator"] = "0" * 64
        for row in document["totals"]:
            row[3] *= 7  # input tokens
        session.chain.own.index.extra.set_raw(COSTS, json.dumps(document).encode())
        session.save_index()
        scans = counted_scans(monkeypatch)
        assert cost_of(capsys, session_path) == truth
        assert scans == [1]

    def test_a_record_not_sealed_by_this_account_changes_no_answer(self, session_path, capsys, monkeypatch) -> None:
        """The record's bytes changed in the cache file (as anyone can): its seal fails."""
        truth = cost_of(capsys, session_path)
        cache = index_path(session_path)
        data = cache.read_bytes()
        at = data.rindex(b'"totals":[[') + len(b'"totals":[[')
        digit = data[at : at + 1]
        assert digit.isdigit()
        cache.write_bytes(data[:at] + (b"8" if digit != b"8" else b"7") + data[at + 1 :])
        scans = counted_scans(monkeypatch)
        assert cost_of(capsys, session_path) == truth
        assert scans == [1]

    @pytest.mark.parametrize(
        "damage",
        [
            lambda document: document["totals"].pop(),
            lambda document: document["totals"][0].__setitem__(2, ["tools-changed", 1]),
            lambda document: document["totals"][0].__setitem__(3, -5),
            lambda document: document["totals"][0].__setitem__(2, {"no-such-cause": 1}),
            lambda document: document.__setitem__("calibration", [1.0, "3", None]),
            lambda document: document["totals"][0].pop(),
        ],
        ids=["a-row-short", "breaks-not-an-object", "a-negative-count", "an-unknown-cause", "a-count-as-text", "a-field-short"],
    )
    def test_a_record_of_this_key_that_does_not_read_whole_changes_no_answer(self, session_path, capsys, monkeypatch, damage) -> None:
        """Sealed by this account and keyed as now, but not as this code writes it."""
        truth = cost_of(capsys, session_path)
        session = Session.open(session_path)
        document = json.loads(session.chain.own.index.extra.raw(COSTS))
        damage(document)
        session.chain.own.index.extra.set_raw(COSTS, json.dumps(document).encode())
        session.save_index()
        scans = counted_scans(monkeypatch)
        assert cost_of(capsys, session_path) == truth
        assert scans == [1]


@pytest.mark.parametrize("damage", ["not json", "seq out of order"])
def test_a_corrupt_line_is_refused_with_file_and_line_before_anything_is_printed(session_path, capsys, damage) -> None:
    """The validation is the fold's own pass: a line far into the session still stops the command
    before its output, naming where."""
    lines = session_path.read_bytes().splitlines(keepends=True)
    number = 1_000  # a line of the file, 1-based (the header is line 1)
    if damage == "not json":
        lines[number - 1] = b'{"type": "turn/start", "seq": \n'
    else:
        event = json.loads(lines[number - 1])
        event["seq"] += 5
        lines[number - 1] = json.dumps(event, separators=(",", ":")).encode() + b"\n"
    session_path.write_bytes(b"".join(lines))
    assert run_cost(_build_parser().parse_args(["cost", str(session_path)])) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert f"{session_path}:{number}:" in err
