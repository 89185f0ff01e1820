"""End-to-end: the spread block on one server and three clients with
simulated GPUs, two in datacenter dc1 and one in dc2.  Without a spread the
scheduler packs a service of count 4 onto one node; spread over
${node.datacenter} places it 2+2 (the one dc2 node takes two), targets
75/25 place 3+1, and `herd job plan` shows each placement's spread part.
A second evaluation (count raised to 6) counts the allocations already
running: 3+3."""
import json

import pytest

from test_control_plane import (GPUS, Agent, agents, api, cli, job_allocs,  # noqa: F401
                                nodes_ready, server_config, wait_for, write_job)


def spread_job(job_id, count, spread=''):
    return f'''
job "{job_id}" {{
  type = "service"
  datacenters = ["dc1", "dc2"]
  {spread}
  group "g" {{
    count = {count}
    task "t" {{
      driver = "raw_exec"
      config {{
        command = "/bin/sh"
        args = ["-c", "exec sleep 300"]
      }}
      resources {{
        cpu = 100
        memory = 64
      }}
    }}
  }}
}}
'''


EVEN = 'spread {\n    attribute = "${node.datacenter}"\n  }'
TARGETS = ('spread {\n    attribute = "${node.datacenter}"\n    weight = 100\n'
           '    target "dc1" {\n      percent = 75\n    }\n'
           '    target "dc2" {\n      percent = 25\n    }\n  }')


def start_dc_client(agents, tmp_path, name, port, dc):
    cfg = tmp_path / f'{name}.hcl'
    cfg.write_text(f'datacenter = "{dc}"\nclient {{\n  enabled = true\n}}\n'
                   'plugin "raw_exec" {\n  config {\n    enabled = true\n  }\n}\n')
    spec = json.loads((GPUS / 't4-2x.json').read_text())
    for i, g in enumerate(spec['gpus']):
        g['uuid'] = f'GPU-{name}-{i:02d}000000-0000-0000-0000-000000000000'[:40]
    gpus = tmp_path / f'{name}-gpus.json'
    gpus.write_text(json.dumps(spec))
    c = Agent(tmp_path, name, ['-config', str(cfg), '-servers', f'127.0.0.1:{port}',
                               '-node', name], gpu_file=gpus).start()
    agents.append(c)
    return c


@pytest.fixture
def two_dcs(agents, tmp_path):
    srv = Agent(tmp_path, 'server', ['-config', server_config(tmp_path),
                                     '-http-port', '0']).start()
    agents.append(srv)
    names = {'a1': 'dc1', 'a2': 'dc1', 'b1': 'dc2'}
    for name, dc in names.items():
        start_dc_client(agents, tmp_path, name, srv.port, dc)
    nodes = wait_for(lambda: nodes_ready(srv.port, names), 15, 'three ready nodes')
    assert {n['name']: n['datacenter'] for n in nodes.values()} == names
    return srv, {n['id']: n['datacenter'] for n in nodes.values()}


def per_dc(port, job_id, dc_of, want):
    """The job's live allocations per datacenter, once there are want."""
    def live():
        a = [x for x in job_allocs(port, job_id) if x['desired_status'] == 'run'
             and x['client_status'] in ('pending', 'running')]
        return len(a) == want and a
    allocs = wait_for(live, 20, f'{want} allocations of {job_id}')
    count = {}
    for a in allocs:
        count[dc_of[a['node_id']]] = count.get(dc_of[a['node_id']], 0) + 1
    return count


def test_spread_over_datacenters(two_dcs, tmp_path):
    srv, dc_of = two_dcs
    port = srv.port

    # Without a spread, the 4 instances pack onto one node (the test can fail).
    r = cli(port, 'job', 'run', '-detach', write_job(tmp_path, 'packed', spread_job('packed', 4)))
    assert r.returncode == 0, r.stdout + r.stderr
    assert max(per_dc(port, 'packed', dc_of, 4).values()) >= 3
    assert cli(port, 'job', 'stop', '-purge', 'packed').returncode == 0

    # The plan shows the spread part of each placement's score.
    even = write_job(tmp_path, 'even', spread_job('even', 4, EVEN))
    r = cli(port, 'job', 'plan', even)
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'SPREAD' in r.stdout, r.stdout
    plan = json.loads(cli(port, 'job', 'plan', '-json', even).stdout)
    assert all('spread_score' in p for p in plan['placements']), plan
    assert sorted(dc_of[p['node_id']] for p in plan['placements']) == ['dc1', 'dc1', 'dc2', 'dc2']

    # Even: 2+2, although dc1 has two nodes and dc2 one.
    r = cli(port, 'job', 'run', '-detach', even)
    assert r.returncode == 0, r.stdout + r.stderr
    assert per_dc(port, 'even', dc_of, 4) == {'dc1': 2, 'dc2': 2}

    # Targets 75/25 of 4: 3+1.
    r = cli(port, 'job', 'run', '-detach',
            write_job(tmp_path, 'targets', spread_job('targets', 4, TARGETS)))
    assert r.returncode == 0, r.stdout + r.stderr
    assert per_dc(port, 'targets', dc_of, 4) == {'dc1': 3, 'dc2': 1}

    # A later evaluation counts what runs: count 6 spreads 3+3.
    r = cli(port, 'job', 'run', '-detach', write_job(tmp_path, 'even6', spread_job('even', 6, EVEN)))
    assert r.returncode == 0, r.stdout + r.stderr
    assert per_dc(port, 'even', dc_of, 6) == {'dc1': 3, 'dc2': 3}
