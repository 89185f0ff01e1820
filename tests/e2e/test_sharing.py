"""End-to-end GPU sharing with simulated GPUs: a dev agent whose GPUs are
shared through MPS (the control program is tests/e2e/mps-stand-in, which
records what it was asked), and an A100 in MIG mode.

What is checked:
- 25% jobs fill an MPS GPU four at a time; with two T4s eight run and the
  ninth waits; each task got the MPS environment of its share;
- one stand-in daemon per MPS GPU, started with that GPU and its own
  directories, started again when killed, told to quit when the agent stops;
- an A100 with seven 1g.10gb instances takes exactly seven one-slice jobs,
  and a whole-GPU request then stays pending;
- on a fixed mixed scenario (whole and half GPUs, two nodes, described at
  test_herd_policy_strands_fewer_gpus_than_binpack) the herd policy strands
  fewer GPUs than binpack, the policy set by the agent config's server {
  scheduler { policy } }."""
import collections
import json
import os
import signal
import time

from conftest import REPO
from test_control_plane import GPUS, Agent, agents, api, cli, wait_for, write_job  # noqa: F401

STAND_IN = REPO / 'tests/e2e/mps-stand-in'


def share_job(job_id, device_block):
    return f'''
job "{job_id}" {{
  type = "batch"
  group "g" {{
    task "t" {{
      driver = "raw_exec"
      config {{
        command = "/bin/sh"
        args = ["-c", "env > $HERD_ALLOC_DIR/env.txt; sleep 60"]
      }}
      resources {{
        cpu = 100
        memory = 64
        {device_block}
      }}
    }}
  }}
}}
'''


def start(agents, tmp_path, gpu_file, config=None):
    args = ['-dev', '-http-port', '0']
    if config:
        p = tmp_path / 'agent.hcl'
        p.write_text(config)
        args += ['-config', str(p)]
    a = Agent(tmp_path, 'dev', args, gpu_file=GPUS / gpu_file).start()
    agents.append(a)
    wait_for(lambda: [n for n in api(a.port, '/v1/nodes') if n['status'] == 'ready'], 15,
             'the dev node to be ready')
    return a


def run_detached(a, tmp_path, job_id, block):
    r = cli(a.port, 'job', 'run', '-detach', write_job(tmp_path, job_id, share_job(job_id, block)))
    assert r.returncode == 0, r.stderr


def running(a, job_id):
    return [x for x in api(a.port, f'/v1/job/{job_id}/allocations')
            if x['desired_status'] == 'run' and x['client_status'] == 'running']


def records(path):
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        kind, rest = line.split(' ', 1)
        fields = dict(f.split('=', 1) for f in rest.split(' ') if '=' in f)
        out.append((kind, fields))
    return out


MPS_CONFIG = f'''
gpu {{
  sharing = "mps"
  replicas = 8
  mps_control = "{STAND_IN}"
}}
'''


