"""End-to-end: a gang (`gang = true`) on a server and client agents with
simulated GPUs.  A 3-member gang of 2 GPUs each on two 2-GPU clients stays
pending with the engine's explanation and places nothing; a third client
starts all three, each seeing its HERD_GANG_* peers; killing one member's
task for good stops the others and places the gang again, together.  On a
dev agent: a batch member that completed is not run again when the gang
restarts, unless the group says gang_restart = "all"."""
import json
import os
import signal

from test_control_plane import (GPUS, Agent, api, cli, job_allocs, nodes_ready,  # noqa: F401
                                agents, server_config, start_client, wait_for, write_job)
from test_tasks import start_dev


GANG_JOB = '''
job "train" {
  type = "batch"
  group "workers" {
    count = 3
    gang = true
    network {
      port "rdzv" {}
    }
    restart {
      attempts = 0
      mode = "fail"
    }
    reschedule {
      attempts = 1
      interval = "1h"
      delay = "1s"
      delay_function = "constant"
      unlimited = false
    }
    task "rank" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args = ["-c", "env > $HERD_ALLOC_DIR/env.txt; echo TASK_PID=$$ >> $HERD_ALLOC_DIR/env.txt; exec sleep 300"]
      }
      resources {
        cpu = 100
        memory = 64
        device "nvidia/gpu" {
          count = 2
        }
      }
    }
  }
}
'''


def t4_file(tmp_path, name):
    """The 2-GPU T4 description with UUIDs of this client's own."""
    spec = json.loads((GPUS / 't4-2x.json').read_text())
    for i, g in enumerate(spec['gpus']):
        g['uuid'] = f'GPU-{name}-{i:02d}000000-0000-0000-0000-000000000000'[:40]
    p = tmp_path / f'{name}-gpus.json'
    p.write_text(json.dumps(spec))
    return p


def start_t4(agents, tmp_path, name, port):
    return start_client(agents, tmp_path, name, port, t4_file(tmp_path, name))


def live(port):
    return [a for a in job_allocs(port, 'train') if a['desired_status'] == 'run'
            and a['client_status'] in ('pending', 'running')]


def running(port):
    return [a for a in job_allocs(port, 'train')
            if a['desired_status'] == 'run' and a['client_status'] == 'running']


def env_of(clients, port, alloc):
    """The env a member's task wrote, read from its client's alloc dir."""
    name = api(port, f'/v1/node/{alloc["node_id"]}')['name']
    f = clients[name].dir / 'data' / 'alloc' / alloc['id'] / 'alloc' / 'env.txt'
    if not f.exists():
        return None
    env = dict(line.split('=', 1) for line in f.read_text().splitlines() if '=' in line)
    return env if 'TASK_PID' in env else None


def host_of(node):
    addr = node.get('http_addr', '')
    if addr.startswith('['):
        return addr[1:addr.index(']')]
    return addr.rsplit(':', 1)[0] if ':' in addr else addr


def check_peers(clients, port, allocs):
    """Every member sees the gang: size, its rank, rank 0's address and
    port, every host in rank order.  Returns the envs by rank."""
    by_rank = {a['index']: a for a in allocs}
    assert sorted(by_rank) == [0, 1, 2]
    hosts = [host_of(api(port, f'/v1/node/{by_rank[r]["node_id"]}')) or '127.0.0.1'
             for r in range(3)]
    leader_port = next(p['value'] for p in by_rank[0]['resources']['ports']
                       if p['label'] == 'rdzv')
    envs = {}
    for r, a in by_rank.items():
        env = wait_for(lambda a=a: env_of(clients, port, a), 30, f'rank {r} to write its env')
        assert env['HERD_GANG_SIZE'] == '3'
        assert env['HERD_GANG_RANK'] == str(r) == env['HERD_ALLOC_INDEX']
        assert env['HERD_GANG_LEADER_IP'] == hosts[0]
        assert env['HERD_GANG_LEADER_PORT_rdzv'] == str(leader_port)
        assert env['HERD_GANG_HOSTS'] == ','.join(hosts)
        assert 'NOMAD_GANG_SIZE' not in env
        assert a['gang']['size'] == 3 and a['gang']['rank'] == r
        envs[r] = env
    return envs


