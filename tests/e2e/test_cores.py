"""End-to-end: reserved CPU cores (docs/drivers.md, "CPU cores").

A separate server and client on 127.0.0.1.  The client keeps core 0 for
the OS (`reserved { cores = "0" }`), so on a 2-core machine it offers only
core 1: a task with `resources { cores = 1 }` gets core 1 and runs pinned
to it (its /proc/self/status says so, HERD_CPU_CORES too), a task without
cores started meanwhile is kept on core 0, and one started before is moved
there, and back once the core is free.  A kill -9 of the client
keeps the pinned task, and a task started after the restart still keeps off
its core.  A client with a simulated 2-socket topology offers the
simulated cores with their NUMA nodes.

Every task waits for a gate file the test creates; every wait polls with a
generous deadline."""
import os

import pytest

from test_control_plane import GPUS, Agent, agents, api, cli, job_allocs, wait_for  # noqa: F401
from test_control_plane import write_job

ONLINE = os.sched_getaffinity(0)


def cpu_list(ids):
    """The kernel's list syntax of ids ("0-3,8")."""
    out, ids = [], sorted(ids)
    while ids:
        a = b = ids.pop(0)
        while ids and ids[0] == b + 1:
            b = ids.pop(0)
        out.append(f'{a}-{b}' if b > a else f'{a}')
    return ','.join(out)


def server(agents, tmp_path):  # noqa: F811
    p = tmp_path / 'server.hcl'
    p.write_text('server {\n  enabled = true\n}\nbind_addr = "127.0.0.1"\n')
    srv = Agent(tmp_path, 'server', ['-config', str(p), '-http-port', '0']).start()
    agents.append(srv)
    return srv


def client(agents, tmp_path, srv, extra='', gpu_file='t4-2x.json', name='c1'):  # noqa: F811
    p = tmp_path / f'{name}.hcl'
    p.write_text('client {\n  enabled = true\n' + extra + '}\nbind_addr = "127.0.0.1"\n'
                 'plugin "raw_exec" {\n  config {\n    enabled = true\n  }\n}\n')
    c = Agent(tmp_path, name, ['-config', str(p), '-servers', f'127.0.0.1:{srv.port}',
                               '-node', name, '-http-port', '0'],
              gpu_file=GPUS / gpu_file).start()
    agents.append(c)
    return c


def node(srv, name):
    return wait_for(lambda: [n for n in api(srv.port, '/v1/nodes')
                             if n['name'] == name and n['status'] == 'ready'], 20,
                    f'node {name} to be ready')[0]


def job(tmp_path, job_id, cores, gate):
    res = f'cores = {cores}' if cores else 'cpu = 100'
    return write_job(tmp_path, job_id, f'''
job "{job_id}" {{
  type = "batch"
  group "g" {{
    restart {{ attempts = 0 }}
    task "t" {{
      driver = "raw_exec"
      config {{
        command = "/bin/sh"
        args = ["-c", "grep Cpus_allowed_list /proc/self/status > $HERD_ALLOC_DIR/out; echo cores=${{HERD_CPU_CORES-unset}} nomad=${{NOMAD_CPU_CORES-unset}} >> $HERD_ALLOC_DIR/out; echo pid=$$ >> $HERD_ALLOC_DIR/out; while [ ! -e {gate} ]; do sleep 0.1; done"]
      }}
      resources {{
        {res}
        memory = 32
      }}
    }}
  }}
}}
''')


def run(srv, c, tmp_path, job_id, cores):
    gate = tmp_path / f'end-{job_id}'
    r = cli(srv.port, 'job', 'run', '-detach', job(tmp_path, job_id, cores, gate))
    assert r.returncode == 0, r.stdout + r.stderr
    a = wait_for(lambda: [a for a in job_allocs(srv.port, job_id)
                          if a['client_status'] == 'running'], 30, f'{job_id} to run')[0]
    out = c.dir / 'data' / 'alloc' / a['id'] / 'alloc' / 'out'
    wait_for(lambda: out.exists() and 'pid=' in out.read_text(), 20, f'{job_id} output')
    lines = dict(line.split('\t') if '\t' in line else line.split('=', 1)
                 for line in out.read_text().splitlines() if line.startswith('Cpus') or
                 line.startswith('pid='))
    return a, out.read_text(), lines['Cpus_allowed_list:'], int(lines['pid'])


