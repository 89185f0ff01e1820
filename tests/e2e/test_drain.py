"""End-to-end: node drains with a deadline and the migrate block (docs/operations.md,
"Draining and eligibility"): one server and two clients on 127.0.0.1.

Orders are asserted from what the server recorded (creation times, health stamps,
the drain's deadline), never from how long something took."""
import pytest

from test_control_plane import (GPUS, Agent, agents, api, cli, job_allocs,  # noqa: F401
                                server_config, start_client, nodes_ready, wait_for,
                                write_job)

S = 1_000_000_000


def service_job(job_id, count=3, extra=''):
    return f'''
job "{job_id}" {{
  group "g" {{
    count = {count}
    migrate {{
      max_parallel     = 1
      min_healthy_time = "1s"
      {extra}
    }}
    task "t" {{
      driver = "raw_exec"
      config {{
        command = "/bin/sleep"
        args    = ["300"]
      }}
      resources {{
        cpu    = 100
        memory = 32
      }}
    }}
  }}
}}
'''


def batch_job(job_id, seconds):
    return f'''
job "{job_id}" {{
  type = "batch"
  group "g" {{
    task "t" {{
      driver = "raw_exec"
      config {{
        command = "/bin/sleep"
        args    = ["{seconds}"]
      }}
      resources {{
        cpu    = 100
        memory = 32
      }}
    }}
  }}
}}
'''


@pytest.fixture
def two(agents, tmp_path):
    """A server and clients a and b; returns (server, {name: node id})."""
    srv = Agent(tmp_path, 'server', ['-config', server_config(tmp_path),
                                     '-http-port', '0']).start()
    agents.append(srv)
    clients = {n: start_client(agents, tmp_path, n, srv.port, 't4-2x.json') for n in ('a', 'b')}
    nodes = wait_for(lambda: nodes_ready(srv.port, clients), 15, 'two ready nodes')
    return srv, {n: nodes[n]['id'] for n in clients}


def run_on_a(port, ids, tmp_path, job_id, text):
    """Runs a job with every allocation on node a (b ineligible meanwhile)."""
    r = cli(port, 'node', 'eligibility', '-disable', ids['b'])
    assert r.returncode == 0, r.stderr
    r = cli(port, 'job', 'run', '-detach', write_job(tmp_path, job_id, text))
    assert r.returncode == 0, r.stdout + r.stderr
    count = 3 if 'count = 3' in text else 1
    wait_for(lambda: len(live(port, job_id, 'running')) == count, 30, f'{job_id} to run')
    assert {a['node_id'] for a in live(port, job_id)} == {ids['a']}
    r = cli(port, 'node', 'eligibility', '-enable', ids['b'])
    assert r.returncode == 0, r.stderr


def live(port, job_id, status=None):
    return [a for a in job_allocs(port, job_id) if a['desired_status'] == 'run' and
            a['client_status'] in ((status,) if status else ('pending', 'running'))]


def node(port, node_id):
    return api(port, f'/v1/node/{node_id}')


def drain_done(port, node_id):
    n = node(port, node_id)
    return not n['drain'] and n.get('last_drain', {}).get('status') == 'complete' and n