def test_gang_waits_whole_then_starts_then_restarts_together(agents, tmp_path):
    srv = Agent(tmp_path, 'server', ['-config', server_config(tmp_path),
                                     '-http-port', '0']).start()
    agents.append(srv)
    port = srv.port
    clients = {n: start_t4(agents, tmp_path, n, port) for n in ('w1', 'w2')}
    wait_for(lambda: nodes_ready(port, clients), 15, 'two ready nodes')

    # Room for two members of three: nothing is placed, and the reason shows.
    r = cli(port, 'job', 'run', '-detach', write_job(tmp_path, 'train', GANG_JOB))
    assert r.returncode == 0, r.stdout + r.stderr

    def explained():
        evs = api(port, '/v1/job/train/evaluations')
        return [e for e in evs if 'gang of 3: 2 of 3 members fit'
                in e.get('failed_placements', {}).get('workers', {}).get('explanation', '')]
    wait_for(explained, 30, 'the gang explanation')
    assert job_allocs(port, 'train') == []
    r = cli(port, 'job', 'status', 'train')
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'gang of 3: 2 of 3 members fit' in r.stdout, r.stdout

    # A third client: all three start, each knowing its peers.
    clients['w3'] = start_t4(agents, tmp_path, 'w3', port)
    first = wait_for(lambda: len(running(port)) == 3 and running(port), 60, 'three running members')
    assert len({a['node_id'] for a in first}) == 3
    envs = check_peers(clients, port, first)
    r = cli(port, 'alloc', 'status', first[0]['id'][:8])
    assert r.returncode == 0, r.stdout + r.stderr
    assert f'rank {first[0]["index"]} of 3' in r.stdout, r.stdout
    r = cli(port, 'job', 'status', 'train')
    assert r.returncode == 0, r.stdout + r.stderr
    assert all(f'workers (gang {k}/3)' in r.stdout for k in range(3)), r.stdout

    # Kill one member's task for good (no restarts): the others stop and the
    # gang is placed again, together, with one reschedule attempt.
    victim = next(a for a in first if a['index'] == 1)
    os.kill(int(envs[1]['TASK_PID']), signal.SIGKILL)
    old_ids = {a['id'] for a in first}

    def replaced():
        now = running(port)
        return len(now) == 3 and not ({a['id'] for a in now} & old_ids) and now
    second = wait_for(replaced, 90, 'the gang to run again')
    for a in second:
        assert a['reschedule_attempts'] == 1
        assert a['previous_allocation'] in old_ids
    for a in first:
        old = api(port, f'/v1/allocation/{a["id"]}')
        assert old['desired_status'] == 'stop'
        if a['id'] != victim['id']:
            assert 'gang' in old['desired_description'] and old['client_status'] == 'complete'
    assert api(port, f'/v1/allocation/{victim["id"]}')['client_status'] == 'failed'
    check_peers(clients, port, second)


def partial_gang_job(job_id, runs, gang_restart):
    """A 3-member batch gang on one node: rank 0 completes at once, rank 1
    fails on its first run once runs/go exists and completes on its
    second, rank 2 runs on.  Every run appends HERD_GANG_SIZE to
    runs/<rank>."""
    restart = f'gang_restart = "{gang_restart}"' if gang_restart else ''
    script = (f'echo $HERD_GANG_SIZE >> {runs}/$HERD_ALLOC_INDEX; case $HERD_ALLOC_INDEX in '
              f'0) exit 0;; 1) while [ ! -e {runs}/go ]; do sleep 0.1; done; '
              f'[ $(wc -l < {runs}/1) -ge 2 ];; *) exec sleep 300;; esac')
    return f'''
job "{job_id}" {{
  type = "batch"
  group "workers" {{
    count = 3
    gang  = true
    {restart}
    restart {{
      attempts = 0
      mode = "fail"
    }}
    reschedule {{
      attempts = 1
      interval = "1h"
      delay = "0s"
      delay_function = "constant"
      unlimited = false
    }}
    task "rank" {{
      driver = "raw_exec"
      config {{
        command = "/bin/sh"
        args = ["-c", "{script}"]
      }}
      resources {{
        cpu = 100
        memory = 64
      }}
    }}
  }}
}}
'''


def run_partial_gang(dev, tmp_path, job_id, gang_restart):
    """Runs partial_gang_job until rank 1 failed once and its gang runs
    again; returns (runs folder, the desired-run allocations by rank)."""
    runs = tmp_path / job_id
    runs.mkdir()
    job = write_job(tmp_path, job_id, partial_gang_job(job_id, runs, gang_restart))
    r = cli(dev.port, 'job', 'run', '-detach', job)
    assert r.returncode == 0, r.stdout + r.stderr
    first = wait_for(lambda: [a for a in job_allocs(dev.port, job_id)
                              if a['index'] == 0 and a['client_status'] == 'complete'], 60,
                     'rank 0 to complete')[0]
    (runs / 'go').touch()

    def again():
        cur = {a['index']: a for a in job_allocs(dev.port, job_id)
               if a['desired_status'] == 'run'}
        return (len(cur) == 3 and cur[1]['client_status'] == 'complete'
                and cur[1].get('previous_allocation') and cur[2]['client_status'] == 'running'
                and cur[2].get('previous_allocation') and cur)
    cur = wait_for(again, 90, 'ranks 1 and 2 to run again')
    return runs, first, cur


def lines(f):
    return f.read_text().split() if f.exists() else []


def test_gang_restart_keeps_a_completed_member(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    # Default: rank 0 completed, so it keeps its result; ranks 1 and 2
    # run again, still ranks of a gang of three (rank 0 as it ran).
    runs, first, cur = run_partial_gang(dev, tmp_path, 'part', None)
    assert cur[0]['id'] == first['id'] and cur[0]['client_status'] == 'complete'
    assert lines(runs / '0') == ['3']
    assert lines(runs / '1') == ['3', '3']
    assert lines(runs / '2') == ['3', '3']
    assert cur[1]['gang']['size'] == 3 and cur[1]['reschedule_attempts'] == 1
    assert [m['rank'] for m in cur[1]['gang']['members']] == [0, 1, 2]
    assert cur[1]['gang']['members'][0]['alloc_id'] == first['id']

    # gang_restart = "all": every member runs again, the completed one too.
    runs, first, cur = run_partial_gang(dev, tmp_path, 'whole', 'all')
    wait_for(lambda: len(lines(runs / '0')) == 2, 30, 'rank 0 to run again')
    assert cur[0]['id'] != first['id'] and cur[0]['previous_allocation'] == first['id']
    assert lines(runs / '0') == ['3', '3']
    assert cur[1]['gang']['size'] == 3