def end(srv, tmp_path, job_id):
    (tmp_path / f'end-{job_id}').write_text('')
    wait_for(lambda: all(a['client_status'] == 'complete'
                         for a in job_allocs(srv.port, job_id)), 30, f'{job_id} to end')


def affinity(pid):
    with open(f'/proc/{pid}/status') as f:
        return [line.split()[1] for line in f if line.startswith('Cpus_allowed_list')][0]


def test_node_offers_its_cores_but_the_reserved(agents, tmp_path):  # noqa: F811
    srv = server(agents, tmp_path)
    client(agents, tmp_path, srv, '  reserved {\n    cores = "0"\n  }\n')
    n = api(srv.port, f"/v1/node/{node(srv, 'c1')['id']}")
    ids = [c['id'] for c in n['resources']['cores']]
    assert ids == sorted(ONLINE - {0}), n['resources']
    assert n['attributes']['cpu.reservablecores'] == str(len(ONLINE) - 1)
    if os.path.isdir('/sys/devices/system/node/node0'):
        assert all(c['numa'] >= 0 for c in n['resources']['cores'])
        assert int(n['attributes']['cpu.numa_nodes']) >= 1


def test_simulated_two_socket_topology(agents, tmp_path):  # noqa: F811
    srv = server(agents, tmp_path)
    client(agents, tmp_path, srv, '  reserved {\n    cores = "0-1,112-113"\n  }\n'
           '  reservable_cores = "0-200"\n', gpu_file='h100-sxm-8x-nvlink.json')
    n = api(srv.port, f"/v1/node/{node(srv, 'c1')['id']}")
    cores = {c['id']: c['numa'] for c in n['resources']['cores']}
    assert sorted(cores) == [i for i in range(201) if i not in (0, 1, 112, 113)]
    assert cores[2] == 0 and cores[55] == 0 and cores[56] == 1 and cores[114] == 0
    assert cores[168] == 1 and cores[200] == 1
    assert n['attributes']['numa.node0.cores'] == '0-55,112-167'
    assert n['attributes']['numa.node1.cores'] == '56-111,168-223'
    assert n['attributes']['cpu.numa_nodes'] == '2'
    # the simulated GPUs keep their NUMA nodes: 4 on each socket
    numa = sorted(d['numa_node'] for d in n['devices'])
    assert numa == [0, 0, 0, 0, 1, 1, 1, 1]


@pytest.mark.skipif(len(ONLINE) < 2 or not {0, 1} <= ONLINE, reason='needs cores 0 and 1')
def test_reserved_task_pinned_shared_task_kept_off(agents, tmp_path):  # noqa: F811
    srv = server(agents, tmp_path)
    c = client(agents, tmp_path, srv, '  reserved {\n    cores = "0"\n  }\n')
    node(srv, 'c1')
    # a task without cores started before any core is held: every core
    _, out, mask, early_pid = run(srv, c, tmp_path, 'shared0', 0)
    assert mask == cpu_list(ONLINE), out
    a, out, mask, pinned_pid = run(srv, c, tmp_path, 'pinned', 1)
    assert a['resources']['tasks']['t']['cores'] == [1], a['resources']
    assert mask == '1', out
    assert 'cores=1 nomad=1' in out, out
    # ... is moved off the core now held (set_cores: raw_exec's affinity)
    wait_for(lambda: affinity(early_pid) == '0', 20, 'shared0 to leave core 1')
    # a command run in the pinned task runs on its core too
    r = cli(srv.port, 'alloc', 'exec', '-t=false', '-i=false', a['id'], 'grep',
            'Cpus_allowed_list', '/proc/self/status')
    assert r.returncode == 0 and r.stdout.split() == ['Cpus_allowed_list:', '1'], \
        r.stdout + r.stderr

    # a task without cores keeps off core 1 while it is held
    _, out, mask, _ = run(srv, c, tmp_path, 'shared1', 0)
    assert mask == '0', out
    assert 'cores=unset nomad=unset' in out, out

    # kill -9 of the client: the pinned task runs on, pinned; after the
    # restart a new task without cores still keeps off its core
    c.kill9()
    os.kill(pinned_pid, 0)
    c.port = None
    c.start()
    wait_for(lambda: 'recovered' in c.log(), 20, 'the recovery')
    assert affinity(pinned_pid) == '1'
    _, out, mask, _ = run(srv, c, tmp_path, 'shared2', 0)
    assert mask == '0', out

    # once the pinned task ended, a new task may use every core again, and
    # the running ones get them back
    end(srv, tmp_path, 'pinned')
    _, out, mask, _ = run(srv, c, tmp_path, 'shared3', 0)
    assert mask == cpu_list(ONLINE), out
    wait_for(lambda: affinity(early_pid) == cpu_list(ONLINE), 20, 'shared0 to get core 1 back')
    for j in ('shared0', 'shared1', 'shared2', 'shared3'):
        end(srv, tmp_path, j)


