"""The live FreeKill tests need Debian's lua5.4 with lua-socket and lua-filesystem, and (for games)
FreeKill's core named by $SGS_FREEKILL_CORE (the .tar.xz archive or a directory); they skip without on a
developer's machine, and fail without in CI (CI=true), where .ci/run provides both."""

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


@pytest.fixture(scope="session")
def core(lua: str) -> Path:
    value = os.environ.get("SGS_FREEKILL_CORE")
    if not value:
        unavailable("SGS_FREEKILL_CORE is not set (FreeKill's core: the .tar.xz archive or a directory)")
    path = Path(value)
    if not path.exists():
        unavailable(f"SGS_FREEKILL_CORE={value} does not exist")
    return path


@pytest.fixture(scope="session")
def fk_root(tmp_path_factory: pytest.TempPathFactory, core: Path) -> Path:
    """One server root for the session: the core extracted once (each game copies the tap afresh)."""
    from tests.freekill_live.host import install

    root = tmp_path_factory.mktemp("fkroot")
    install(core, root)
    return root
