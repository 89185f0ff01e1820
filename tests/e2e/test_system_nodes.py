"""End-to-end: system jobs as a node changes under them and as a new version
rolls out (docs/jobspec.md, "System jobs"): one server and real clients on
127.0.0.1 with simulated GPUs.

- a node whose meta no longer matches the job's constraint (its agent
  restarted with another meta) has its allocation stopped, the reason said,
  and gets one again once it matches;
- a GPU that turns unhealthy (fallen off the bus in the simulator) stops the
  system allocation holding it, which is placed again on the node's other GPU;
- update { max_parallel = 1 } rolls a system job node by node through a
  deployment, each replacement after the one before turned healthy; a version
  that fails stops the rollout and auto_revert brings the stable one back.

Orders are read from the stored records, never from how long something took."""
import json
import shutil

from test_control_plane import (GPUS, Agent, agents, api, cli, job_allocs,  # noqa: F401
                                nodes_ready, server_config, wait_for, write_job)


def client_with(agents, tmp_path, name, port, gpu_file, role):
    """A client whose config gives it meta { role }; its GPU description is a
    copy the test may change."""
    cfg = tmp_path / f'{name}.hcl'
    cfg.write_text('client {\n  enabled = true\n  meta {\n    role = "%s"\n  }\n}\n'
                   'plugin "raw_exec" {\n  config {\n    enabled = true\n  }\n}\n' % role)
    gpus = tmp_path / f'{name}-gpus.json'
    if not gpus.exists():
        shutil.copy(GPUS / gpu_file, gpus)
    c = Agent(tmp_path, name, ['-config', str(cfg), '-servers', f'127.0.0.1:{port}',
                               '-node', name], gpu_file=gpus).start()
    agents.append(c)
    return c


def set_role(tmp_path, name, role):
    cfg = tmp_path / f'{name}.hcl'
    cfg.write_text(cfg.read_text().replace('role = "gpu"', f'role = "{role}"')
                   .replace('role = "cpu"', f'role = "{role}"'))


def server(agents, tmp_path):
    srv = Agent(tmp_path, 'server', ['-config', server_config(tmp_path), '-http-port', '0']).start()
    agents.append(srv)
    return srv


def live_on(port, job, node_id):
    return [a for a in job_allocs(port, job) if a['desired_status'] == 'run' and
            a['node_id'] == node_id and a['client_status'] in ('pending', 'running')]


def running_on(port, job, node_id):
    got = live_on(port, job, node_id)
    return len(got) == 1 and got[0]['client_status'] == 'running' and got[0]


MONITOR = '''
job "mon" {
  type = "system"
  constraint {
    attribute = "${meta.role}"
    value     = "gpu"
  }
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
      resources {
        cpu    = 100
        memory = 32
        device "nvidia/gpu" {
          count = 1
        }
      }
    }
  }
}
'''


def test_node_that_stops_matching_loses_its_allocation(agents, tmp_path):
    srv = server(agents, tmp_path)
    port = srv.port
    a = client_with(agents, tmp_path, 'a', port, 't4-2x.json', 'gpu')
    client_with(agents, tmp_path, 'b', port, 't4-2x.json', 'gpu')
    ids = {n: x['id'] for n, x in wait_for(lambda: nodes_ready(port, ['a', 'b']), 15,
                                           'two ready nodes').items()}
    r = cli(port, 'job', 'run', write_job(tmp_path, 'mon', MONITOR))
    assert r.returncode == 0, r.stdout + r.stderr
    first = wait_for(lambda: running_on(port, 'mon', ids['a']), 30, 'the job on a')
    assert wait_for(lambda: running_on(port, 'mon', ids['b']), 30, 'the job on b')

    # a's agent comes back with another role: the job is not a's any more
    a.stop()
    set_role(tmp_path, 'a', 'cpu')
    a.start()
    wait_for(lambda: api(port, f'/v1/node/{ids["a"]}')['meta'].get('role') == 'cpu', 20,
             'a to register with its new meta')
    stopped = wait_for(lambda: (lambda x: x if x['client_status'] == 'complete' else None)(
        api(port, f'/v1/allocation/{first["id"]}')), 30, 'a\'s allocation to stop')
    assert stopped['desired_status'] == 'stop'
    assert stopped['desired_description'].startswith('node no longer matches the job: '), stopped
    assert stopped['desired_description'] == (
        'node no longer matches the job: constraint ${meta.role} = gpu filtered 1 node'), stopped
    assert not live_on(port, 'mon', ids['a'])
    assert running_on(port, 'mon', ids['b'])
    # not the job's: no failure, the evaluation completed
    evals = sorted(api(port, '/v1/job/mon/evaluations'), key=lambda e: e['create_index'])
    assert evals[-1]['status'] == 'complete', evals[-1]
    r = cli(port, 'alloc', 'status', first['id'])
    assert r.returncode == 0 and 'node no longer matches the job' in r.stdout, r.stdout

    # back to gpu: placed there again
    a.stop()
    set_role(tmp_path, 'a', 'gpu')
    a.start()
    again = wait_for(lambda: running_on(port, 'mon', ids['a']), 30, 'the job on a again')
    assert again['id'] != first['id']

    # the GPU it holds falls off the bus (unhealthy, said by a heartbeat):
    # stopped, and placed again on a's other GPU
    held = again['resources']['devices'][0]['id']
    sim = tmp_path / 'a-gpus.json'
    desc = json.loads(sim.read_text())
    [gpu] = [g for g in desc['gpus'] if g['uuid'] == held]
    gpu['lost'] = True
    tmp = tmp_path / 'a-gpus.json.new'
    tmp.write_text(json.dumps(desc))
    tmp.rename(sim)  # the simulator reads a whole file or the last one
    gone = wait_for(lambda: (lambda x: x if x['desired_status'] == 'stop' else None)(
        api(port, f'/v1/allocation/{again["id"]}')), 30, 'the allocation on the bad GPU to stop')
    assert 'node no longer matches the job: device ' in gone['desired_description'], gone
    assert 'unhealthy' in gone['desired_description'], gone
    moved = wait_for(lambda: running_on(port, 'mon', ids['a']), 30, 'the job on a\'s other GPU')
    assert moved['resources']['devices'][0]['id'] != held
    assert moved['previous_allocation'] == again['id']


