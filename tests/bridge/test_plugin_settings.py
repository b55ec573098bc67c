"""Where the DRA plugin puts things, from the agent's settings: ``--cdi-dir`` (the CDI
directories the container runtime reads, ours last) and ``--pod-uid`` (rolling-update socket names)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dra_bridge.bridge.cli import main
from dra_bridge.bridge.node_plugin import PluginPaths
from dra_bridge.bridge.settings import Settings


def test_cdi_dirs_default_to_the_runtimes_and_our_specs_go_to_the_last() -> None:
    settings = Settings.from_args([], {}).validate(need_node=False)
    paths = PluginPaths.from_settings(settings)
    assert paths.cdi_dirs == (Path("/etc/cdi"), Path("/var/run/cdi"))
    assert paths.spec_dir == Path("/var/run/cdi")


@pytest.mark.parametrize(("given", "dirs"), [
    ("/node/cdi", ("/node/cdi",)),
    ("/etc/cdi, /run/cdi/", ("/etc/cdi", "/run/cdi")),
], ids=["one", "two"])
def test_cdi_dir_flag_and_twin(given: str, dirs: tuple[str, ...]) -> None:
    for settings in (Settings.from_args(["--cdi-dir", given], {}), Settings.from_env({"DRA_BRIDGE_CDI_DIR": given})):
        paths = PluginPaths.from_settings(settings.validate(need_node=False))
        assert paths.cdi_dirs == tuple(Path(d) for d in dirs)
        assert paths.spec_dir == Path(dirs[-1])


@pytest.mark.parametrize("given", ["", "relative/cdi", "/a,,/b", "/a,/a"], ids=["empty", "relative", "hole", "twice"])
def test_a_bad_cdi_dir_is_one_line_naming_the_flag(given: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--node-name", "n", "--cdi-dir", given]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--cdi-dir/DRA_BRIDGE_CDI_DIR" in err
