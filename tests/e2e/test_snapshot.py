"""End-to-end: backups of the server's state (herd operator snapshot
save|inspect|restore, GET /v1/operator/snapshot) and the data dir's lock,
with real agents on 127.0.0.1."""
import json
import sqlite3

from test_control_plane import (Agent, agents, api, cli, server_config,  # noqa: F401
                                wait_for, write_job)


def batch_job(job_id):
    return f'''
job "{job_id}" {{
  type = "service"
  group "g" {{
    task "t" {{
      driver = "raw_exec"
      config {{
        command = "/bin/sleep"
        args = ["300"]
      }}
      resources {{
        cpu = 10
        memory = 10
      }}
    }}
  }}
}}
'''


def start_server(agents, tmp_path, name='server', port=None):
    srv = Agent(tmp_path, name, ['-config', server_config(tmp_path), '-http-port',
                                 str(port or 0)], port=port)
    srv.start()
    agents.append(srv)
    wait_for(lambda: api(srv.port, '/v1/agent/health'), 10, 'the server')
    return srv


def job_ids(port):
    return sorted(j['id'] for j in api(port, '/v1/jobs'))


def test_save_inspect_restore_roundtrip(agents, tmp_path):
    srv = start_server(agents, tmp_path)
    for name in ('keep-a', 'keep-b'):
        r = cli(srv.port, 'job', 'run', '-detach', write_job(tmp_path, name, batch_job(name)))
        assert r.returncode == 0, r.stderr
    snap = tmp_path / 'backup.db'
    r = cli(srv.port, 'operator', 'snapshot', 'save', str(snap))
    assert r.returncode == 0, r.stderr
    assert 'Saved the state as of index' in r.stdout
    assert not (tmp_path / 'backup.db.part').exists()
    assert snap.stat().st_mode & 0o077 == 0, 'a snapshot holds token hashes: owner only'

    r = cli(srv.port, 'operator', 'snapshot', 'inspect', '-json', str(snap))
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info['records']['job'] == 2
    assert info['records']['job_version'] == 2
    assert info['index'] > 0
    # nothing of the server's private copy is left in its data dir
    assert not list((srv.dir / 'data' / 'server').glob('snapshot-*'))

    # after the backup: one more job, one purged
    r = cli(srv.port, 'job', 'run', '-detach', write_job(tmp_path, 'later', batch_job('later')))
    assert r.returncode == 0, r.stderr
    r = cli(srv.port, 'job', 'stop', '-purge', 'keep-b')
    assert r.returncode == 0, r.stderr
    assert job_ids(srv.port) == ['keep-a', 'later']

    data = srv.dir / 'data' / 'server'
    # a running server's data dir is locked: no restore under it
    r = cli(srv.port, 'operator', 'snapshot', 'restore', '-data-dir', str(data), str(snap))
    assert r.returncode == 1
    assert 'in use by another herd server' in r.stderr and 'stop it first' in r.stderr

    port = srv.port
    srv.stop()
    r = cli(port, 'operator', 'snapshot', 'restore', '-data-dir', str(data), str(snap))
    assert r.returncode == 0, r.stderr
    kept = [p for p in data.iterdir() if p.name.startswith('state.db.replaced-')
            and not p.name.endswith(('-wal', '-shm'))]
    assert len(kept) == 1, list(data.iterdir())
    # the replaced state is still a store of its own, with what it had
    con = sqlite3.connect(f'file:{kept[0]}?mode=ro', uri=True)
    try:
        assert sorted(r[0] for r in con.execute('SELECT id FROM jobs')) == ['keep-a', 'later']
    finally:
        con.close()

    again = start_server(agents, tmp_path, 'server', port)
    assert again.port == port
    assert job_ids(port) == ['keep-a', 'keep-b']
    # it goes on from the restored index: new changes get higher ones
    r = cli(port, 'job', 'run', '-detach', write_job(tmp_path, 'after', batch_job('after')))
    assert r.returncode == 0, r.stderr
    assert api(port, '/v1/job/after')['modify_index'] > info['index']


def test_second_server_on_one_data_dir_is_refused(agents, tmp_path):
    srv = start_server(agents, tmp_path)
    # port=0: the refused one never says a port; do not wait for it
    other = Agent(tmp_path, 'server', ['-config', server_config(tmp_path), '-http-port', '0'],
                  port=0)
    other.start()
    agents.append(other)
    assert other.proc.wait(timeout=15) != 0
    assert 'in use by another herd server' in other.log()
    assert api(srv.port, '/v1/agent/health')


