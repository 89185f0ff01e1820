"""End-to-end: backups of a PostgreSQL store (docs/operations.md, "PostgreSQL
store"): `herd operator snapshot save` from a server on PostgreSQL writes the
same SQLite store file as an SQLite server does; `restore -postgres` refuses
while a server holds the leadership lock, puts the snapshot back with the
servers stopped (keeping what it replaced), and a server started afterwards
serves the restored state and goes on from its index.  A private cluster
(scripts/pg-test-cluster): PostgreSQL must be installed; fails without it."""
import json
import os
import subprocess

from conftest import HERD, REPO
from test_control_plane import Agent, agents, api, wait_for, write_job  # noqa: F401
from test_ha import free_port, leading, pg, psql, server_config  # noqa: F401
from test_snapshot import batch_job


def herd(addr, *args):
    env = dict(os.environ, HERD_ADDR=f'http://127.0.0.1:{addr}' if addr else '')
    return subprocess.run([str(HERD), *args], capture_output=True, text=True, env=env,
                          timeout=60, cwd=REPO)


def start(agents, tmp_path, name, conninfo):
    port = free_port()
    s = Agent(tmp_path, name, ['-config', server_config(tmp_path, name, conninfo),
                               '-http-port', str(port)], port=port).start()
    agents.append(s)
    wait_for(lambda: leading(s), 20, f'{name} to lead')
    return s


def job_ids(port):
    return sorted(j['id'] for j in api(port, '/v1/jobs'))


def test_postgres_snapshot_save_and_restore(agents, tmp_path, pg):
    srv = start(agents, tmp_path, 's1', pg)
    for name in ('keep-a', 'keep-b'):
        r = herd(srv.port, 'job', 'run', '-detach', write_job(tmp_path, name, batch_job(name)))
        assert r.returncode == 0, r.stderr
    snap = tmp_path / 'backup.db'
    r = herd(srv.port, 'operator', 'snapshot', 'save', str(snap))
    assert r.returncode == 0, r.stderr
    assert snap.stat().st_mode & 0o077 == 0
    r = herd(None, 'operator', 'snapshot', 'inspect', '-json', str(snap))
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info['records']['job'] == 2 and info['index'] > 0
    assert int(psql(pg, "SELECT value FROM meta WHERE key = 'index'")) >= info['index']

    # after the backup: one more job, one purged
    r = herd(srv.port, 'job', 'run', '-detach', write_job(tmp_path, 'later', batch_job('later')))
    assert r.returncode == 0, r.stderr
    r = herd(srv.port, 'job', 'stop', '-purge', 'keep-b')
    assert r.returncode == 0, r.stderr
    assert job_ids(srv.port) == ['keep-a', 'later']

    # refused while a server leads, naming it
    r = herd(None, 'operator', 'snapshot', 'restore', '-postgres', pg, str(snap))
    assert r.returncode == 1
    assert f'127.0.0.1:{srv.port}' in r.stderr and 'stop every server' in r.stderr
    assert job_ids(srv.port) == ['keep-a', 'later']

    srv.stop()
    r = herd(None, 'operator', 'snapshot', 'restore', '-postgres', pg, str(snap))
    assert r.returncode == 0, r.stderr
    assert f'as of index {info["index"]}' in r.stdout
    kept = list(tmp_path.glob('backup.db.replaced-*'))
    assert len(kept) == 1, r.stdout
    r = herd(None, 'operator', 'snapshot', 'inspect', '-json', str(kept[0]))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)['index'] > info['index']

    srv2 = start(agents, tmp_path, 's2', pg)
    assert job_ids(srv2.port) == ['keep-a', 'keep-b']
    # the index goes on from the restored one
    r = herd(srv2.port, 'job', 'run', '-detach', write_job(tmp_path, 'after', batch_job('after')))
    assert r.returncode == 0, r.stderr
    assert 'after' in job_ids(srv2.port)
    assert int(psql(pg, "SELECT value FROM meta WHERE key = 'index'")) > info['index']
