"""The live FreeKill tests need Debian's lua5.4 with lua-socket and lua-filesystem, and (for games)
FreeKill's cores: $SGS_FREEKILL_CORES, a list separated by the path separator (':'), or one core in
$SGS_FREEKILL_CORE (each a .tar.xz archive or a directory). Every test that plays games runs once per core. They skip
without on a developer's machine, and fail without in CI (CI=true), where .ci/run provides them all (88a912f1,
v0.5.20 and v0.5.22)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import NoReturn

import pytest

LUA = "lua5.4"


def lua_ready() -> str | None:
    """None when lua5.4 with socket and lfs can run; else why not."""
    if shutil.which(LUA) is None:
        return "lua5.4 is not installed (Debian: apt-get install lua5.4 lua-socket lua-filesystem)"
    probe = subprocess.run([LUA, "-e", 'require "socket"; require "lfs"'], capture_output=True, text=True,
                           check=False)
    if probe.returncode != 0:
        return "lua5.4 lacks lua-socket or lua-filesystem: " + probe.stderr.strip()[:200]
    return None


def unavailable(why: str) -> NoReturn:
    """Skip a test whose peer is not here, except in CI, which must run it (.ci/run installs and names it)."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{why} (CI=true: .ci/run provides it, so the live FreeKill tests must run)")
    pytest.skip(why)


@pytest.fixture(scope="session")
def lua() -> str:
    why = lua_ready()
    if why:
        unavailable(why)
    return LUA


def cores() -> list[str]:
    """The cores named by the environment, in order (none: one entry, "", which skips or fails)."""
    value = os.environ.get("SGS_FREEKILL_CORES") or os.environ.get("SGS_FREEKILL_CORE") or ""
    return [c for c in value.split(os.pathsep) if c] or [""]


def core_id(value: str) -> str:
    """A test id for a core: its archive's or folder's name without the usual prefix and suffix."""
    name = Path(value).name.removeprefix("freekill-core-").removesuffix(".tar.xz")
    return name or "no-core"


@pytest.fixture(scope="session", params=cores(), ids=core_id)
def core(request: pytest.FixtureRequest, lua: str) -> Path:
    value: str = request.param
    if not value:
        unavailable("SGS_FREEKILL_CORES (or SGS_FREEKILL_CORE) is not set (FreeKill's cores: .tar.xz archives or "
                    "directories)")
    path = Path(value)
    if not path.exists():
        unavailable(f"the FreeKill core {value} does not exist")
    return path


@pytest.fixture(scope="session")
def fk_root(tmp_path_factory: pytest.TempPathFactory, core: Path) -> Path:
    """One server root for the session: the core extracted once (each game copies the tap afresh)."""
    from tests.freekill_live.host import install

    root = tmp_path_factory.mktemp("fkroot")
    install(core, root)
    return root
