"""kube.logs: one handler for every command, one line per record, every control character escaped."""

from __future__ import annotations

import io
import logging
import sys
from collections.abc import Iterator

import pytest

from dra_bridge.kube import logs

EVIL = "a\nb\rc\td\x1b[31me\x00f\x7fg\x85h\x9bi\u2028j\u2029k"
ESCAPED = "a\\nb\\rc\\td\\x1b[31me\\x00f\\x7fg\\x85h\\x9bi\\u2028j\\u2029k"


@pytest.fixture
def log() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = logs.configure("DEBUG", stream)
    yield stream
    logging.getLogger().removeHandler(handler)


def one_line(stream: io.StringIO) -> str:
    text = stream.getvalue()
    assert text.endswith("\n") and text.count("\n") == 1, text
    (line,) = text.splitlines()  # str.splitlines also breaks at \x1c-\x1e, \x85, \u2028, \u2029
    return line


@pytest.mark.parametrize("code", [*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029])
def test_every_control_character_is_escaped(code: int) -> None:
    out = logs.escape(f"<{chr(code)}>")
    assert out.isprintable() and out != f"<{chr(code)}>" and out.startswith("<\\")


def test_printable_text_is_left_as_it_is() -> None:
    text = "uid=3f0c-… name=trainer-0 ünïcode 日本 \U0001f600 stays"
    assert logs.escape(text) == text


def test_a_backslash_is_doubled_so_an_escape_always_stands_for_one_character() -> None:
    # a caller's literal backslash-n cannot pass for an escaped newline
    assert logs.escape("a\\nb") == "a\\\\nb"
    assert logs.escape("a\nb") == "a\\nb"
    assert logs.escape("a\\nb") != logs.escape("a\nb")


@pytest.mark.parametrize(
    ("char", "escaped"),
    [("\u202e", "\\u202e"), ("\ufeff", "\\ufeff"), ("\u200b", "\\u200b"), ("\U000e0001", "\\U000e0001")],
    ids=["rtl-override", "bom", "zero-width-space", "tag"],
)
def test_format_characters_that_disguise_a_line_are_escaped(char: str, escaped: str) -> None:
    assert logs.escape(f"x{char}y") == f"x{escaped}y"


def test_the_arguments_are_escaped_after_formatting(log: io.StringIO) -> None:
    logging.getLogger("t.args").warning("uid=%s name=%s n=%d", EVIL, EVIL, 3)
    line = one_line(log)
    assert line.endswith(f"WARNING t.args: uid={ESCAPED} name={ESCAPED} n=3")


def test_the_message_itself_and_the_logger_name_are_escaped(log: io.StringIO) -> None:
    logging.getLogger(f"t.{EVIL}").info(EVIL)
    assert one_line(log).endswith(f" INFO t.{ESCAPED}: {ESCAPED}")


def test_an_exception_stays_on_its_records_line_escaped(log: io.StringIO) -> None:
    try:
        raise ValueError(EVIL)
    except ValueError:
        logging.getLogger("t.exc").exception("failed for %s", EVIL)
    line = one_line(log)
    assert f"t.exc: failed for {ESCAPED}\\nTraceback (most recent call last):\\n" in line
    assert line.endswith(f"ValueError: {ESCAPED}")


def test_the_stack_is_escaped_too(log: io.StringIO) -> None:
    logging.getLogger("t.stack").info("here", stack_info=True)
    line = one_line(log)
    assert "here\\nStack (most recent call last):\\n" in line


def test_extra_fields_a_format_names_are_escaped() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.EscapingFormatter("%(levelname)s %(pod)s: %(message)s"))
    logger = logging.getLogger("t.extra")
    logger.addHandler(handler)
    try:
        logger.error("admitted", extra={"pod": EVIL})
    finally:
        logger.removeHandler(handler)
    assert one_line(stream) == f"ERROR {ESCAPED}: admitted"


def test_the_record_is_left_unchanged_for_other_handlers(log: io.StringIO) -> None:
    record = logging.LogRecord("t", logging.INFO, __file__, 1, "m %s", (EVIL,), None)
    logs.EscapingFormatter(logs.FORMAT).format(record)
    assert record.getMessage() == f"m {EVIL}" and record.args == (EVIL,)


def test_configure_replaces_its_handler_and_sets_the_level_in_any_case() -> None:
    root = logging.getLogger()
    before = list(root.handlers)
    first = logs.configure("debug", io.StringIO())
    second = logs.configure("Warning", io.StringIO())
    try:
        assert first not in root.handlers and second in root.handlers
        assert [h for h in root.handlers if h not in before] == [second]
        assert root.level == logging.WARNING
    finally:
        root.removeHandler(second)


def test_configure_writes_to_stderr_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    handler = logs.configure("INFO")
    try:
        logging.getLogger("t.default").info("to stderr")
    finally:
        logging.getLogger().removeHandler(handler)
    captured = capsys.readouterr()
    assert "INFO t.default: to stderr" in captured.err and captured.out == ""
    assert isinstance(handler, logging.StreamHandler) and handler.stream is sys.stderr


@pytest.mark.parametrize("level", ["verbose", "", "critical", "20"])
def test_an_unknown_level_is_refused(level: str) -> None:
    with pytest.raises(ValueError, match="DEBUG, INFO, WARNING, ERROR"):
        logs.level_number(level)