ROLL = '''
job "roll" {
  type = "system"
  update {
    max_parallel     = 1
    min_healthy_time = "1s"
    healthy_deadline = "20s"
    progress_deadline = "1m"
    stagger          = "0s"
    auto_revert      = true
  }
  group "g" {
    restart {
      attempts = 0
      mode     = "fail"
    }
    task "t" {
      driver = "raw_exec"
      env {
        WHICH = "WHICH_VALUE"
      }
      config {
        command = "/bin/sh"
        args    = ["-c", "COMMAND"]
      }
      resources {
        cpu    = 100
        memory = 32
      }
    }
  }
}
'''


def roll_job(tmp_path, which, command='sleep 600'):
    return write_job(tmp_path, 'roll', ROLL.replace('WHICH_VALUE', which)
                     .replace('COMMAND', command))


def deployment_of(port, job, version, statuses):
    def look():
        return [d for d in api(port, f'/v1/job/{job}/deployments')
                if d['job_version'] == version and d['status'] in statuses]
    return wait_for(look, 90, f'the deployment of version {version} to be {statuses}',
                    step=0.2)[0]


def test_system_rollout_is_health_gated_and_reverts(agents, tmp_path):
    srv = server(agents, tmp_path)
    port = srv.port
    for name in ('n1', 'n2', 'n3'):
        client_with(agents, tmp_path, name, port, 't4-2x.json', 'gpu')
    wait_for(lambda: nodes_ready(port, ['n1', 'n2', 'n3']), 15, 'three ready nodes')
    r = cli(port, 'job', 'run', roll_job(tmp_path, 'one'), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'successful' in r.stdout, r.stdout
    d0 = deployment_of(port, 'roll', 0, ('successful',))
    assert d0['groups']['g']['desired_total'] == 3

    # version 1: one node at a time, each after the one before was healthy;
    # `job run` follows the deployment
    r = cli(port, 'job', 'run', roll_job(tmp_path, 'two'), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'successful' in r.stdout, r.stdout
    d1 = deployment_of(port, 'roll', 1, ('successful',))
    assert d1['groups']['g'] == dict(d1['groups']['g'], desired_total=3, placed_allocs=3,
                                     healthy_allocs=3, unhealthy_allocs=0)
    new = sorted([a for a in job_allocs(port, 'roll') if a['job_version'] == 1],
                 key=lambda a: a['create_time'])
    assert len(new) == 3 and all(a['deployment_id'] == d1['id'] for a in new)
    for prev, nxt in zip(new, new[1:]):
        assert nxt['create_time'] >= prev['deployment_status']['timestamp'], (prev, nxt)
    # each replaced on the node of the allocation it replaced, in node order
    by_id = {a['id']: a for a in job_allocs(port, 'roll')}
    assert all(by_id[a['previous_allocation']]['node_id'] == a['node_id'] for a in new)
    assert [a['node_id'] for a in new] == sorted(a['node_id'] for a in new)

    # a version that fails at once: its first node fails, the deployment
    # fails, nothing more is replaced, and the job goes back to version 1
    r = cli(port, 'job', 'run', roll_job(tmp_path, 'three', 'exit 1'), timeout=120)
    assert r.returncode != 0, r.stdout + r.stderr
    d2 = deployment_of(port, 'roll', 2, ('failed',))
    assert 'rolling back to job version 1' in d2['status_description'], d2
    assert d2['groups']['g']['unhealthy_allocs'] == 1
    assert len([a for a in job_allocs(port, 'roll') if a['job_version'] == 2]) == 1
    deployment_of(port, 'roll', 3, ('successful',))
    job = api(port, '/v1/job/roll')
    assert job['version'] == 3
    assert job['groups'][0]['tasks'][0]['env']['WHICH'] == 'two'
    live = wait_for(lambda: (lambda a: a if len(a) == 3 and all(
        x['client_status'] == 'running' and x['job_version'] == 3 for x in a) else None)(
        [a for a in job_allocs(port, 'roll') if a['desired_status'] == 'run']),
        60, 'every node to run version 3')
    # the two nodes version 2 never reached kept their allocations
    assert len({a['id'] for a in live} & {a['id'] for a in new}) == 2
