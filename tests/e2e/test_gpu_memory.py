"""GPU memory per task and the memory limit of timeslice shares
(docs/gpu-sharing.md, "GPU memory per task"), on a dev agent with two
simulated T4s in timeslice mode whose description the test rewrites while
herd runs: the simulated NVML lists the processes the test writes there,
with real pids (the task's own, or this test's for a foreign process).

What is checked:
- a task's process on its GPU is the task's: `herd alloc status` and the
  client's stats route show its use against its share, GET /v1/gpus and
  the metrics show it for its holder, a process of nobody's shows as
  foreign;
- within its share nothing happens; over it for the grace (2 samples of
  200 ms), warn gives one task event and the task runs on;
- kill kills the task as a failure: the event with the figures, a restart
  counted against its restart policy, the new run left alone; out of
  restarts, the allocation fails with a description that says why."""
import json
import os
import time
import urllib.request

from test_control_plane import GPUS, Agent, agents, api, cli, wait_for, write_job  # noqa: F401

SHARE_MIB = 2048


def config(limit):
    return ('gpu {\n  sharing = "timeslice"\n  stats_period = "200ms"\n'
            f'  timeslice_memory_limit = "{limit}"\n  timeslice_memory_grace = 2\n}}\n')


def job(job_id, attempts=3):
    return f'''
job "{job_id}" {{
  type = "service"
  group "g" {{
    reschedule {{
      attempts  = 0
      unlimited = false
    }}
    restart {{
      attempts = {attempts}
      interval = "1h"
      delay    = "1s"
      mode     = "fail"
    }}
    task "t" {{
      driver = "raw_exec"
      config {{
        command = "/bin/sh"
        args = ["-c", "echo $$ >> $HERD_ALLOC_DIR/pids; exec sleep 300"]
      }}
      resources {{
        cpu = 100
        memory = 64
        device "nvidia/gpu" {{
          compute = 25
          memory = "2 GiB"
        }}
      }}
    }}
  }}
}}
'''


class Machine:
    """The simulated GPUs' description, rewritten atomically."""

    def __init__(self, tmp_path):
        self.path = tmp_path / 'gpus.json'
        self.desc = json.loads((GPUS / 't4-2x.json').read_text())
        self.write({})

    def write(self, procs):
        """procs: {gpu uuid: [(pid, MiB)]}."""
        for g in self.desc['gpus']:
            g['processes'] = [{'pid': p, 'memory_mib': m} for p, m in procs.get(g['uuid'], [])]
        tmp = self.path.with_suffix('.tmp')
        tmp.write_text(json.dumps(self.desc))
        # the simulator sees a change by inode, size or mtime
        os.replace(tmp, self.path)


def start(agents, tmp_path, limit):
    m = Machine(tmp_path)
    p = tmp_path / 'agent.hcl'
    p.write_text(config(limit))
    a = Agent(tmp_path, 'dev', ['-dev', '-http-port', '0', '-config', str(p)],
              gpu_file=m.path).start()
    agents.append(a)
    wait_for(lambda: [n for n in api(a.port, '/v1/nodes') if n['status'] == 'ready'], 15,
             'the dev node to be ready')
    return a, m


def run(a, tmp_path, job_id, attempts=3):
    r = cli(a.port, 'job', 'run', '-detach', write_job(tmp_path, job_id, job(job_id, attempts)))
    assert r.returncode == 0, r.stderr
    alloc = wait_for(lambda: [x for x in api(a.port, f'/v1/job/{job_id}/allocations')
                              if x['client_status'] == 'running'], 30, f'{job_id} running')[0]
    pids = a.dir / 'data' / 'alloc' / alloc['id'] / 'alloc' / 'pids'
    wait_for(lambda: pids.exists() and pids.read_text().strip(), 10, 'the task pid')
    return alloc, pids


def last_pid(pids):
    return int(pids.read_text().split()[-1])


def task_state(a, alloc):
    return api(a.port, f'/v1/allocation/{alloc["id"]}')['task_states']['t']


def events(a, alloc, kind):
    return [e for e in task_state(a, alloc)['events'] if e['type'] == kind]


def client_stats(a, alloc):
    addr = api(a.port, '/v1/node/' + alloc['node_id'])['http_addr']
    with urllib.request.urlopen(f'http://{addr}/v1/client/allocation/{alloc["id"]}/stats',
                                timeout=30) as r:
        return json.loads(r.read())['tasks']['t']


