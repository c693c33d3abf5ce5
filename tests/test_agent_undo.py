"""The install record (:mod:`triohooks.agents.undo`): one change, or a change and the refresh
after it, undone; an edit elsewhere kept; an edit of what install wrote left to the caller."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from triohooks.agents.undo import NOT_MINE, track, undo

TEXT = st.text(alphabet="ab{}\n ,:", max_size=40)


@st.composite
def spliced(draw: st.DrawFn, text: str) -> str:
    """``text`` with one place in it replaced by other text."""
    start = draw(st.integers(0, len(text)))
    end = draw(st.integers(start, len(text)))
    return text[:start] + draw(TEXT) + text[end:]


@given(st.data(), TEXT)
def test_a_change_and_a_refresh_of_it_are_undone_byte_for_byte(data: st.DataObject, b: str) -> None:
    a1 = data.draw(spliced(b))
    first = track(b, a1)
    assert first is not None and undo(first, a1) == b
    a2 = data.draw(spliced(a1))
    both = track(a1, a2, refresh=True, earlier=first)
    assert both is not None and undo(both, a2) == b


def test_a_created_file_goes_and_an_edit_elsewhere_stays() -> None:
    record = track(None, '{"hooks": {"x": 1}}\n')
    assert record is not None and undo(record, '{"hooks": {"x": 1}}\n') is None
    kept = track('{"a": 1}\n', '{"a": 1, "hooks": {"x": 1}}\n')
    assert kept is not None
    assert undo(kept, '{"b": 2, "a": 1, "hooks": {"x": 1}}\n') == '{"b": 2, "a": 1}\n'


def test_what_install_wrote_edited_is_not_the_records_to_undo() -> None:
    record = track('{"a": 1}\n', '{"a": 1, "hooks": {"x": 1}}\n')
    assert record is not None
    assert undo(record, '{"a": 1, "hooks": {"x": 2}}\n') == NOT_MINE


def test_a_refresh_without_the_earlier_record_keeps_none() -> None:
    """A refresh's ``before`` holds triohooks' catch-alls: no state to go back to."""
    assert track("x = 1\n[t]\n", "x = 1\n[t2]\n", refresh=True) is None
    first = track("x = 1\n", "x = 1\n[t]\n")
    assert first is not None
    edited = "y = 2\nx = 1\n[t]\n"  # changed since that install: that record no longer holds
    assert track(edited, edited + "[u]\n", refresh=True, earlier=first) is None


def test_the_newline_install_added_stays_when_you_wrote_after_it() -> None:
    record = track("x = 1", "x = 1\n[ours]\nk = 1\n")
    assert record is not None
    assert undo(record, "x = 1\n[ours]\nk = 1\n") == "x = 1"
    assert undo(record, "x = 1\n[ours]\nk = 1\n[yours]\n") == "x = 1\n[yours]\n"
