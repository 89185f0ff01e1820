"""End-to-end: variables (docs/api.md, "Variables"): herd var put|get|list|
purge and the API, check-and-set (409 with the current metadata), bad input
refused with nothing stored, a template that reads a variable with nomadVar
and nomadVarList and renders again when it changes (change_mode signal),
ACL variables blocks (403 without the capability, a path-scoped policy),
and a snapshot's save and restore keeping them.

Real agents on 127.0.0.1; no timing assertions (each wait polls with a
generous deadline)."""
import json
import os
import subprocess

import pytest

from conftest import HERD, REPO
from test_acl import call, secret_of
from test_control_plane import Agent, agents, api, cli, job_allocs, wait_for, write_job  # noqa: F401
from test_snapshot import start_server
from test_tasks import alloc_dir, start_dev


@pytest.fixture(autouse=True)
def no_ambient_token(monkeypatch):
    monkeypatch.delenv('HERD_TOKEN', raising=False)
    monkeypatch.delenv('HERD_NAMESPACE', raising=False)


def herd(port, *args, token=None, stdin=None):
    env = dict(os.environ, HERD_ADDR=f'http://127.0.0.1:{port}')
    if token:
        env['HERD_TOKEN'] = token
    return subprocess.run([str(HERD), *args], capture_output=True, text=True, env=env,
                          timeout=60, cwd=REPO, input=stdin)