def test_bad_snapshots_are_refused(agents, tmp_path):
    srv = start_server(agents, tmp_path)
    snap = tmp_path / 'good.db'
    assert cli(srv.port, 'operator', 'snapshot', 'save', str(snap)).returncode == 0
    truncated = tmp_path / 'truncated.db'
    truncated.write_bytes(snap.read_bytes()[:len(snap.read_bytes()) // 2])
    not_sqlite = tmp_path / 'job.hcl'
    not_sqlite.write_text(batch_job('x'))
    other = tmp_path / 'other.db'
    sqlite3.connect(other).execute('CREATE TABLE t (x)').connection.commit()
    for bad, why in ((truncated, 'damaged'), (not_sqlite, 'not SQLite'),
                     (other, 'not a herd store'), (tmp_path / 'missing.db', 'cannot open')):
        r = cli(srv.port, 'operator', 'snapshot', 'inspect', str(bad))
        assert r.returncode == 1 and why in r.stderr, (bad, r.stderr)
        target = tmp_path / 'restore-target'
        target.mkdir(exist_ok=True)
        r = cli(srv.port, 'operator', 'snapshot', 'restore', '-data-dir', str(target), str(bad))
        assert r.returncode == 1 and why in r.stderr, (bad, r.stderr)
        assert not (target / 'state.db').exists()
    r = cli(srv.port, 'operator', 'snapshot', 'restore', str(snap))
    assert r.returncode == 2 and '-data-dir' in r.stderr


def test_snapshot_needs_a_management_token(agents, tmp_path, monkeypatch):
    import os
    import re
    import subprocess
    from conftest import HERD, REPO
    monkeypatch.delenv('HERD_TOKEN', raising=False)
    cfg = tmp_path / 'acl-server.hcl'
    cfg.write_text('bind_addr = "127.0.0.1"\nserver {\n  enabled = true\n}\n'
                   'acl {\n  enabled = true\n}\n')
    srv = Agent(tmp_path, 'server', ['-config', str(cfg), '-http-port', '0']).start()
    agents.append(srv)
    wait_for(lambda: api(srv.port, '/v1/agent/health'), 10, 'the server')

    def herd(*args, token=None):
        env = dict(os.environ, HERD_ADDR=f'http://127.0.0.1:{srv.port}')
        if token:
            env['HERD_TOKEN'] = token
        return subprocess.run([str(HERD), *args], capture_output=True, text=True, env=env,
                              timeout=60, cwd=REPO)

    r = herd('acl', 'bootstrap')
    assert r.returncode == 0, r.stderr
    mgmt = re.search(r'^Secret ID\s+=\s+([0-9a-f]{64})$', r.stdout, re.M).group(1)
    policy = tmp_path / 'ns.hcl'
    policy.write_text('namespace "default" {\n  policy = "submit"\n}\n')
    assert herd('acl', 'policy', 'apply', 'ns', str(policy), token=mgmt).returncode == 0
    r = herd('acl', 'token', 'create', '-name', 'dev', '-policy', 'ns', token=mgmt)
    user = re.search(r'^Secret ID\s+=\s+([0-9a-f]{64})$', r.stdout, re.M).group(1)

    snap = tmp_path / 'acl.db'
    for token in (None, user):
        r = herd('operator', 'snapshot', 'save', str(snap), token=token)
        assert r.returncode == 1 and 'HTTP 403' in r.stderr, r.stderr
        assert not snap.exists() and not (tmp_path / 'acl.db.part').exists()
    r = herd('operator', 'snapshot', 'save', str(snap), token=mgmt)
    assert r.returncode == 0, r.stderr
    r = herd('operator', 'snapshot', 'inspect', '-json', str(snap))
    import urllib.request
    req = urllib.request.Request(f'http://127.0.0.1:{srv.port}/v1/acl/tokens',
                                 headers={'X-Herd-Token': mgmt})
    with urllib.request.urlopen(req, timeout=30) as resp:
        tokens = json.loads(resp.read())
    assert len(tokens) >= 2   # bootstrap's and dev's at least
    # the tokens and the store's record that bootstrap happened
    assert json.loads(r.stdout)['records']['acl_token'] == len(tokens) + 1