def exec_job(tmp_path, job_id):
    return write_job(tmp_path, job_id, f'''
job "{job_id}" {{
  type = "batch"
  group "g" {{
    restart {{ attempts = 0 }}
    task "t" {{
      driver = "exec"
      config {{
        command = "/bin/sh"
        args = ["-c", "while [ ! -e /alloc/end ]; do sleep 0.1; done"]
      }}
      resources {{
        cpu = 100
        memory = 32
      }}
    }}
  }}
}}
''')


CPUSET_V1 = '/sys/fs/cgroup/cpuset'


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists(f'{CPUSET_V1}/cpuset.cpus') or
                    not {0, 1} <= ONLINE,
                    reason='needs root, the cgroup v1 cpuset hierarchy and cores 0 and 1')
def test_exec_shared_task_moves_off_and_back(agents, tmp_path):  # noqa: F811
    """An exec task without cores, started before a task reserves core 1,
    is moved off core 1 through its cpuset cgroup while that task runs, and
    back once it has ended."""
    srv = server(agents, tmp_path)
    c = client(agents, tmp_path, srv, '  reserved {\n    cores = "0"\n  }\n')
    n = node(srv, 'c1')
    if 'driver.exec' not in n['attributes']:
        pytest.skip('the exec driver is not offered here')
    r = cli(srv.port, 'job', 'run', '-detach', exec_job(tmp_path, 'sx'))
    assert r.returncode == 0, r.stdout + r.stderr
    a = wait_for(lambda: [a for a in job_allocs(srv.port, 'sx')
                          if a['client_status'] == 'running'], 30, 'sx to run')[0]
    group = f'{CPUSET_V1}/herd/{a["id"]}.t'

    def cpus():
        with open(f'{group}/cpuset.cpus') as f:
            return f.read().strip()

    def masks():
        with open(f'{group}/cgroup.procs') as f:
            pids = [int(p) for p in f.read().split()]
        return {affinity(p) for p in pids}

    assert cpus() == '0-1' and masks() == {'0-1'}
    run(srv, c, tmp_path, 'pinned', 1)
    wait_for(lambda: cpus() == '0' and masks() == {'0'}, 20, 'sx to leave core 1')
    end(srv, tmp_path, 'pinned')
    wait_for(lambda: cpus() == '0-1' and masks() == {'0-1'}, 20, 'sx to get core 1 back')
    (c.dir / 'data' / 'alloc' / a['id'] / 'alloc' / 'end').write_text('')
    wait_for(lambda: all(x['client_status'] == 'complete'
                         for x in job_allocs(srv.port, 'sx')), 30, 'sx to end')


def test_simulated_cores_missing_here_run_unpinned(agents, tmp_path):  # noqa: F811
    """A simulated topology's core that this machine lacks: the task runs
    (unpinned), HERD_CPU_CORES still names its core, and an event says why."""
    srv = server(agents, tmp_path)
    c = client(agents, tmp_path, srv, '  reservable_cores = "200"\n',
               gpu_file='h100-sxm-8x-nvlink.json')
    node(srv, 'c1')
    a, out, mask, _ = run(srv, c, tmp_path, 'far', 1)
    assert a['resources']['tasks']['t']['cores'] == [200], a['resources']
    assert mask == cpu_list(ONLINE), out
    assert 'cores=200 nomad=200' in out, out
    a = api(srv.port, f"/v1/allocation/{a['id']}")
    ev = [e for e in a['task_states']['t']['events'] if e['type'] == 'Cores Not Pinned']
    assert ev and 'cores 200 of the allocation are not on this machine' in ev[0]['message'], \
        a['task_states']['t']['events']
    end(srv, tmp_path, 'far')
