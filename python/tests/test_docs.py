"""docs/python.md's code runs: its ```python blocks in order from the repository's root (the
`python live` ones as root), and its pytest example as a test file under pytester."""

import contextlib
import io
import re

import pytest

from conftest import REPO

BLOCKS = re.findall(
    r"```(python(?: live)?)\n(.*?)```", (REPO / "docs" / "python.md").read_text(), re.S
)


def is_test_file(code):
    return code.startswith("# test_")


def run_blocks(monkeypatch, live):
    monkeypatch.chdir(REPO)
    scope = {}
    printed = io.StringIO()
    ran = 0
    for kind, code in BLOCKS:
        if is_test_file(code) or (kind == "python live" and not live):
            continue
        with contextlib.redirect_stdout(printed):
            exec(compile(code, f"docs/python.md block {ran}", "exec"), scope)
        ran += 1
    return ran, printed.getvalue()


def test_the_pages_blocks_run(binary, monkeypatch):
    ran, printed = run_blocks(monkeypatch, live=False)
    assert ran >= 5
    # The comments beside the prints say what they print.
    assert "2 22000000" in printed
    assert "['left1', 'left2', 'right1', 'right2']" in printed
    assert 'netloom: bad.toml:9: link h1-h2: bw "10mbps" is ambiguous' in printed
    assert 'netloom: --traffic: unknown host "rightX"' in printed


@pytest.mark.live
def test_the_pages_live_blocks_run(live, monkeypatch):
    ran, printed = run_blocks(monkeypatch, live=True)
    assert sum(kind == "python live" for kind, _ in BLOCKS) == 2
    assert (
        "\n50ms\n" in printed
        and "['h1-r1', 'r1-r2', 'r2-h2']" in printed
        and "\nstarted\n" in printed
    )
    assert 'unknown key "dealy" (did you mean "delay"?)' in printed


@pytest.mark.live
def test_the_pages_pytest_example_passes(live, pytester, binary):
    (code,) = [code for _, code in BLOCKS if is_test_file(code)]
    pytester.makepyfile(test_my_app=code.replace('"examples/', f'"{REPO}/examples/'))
    pytester.runpytest("--netloom-binary", binary).assert_outcomes(passed=2)
