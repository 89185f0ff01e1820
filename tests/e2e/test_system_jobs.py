"""End-to-end: system and sysbatch jobs (docs/jobspec.md, "System jobs") on
one server and real clients on 127.0.0.1 with simulated GPUs: one
allocation on every node that matches, a client that joins gets one, a
node whose meta does not match gets none, a client killed with -9 loses
its allocation (lost, not moved), a sysbatch job runs once per node and
completes, a new version rolls node by node."""
from test_control_plane import (Agent, agents, api, cli, job_allocs,  # noqa: F401
                                nodes_ready, server_config, start_client, wait_for,
                                write_job)

TTL = 2  # server_config's heartbeat_ttl
# one node at a time, each replacement healthy for 1s and run for 1s first
ROLL_UPDATE = 'update {\n max_parallel = 1\n stagger = "1s"\n min_healthy_time = "1s"\n }'


def system_job(job_id, jtype='system', command='sleep 300', extra='', version_env='v1'):
    return f'''
job "{job_id}" {{
  type = "{jtype}"
  {extra}
  group "agent" {{
    task "t" {{
      driver = "raw_exec"
      env {{
        VERSION = "{version_env}"
      }}
      config {{
        command = "/bin/sh"
        args = ["-c", "{command}"]
      }}
      resources {{
        cpu = 100
        memory = 64
      }}
    }}
  }}
}}
'''


def live_by_node(port, job_id):
    """{node name: [allocation]} of the job's live allocations."""
    names = {n['id']: n['name'] for n in api(port, '/v1/nodes')}
    out = {}
    for a in job_allocs(port, job_id):
        if a['desired_status'] == 'run' and a['client_status'] in ('pending', 'running'):
            out.setdefault(names[a['node_id']], []).append(a)
    return out


def running_on(port, job_id, names):
    live = live_by_node(port, job_id)
    return (set(live) == set(names) and
            all(len(v) == 1 and v[0]['client_status'] == 'running' for v in live.values()))


def test_system_job_lands_on_every_matching_node(agents, tmp_path):
    srv = Agent(tmp_path, 'server', ['-config', server_config(tmp_path), '-http-port', '0']).start()
    agents.append(srv)
    port = srv.port
    start_client(agents, tmp_path, 'h100', port, 'h100-sxm-8x-nvlink.json')
    start_client(agents, tmp_path, 't4', port, 't4-2x.json')
    wait_for(lambda: nodes_ready(port, ['h100', 't4']), 15, 'two ready nodes')

    # Every node but the one the constraint rules out.
    job = write_job(tmp_path, 'exporter', system_job(
        'exporter', extra='constraint {\n attribute = "${node.unique.name}"\n'
                          ' operator = "!="\n value = "t4"\n }'))
    r = cli(port, 'job', 'run', job)
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'on node h100: running' in r.stdout
    assert live_by_node(port, 'exporter').keys() == {'h100'}

    # A plain system job: one per node, and `job run` returns once each runs.
    r = cli(port, 'job', 'run', write_job(tmp_path, 'everywhere', system_job('everywhere')))
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'on node h100: running' in r.stdout and 'on node t4: running' in r.stdout
    assert '2 allocations running' in r.stdout
    assert running_on(port, 'everywhere', ['h100', 't4'])

    # A client that joins gets one of each job it matches.
    start_client(agents, tmp_path, 'a100', port, 'a100-80gb-mig-7x1g.json')
    wait_for(lambda: running_on(port, 'everywhere', ['h100', 't4', 'a100']), 20,
             'the new client to run the system job')
    wait_for(lambda: running_on(port, 'exporter', ['h100', 'a100']), 20,
             'the new client to run the constrained system job')
    assert 't4' not in live_by_node(port, 'exporter')

    # kill -9 a client: its allocation is lost with it and moves nowhere.
    victim = [c for c in agents if c.name == 'a100'][0]
    [lost] = live_by_node(port, 'everywhere')['a100']
    victim.kill9()
    wait_for(lambda: api(port, f'/v1/allocation/{lost["id"]}')['client_status'] == 'lost',
             TTL + 15, 'the killed client\'s allocation to be lost')
    # the evaluation of the node's loss has run once the job's index moved past it
    wait_for(lambda: all(e['status'] != 'pending'
                         for e in api(port, '/v1/job/everywhere/evaluations')),
             10, 'the node-update evaluation to finish')
    assert running_on(port, 'everywhere', ['h100', 't4'])
    assert len([a for a in job_allocs(port, 'everywhere')
                if a['desired_status'] == 'run']) == 3

    # Back: it runs one again.
    victim.start()
    wait_for(lambda: running_on(port, 'everywhere', ['h100', 't4', 'a100']), 30,
             'the client back to run the system job again')

    r = cli(port, 'job', 'status', 'everywhere')
    assert r.returncode == 0 and 'system' in r.stdout and 'running' in r.stdout


