"""Shared fixtures of the end-to-end tests: they run the real herd binary.

HERD_BIN names the binary (scripts/test sets it); the default is the normal
build's.  HERD_BUILD names the build folder (for the simulated NVML); without
it, the folder HERD_BIN was built in (BUILD/src/cli/herd), else build/.
The `engine` fixture (a real dockerd with a busybox image) lives in
docker_engine.py and is re-exported here for every module."""
import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


def _build_dir():
    if os.environ.get('HERD_BUILD'):
        return pathlib.Path(os.environ['HERD_BUILD'])
    herd = os.environ.get('HERD_BIN')
    if herd:
        # A binary at BUILD/src/cli/herd names its build folder, so that
        # HERD_BIN=build-x/src/cli/herd tests build-x's simulated NVML too.
        parts = pathlib.Path(herd).resolve().parents
        if len(parts) >= 3 and parts[0].name == 'cli' and parts[1].name == 'src':
            return parts[2]
    return REPO / 'build'


BUILD = _build_dir()
HERD = pathlib.Path(os.environ.get('HERD_BIN', BUILD / 'src/cli/herd'))


@pytest.fixture(scope='session')
def herd_bin():
    if not HERD.exists():
        pytest.fail(f'herd binary not found at {HERD}: build first (scripts/install)')
    return str(HERD)


@pytest.fixture
def herd(herd_bin):
    """Runs herd with arguments; returns the CompletedProcess (text mode)."""
    def run(*args, stdin=None, env=None, timeout=60):
        full_env = dict(os.environ)
        if env:
            full_env.update(env)
        return subprocess.run([herd_bin, *args], input=stdin, capture_output=True,
                              text=True, env=full_env, timeout=timeout, cwd=REPO)
    return run


from docker_engine import engine  # noqa: E402,F401  (a fixture, shared)