def test_mps_fractions_fill_gpus_with_their_environment(agents, tmp_path, monkeypatch):
    record = tmp_path / 'stand-in.record'
    monkeypatch.setenv('MPS_STAND_IN_RECORD', str(record))
    a = start(agents, tmp_path, 't4-2x.json', MPS_CONFIG)
    data = a.dir / 'data'

    # one daemon per MPS GPU, with that GPU and its own directories
    wait_for(lambda: len(records(record)) >= 2, 10, 'two daemons')
    starts = [f for k, f in records(record) if k == 'start']
    assert sorted(f['visible'] for f in starts) == sorted(
        d['id'] for d in api(a.port, '/v1/nodes')[0]['devices'] or
        api(a.port, '/v1/node/' + api(a.port, '/v1/nodes')[0]['id'])['devices'])
    for f in starts:
        assert f['args'] == '-d'
        assert f['pipe'] == str(data / 'mps' / f['visible'] / 'pipe')
        assert f['log'] == str(data / 'mps' / f['visible'] / 'log')

    # eight quarter-GPU jobs: four on each T4; the ninth waits
    block = 'device "nvidia/gpu" {\n compute = 25\n memory = "2 GiB"\n }'
    for i in range(9):
        run_detached(a, tmp_path, f'q{i}', block)
    wait_for(lambda: sum(len(running(a, f'q{i}')) for i in range(9)) == 8, 30,
             'eight quarter jobs running')
    time.sleep(1)
    allocs = [x for i in range(9) for x in running(a, f'q{i}')]
    assert len(allocs) == 8
    per_gpu = collections.Counter(x['resources']['devices'][0]['id'] for x in allocs)
    assert sorted(per_gpu.values()) == [4, 4], per_gpu
    waiting = [i for i in range(9) if not running(a, f'q{i}')]
    assert len(waiting) == 1

    # the API and the CLI show tenants and totals
    gpus = api(a.port, '/v1/gpus')
    for g in gpus:
        assert g['sharing'] == 'mps' and g['replicas'] == 8
        assert g['tenants'] == 4 and g['compute_used_milli'] == 1000
        assert g['memory_used_mib'] == 4 * 2048
    out = cli(a.port, 'gpu', 'status').stdout
    assert out.count('mps 4/8 tenants, compute 100%, memory 8/15 GiB') == 2, out
    out = cli(a.port, 'node', 'status', api(a.port, '/v1/nodes')[0]['id']).stdout
    assert 'mps 4/8 tenants, compute 100%, memory 8/15 GiB' in out, out

    # each task got the MPS environment of its share
    for x in allocs:
        env_file = data / 'alloc' / x['id'] / 'alloc' / 'env.txt'
        wait_for(env_file.exists, 10, f'{env_file}')
        env = dict(l.split('=', 1) for l in env_file.read_text().splitlines() if '=' in l)
        gpu = x['resources']['devices'][0]['id']
        assert env['CUDA_VISIBLE_DEVICES'] == gpu
        assert env['CUDA_MPS_PIPE_DIRECTORY'] == str(data / 'mps' / gpu / 'pipe')
        assert env['CUDA_MPS_LOG_DIRECTORY'] == str(data / 'mps' / gpu / 'log')
        assert env['CUDA_MPS_ACTIVE_THREAD_PERCENTAGE'] == '25'
        assert env['CUDA_MPS_PINNED_DEVICE_MEM_LIMIT'] == '0=2048M'

    # a killed daemon is started again, with the same GPU and directories
    gpu = starts[0]['visible']
    pidfile = data / 'mps' / gpu / 'pipe' / 'nvidia-cuda-mps-control.pid'
    old = int(pidfile.read_text())
    os.kill(old, signal.SIGKILL)
    wait_for(lambda: len([1 for k, f in records(record) if k == 'start' and f['visible'] == gpu]) == 2,
             15, 'the daemon restarted')
    wait_for(lambda: pidfile.exists() and pidfile.read_text().strip() and int(pidfile.read_text()) != old,
             5, 'a new pid file')
    new = int(pidfile.read_text())

    # the agent stops: every daemon is told to quit, with its own environment
    a.stop()
    quits = [f for k, f in records(record) if k == 'control']
    assert sorted(f['visible'] for f in quits) == sorted(f['visible'] for f in starts)
    for f in quits:
        assert f['cmds'] == 'quit;'
        assert f['pipe'] == str(data / 'mps' / f['visible'] / 'pipe')
    wait_for(lambda: not os.path.exists(f'/proc/{new}') or
             ') Z ' in open(f'/proc/{new}/stat').read(), 5, 'the daemon gone')


def test_mig_slices_and_no_whole_gpu(agents, tmp_path):
    a = start(agents, tmp_path, 'a100-80gb-mig-7x1g.json')
    slice_block = '''device "nvidia/gpu" {
 count = 1
 constraint {
  attribute = "${device.attr.mig_profile}"
  value = "1g.10gb"
 }
}'''
    for i in range(8):
        run_detached(a, tmp_path, f'm{i}', slice_block)
    wait_for(lambda: sum(len(running(a, f'm{i}')) for i in range(8)) == 7, 30,
             'seven slice jobs running')
    time.sleep(1)
    allocs = [x for i in range(8) for x in running(a, f'm{i}')]
    assert len(allocs) == 7
    ids = [x['resources']['devices'][0]['id'] for x in allocs]
    assert len(set(ids)) == 7 and all(i.startswith('MIG-') for i in ids)
    # each task sees only its MIG instance
    for x in allocs:
        env_file = a.dir / 'data' / 'alloc' / x['id'] / 'alloc' / 'env.txt'
        wait_for(env_file.exists, 10, f'{env_file}')
        env = dict(l.split('=', 1) for l in env_file.read_text().splitlines() if '=' in l)
        assert env['CUDA_VISIBLE_DEVICES'] == x['resources']['devices'][0]['id']
        assert not any(k.startswith('CUDA_MPS_') for k in env)
    # a whole-GPU request finds nothing: the A100 is in MIG mode, its slices taken
    run_detached(a, tmp_path, 'whole', 'device "nvidia/gpu" { count = 1 }')
    time.sleep(2)
    assert running(a, 'whole') == []
    assert [x for x in api(a.port, '/v1/job/whole/allocations')
            if x['desired_status'] == 'run'] == []


