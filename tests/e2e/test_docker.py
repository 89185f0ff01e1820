"""The docker driver against a real Docker Engine.

The `engine` fixture (docker_engine.py, shared through conftest.py) starts
its own dockerd and imports a busybox image.  Then test_docker_engine
(tests/unit/drivers/test_docker_engine.c) runs the driver's checks against it: a container task and its logs, a memory
hog OOM-killed, an alloc dir file read inside the container, GPUs refused
plainly on an engine without the NVIDIA runtime, recover after the handle
is forgotten, garbage collection.  The exact GPU create requests are
checked against a fake engine in tests/unit/drivers/test_docker.c.
The whole agent runs docker tasks in test_tasks_docker.py."""
import os
import subprocess
import time

import pytest

from conftest import BUILD
from docker_engine import IMAGE

ENGINE_TEST = BUILD / 'tests/unit/drivers/test_docker_engine'


def test_docker_driver_on_a_real_engine(engine):
    if not ENGINE_TEST.exists():
        pytest.fail(f'{ENGINE_TEST} not built: build first (ninja -C {BUILD})')
    work = engine['dir'] / 'allocs'
    work.mkdir()
    env = dict(os.environ, HERD_DOCKER_SOCKET=engine['socket'], HERD_DOCKER_IMAGE=IMAGE,
               HERD_DOCKER_WORK=str(work), CMOCKA_MESSAGE_OUTPUT='TAP')
    t0 = time.monotonic()
    r = subprocess.run([str(ENGINE_TEST)], env=env, capture_output=True, text=True, timeout=100)
    took = time.monotonic() - t0
    out = r.stdout + r.stderr
    assert r.returncode == 0, f'{out}\n-- dockerd log --\n{engine["log_tail"]()}'
    assert out.count('\nok ') + out.startswith('ok ') >= 5, out
    assert 'not ok' not in out, out
    print(f'docker engine checks took {took:.1f}s')