def test_use_is_reported_and_warned_once(agents, tmp_path):
    a, m = start(agents, tmp_path, 'warn')
    alloc, pids = run(a, tmp_path, 'w')
    gpu = alloc['resources']['devices'][0]['id']
    other = next(g['uuid'] for g in m.desc['gpus'] if g['uuid'] != gpu)
    pid = last_pid(pids)

    # within its share, and a foreign process (this test) on the other GPU
    m.write({gpu: [(pid, 1500)], other: [(os.getpid(), 700)]})
    st = wait_for(lambda: [g for g in client_stats(a, alloc).get('gpu_memory', [])
                           if g['memory_mib'] == 1500], 10, 'the task\'s use')[0]
    assert st == {'device': gpu, 'memory_mib': 1500, 'share_mib': SHARE_MIB}
    out = cli(a.port, 'alloc', 'status', alloc['id']).stdout
    assert f'GPU memory: {gpu} 1.5 GiB of 2.0 GiB\n' in out, out

    # the heartbeat carries it to the server: holders and foreign memory
    def gpus_seen():
        gs = {g['device']['id']: g for g in api(a.port, '/v1/gpus')}
        h = gs[gpu]['allocations'][0]
        return (h.get('gpu_memory_used_mib') == 1500 and
                gs[other].get('foreign_memory_mib') == 700) and gs
    gs = wait_for(gpus_seen, 20, 'the use in GET /v1/gpus')
    assert gs[gpu].get('foreign_memory_mib') == 0
    assert gs[gpu]['allocations'][0]['tasks'] == [{'task': 't', 'gpu_memory_used_mib': 1500}]
    out = cli(a.port, 'gpu', 'status').stdout
    assert 'using 1.5 GiB' in out and 'foreign processes: 700 MiB' in out, out
    metrics = api(a.port, '/v1/metrics?format=json')
    fam = next(f for f in metrics['metrics'] if f['name'] == 'herd_task_gpu_memory_bytes')
    assert [(s['labels']['alloc_id'], s['labels']['task'], s['labels']['device_id'], s['value'])
            for s in fam['samples']] == [(alloc['id'], 't', gpu, 1500 * 1024 * 1024)]
    time.sleep(1)   # five samples within the share
    assert not events(a, alloc, 'GPU Memory Exceeded')

    # over it: one event with the figures after the grace, the task runs on
    m.write({gpu: [(pid, 3000)]})
    ev = wait_for(lambda: events(a, alloc, 'GPU Memory Exceeded'), 10, 'the warning')
    assert ev[0]['message'] == f'GPU memory over its share: {gpu} 2.9 GiB of 2 GiB', ev
    time.sleep(1.5)
    assert len(events(a, alloc, 'GPU Memory Exceeded')) == 1
    ts = task_state(a, alloc)
    assert ts['state'] == 'running' and ts['restarts'] == 0
    out = cli(a.port, 'alloc', 'status', alloc['id']).stdout
    assert f'GPU memory: {gpu} 2.9 GiB of 2.0 GiB (over its share)' in out, out

    # back within, then over again: a new exceedance, a second event
    m.write({gpu: [(pid, 100)]})
    wait_for(lambda: [g for g in client_stats(a, alloc).get('gpu_memory', [])
                      if g['memory_mib'] == 100], 10, 'the use back within')
    m.write({gpu: [(pid, 2500)]})
    wait_for(lambda: len(events(a, alloc, 'GPU Memory Exceeded')) == 2, 10, 'a second warning')
    assert last_pid(pids) == pid


def test_kill_restarts_the_task_as_a_failure(agents, tmp_path):
    a, m = start(agents, tmp_path, 'kill')
    alloc, pids = run(a, tmp_path, 'k')
    gpu = alloc['resources']['devices'][0]['id']
    pid = last_pid(pids)

    m.write({gpu: [(pid, 2048)]})   # at its share: within
    wait_for(lambda: [g for g in client_stats(a, alloc).get('gpu_memory', [])
                      if g['memory_mib'] == 2048], 10, 'the task\'s use')
    time.sleep(1)
    assert task_state(a, alloc)['restarts'] == 0

    m.write({gpu: [(pid, 4096)]})
    wait_for(lambda: len(pids.read_text().split()) == 2, 20, 'the task restarted')
    ts = task_state(a, alloc)
    kinds = [e['type'] for e in ts['events']]
    assert 'GPU Memory Exceeded' in kinds, kinds
    ex = events(a, alloc, 'GPU Memory Exceeded')[0]['message']
    assert ex == f'GPU memory over its share: {gpu} 4 GiB of 2 GiB; killing the task', ex
    term = [e['message'] for e in ts['events'] if e['type'] == 'Terminated']
    assert term == [f'killed: GPU memory over its share ({gpu} 4 GiB of 2 GiB)'], term
    # a failure for the restart policy ("task restarting in 1s"), not a
    # user's restart
    restarting = [e['message'] for e in ts['events'] if e['type'] == 'Restarting']
    assert restarting and 'not counted' not in restarting[0], restarting
    wait_for(lambda: task_state(a, alloc)['state'] == 'running' and
             task_state(a, alloc)['restarts'] == 1, 15, 'the new run')
    # the old pid is gone; the new run uses nothing: left alone
    time.sleep(1.5)
    ts = task_state(a, alloc)
    assert ts['state'] == 'running' and ts['restarts'] == 1
    assert len(events(a, alloc, 'GPU Memory Exceeded')) == 1

    # out of restarts: the allocation fails, and its description says why
    alloc, pids = run(a, tmp_path, 'k0', attempts=0)
    gpu = alloc['resources']['devices'][0]['id']
    m.write({gpu: [(last_pid(pids), 3072)]})
    done = wait_for(lambda: [x for x in api(a.port, '/v1/job/k0/allocations')
                             if x['client_status'] == 'failed'], 20, 'k0 failed')[0]
    assert done['client_description'] == \
        f'task t killed: GPU memory over its share ({gpu} 3 GiB of 2 GiB)', done
    assert done['task_states']['t']['failed'] is True
