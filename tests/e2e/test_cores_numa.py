"""End-to-end: reserved cores placed on the NUMA node of a task's GPUs
(docs/jobspec.md, "numa"; docs/scheduling.md, "Cores and NUMA").

A dev agent with a simulated 2-socket node: two T4s, GPU 0 on NUMA 0 and
GPU 1 on NUMA 1, cores 0-3 on NUMA 0 and 4-7 on NUMA 1 (the simulation
file's cpu section).  A job holding three cores of NUMA 0 leaves one there;
a job with `cores = 2  numa { affinity = "require" devices = ["nvidia/gpu"] }`
then gets GPU 1 and two cores of NUMA 1 (not the lowest-indexed GPU 0,
whose NUMA node has too few), and a second such job cannot get those
cores: `herd job plan` says why, per NUMA node.  `herd alloc status` and
`herd node status -verbose` show the cores.  A server killed with -9 and
started again still knows which cores are held: a job submitted after the
restart gets other cores.

Tasks wait for a gate file the test creates; every wait polls with a
generous deadline."""
import json

from test_control_plane import GPUS, Agent, agents, api, cli, job_allocs, start_dev  # noqa: F401
from test_control_plane import server_config, start_client, wait_for, write_job


def topology(tmp_path):
    spec = json.loads((GPUS / 't4-2x.json').read_text())
    spec['cpu'] = {'numa_nodes': [{'id': 0, 'cores': '0-3'}, {'id': 1, 'cores': '4-7'}]}
    p = tmp_path / 't4-2x-2socket.json'
    p.write_text(json.dumps(spec))
    return p


def job(tmp_path, job_id, resources, gate):
    return write_job(tmp_path, job_id, f'''
job "{job_id}" {{
  type = "batch"
  group "g" {{
    restart {{ attempts = 0 }}
    task "t" {{
      driver = "raw_exec"
      config {{
        command = "/bin/sh"
        args = ["-c", "while [ ! -e {gate} ]; do sleep 0.1; done"]
      }}
      resources {{
        memory = 32
        {resources}
      }}
    }}
  }}
}}
''')


GPU_NUMA = '''cores = 2
        device "nvidia/gpu" { count = 1 }
        numa {
          affinity = "require"
          devices  = ["nvidia/gpu"]
        }'''


def cores_of(alloc):
    return alloc['resources']['tasks']['t'].get('cores')


