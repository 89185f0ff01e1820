"""End-to-end: a group's disconnect block (docs/jobspec.md, "disconnect")
with one server and two clients on 127.0.0.1.  A client is cut off by
SIGSTOP (the server misses its heartbeats, its tasks keep running) and
brought back by SIGCONT; for stop_on_client_after the server is the one
stopped, so that a client reaches no server."""
import os
import re
import signal
import urllib.request

import pytest

from test_control_plane import (Agent, agents, api, cli, job_allocs,  # noqa: F401
                                node_name_of, nodes_ready, running_allocs, server_config,
                                start_client, wait_for, write_job)

TTL = 2  # server_config's heartbeat_ttl


def service(job_id, disconnect, command='exec sleep 300'):
    return f'''
job "{job_id}" {{
  group "g" {{
    {disconnect}
    task "t" {{
      driver = "raw_exec"
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


@pytest.fixture
def pair(agents, tmp_path):
    srv = Agent(tmp_path, 'server', ['-config', server_config(tmp_path),
                                     '-http-port', '0']).start()
    agents.append(srv)
    clients = {
        'a': start_client(agents, tmp_path, 'a', srv.port, 't4-2x.json'),
        'b': start_client(agents, tmp_path, 'b', srv.port, 't4-2x.json'),
    }
    wait_for(lambda: nodes_ready(srv.port, clients), 15, 'two ready nodes')
    yield srv, clients
    # a stopped process takes no SIGTERM: resume every one before teardown
    for a in [srv, *clients.values()]:
        if a.proc and a.proc.poll() is None:
            a.proc.send_signal(signal.SIGCONT)


def alloc(port, alloc_id):
    return api(port, f'/v1/allocation/{alloc_id}')


def run_one(port, tmp_path, job_id, text):
    r = cli(port, 'job', 'run', write_job(tmp_path, job_id, text))
    assert r.returncode == 0, r.stdout + r.stderr
    [a] = running_allocs(port, job_id)
    return a


def test_reconnect_within_lost_after_keeps_the_original(pair, tmp_path):
    srv, clients = pair
    port = srv.port
    a = run_one(port, tmp_path, 'web', service('web', '''disconnect {
      lost_after = "20s"
      replace    = true
      reconcile  = "keep_original"
    }'''))
    victim = clients[node_name_of(port, a)]
    victim.proc.send_signal(signal.SIGSTOP)
    try:
        wait_for(lambda: alloc(port, a['id'])['client_status'] == 'unknown', TTL + 15,
                 'the original to turn unknown')
        repl = wait_for(lambda: [x for x in running_allocs(port, 'web') if x['id'] != a['id']],
                        30, 'a replacement to run on the other node')[0]
        assert repl['node_id'] != a['node_id']
        assert repl['previous_allocation'] == a['id']
        orig = alloc(port, a['id'])
        assert orig['desired_status'] == 'run' and orig['unknown_since'] > 0
        # the summary counts it as unknown; the CLI shows the column
        [job] = [j for j in api(port, '/v1/jobs') if j['id'] == 'web']
        assert job['summary']['g']['unknown'] == 1, job['summary']
        r = cli(port, 'job', 'status', 'web')
        assert 'UNKNOWN' in r.stdout, r.stdout
        r = cli(port, 'alloc', 'status', a['id'])
        assert 'unknown' in r.stdout, r.stdout
        with urllib.request.urlopen(f'http://127.0.0.1:{port}/v1/metrics', timeout=30) as m:
            text = m.read().decode()
        assert re.search(r'^herd_allocations\{[^}]*client_status="unknown"[^}]*\} 1$', text,
                         re.M), text
    finally:
        victim.proc.send_signal(signal.SIGCONT)
    # back within lost_after: the original runs on, its replacement stops
    wait_for(lambda: alloc(port, repl['id'])['desired_status'] == 'stop', 30,
             'the replacement to be stopped')
    orig = wait_for(lambda: (lambda o: o['client_status'] == 'running' and o)(alloc(port, a['id'])),
                    30, 'the original to run again')
    assert orig['desired_status'] == 'run'
    assert 'unknown_since' not in wait_for(
        lambda: (lambda o: 'unknown_since' not in o and o)(alloc(port, a['id'])), 30,
        'the original to be decided')
    # the same task, never restarted
    assert orig['task_states']['t']['restarts'] == 0
    wait_for(lambda: alloc(port, repl['id'])['client_status'] == 'complete', 30,
             'the replacement\'s task to end')
    assert [x['id'] for x in running_allocs(port, 'web')] == [a['id']]


def test_lost_after_passes_then_lost_and_replaced(pair, tmp_path):
    srv, clients = pair
    port = srv.port
    a = run_one(port, tmp_path, 'calm', service('calm', '''disconnect {
      lost_after = "5s"
      replace    = false
    }
    reschedule {
      delay          = "2s"
      delay_function = "constant"
    }'''))
    victim = clients[node_name_of(port, a)]
    victim.proc.send_signal(signal.SIGSTOP)
    try:
        wait_for(lambda: alloc(port, a['id'])['client_status'] == 'unknown', TTL + 15,
                 'the allocation to turn unknown')
        # replace = false: nothing else placed while it is unknown
        assert [x['id'] for x in job_allocs(port, 'calm')] == [a['id']]
        wait_for(lambda: alloc(port, a['id'])['client_status'] == 'lost', 30,
                 'the allocation to turn lost once lost_after passed')
        # then replaced by the reschedule policy (its delay after the loss)
        repl = wait_for(lambda: running_allocs(port, 'calm'), 30, 'a replacement to run')[0]
        assert repl['node_id'] != a['node_id'] and repl['previous_allocation'] == a['id']
        assert repl['reschedule_attempts'] == 1
        lost = alloc(port, a['id'])
        assert lost['client_status'] == 'lost' and lost['desired_status'] == 'stop', lost
    finally:
        victim.proc.send_signal(signal.SIGCONT)
    # the node back too late: its allocation stays stopped
    wait_for(lambda: alloc(port, a['id'])['client_status'] in ('complete', 'lost'), 30,
             'the old allocation to stay ended')
    assert alloc(port, a['id'])['desired_status'] == 'stop'


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_stop_on_client_after_stops_tasks_of_a_cut_off_client(pair, tmp_path):
    srv, clients = pair
    port = srv.port
    pids = tmp_path / 'pids'
    pids.mkdir()
    cut = run_one(port, tmp_path, 'cut', service('cut', '''disconnect {
      stop_on_client_after = "3s"
    }''', command=f'echo $$ > {pids}/cut; exec sleep 300'))
    # a job without the block, on the same node: it keeps running
    keep_text = service('keep', '', command=f'echo $$ > {pids}/keep; exec sleep 300').replace(
        'group "g" {', 'group "g" {\n    constraint {\n      attribute = "${node.unique.name}"\n'
        f'      value = "{node_name_of(port, cut)}"\n    }}', 1)
    run_one(port, tmp_path, 'keep', keep_text)
    cut_pid = int(wait_for(lambda: (pids / 'cut').exists() and (pids / 'cut').read_text(), 10,
                           'the pid of cut'))
    keep_pid = int(wait_for(lambda: (pids / 'keep').exists() and (pids / 'keep').read_text(), 10,
                            'the pid of keep'))
    assert pid_alive(cut_pid) and pid_alive(keep_pid)
    srv.proc.send_signal(signal.SIGSTOP)
    try:
        wait_for(lambda: not pid_alive(cut_pid), 30, 'the cut-off client to stop its task')
        assert pid_alive(keep_pid)
    finally:
        srv.proc.send_signal(signal.SIGCONT)
    # the client reports the stop once the server answers again
    done = wait_for(lambda: (lambda o: o['client_status'] == 'complete' and o)(alloc(port, cut['id'])),
                    30, 'the stop to be reported')
    assert 'no server reached' in done['client_description'], done
    assert pid_alive(keep_pid)
    assert 'no server reached for 3s' in clients[node_name_of(port, cut)].log()