# --- the herd policy strands fewer GPUs than binpack ---------------------------
#
# The fixed scenario.  Per policy: a dev agent (server + client, node
# "a-<policy>", its server { scheduler { policy } } set) and a second client
# ("b-<policy>"), both with two simulated T4s shared by time-slicing.  Jobs,
# in this order, each waited for before the next:
#   1. a whole GPU, pinned to node a          a: [W, -]      b: [-, -]
#   2. half a GPU (compute = 50), pinned to b a: [W, -]      b: [50, -]
#   3. half a GPU, free to go anywhere
#   4. a whole GPU, free
#   5. a whole GPU, free
# At step 3 binpack takes the fullest node, a, and opens its free GPU for the
# half (a: [W, 50], b: [50, -]); then one whole GPU fits (b's second) and the
# last waits: two GPUs are left half used, stranded.  The fragmentation-aware
# herd policy completes b's half-used GPU instead, and both whole GPUs fit.
# Counted through GET /v1/gpus: GPUs with tenants but compute left ("partly
# used"), and jobs left pending.

SCENARIO = [('whole-a', 'device "nvidia/gpu" {\n  count = 1\n}', 'a'),
            ('half-b', 'device "nvidia/gpu" {\n  compute = 50\n}', 'b'),
            ('half', 'device "nvidia/gpu" {\n  compute = 50\n}', None),
            ('whole-1', 'device "nvidia/gpu" {\n  count = 1\n}', None),
            ('whole-2', 'device "nvidia/gpu" {\n  count = 1\n}', None)]

TIMESLICE = 'gpu {\n  sharing = "timeslice"\n}\n'


def pinned_job(job_id, block, node):
    text = share_job(job_id, block)
    if node:
        text = text.replace('  group "g" {', '  constraint {\n    attribute = "${node.unique.name}"\n'
                            f'    value = "{node}"\n  }}\n  group "g" {{', 1)
    return text


def run_scenario(agents, tmp_path, policy):
    d = tmp_path / policy
    d.mkdir()
    dev_cfg = d / 'dev.hcl'
    dev_cfg.write_text(TIMESLICE + f'server {{\n  scheduler {{\n    policy = "{policy}"\n  }}\n}}\n')
    dev = Agent(d, 'dev', ['-dev', '-http-port', '0', '-config', str(dev_cfg), '-node',
                           f'a-{policy}'], gpu_file=GPUS / 't4-2x.json').start()
    agents.append(dev)
    cl_cfg = d / 'client.hcl'
    cl_cfg.write_text(TIMESLICE + 'client {\n  enabled = true\n}\nbind_addr = "127.0.0.1"\n'
                      'plugin "raw_exec" {\n  config {\n    enabled = true\n  }\n}\n')
    cl = Agent(d, 'b', ['-config', str(cl_cfg), '-servers', f'127.0.0.1:{dev.port}', '-node',
                        f'b-{policy}', '-http-port', '0'], gpu_file=GPUS / 't4-2x.json').start()
    agents.append(cl)
    wait_for(lambda: len([n for n in api(dev.port, '/v1/nodes') if n['status'] == 'ready']) == 2,
             20, 'both nodes to be ready')
    for job_id, block, node in SCENARIO:
        r = cli(dev.port, 'job', 'run', '-detach',
                write_job(d, job_id, pinned_job(job_id, block, node and f'{node}-{policy}')))
        assert r.returncode == 0, r.stdout + r.stderr
        # its evaluation done: placed, or left waiting (blocked)
        wait_for(lambda: placed(dev, job_id) or
                 [e for e in api(dev.port, f'/v1/job/{job_id}/evaluations')
                  if e.get('status') == 'blocked'],
                 30, f'{policy}: job {job_id} to be placed or evaluated')
    gpus = api(dev.port, '/v1/gpus')
    partly = [(g['node_name'], g['device']['id'], g['compute_used_milli']) for g in gpus
              if g['tenants'] > 0 and g['compute_used_milli'] < 1000]
    return partly, {j for j, _, _ in SCENARIO if placed(dev, j)}, gpus


def placed(a, job_id):
    return [x for x in api(a.port, f'/v1/job/{job_id}/allocations')
            if x['desired_status'] == 'run' and x['client_status'] in ('pending', 'running')]


def test_herd_policy_strands_fewer_gpus_than_binpack(agents, tmp_path):
    herd_partly, herd_placed, herd_gpus = run_scenario(agents, tmp_path, 'herd')
    bin_partly, bin_placed, bin_gpus = run_scenario(agents, tmp_path, 'binpack')
    detail = (f'herd: partly used {herd_partly}, placed {sorted(herd_placed)}\n'
              f'binpack: partly used {bin_partly}, placed {sorted(bin_placed)}')
    # the pinned setup went where it was pinned under both policies
    assert {'whole-a', 'half-b'} <= herd_placed and {'whole-a', 'half-b'} <= bin_placed, detail
    print(detail)
    assert len(herd_partly) < len(bin_partly), detail
    assert len(herd_placed) > len(bin_placed), detail
    # the expected outcome of the scenario, exactly
    assert herd_partly == [] and len(herd_placed) == 5, detail
    assert len(bin_partly) == 2 and 'whole-2' not in bin_placed, detail
