"""End-to-end: a group's ephemeral_disk block and prevent_reschedule_on_lost
(docs/jobspec.md) with one server and two clients on 127.0.0.1.

sticky: each new version's allocation replaces the previous one on the same
node and finds what the previous ones wrote in alloc/data and local/ (the
agent moved it).  migrate: with the old node ineligible the new version
lands on the other one, whose agent fetches the data from the old node's
agent; a node that is gone leaves the new allocation empty, with an event
that says so.  prevent_reschedule_on_lost: a client killed with SIGKILL
leaves its allocation lost, and nothing replaces it."""
import json
import re
import time
import urllib.error
import urllib.request

import pytest

from test_control_plane import (GPUS, Agent, agents, api, cli, client_config,  # noqa: F401
                                job_allocs, node_name_of, nodes_ready, running_allocs,
                                server_config, wait_for, write_job)

TTL = 2  # server_config's heartbeat_ttl


def service(job_id, group_fields, version):
    # each start appends the version to a file in alloc/data and in local/
    return f'''
job "{job_id}" {{
  group "g" {{
    {group_fields}
    task "t" {{
      driver = "raw_exec"
      env {{
        RUN = "{version}"
      }}
      config {{
        command = "/bin/sh"
        args = ["-c", "echo $RUN >> $HERD_ALLOC_DIR/data/runs; echo $RUN >> $HERD_TASK_DIR/local/runs; exec sleep 300"]
      }}
      resources {{
        cpu = 100
        memory = 64
      }}
    }}
  }}
}}
'''


@pytest.fixture
def pair(agents, tmp_path):
    srv = Agent(tmp_path, 'server', ['-config', server_config(tmp_path),
                                     '-http-port', '0']).start()
    agents.append(srv)
    # each client's API on a port of its own: migrate reaches the old
    # node's agent there
    clients = {}
    for name in ('a', 'b'):
        c = Agent(tmp_path, name, ['-config', client_config(tmp_path), '-servers',
                                   f'127.0.0.1:{srv.port}', '-node', name, '-http-port', '0'],
                  gpu_file=GPUS / 't4-2x.json').start()
        agents.append(c)
        clients[name] = c
    wait_for(lambda: nodes_ready(srv.port, clients), 15, 'two ready nodes')
    return srv, clients