def test_sysbatch_runs_once_per_node_and_a_new_version_rolls(agents, tmp_path):
    srv = Agent(tmp_path, 'server', ['-config', server_config(tmp_path), '-http-port', '0']).start()
    agents.append(srv)
    port = srv.port
    for name, gpus in (('n1', 't4-2x.json'), ('n2', 't4-2x.json'), ('n3', 't4-2x.json')):
        start_client(agents, tmp_path, name, port, gpus)
    wait_for(lambda: nodes_ready(port, ['n1', 'n2', 'n3']), 15, 'three ready nodes')

    r = cli(port, 'job', 'run', write_job(tmp_path, 'clean', system_job(
        'clean', jtype='sysbatch', command='echo cleaned > $HERD_ALLOC_DIR/done')))
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'job "clean": complete' in r.stdout
    allocs = [a for a in job_allocs(port, 'clean') if a['desired_status'] == 'run']
    names = {api(port, f'/v1/node/{a["node_id"]}')['name'] for a in allocs}
    assert names == {'n1', 'n2', 'n3'}
    assert all(a['client_status'] == 'complete' for a in allocs)
    assert api(port, '/v1/job/clean')['status'] == 'dead'
    # a node joining later owes it nothing (Nomad's rule)
    start_client(agents, tmp_path, 'n4', port, 't4-2x.json')
    wait_for(lambda: nodes_ready(port, ['n4']), 15, 'the fourth node')
    r = cli(port, 'job', 'status', 'clean')
    assert r.returncode == 0 and 'dead' in r.stdout
    assert len(job_allocs(port, 'clean')) == 3

    # A system job's new version rolls one node at a time.
    job = write_job(tmp_path, 'roll', system_job(
        'roll', extra=ROLL_UPDATE))
    r = cli(port, 'job', 'run', job)
    assert r.returncode == 0, r.stdout + r.stderr
    assert running_on(port, 'roll', ['n1', 'n2', 'n3', 'n4'])
    job = write_job(tmp_path, 'roll', system_job(
        'roll', extra=ROLL_UPDATE, version_env='v2'))
    r = cli(port, 'job', 'run', '-detach', job)
    assert r.returncode == 0, r.stdout + r.stderr
    def rolled():
        new = [a for a in job_allocs(port, 'roll')
               if a['desired_status'] == 'run' and a['job_version'] == 1]
        return len(new) == 4 and all(a['client_status'] == 'running' for a in new) and new
    new = wait_for(rolled, 60, 'every node to run version 1')
    # one node at a time: each replacement was placed only once the one
    # before it had run for stagger and was healthy (the stored times, not
    # the test's)
    new.sort(key=lambda a: a['create_time'])
    for before, after in zip(new, new[1:]):
        assert after['create_time'] >= before['start_time'] + 1_000_000_000, (before, after)
        assert after['create_time'] >= before['deployment_status']['timestamp'], (before, after)
    assert running_on(port, 'roll', ['n1', 'n2', 'n3', 'n4'])
    stopped = [a for a in job_allocs(port, 'roll') if a['job_version'] == 0]
    assert len(stopped) == 4 and all(a['desired_status'] == 'stop' for a in stopped)
    # each replacement stayed on the node of the allocation it replaced
    by_id = {a['id']: a for a in job_allocs(port, 'roll')}
    for a in by_id.values():
        if a['job_version'] == 1:
            assert by_id[a['previous_allocation']]['node_id'] == a['node_id']
