"""How the package finds the netloom program: binary=, then $NETLOOM, then PATH."""

import os

import pytest

import netloom


def test_argument_then_environment_then_path(binary, tmp_path, monkeypatch):
    link = tmp_path / "bin" / "netloom"
    link.parent.mkdir()
    link.symlink_to(binary)
    monkeypatch.delenv("NETLOOM", raising=False)
    monkeypatch.setenv("PATH", str(link.parent))
    assert netloom.find_binary() == str(link)
    monkeypatch.setenv("NETLOOM", binary)
    assert netloom.find_binary() == binary
    assert netloom.find_binary(tmp_path / "bin" / "netloom") == str(link)
    assert netloom.version(link) == netloom.version()


def test_missing_binary_names_all_three_ways(tmp_path, monkeypatch):
    monkeypatch.delenv("NETLOOM", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(netloom.BinaryNotFound) as err:
        netloom.sim("x.toml", "pattern=pairs")
    assert all(way in str(err.value) for way in ("binary=", "$NETLOOM", "PATH"))
    monkeypatch.setenv("NETLOOM", os.fspath(tmp_path / "missing"))
    with pytest.raises(
        netloom.BinaryNotFound, match=r"\$NETLOOM names .*missing.*not an executable"
    ):
        netloom.find_binary()