def test_service_migrates_one_at_a_time(two, tmp_path):
    srv, ids = two
    port = srv.port
    run_on_a(port, ids, tmp_path, 'web', service_job('web'))
    old = {a['id'] for a in live(port, 'web')}
    # followed by the CLI until the drain completes
    r = cli(port, 'node', 'drain', '-deadline', '10m', ids['a'], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count('told to migrate') == 3, r.stdout
    assert 'drain complete' in r.stdout
    n = node(port, ids['a'])
    assert n['eligibility'] == 'ineligible' and 'drain_strategy' not in n
    assert n['last_drain']['ended_at'] >= n['last_drain']['started_at'] > 0
    allocs = job_allocs(port, 'web')
    repl = sorted((a for a in allocs if a.get('previous_allocation') in old),
                  key=lambda a: a['create_time'])
    assert len(repl) == 3 and all(a['node_id'] == ids['b'] for a in repl)
    assert all(a['drain_migration'] for a in repl)
    for a in allocs:
        if a['id'] in old:
            assert a['desired_status'] == 'stop'
            assert a['desired_transition']['migrate'] is True
            assert 'draining' in a['desired_description']
    # one at a time: each next one was stopped (its replacement created)
    # only once the previous replacement had been healthy for 1s
    for prev, nxt in zip(repl, repl[1:]):
        ready = prev['deployment_status']['ready_since']
        assert nxt['create_time'] >= ready + 1 * S, (prev, nxt)


def test_batch_runs_until_the_deadline(two, tmp_path):
    srv, ids = two
    port = srv.port
    run_on_a(port, ids, tmp_path, 'train', batch_job('train', 300))
    [a] = live(port, 'train')
    r = cli(port, 'node', 'drain', '-deadline', '4s', '-detach', ids['a'])
    assert r.returncode == 0, r.stdout + r.stderr
    deadline = node(port, ids['a'])['drain_strategy']['force_deadline']
    assert node(port, ids['a'])['drain_strategy']['deadline'] == 4 * S
    n = wait_for(lambda: drain_done(port, ids['a']), 60, 'the drain to complete')
    old = api(port, f'/v1/allocation/{a["id"]}')
    assert old['desired_status'] == 'stop' and old['desired_transition']['migrate']
    [repl] = [x for x in job_allocs(port, 'train') if x.get('previous_allocation') == a['id']]
    # stopped (and replaced) at the deadline, not before
    assert repl['create_time'] >= deadline
    assert n['last_drain']['ended_at'] >= deadline
    wait_for(lambda: live(port, 'train', 'running'), 30, 'the replacement to run')
    assert live(port, 'train')[0]['node_id'] == ids['b']


def test_force_stops_everything_at_once(two, tmp_path):
    srv, ids = two
    port = srv.port
    run_on_a(port, ids, tmp_path, 'web', service_job('web'))
    run_on_a(port, ids, tmp_path, 'train', batch_job('train', 300))
    before = live(port, 'web') + live(port, 'train')
    r = cli(port, 'node', 'drain', '-force', '-detach', ids['a'])
    assert r.returncode == 0, r.stdout + r.stderr
    # the drain's first step is in the commit that started it
    for a in before:
        got = api(port, f'/v1/allocation/{a["id"]}')
        assert got['desired_transition']['migrate'] is True, got
    assert node(port, ids['a'])['drain_strategy']['deadline'] == 0
    wait_for(lambda: drain_done(port, ids['a']), 60, 'the drain to complete')
    # not paced by migrate { max_parallel = 1 }: the three replacements of the
    # service were placed by one plan
    web = {a['id'] for a in before if a['job_id'] == 'web'}
    repl = [a for a in job_allocs(port, 'web') if a.get('previous_allocation') in web]
    assert len(repl) == 3 and len({a['create_index'] for a in repl}) == 1, repl


def test_no_deadline_waits_for_batch(two, tmp_path):
    srv, ids = two
    port = srv.port
    run_on_a(port, ids, tmp_path, 'short', batch_job('short', 3))
    [a] = live(port, 'short')
    r = cli(port, 'node', 'drain', '-no-deadline', ids['a'], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'no deadline' in r.stdout and 'drain complete' in r.stdout
    assert 'told to migrate' not in r.stdout
    done = api(port, f'/v1/allocation/{a["id"]}')
    assert done['client_status'] == 'complete' and done['desired_status'] == 'run'
    assert not done.get('desired_transition', {}).get('migrate')
    assert not [x for x in job_allocs(port, 'short') if x['id'] != a['id']]
    assert node(port, ids['a'])['last_drain']['ended_at'] >= done['end_time']


def test_server_restart_keeps_the_deadline(two, tmp_path, agents):
    srv, ids = two
    port = srv.port
    run_on_a(port, ids, tmp_path, 'train', batch_job('train', 300))
    [a] = live(port, 'train')
    r = cli(port, 'node', 'drain', '-deadline', '6s', '-detach', ids['a'])
    assert r.returncode == 0, r.stdout + r.stderr
    strategy = node(port, ids['a'])['drain_strategy']
    srv.kill9()
    again = Agent(tmp_path, 'server', ['-config', server_config(tmp_path), '-http-port',
                                       str(port)], port=port).start()
    agents.append(again)
    wait_for(lambda: nodes_ready(port, ['a', 'b']), 20, 'clients to reconnect')
    n = node(port, ids['a'])
    if n['drain']:   # still under way: the same strategy
        assert n['drain_strategy'] == strategy
    n = wait_for(lambda: drain_done(port, ids['a']), 60, 'the drain to complete')
    [repl] = [x for x in job_allocs(port, 'train') if x.get('previous_allocation') == a['id']]
    assert repl['create_time'] >= strategy['force_deadline']
    assert n['last_drain']['started_at'] == strategy['started_at']


def test_disable_cancels(two, tmp_path):
    srv, ids = two
    port = srv.port
    run_on_a(port, ids, tmp_path, 'train', batch_job('train', 300))
    r = cli(port, 'node', 'drain', '-deadline', '1h', '-detach', ids['a'])
    assert r.returncode == 0, r.stdout + r.stderr
    n = node(port, ids['a'])
    assert n['drain'] and n['eligibility'] == 'ineligible'
    assert n['last_drain']['status'] == 'draining'
    r = cli(port, 'node', 'status', ids['a'])
    assert 'true (deadline in' in r.stdout, r.stdout
    r = cli(port, 'node', 'drain', '-disable', '-keep-ineligible', ids['a'])
    assert r.returncode == 0, r.stdout + r.stderr
    n = node(port, ids['a'])
    assert not n['drain'] and 'drain_strategy' not in n
    assert n['last_drain']['status'] == 'canceled' and n['eligibility'] == 'ineligible'
    # Nomad's -disable makes the node eligible again
    r = cli(port, 'node', 'drain', '-detach', ids['a'])
    assert r.returncode == 0, r.stdout + r.stderr
    r = cli(port, 'node', 'drain', '-disable', ids['a'])
    assert r.returncode == 0, r.stdout + r.stderr
    n = node(port, ids['a'])
    assert n['eligibility'] == 'eligible' and n['last_drain']['status'] == 'canceled'
    # the batch allocation was never told to leave
    [a] = live(port, 'train', 'running')
    assert a['node_id'] == ids['a'] and not a.get('desired_transition', {}).get('migrate')
    # -monitor on a node that is not draining says how its last drain ended
    r = cli(port, 'node', 'drain', '-monitor', ids['a'])
    assert r.returncode == 1 and 'drain canceled' in r.stdout, r.stdout


def system_job(job_id):
    return f'''
job "{job_id}" {{
  type = "system"
  group "g" {{
    task "t" {{
      driver = "raw_exec"
      config {{
        command = "/bin/sleep"
        args    = ["300"]
      }}
      resources {{
        cpu    = 100
        memory = 32
      }}
    }}
  }}
}}
'''


def test_system_jobs_leave_last(two, tmp_path):
    srv, ids = two
    port = srv.port
    r = cli(port, 'job', 'run', '-detach', write_job(tmp_path, 'sys', system_job('sys')))
    assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: len(live(port, 'sys', 'running')) == 2, 30, 'the system job on both nodes')
    [sys_a] = [a for a in live(port, 'sys') if a['node_id'] == ids['a']]
    run_on_a(port, ids, tmp_path, 'short', batch_job('short', 4))
    [b] = live(port, 'short')
    # -ignore-system: the drain waits for the batch job, never for the system job
    r = cli(port, 'node', 'drain', '-no-deadline', '-ignore-system', ids['a'], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'told to migrate' not in r.stdout, r.stdout
    kept = api(port, f'/v1/allocation/{sys_a["id"]}')
    assert kept['desired_status'] == 'run' and kept['client_status'] == 'running'
    assert api(port, f'/v1/allocation/{b["id"]}')['client_status'] == 'complete'
    # without it, and with other work still there, the system allocation
    # stops only once that work has ended
    r = cli(port, 'node', 'eligibility', '-disable', ids['b'])
    assert r.returncode == 0, r.stderr
    r = cli(port, 'node', 'drain', '-disable', ids['a'])
    assert r.returncode == 0, r.stderr
    run_on_a(port, ids, tmp_path, 'short2', batch_job('short2', 4))
    [b2] = live(port, 'short2')
    r = cli(port, 'node', 'drain', '-no-deadline', ids['a'], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count('told to migrate') == 1, r.stdout
    stopped = api(port, f'/v1/allocation/{sys_a["id"]}')
    done = api(port, f'/v1/allocation/{b2["id"]}')
    assert stopped['desired_status'] == 'stop' and stopped['desired_transition']['migrate']
    assert done['client_status'] == 'complete' and not done.get('desired_transition')
    assert stopped['end_time'] >= done['end_time']
    # the system job's allocation on b was not touched
    assert [a for a in live(port, 'sys', 'running') if a['node_id'] == ids['b']]


def gpu_job(job_id, jtype):
    """One allocation (per node for a system job) holding one GPU; a
    service's takes 2s to stop (so that what stops after it is seen to)."""
    migrate = ('migrate {\n      max_parallel     = 1\n      min_healthy_time = "1s"\n    }'
               if jtype == 'service' else '')
    command = ("trap 'sleep 2; exit 0' INT TERM; sleep 300 & wait" if jtype == 'service'
               else 'exec sleep 300')
    return f'''
job "{job_id}" {{
  type = "{jtype}"
  group "g" {{
    {migrate}
    task "t" {{
      driver = "raw_exec"
      config {{
        command = "/bin/sh"
        args    = ["-c", "{command}"]
      }}
      resources {{
        cpu    = 100
        memory = 32
        device "nvidia/gpu" {{
          count = 1
        }}
      }}
    }}
  }}
}}
'''


def gpus_held(port, node_id):
    """The GPUs that allocations on the node not ended yet hold."""
    return [d['id'] for a in api(port, f'/v1/node/{node_id}/allocations')
            if a['client_status'] in ('pending', 'running')
            for d in a['resources']['devices']]


def test_gpu_system_job_leaves_last_and_frees_its_gpu(two, tmp_path):
    """A node-level GPU agent (a system job holding a GPU) on a node being
    drained: the service holding the other GPU moves first, then the system
    allocation stops and its GPU is free; with -ignore-system it keeps it."""
    srv, ids = two
    port = srv.port
    r = cli(port, 'job', 'run', '-detach', write_job(tmp_path, 'gpumon', gpu_job('gpumon', 'system')))
    assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: len(live(port, 'gpumon', 'running')) == 2, 30, 'the GPU agent on both nodes')
    [mon_a] = [a for a in live(port, 'gpumon') if a['node_id'] == ids['a']]
    run_on_a(port, ids, tmp_path, 'infer', gpu_job('infer', 'service'))
    [svc] = live(port, 'infer')
    assert len(gpus_held(port, ids['a'])) == 2  # both of a's GPUs taken

    r = cli(port, 'node', 'drain', '-deadline', '10m', ids['a'], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'drain complete' in r.stdout, r.stdout
    assert r.stdout.count('told to migrate') == 2, r.stdout
    svc_old = api(port, f'/v1/allocation/{svc["id"]}')
    mon_old = api(port, f'/v1/allocation/{mon_a["id"]}')
    # the service moved to b, the GPU agent was not moved anywhere
    [moved] = live(port, 'infer', 'running')
    assert moved['node_id'] == ids['b'] and moved['resources']['devices']
    assert [a['node_id'] for a in live(port, 'gpumon')] == [ids['b']]
    # the GPU agent stopped last: once the service had ended on a
    assert mon_old['desired_status'] == 'stop' and mon_old['desired_transition']['migrate']
    assert mon_old['client_status'] == 'complete' and svc_old['client_status'] == 'complete'
    assert mon_old['end_time'] >= svc_old['end_time'], (mon_old, svc_old)
    # and nothing holds a's GPUs any more
    assert gpus_held(port, ids['a']) == []

    # eligible again: the GPU agent comes back; drained with -ignore-system
    # it keeps running with its GPU
    r = cli(port, 'node', 'eligibility', '-enable', ids['a'])
    assert r.returncode == 0, r.stderr
    back = wait_for(lambda: [a for a in live(port, 'gpumon', 'running')
                             if a['node_id'] == ids['a']], 30, 'the GPU agent back on a')
    r = cli(port, 'node', 'drain', '-deadline', '10m', '-ignore-system', ids['a'], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'drain complete' in r.stdout and 'told to migrate' not in r.stdout, r.stdout
    kept = api(port, f'/v1/allocation/{back[0]["id"]}')
    assert kept['desired_status'] == 'run' and kept['client_status'] == 'running'
    assert gpus_held(port, ids['a']) == [d['id'] for d in kept['resources']['devices']]
