"""A real Docker Engine for the end-to-end tests (test_docker.py,
test_tasks_docker.py): the `engine` fixture (conftest.py makes it available
to every test module).

It starts its own dockerd (Debian's docker.io) with its data, exec root and
socket in a temporary directory and no iptables or bridge, so it touches
nothing of the machine's own docker.  An image is made without a registry:
busybox-static's applets in a tar, imported (POST /images/create?fromSrc=-);
the tar is cached under ~/.cache/herd-test/ (XDG_CACHE_HOME).  One engine per
test module.

Skips, with the reason, only where no engine can run here (no dockerd, not
root, or dockerd fails to start: its log's last lines are shown)."""
import hashlib
import http.client
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tarfile
import tempfile
import time

import pytest

CACHE = pathlib.Path(os.environ.get('XDG_CACHE_HOME', pathlib.Path.home() / '.cache')) / 'herd-test'
IMAGE = 'herd-test/busybox:1'


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__('docker', timeout=60)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(60)
        self.sock.connect(self.path)


def api(sock, method, path, body=None, headers=None):
    c = UnixHTTP(sock)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def busybox_rootfs():
    """A tar of busybox-static with a link per applet (cached)."""
    bb = shutil.which('busybox')
    if not bb:
        pytest.skip('docker tests: busybox is not installed (scripts/install installs '
                    'busybox-static)')
    digest = hashlib.sha256(pathlib.Path(bb).read_bytes()).hexdigest()[:16]
    tar = CACHE / f'busybox-rootfs-{digest}.tar'
    if tar.exists():
        return tar
    CACHE.mkdir(parents=True, exist_ok=True)
    applets = subprocess.run([bb, '--list'], capture_output=True, text=True,
                             check=True).stdout.split()
    tmp = tar.with_suffix('.tmp')
    with tarfile.open(tmp, 'w') as t:
        for d in ('bin', 'tmp', 'proc', 'sys', 'dev', 'etc'):
            info = tarfile.TarInfo(d)
            info.type = tarfile.DIRTYPE
            info.mode = 0o1777 if d == 'tmp' else 0o755
            t.addfile(info)
        t.add(bb, arcname='bin/busybox')
        for a in applets:
            if a == 'busybox':
                continue
            info = tarfile.TarInfo(f'bin/{a}')
            info.type = tarfile.SYMTYPE
            info.linkname = 'busybox'
            t.addfile(info)
    tmp.rename(tar)
    return tar


@pytest.fixture(scope='module')
def engine():
    dockerd = shutil.which('dockerd') or '/usr/sbin/dockerd'
    if not os.path.exists(dockerd):
        pytest.skip('docker tests: dockerd is not installed (scripts/install installs docker.io)')
    if os.geteuid() != 0:
        pytest.skip('docker tests: dockerd needs root here (no rootless setup)')
    rootfs = busybox_rootfs()
    # short: a unix socket path has at most 107 bytes
    tmp = pathlib.Path(tempfile.mkdtemp(prefix='herd-dk-', dir='/tmp'))
    sock = str(tmp / 'docker.sock')
    log = open(tmp / 'dockerd.log', 'wb')
    proc = subprocess.Popen([dockerd, '--iptables=false', '--ip6tables=false', '--bridge=none',
                             '--data-root', str(tmp / 'data'), '--exec-root', str(tmp / 'exec'),
                             '--pidfile', str(tmp / 'docker.pid'), '-H', f'unix://{sock}'],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def log_tail():
        lines = (tmp / 'dockerd.log').read_text(errors='replace').splitlines()
        return '\n'.join(lines[-15:])

    def stop():
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)

    deadline = time.monotonic() + 30
    while True:
        if proc.poll() is not None:
            tail = log_tail()
            stop()
            pytest.skip(f'docker tests: dockerd exited with {proc.returncode}; its log ends:\n{tail}')
        try:
            if api(sock, 'GET', '/_ping')[0] == 200:
                break
        except OSError:
            pass
        if time.monotonic() > deadline:
            tail = log_tail()
            stop()
            pytest.skip(f'docker tests: dockerd did not answer in 30 s; its log ends:\n{tail}')
        time.sleep(0.2)
    repo, tag = IMAGE.split(':')
    status, body = api(sock, 'POST', f'/images/create?fromSrc=-&repo={repo}&tag={tag}',
                       body=rootfs.read_bytes(), headers={'Content-Type': 'application/x-tar'})
    if status != 200 or b'"error"' in body:
        tail = log_tail()
        stop()
        pytest.fail(f'importing the busybox image failed: HTTP {status} {body[:300]!r}\n{tail}')
    yield {'socket': sock, 'dir': tmp, 'log_tail': log_tail}
    stop()


def containers(sock, label=None):
    """The engine's containers (all states), optionally with a label "k=v"."""
    q = '/containers/json?all=1'
    if label:
        q += '&filters=' + json.dumps({'label': [label]}).replace(' ', '')
    status, body = api(sock, 'GET', q)
    assert status == 200, body
    return json.loads(body)