def test_put_get_list_purge_and_cas(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    addr = f'127.0.0.1:{dev.port}'
    pw = tmp_path / 'pw.txt'
    pw.write_text('from-a-file\n')
    r = herd(dev.port, 'var', 'put', 'db/creds', 'user=app', f'password=@{pw}')
    assert r.returncode == 0, r.stderr
    r = herd(dev.port, 'var', 'get', '-item', 'password', 'db/creds')
    assert r.returncode == 0 and r.stdout == 'from-a-file\n\n', r.stdout
    r = herd(dev.port, 'var', 'get', '-json', 'db/creds')
    var = json.loads(r.stdout)
    assert var['items'] == {'user': 'app', 'password': 'from-a-file\n'}
    assert var['namespace'] == 'default' and var['path'] == 'db/creds'
    first = var['modify_index']

    # a list never carries the items, in the CLI or the API
    herd(dev.port, 'var', 'put', 'app/cfg', 'threads=4')
    r = herd(dev.port, 'var', 'list')
    assert r.returncode == 0 and 'db/creds' in r.stdout and 'app/cfg' in r.stdout
    assert 'from-a-file' not in r.stdout and 'app' in r.stdout
    r = herd(dev.port, 'var', 'list', '-json', 'db/')
    listed = json.loads(r.stdout)
    assert [v['path'] for v in listed] == ['db/creds'] and 'items' not in listed[0]
    status, body = call(addr, '/v1/vars?prefix=app')
    assert status == 200 and [v['path'] for v in body] == ['app/cfg']
    assert 'items' not in body[0]

    # check-and-set: 0 only if absent; the index read, else 409 with the current one
    r = herd(dev.port, 'var', 'put', '-cas', '0', 'db/creds', 'user=other')
    assert r.returncode == 1 and 'cas_conflict' in r.stderr, r.stderr
    status, body = call(addr, '/v1/var/db/creds?cas=1', method='PUT',
                        body={'items': {'user': 'other'}})
    assert status == 409 and body['conflict']['modify_index'] == first, body
    assert 'items' not in body['conflict']
    r = herd(dev.port, 'var', 'put', '-cas', str(first), 'db/creds', 'user=second')
    assert r.returncode == 0, r.stderr
    status, body = call(addr, '/v1/var/db/creds')
    assert status == 200 and body['items'] == {'user': 'second'}
    assert body['create_index'] == first and body['modify_index'] > first
    status, body = call(addr, '/v1/var/new/one?cas=0', method='PUT', body={'items': {'a': 'b'}})
    assert status == 200 and body['items'] == {'a': 'b'}

    # -in json: a variable as get -json prints it, arguments winning
    spec = tmp_path / 'var.json'
    spec.write_text(json.dumps({'path': 'from/file', 'items': {'a': '1', 'b': '2'}}))
    r = herd(dev.port, 'var', 'put', '-in', 'json', str(spec), 'b=3')
    assert r.returncode == 0, r.stderr
    assert call(addr, '/v1/var/from/file')[1]['items'] == {'a': '1', 'b': '3'}

    # bad input: 400 with the reason, nothing stored
    before = len(call(addr, '/v1/vars')[1])
    # an empty segment matches no API path at all (the router's 404)
    assert call(addr, '/v1/var/a//b', method='PUT', body={'items': {'k': 'v'}})[0] == 404
    for path, body in (('a/../b', {'items': {'k': 'v'}}),
                       ('ok', {'items': {}}),
                       ('ok', {'items': {'k': 1}}),
                       ('ok', {'items': {'bad key': 'v'}}),
                       ('ok', {'items': {'k': 'x' * (64 * 1024 + 1)}}),
                       ('ok', {'itemz': {'k': 'v'}}),
                       ('x' * 129, {'items': {'k': 'v'}})):
        status, answer = call(addr, f'/v1/var/{path}', method='PUT', body=body)
        assert status == 400, (path, status, answer)
        assert answer['error']['message'], answer
    status, answer = call(addr, '/v1/var/ok?namespace=nope', method='PUT',
                          body={'items': {'k': 'v'}})
    assert status == 400 and 'does not exist' in answer['error']['message']
    assert len(call(addr, '/v1/vars')[1]) == before
    r = herd(dev.port, 'var', 'put', 'a b', 'k=v')
    assert r.returncode == 1 and 'not one of' in r.stderr

    # purge: with a stale cas refused; then gone, 404
    idx = call(addr, '/v1/var/db/creds')[1]['modify_index']
    r = herd(dev.port, 'var', 'purge', '-cas', str(first), 'db/creds')
    assert r.returncode == 1 and 'cas_conflict' in r.stderr
    r = herd(dev.port, 'var', 'purge', '-cas', str(idx), 'db/creds')
    assert r.returncode == 0, r.stderr
    assert call(addr, '/v1/var/db/creds')[0] == 404
    r = herd(dev.port, 'var', 'get', 'db/creds')
    assert r.returncode == 1 and 'variable_not_found' in r.stderr
    assert call(addr, '/v1/var/db/creds', method='DELETE')[0] == 404


# At each SIGHUP the task appends what its rendered file says to alloc/hups.
VAR_JOB = '''
job "reader" {
  group "g" {
    task "r" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "trap 'cat \\"$NOMAD_TASK_DIR/local/db.txt\\" >> \\"$NOMAD_ALLOC_DIR/hups\\"' HUP; while :; do sleep 0.2; done"]
      }
      template {
        data          = "{{ with nomadVar \\"db/creds\\" }}pw={{ .password }}{{ else }}none{{ end }}\\n{{ range nomadVarList \\"db\\" }}{{ .Path }};{{ end }}\\n"
        destination   = "local/db.txt"
        change_mode   = "signal"
        change_signal = "SIGHUP"
      }
    }
  }
}
'''


def read(path):
    try:
        return path.read_text()
    except FileNotFoundError:
        return None


def test_template_reads_and_follows_a_variable(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    r = herd(dev.port, 'var', 'put', 'db/creds', 'password=first')
    assert r.returncode == 0, r.stderr
    # another namespace's variable of the same path is not the job's
    assert herd(dev.port, 'namespace', 'apply', 'other').returncode == 0
    r = herd(dev.port, 'var', 'put', '-namespace', 'other', 'db/creds', 'password=not-mine')
    assert r.returncode == 0, r.stderr
    r = cli(dev.port, 'job', 'run', '-detach', write_job(tmp_path, 'reader', VAR_JOB))
    assert r.returncode == 0, r.stdout + r.stderr

    def running():
        allocs = [a for a in job_allocs(dev.port, 'reader') if a['client_status'] == 'running']
        return allocs[0] if allocs else None
    a = wait_for(running, 60, 'the reader to run')
    out = alloc_dir(dev, a['id']) / 'r' / 'local' / 'db.txt'
    hups = alloc_dir(dev, a['id']) / 'alloc' / 'hups'
    assert out.read_text() == 'pw=first\ndb/creds;\n'

    # a put: rendered again, and the task signalled with the new file there
    r = herd(dev.port, 'var', 'put', 'db/creds', 'password=second')
    assert r.returncode == 0, r.stderr
    wait_for(lambda: read(out) == 'pw=second\ndb/creds;\n', 60, 'the template to follow the put')
    wait_for(lambda: read(hups) == 'pw=second\ndb/creds;\n', 60, 'the task to be signalled')
    # a new variable under the prefix, then the one read purged
    assert herd(dev.port, 'var', 'put', 'db/other', 'k=v').returncode == 0
    wait_for(lambda: read(out) == 'pw=second\ndb/creds;db/other;\n', 60, 'the list to grow')
    assert herd(dev.port, 'var', 'purge', 'db/creds').returncode == 0
    wait_for(lambda: read(out) == 'none\ndb/other;\n', 60, 'the template to see the purge')
    # signalled, not restarted
    st = api(dev.port, f'/v1/allocation/{a["id"]}')['task_states']['r']
    assert st['restarts'] == 0, st

    # a namespace that holds variables is not deleted (their secrets would
    # come back with a namespace of that name)
    r = herd(dev.port, 'namespace', 'delete', 'other')
    assert r.returncode == 1 and '1 variable(s) (db/creds' in r.stderr, r.stderr
    assert herd(dev.port, 'var', 'purge', '-namespace', 'other', 'db/creds').returncode == 0
    r = herd(dev.port, 'namespace', 'delete', 'other')
    assert r.returncode == 0, r.stderr


def test_template_function_names_are_known_at_submission(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    bad = VAR_JOB.replace('nomadVarList \\"db\\"', 'nomadVarList \\"db\\" \\"x\\"')
    r = cli(dev.port, 'job', 'validate', write_job(tmp_path, 'bad', bad))
    assert r.returncode != 0 and 'nomadVarList takes 0 or 1 argument, got 2' in r.stdout + r.stderr
    r = cli(dev.port, 'job', 'validate', write_job(tmp_path, 'good', VAR_JOB))
    assert r.returncode == 0, r.stdout + r.stderr
    ex = VAR_JOB.replace('nomadVar \\"db/creds\\"', 'nomadVarExists \\"db/creds\\"')
    r = cli(dev.port, 'job', 'validate', write_job(tmp_path, 'ex', ex))
    assert r.returncode != 0 and 'nomadVarExists: not supported' in r.stdout + r.stderr


def test_acl_variables_capabilities(agents, tmp_path):
    cfg = tmp_path / 'server.hcl'
    cfg.write_text('bind_addr = "127.0.0.1"\nserver {\n  enabled = true\n}\n'
                   'acl {\n  enabled = true\n}\n')
    srv = Agent(tmp_path, 'server', ['-config', str(cfg), '-http-port', '0']).start()
    agents.append(srv)
    addr = f'127.0.0.1:{srv.port}'
    wait_for(lambda: call(addr, '/v1/agent/health')[0] == 200, 10, 'the server')
    r = herd(srv.port, 'acl', 'bootstrap')
    assert r.returncode == 0, r.stderr
    mgmt = secret_of(r.stdout)
    assert herd(srv.port, 'namespace', 'apply', 'team-a', token=mgmt).returncode == 0
    for path in ('db/creds', 'ops/key'):
        r = herd(srv.port, 'var', 'put', '-namespace', 'team-a', path, 'k=v', token=mgmt)
        assert r.returncode == 0, r.stderr
    policies = {
        # namespace read: jobs yes, variable items no
        'reader': 'namespace "team-a" {\n  policy = "read"\n}\n',
        # a path-scoped rule: read and list under db/, nothing elsewhere
        'db': ('namespace "team-a" {\n  policy = "read"\n  variables {\n'
               '    path "db/*" {\n      capabilities = ["read", "list", "write"]\n    }\n'
               '    path "db/locked" {\n      capabilities = ["deny"]\n    }\n  }\n}\n'),
    }
    tokens = {}
    for name, text in policies.items():
        f = tmp_path / f'{name}.hcl'
        f.write_text(text)
        r = herd(srv.port, 'acl', 'policy', 'apply', name, str(f), token=mgmt)
        assert r.returncode == 0, r.stderr
        r = herd(srv.port, 'acl', 'token', 'create', '-name', name, '-policy', name, token=mgmt)
        assert r.returncode == 0, r.stderr
        tokens[name] = secret_of(r.stdout)

    reader, db = tokens['reader'], tokens['db']
    assert call(addr, '/v1/jobs?namespace=team-a', token=reader)[0] == 200
    for path in ('db/creds', 'ops/key', 'no/such'):
        status, body = call(addr, f'/v1/var/{path}?namespace=team-a', token=reader)
        assert status == 403 and body['error']['message'] == 'permission denied', body
    assert call(addr, '/v1/vars?namespace=team-a', token=reader) == (200, [])
    r = herd(srv.port, 'var', 'get', '-namespace', 'team-a', 'db/creds', token=reader)
    assert r.returncode == 1 and 'permission denied' in r.stderr

    status, body = call(addr, '/v1/var/db/creds?namespace=team-a', token=db)
    assert status == 200 and body['items'] == {'k': 'v'}
    assert call(addr, '/v1/var/ops/key?namespace=team-a', token=db)[0] == 403
    assert [v['path'] for v in call(addr, '/v1/vars?namespace=team-a', token=db)[1]] == \
        ['db/creds']
    r = herd(srv.port, 'var', 'put', '-namespace', 'team-a', 'db/new', 'k=1', token=db)
    assert r.returncode == 0, r.stderr
    r = herd(srv.port, 'var', 'put', '-namespace', 'team-a', 'db/locked', 'k=1', token=db)
    assert r.returncode == 1 and 'permission denied' in r.stderr
    r = herd(srv.port, 'var', 'put', '-namespace', 'team-a', 'ops/new', 'k=1', token=db)
    assert r.returncode == 1 and 'permission denied' in r.stderr
    # no destroy capability
    r = herd(srv.port, 'var', 'purge', '-namespace', 'team-a', 'db/new', token=db)
    assert r.returncode == 1 and 'permission denied' in r.stderr
    r = herd(srv.port, 'var', 'purge', '-namespace', 'team-a', 'db/new', token=mgmt)
    assert r.returncode == 0, r.stderr
    # a rule naming a capability that does not exist is refused
    f = tmp_path / 'bad.hcl'
    f.write_text('namespace "team-a" {\n  variables {\n    path "*" {\n'
                 '      capabilities = ["sudo"]\n    }\n  }\n}\n')
    r = herd(srv.port, 'acl', 'policy', 'apply', 'bad', str(f), token=mgmt)
    assert r.returncode != 0 and 'capability' in r.stdout + r.stderr


def test_snapshot_keeps_variables(agents, tmp_path):
    srv = start_server(agents, tmp_path)
    r = cli(srv.port, 'var', 'put', 'db/creds', 'password=kept')
    assert r.returncode == 0, r.stderr
    snap = tmp_path / 'backup.db'
    r = cli(srv.port, 'operator', 'snapshot', 'save', str(snap))
    assert r.returncode == 0, r.stderr
    r = cli(srv.port, 'operator', 'snapshot', 'inspect', '-json', str(snap))
    assert json.loads(r.stdout)['records']['variable'] == 1, r.stdout
    assert cli(srv.port, 'var', 'purge', 'db/creds').returncode == 0
    assert cli(srv.port, 'var', 'put', 'later', 'k=v').returncode == 0
    port = srv.port
    srv.stop()
    data = srv.dir / 'data' / 'server'
    r = cli(port, 'operator', 'snapshot', 'restore', '-data-dir', str(data), str(snap))
    assert r.returncode == 0, r.stderr
    again = start_server(agents, tmp_path, 'server', port)
    r = cli(port, 'var', 'get', '-item', 'password', 'db/creds')
    assert r.returncode == 0 and r.stdout == 'kept\n', r.stdout + r.stderr
    assert cli(port, 'var', 'get', 'later').returncode == 1

    # the items are sealed in the store: not in the state's files in clear
    again.stop()
    for f in data.iterdir():
        if f.name.startswith('state.db'):
            assert b'kept' not in f.read_bytes(), f
    assert b'kept' not in snap.read_bytes()
    key = data / 'variables.key'
    assert key.stat().st_mode & 0o777 == 0o600 and key.stat().st_size == 32

    # the snapshot restored into another data dir, whose server made its
    # own key: the variable says which key it needs; with the key, it opens
    other = tmp_path / 'other' / 'data' / 'server'
    other.mkdir(parents=True)
    r = cli(port, 'operator', 'snapshot', 'restore', '-data-dir', str(other), str(snap))
    assert r.returncode == 0, r.stderr
    cfg = tmp_path / 'other.hcl'
    cfg.write_text('bind_addr = "127.0.0.1"\nserver {\n  enabled = true\n}\n')
    srv2 = Agent(tmp_path, 'other', ['-config', str(cfg), '-http-port', '0']).start()
    agents.append(srv2)
    wait_for(lambda: api(srv2.port, '/v1/agent/health'), 10, 'the other server')
    r = cli(srv2.port, 'var', 'get', 'db/creds')
    assert r.returncode == 1 and 'restore the key file' in r.stderr, r.stderr
    p2 = srv2.port
    srv2.stop()
    (other / 'variables.key').write_bytes(key.read_bytes())
    srv3 = Agent(tmp_path, 'other', ['-config', str(cfg), '-http-port', str(p2)], port=p2).start()
    agents.append(srv3)
    wait_for(lambda: api(p2, '/v1/agent/health'), 10, 'the other server again')
    r = cli(p2, 'var', 'get', '-item', 'password', 'db/creds')
    assert r.returncode == 0 and r.stdout == 'kept\n', r.stdout + r.stderr


def keyring(port):
    r = cli(port, 'operator', 'keyring', 'list', '-json')
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_keyring_rotate_reseal_remove(agents, tmp_path):
    """herd operator keyring: a rotation re-seals every variable with a new
    key and keeps the old one for what still needs it (a snapshot taken
    before); a key in use or active is not removed; a restart reads the
    whole ring."""
    srv = start_server(agents, tmp_path)
    port = srv.port
    for path, item in (('db/creds', 'password=one'), ('app/cfg', 'threads=4')):
        assert cli(port, 'var', 'put', path, item).returncode == 0
    first = keyring(port)['keys']
    assert len(first) == 1 and first[0]['active'] and first[0]['variables'] == 2
    old_id = first[0]['key_id']
    snap = tmp_path / 'before.db'
    assert cli(port, 'operator', 'snapshot', 'save', str(snap)).returncode == 0

    r = cli(port, 'operator', 'keyring', 'rotate', '-json')
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    new_id = out['key_id']
    assert out['previous_key_id'] == old_id and new_id != old_id
    assert out['resealed'] == 2 and out['unreadable'] == []
    ring = {k['key_id']: k for k in keyring(port)['keys']}
    assert ring[old_id]['variables'] == 0 and not ring[old_id]['active']
    assert ring[new_id]['variables'] == 2 and ring[new_id]['active']
    r = cli(port, 'var', 'get', '-item', 'password', 'db/creds')
    assert r.returncode == 0 and r.stdout == 'one\n', r.stdout + r.stderr
    data = srv.dir / 'data' / 'server'
    kept = data / 'variables.keys' / f'{old_id}.key'
    assert kept.stat().st_mode & 0o777 == 0o600 and kept.stat().st_size == 32
    old_key = kept.read_bytes()
    assert (data / 'variables.key').read_bytes() != old_key

    # nothing to do a second time; the active key is not removed
    r = cli(port, 'operator', 'keyring', 'reseal')
    assert r.returncode == 0 and '0 variables re-sealed' in r.stdout, r.stdout
    r = cli(port, 'operator', 'keyring', 'remove', new_id)
    assert r.returncode == 1 and 'active key' in r.stderr, r.stderr
    r = cli(port, 'operator', 'keyring', 'remove', '0123456789abcdef')
    assert r.returncode == 1 and 'no key' in r.stderr, r.stderr

    # the restart reads both keys; then the old one goes
    srv.stop()
    srv = start_server(agents, tmp_path, 'server', port)
    assert {k['key_id'] for k in keyring(port)['keys']} == {old_id, new_id}
    r = cli(port, 'operator', 'keyring', 'remove', old_id)
    assert r.returncode == 0, r.stderr
    assert not kept.exists()
    assert [k['key_id'] for k in keyring(port)['keys']] == [new_id]

    # the snapshot from before the rotation: its variables need the old
    # key, which the list names as missing; the key put back, they open,
    # and a reseal moves them to the active key, after which it may go
    srv.stop()
    r = cli(port, 'operator', 'snapshot', 'restore', '-data-dir', str(data), str(snap))
    assert r.returncode == 0, r.stderr
    srv = start_server(agents, tmp_path, 'server', port)
    assert keyring(port)['missing'] == [{'key_id': old_id, 'variables': 2}]
    r = cli(port, 'var', 'get', 'db/creds')
    assert r.returncode == 1 and old_id in r.stderr, r.stderr
    r = cli(port, 'operator', 'keyring', 'reseal')
    assert r.returncode == 1 and 'db/creds' in r.stderr, r.stderr
    srv.stop()
    kept.write_bytes(old_key)
    kept.chmod(0o600)
    srv = start_server(agents, tmp_path, 'server', port)
    r = cli(port, 'var', 'get', '-item', 'password', 'db/creds')
    assert r.returncode == 0 and r.stdout == 'one\n', r.stdout + r.stderr
    r = cli(port, 'operator', 'keyring', 'reseal', '-json')
    assert r.returncode == 0 and json.loads(r.stdout)['resealed'] == 2, r.stdout
    assert cli(port, 'operator', 'keyring', 'remove', old_id).returncode == 0
    r = cli(port, 'var', 'get', '-item', 'threads', 'app/cfg')
    assert r.returncode == 0 and r.stdout == '4\n', r.stdout + r.stderr
