"""Where the DRA plugin puts things, from the agent's settings: ``--cdi-dir`` (the CDI
directories the container runtime reads, ours last) and ``--pod-uid`` (rolling-update socket names)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dra_bridge.bridge.cli import main
from dra_bridge.bridge.kubeletplugin.node_plugin import PluginPaths
from dra_bridge.bridge.settings import Settings


def test_cdi_dirs_default_to_the_runtimes_and_our_specs_go_to_the_last() -> None:
    settings = Settings.from_args([], {}).validate(need_node=False)
    paths = PluginPaths.from_settings(settings)
    assert paths.cdi_dirs == (Path("/etc/cdi"), Path("/var/run/cdi"))
    assert paths.spec_dir == Path("/var/run/cdi")


@pytest.mark.parametrize(
    ("given", "dirs"),
    [
        ("/node/cdi", ("/node/cdi",)),
        ("/etc/cdi, /run/cdi/", ("/etc/cdi", "/run/cdi")),
    ],
    ids=["one", "two"],
)
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


POD_UIDS = ("6f1c2a3b-0000-4000-8000-00000000000a", "6f1c2a3b-0000-4000-8000-00000000000b")


def test_pod_uid_names_both_sockets_like_the_helpers_rolling_update() -> None:
    settings = Settings.from_args(["--kubelet-dir", "/k", "--pod-uid", POD_UIDS[0]], {}).validate(need_node=False)
    paths = PluginPaths.from_settings(settings)
    assert paths.registration_socket == Path(f"/k/plugins_registry/dra-bridge.io-{POD_UIDS[0]}-reg.sock")
    assert paths.dra_socket == Path(f"/k/plugins/dra-bridge.io/dra-{POD_UIDS[0]}.sock")
    env = Settings.from_env({"DRA_BRIDGE_POD_UID": POD_UIDS[1]}).validate(need_node=False)
    assert PluginPaths.from_settings(env).dra_socket.name == f"dra-{POD_UIDS[1]}.sock"
    plain = PluginPaths.from_settings(Settings(kubelet_dir="/k"))
    assert (plain.registration_socket.name, plain.dra_socket.name) == ("dra-bridge.io-reg.sock", "dra.sock")


@pytest.mark.parametrize("given", ["../x", "a/b", "UPPER case", "x" * 64], ids=["dots", "slash", "space", "long"])
def test_a_pod_uid_that_cannot_name_a_socket_is_refused(given: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--node-name", "n", "--pod-uid", given]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--pod-uid/DRA_BRIDGE_POD_UID" in err