def run(port, tmp_path, job_id, text):
    r = cli(port, 'job', 'run', write_job(tmp_path, job_id, text), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def alloc_files(client, alloc_id):
    base = client.dir / 'data' / 'alloc' / alloc_id
    return base / 'alloc' / 'data' / 'runs', base / 't' / 'local' / 'runs'


def node_by_name(port, name):
    return next(n for n in api(port, '/v1/nodes') if n['name'] == name)


def events(port, alloc_id):
    a = api(port, f'/v1/allocation/{alloc_id}')
    return [e for t in a.get('task_states', {}).values() for e in t.get('events', [])]


def test_sticky_new_versions_land_on_the_node_and_find_the_data(pair, tmp_path):
    srv, clients = pair
    port = srv.port
    fields = 'ephemeral_disk {\n sticky = true\n }'
    run(port, tmp_path, 'st', service('st', fields, 'v0'))
    [first] = running_allocs(port, 'st')
    node = node_name_of(port, first)
    want = ['v0']
    data, local = alloc_files(clients[node], first['id'])
    wait_for(lambda: data.exists() and local.exists(), 10, 'the first run to write')
    # four new versions: with two equal nodes, a placement that ignored the
    # previous node would move at least once (15 times in 16)
    prev = first
    for v in ('v1', 'v2', 'v3', 'v4'):
        run(port, tmp_path, 'st', service('st', fields, v))
        cur = wait_for(lambda: [a for a in running_allocs(port, 'st') if a['id'] != prev['id']],
                       30, f'the allocation of {v}')[0]
        assert cur['previous_allocation'] == prev['id']
        assert node_name_of(port, cur) == node, f'{v} moved to another node'
        want.append(v)
        data, local = alloc_files(clients[node], cur['id'])
        wait_for(lambda: data.exists() and data.read_text().split() == want, 10,
                 f'alloc/data of {v} to hold every run')
        wait_for(lambda: local.exists() and local.read_text().split() == want, 10,
                 f'local/ of {v} to hold every run')
        # the previous allocation's dirs stayed, empty
        old_data, old_local = alloc_files(clients[node], prev['id'])
        assert not old_data.exists() and not old_local.exists()
        assert any(e['type'] == 'Sticky Disk' and prev['id'][:8] in e['message']
                   for e in events(port, cur['id']))
        prev = cur
    # a stopped allocation's replacement finds the data as well
    r = cli(port, 'alloc', 'stop', prev['id'], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    cur = wait_for(lambda: [a for a in running_allocs(port, 'st') if a['id'] != prev['id']],
                   30, 'the replacement of the stopped allocation')[0]
    assert node_name_of(port, cur) == node
    data, _ = alloc_files(clients[node], cur['id'])
    wait_for(lambda: data.exists() and data.read_text().split() == want + ['v4'], 10,
             'alloc/data of the replacement')


def test_without_sticky_the_data_stays_behind(pair, tmp_path):
    srv, clients = pair
    port = srv.port
    run(port, tmp_path, 'ns', service('ns', 'ephemeral_disk {\n size = 500\n }', 'v0'))
    [first] = running_allocs(port, 'ns')
    node = node_name_of(port, first)
    data, _ = alloc_files(clients[node], first['id'])
    wait_for(data.exists, 10, 'the first run to write')
    run(port, tmp_path, 'ns', service('ns', 'ephemeral_disk {\n size = 500\n }', 'v1'))
    cur = wait_for(lambda: [a for a in running_allocs(port, 'ns') if a['id'] != first['id']],
                   30, 'the allocation of v1')[0]
    data, _ = alloc_files(clients[node_name_of(port, cur)], cur['id'])
    wait_for(data.exists, 10, 'the second run to write')
    assert data.read_text().split() == ['v1']


def test_migrate_to_another_node(pair, tmp_path):
    srv, clients = pair
    port = srv.port
    fields = 'ephemeral_disk {\n migrate = true\n }'
    run(port, tmp_path, 'mg', service('mg', fields, 'v0'))
    [first] = running_allocs(port, 'mg')
    old = node_name_of(port, first)
    new = 'b' if old == 'a' else 'a'
    data, local = alloc_files(clients[old], first['id'])
    wait_for(lambda: data.exists() and local.exists(), 10, 'the first run to write')
    r = cli(port, 'node', 'eligibility', '-disable', first['node_id'])
    assert r.returncode == 0, r.stdout + r.stderr
    run(port, tmp_path, 'mg', service('mg', fields, 'v1'))
    cur = wait_for(lambda: [a for a in running_allocs(port, 'mg') if a['id'] != first['id']],
                   30, 'the allocation of v1')[0]
    assert cur['previous_allocation'] == first['id']
    assert node_name_of(port, cur) == new
    data, local = alloc_files(clients[new], cur['id'])
    wait_for(lambda: data.exists() and data.read_text().split() == ['v0', 'v1'], 15,
             'alloc/data to arrive on the new node')
    wait_for(lambda: local.exists() and local.read_text().split() == ['v0', 'v1'], 15,
             'local/ to arrive on the new node')
    assert any(e['type'] == 'Sticky Disk' and 'migrated' in e['message']
               for e in events(port, cur['id']))
    # nothing is left of the transfer beside the allocation dirs
    assert not list((clients[new].dir / 'data' / 'alloc').glob('.migrate-*'))


def test_migrate_refused_to_others(pair, tmp_path):
    """The old node hands the data only for the allocation that replaces
    it: another allocation's id, or none, is refused."""
    srv, clients = pair
    port = srv.port
    run(port, tmp_path, 'mr', service('mr', 'ephemeral_disk {\n migrate = true\n }', 'v0'))
    run(port, tmp_path, 'other', service('other', '', 'v0'))
    [a] = running_allocs(port, 'mr')
    [o] = running_allocs(port, 'other')
    node = node_by_name(port, node_name_of(port, a))
    base = f'http://{node["http_addr"]}/v1/client/allocation/{a["id"]}/migrate'
    for query, code in ((f'?for={o["id"]}', 403), ('', 400), (f'?for={a["id"]}', 403)):
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(base + query, timeout=30)
        assert e.value.code == code, query


def test_migrate_from_a_lost_node_starts_empty(pair, tmp_path):
    srv, clients = pair
    port = srv.port
    fields = 'ephemeral_disk {\n migrate = true\n }'
    run(port, tmp_path, 'ml', service('ml', fields, 'v0'))
    [first] = running_allocs(port, 'ml')
    old = node_name_of(port, first)
    new = 'b' if old == 'a' else 'a'
    wait_for(alloc_files(clients[old], first['id'])[0].exists, 10, 'the first run to write')
    clients[old].kill9()
    cur = wait_for(lambda: [a for a in running_allocs(port, 'ml') if a['id'] != first['id']],
                   TTL + 20, 'the replacement on the other node')[0]
    assert node_name_of(port, cur) == new
    data, _ = alloc_files(clients[new], cur['id'])
    wait_for(data.exists, 10, 'the replacement to write')
    assert data.read_text().split() == ['v0']
    assert any(e['type'] == 'Sticky Disk' and 'lost' in e['message'] and
               'empty' in e['message'] for e in events(port, cur['id']))


def test_size_counts_against_the_nodes_disk(pair, tmp_path):
    srv, clients = pair
    port = srv.port
    # far more than the data dir's filesystem holds: placed nowhere
    r = cli(port, 'job', 'run', write_job(tmp_path, 'huge', service(
        'huge', 'ephemeral_disk {\n size = 1000000000\n }', 'v0')), timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    assert 'disk exhausted on 2 nodes' in r.stdout
    # a size that fits is placed, and recorded on the allocation
    run(port, tmp_path, 'fits', service('fits', 'ephemeral_disk {\n size = 10\n }', 'v0'))
    [a] = running_allocs(port, 'fits')
    assert a['resources']['disk_mib'] == 10
    # no block: no disk counted
    run(port, tmp_path, 'none', service('none', '', 'v0'))
    [a] = running_allocs(port, 'none')
    assert 'disk_mib' not in a['resources']


def _secret(stdout):
    m = re.search(r'^Secret ID\s+=\s+([0-9a-f]{64})$', stdout, re.M)
    assert m, stdout
    return m.group(1)


def test_migrate_with_acl(agents, tmp_path, monkeypatch):
    """With ACL on, the agents migrate with their node tokens; a namespace
    token of another team (or none) is refused by the old node."""
    monkeypatch.delenv('HERD_TOKEN', raising=False)
    cfg = tmp_path / 'server.hcl'
    cfg.write_text(f'bind_addr = "127.0.0.1"\nserver {{\n  enabled = true\n'
                   f'  heartbeat_ttl = "{TTL}s"\n}}\nacl {{\n  enabled = true\n}}\n')
    srv = Agent(tmp_path, 'server', ['-config', str(cfg), '-http-port', '0']).start()
    agents.append(srv)
    port = srv.port
    r = cli(port, 'acl', 'bootstrap')
    assert r.returncode == 0, r.stderr
    mgmt = _secret(r.stdout)
    monkeypatch.setenv('HERD_TOKEN', mgmt)

    def get(path):
        req = urllib.request.Request(f'http://127.0.0.1:{port}{path}')
        req.add_header('X-Herd-Token', mgmt)
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())

    def running(job_id):
        return [a for a in get(f'/v1/job/{job_id}/allocations')
                if a['desired_status'] == 'run' and a['client_status'] == 'running']

    def node_name(alloc):
        return get(f'/v1/node/{alloc["node_id"]}')['name']

    for name, text in (('nodes', 'node {\n  policy = "write"\n}\n'),
                       ('team-b', 'namespace "team-b" {\n  policy = "submit"\n}\n')):
        f = tmp_path / f'{name}.hcl'
        f.write_text(text)
        r = cli(port, 'acl', 'policy', 'apply', name, str(f))
        assert r.returncode == 0, r.stderr
    tokens = {}
    for name in ('nodes', 'team-b'):
        r = cli(port, 'acl', 'token', 'create', '-name', name, '-policy', name)
        assert r.returncode == 0, r.stderr
        tokens[name] = _secret(r.stdout)
    clients = {}
    for name in ('a', 'b'):
        c_cfg = tmp_path / f'client-{name}.hcl'
        c_cfg.write_text('bind_addr = "127.0.0.1"\nclient {\n  enabled = true\n'
                         f'  servers = ["127.0.0.1:{port}"]\n'
                         f'  token = "{tokens["nodes"]}"\n}}\n'
                         'plugin "raw_exec" {\n  config {\n    enabled = true\n  }\n}\n')
        c = Agent(tmp_path, name, ['-config', str(c_cfg), '-node', name, '-http-port', '0'],
                  gpu_file=GPUS / 't4-2x.json').start()
        agents.append(c)
        clients[name] = c
    wait_for(lambda: len([n for n in get('/v1/nodes') if n['status'] == 'ready']) == 2, 20,
             'two ready nodes')
    fields = 'ephemeral_disk {\n migrate = true\n }'
    run(port, tmp_path, 'ma', service('ma', fields, 'v0'))
    [first] = running('ma')
    old = node_name(first)
    new = 'b' if old == 'a' else 'a'
    wait_for(alloc_files(clients[old], first['id'])[0].exists, 10, 'the first run to write')
    assert cli(port, 'node', 'eligibility', '-disable', first['node_id']).returncode == 0
    run(port, tmp_path, 'ma', service('ma', fields, 'v1'))
    cur = wait_for(lambda: [a for a in running('ma') if a['id'] != first['id']],
                   30, 'the allocation of v1')[0]
    assert node_name(cur) == new
    data, _ = alloc_files(clients[new], cur['id'])
    wait_for(lambda: data.exists() and data.read_text().split() == ['v0', 'v1'], 15,
             'alloc/data to arrive on the new node')
    # another team's token (or none) gets nothing from the old node
    old_addr = get('/v1/node/' + first['node_id'])['http_addr']
    url = f'http://{old_addr}/v1/client/allocation/{first["id"]}/migrate?for={cur["id"]}'
    for token in (tokens['team-b'], None):
        req = urllib.request.Request(url)
        if token:
            req.add_header('X-Herd-Token', token)
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=30)
        assert e.value.code in (403, 404), token


def test_prevent_reschedule_on_lost(pair, tmp_path):
    srv, clients = pair
    port = srv.port
    run(port, tmp_path, 'pl', service('pl', 'prevent_reschedule_on_lost = true', 'v0'))
    [a] = running_allocs(port, 'pl')
    clients[node_name_of(port, a)].kill9()
    wait_for(lambda: api(port, f'/v1/allocation/{a["id"]}')['client_status'] == 'lost',
             TTL + 15, 'the allocation to be lost')
    # the node-update evaluation has run once every evaluation of the job
    # is complete: nothing was placed by then
    wait_for(lambda: all(e['status'] == 'complete'
                         for e in api(port, '/v1/job/pl/evaluations')), 15,
             'the evaluations to complete')
    time.sleep(1)
    allocs = job_allocs(port, 'pl')
    assert [x['id'] for x in allocs] == [a['id']]
    assert allocs[0]['client_status'] == 'lost'