def test_cores_on_the_gpu_numa_node(agents, tmp_path):  # noqa: F811
    (tmp_path / 'gate').mkdir()
    dev = start_dev(agents, tmp_path, topology(tmp_path))
    node = [n for n in api(dev.port, '/v1/nodes') if n['status'] == 'ready'][0]
    node = api(dev.port, f"/v1/node/{node['id']}")
    offered = {c['id']: c['numa'] for c in node['resources']['cores']}
    assert offered == {0: 0, 1: 0, 2: 0, 3: 0, 4: 1, 5: 1, 6: 1, 7: 1}
    gpu_numa = {d['id']: d['numa_node'] for d in node['devices']}
    gate = tmp_path / 'gate' / 'end'

    # three cores on one NUMA node: the best fit is NUMA 0 (ties: lowest)
    r = cli(dev.port, 'job', 'run', '-detach',
            job(tmp_path, 'hold', 'cores = 3\n        numa { affinity = "require" }', gate))
    assert r.returncode == 0, r.stdout + r.stderr
    hold = wait_for(lambda: [a for a in job_allocs(dev.port, 'hold')
                             if a['client_status'] == 'running'], 30, 'hold to run')[0]
    assert cores_of(hold) == [0, 1, 2]

    r = cli(dev.port, 'job', 'run', '-detach', job(tmp_path, 'gpu1', GPU_NUMA, gate))
    assert r.returncode == 0, r.stdout + r.stderr
    a = wait_for(lambda: [a for a in job_allocs(dev.port, 'gpu1')
                          if a['client_status'] == 'running'], 30, 'gpu1 to run')[0]
    gpus = [d['id'] for d in a['resources']['devices']]
    assert len(gpus) == 1 and gpu_numa[gpus[0]] == 1, (gpus, gpu_numa)
    assert cores_of(a) == [4, 5]
    # a core counts the node's cpu_milli / online cores
    per_core = node['resources']['cpu_milli'] // max(
        int(node['attributes'].get('cpu.numcores', '0')), len(offered))
    assert a['resources']['cpu_milli'] == 2 * per_core

    # the same again: GPU 0 is free but NUMA 0 has one core left, and the
    # cores left on NUMA 1 have no GPU: not placed, and the plan says why
    p = job(tmp_path, 'gpu2', GPU_NUMA, gate)
    r = cli(dev.port, 'job', 'plan', p)
    assert 'NUMA' in r.stdout, r.stdout + r.stderr
    assert ('1 free core on NUMA 0 (1 GPU), 2 on NUMA 1 (0 GPUs), '
            '2 cores and 1 GPU asked on one NUMA node') in r.stdout, r.stdout
    r = cli(dev.port, 'job', 'run', '-detach', p)
    assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: [e for e in api(dev.port, '/v1/job/gpu2/evaluations')
                      if e.get('failed_placements')], 30, 'gpu2 to be evaluated')
    assert [a for a in job_allocs(dev.port, 'gpu2') if a['desired_status'] == 'run'] == []

    # what a person sees
    r = cli(dev.port, 'alloc', 'status', a['id'])
    assert r.returncode == 0, r.stderr
    assert 'Cores                t: 4-5 (NUMA 1)' in r.stdout, r.stdout
    r = cli(dev.port, 'node', 'status', '-verbose', node['id'])
    assert r.returncode == 0, r.stderr
    assert 'Reservable Cores' in r.stdout, r.stdout
    rows = [line.split() for line in r.stdout.split('Reservable Cores')[1].splitlines()[2:4]]
    assert rows == [['0', '0-3', '3', 'of', '4'], ['1', '4-7', '2', 'of', '4']], r.stdout

    # once the first ends, its cores are free for the waiting one
    gate.write_text('')
    b = wait_for(lambda: [a for a in job_allocs(dev.port, 'gpu2')
                          if a['desired_status'] == 'run'], 60, 'gpu2 to be placed')[0]
    assert all(offered[c] == gpu_numa[b['resources']['devices'][0]['id']] for c in cores_of(b))


def test_held_cores_survive_a_server_kill9(agents, tmp_path):  # noqa: F811
    (tmp_path / 'gate').mkdir()
    gate = tmp_path / 'gate' / 'end'
    srv = Agent(tmp_path, 'server', ['-config', server_config(tmp_path),
                                     '-http-port', '0']).start()
    agents.append(srv)
    port = srv.port
    start_client(agents, tmp_path, 'c1', port, topology(tmp_path))
    wait_for(lambda: [n for n in api(port, '/v1/nodes') if n['status'] == 'ready'], 15,
             'the client to be ready')
    r = cli(port, 'job', 'run', '-detach', job(tmp_path, 'first', GPU_NUMA, gate))
    assert r.returncode == 0, r.stdout + r.stderr
    first = wait_for(lambda: [a for a in job_allocs(port, 'first')
                              if a['client_status'] == 'running'], 30, 'first to run')[0]
    held = set(cores_of(first))
    assert len(held) == 2

    srv.kill9()
    again = Agent(tmp_path, 'server', ['-config', server_config(tmp_path), '-http-port',
                                       str(port)], port=port).start()
    agents.append(again)
    wait_for(lambda: [n for n in api(port, '/v1/nodes') if n['status'] == 'ready'], 30,
             'the client to reconnect')
    assert cores_of(api(port, f"/v1/allocation/{first['id']}")) == cores_of(first)
    r = cli(port, 'job', 'run', '-detach',
            job(tmp_path, 'second', 'cores = 2\n        numa { affinity = "require" }', gate))
    assert r.returncode == 0, r.stdout + r.stderr
    second = wait_for(lambda: [a for a in job_allocs(port, 'second')
                               if a['client_status'] == 'running'], 30, 'second to run')[0]
    assert not held & set(cores_of(second)), (cores_of(first), cores_of(second))
