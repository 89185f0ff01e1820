"""End-to-end: acting on one allocation by hand.

`herd alloc stop` (the server stops it and places a replacement: a service
keeps its count, a batch job stopped mid-run runs again), `herd alloc
restart` (in place: a new process in the same allocation, a restart event,
the restart policy's attempts untouched) and `herd alloc signal` (a task
that traps USR1 records it); bad input changes nothing; with ACL on, a token
that may only read the namespace is refused all three.

Real herd agents on 127.0.0.1 (the `agents` fixture of test_control_plane)."""
import os
import pathlib

from test_acl import acl_cluster, call, herd as herd_as
from test_control_plane import (agents, api, cli, job_allocs,  # noqa: F401
                                running_allocs, wait_for, write_job)
from test_tasks import alloc_dir, start_dev

USER_STOP = 'stopped by user; replaced'

# A task that says who it is (its pid, in the allocation dir), records each
# USR1 it gets, and exits 1 once when asked to (a file `fail` appears).
TASK = '''
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args = ["-c", "echo $$ > $HERD_ALLOC_DIR/pid.new; mv $HERD_ALLOC_DIR/pid.new $HERD_ALLOC_DIR/pid; trap 'echo usr1 >> $HERD_ALLOC_DIR/usr1' USR1; while true; do if [ -f $HERD_ALLOC_DIR/fail ]; then rm -f $HERD_ALLOC_DIR/fail; exit 1; fi; sleep 0.1; done"]
      }
      resources {
        cpu = 100
        memory = 64
      }
    }
'''


def job(job_id, jtype='service', count=1, restart='attempts = 1\n      interval = "1h"\n'
        '      delay = "0s"\n      mode = "fail"'):
    return f'''
job "{job_id}" {{
  type = "{jtype}"
  group "g" {{
    count = {count}
    restart {{
      {restart}
    }}
{TASK}
  }}
}}
'''


def pid_of(d):
    """The pid the task wrote in allocation dir d, or None."""
    try:
        return int((d / 'alloc' / 'pid').read_text())
    except (OSError, ValueError):
        return None


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def the_alloc(port, alloc_id):
    return api(port, f'/v1/allocation/{alloc_id}')


def task_events(a):
    return [(e['type'], e['message']) for e in a['task_states']['t']['events']]


def run_job(dev, tmp_path, name, text, want):
    r = cli(dev.port, 'job', 'run', '-detach', write_job(tmp_path, name, text))
    assert r.returncode == 0, r.stdout + r.stderr
    return wait_for(lambda: len(running_allocs(dev.port, name)) == want
                    and running_allocs(dev.port, name), 30, f'{want} allocations of {name} running')


def test_stop_replaces_a_service_instance(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    allocs = run_job(dev, tmp_path, 'web', job('web', count=2), 2)
    victim, other = allocs[0]['id'], allocs[1]['id']

    r = cli(dev.port, 'alloc', 'stop', victim[:8], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'evaluation' in r.stdout and 'replaced by' in r.stdout, r.stdout

    old = wait_for(lambda: (a := the_alloc(dev.port, victim))['client_status'] == 'complete' and a,
                   30, 'the stopped allocation to end')
    assert old['desired_status'] == 'stop'
    assert old['desired_description'] == USER_STOP
    now = wait_for(lambda: len(running_allocs(dev.port, 'web')) == 2
                   and running_allocs(dev.port, 'web'), 30, 'two instances running again')
    ids = {a['id'] for a in now}
    assert victim not in ids and other in ids
    [repl] = [a for a in now if a['id'] != other]
    assert repl['previous_allocation'] == victim
    assert repl['index'] == old['index']
    assert repl['reschedule_attempts'] == 0
    r = cli(dev.port, 'alloc', 'status', victim)
    assert r.returncode == 0 and USER_STOP in r.stdout, r.stdout

    # stopped already: refused, nothing placed
    r = cli(dev.port, 'alloc', 'stop', victim)
    assert r.returncode == 1 and 'nothing to stop' in r.stderr, r.stderr
    assert len([a for a in job_allocs(dev.port, 'web') if a['desired_status'] == 'run']) == 2
    # unknown allocation: refused, nothing stopped
    for args in (['stop', 'ffffffff'], ['restart', 'ffffffff'], ['signal', '-s', 'USR1', 'ffffffff']):
        r = cli(dev.port, 'alloc', *args)
        assert r.returncode == 1 and 'no allocation' in r.stderr, (args, r.stderr)
    assert {a['id'] for a in running_allocs(dev.port, 'web')} == ids


def test_stop_a_batch_job_mid_run_replaces_it(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    [a] = run_job(dev, tmp_path, 'train', job('train', jtype='batch'), 1)
    d = alloc_dir(dev, a['id'])
    wait_for(lambda: pid_of(d), 10, 'the task to start')

    r = cli(dev.port, 'alloc', 'stop', '-detach', a['id'])
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'evaluation' in r.stdout and 'replaced' not in r.stdout, r.stdout

    repl = wait_for(lambda: [x for x in running_allocs(dev.port, 'train')
                             if x['previous_allocation'] == a['id']], 30, 'the replacement')[0]
    old = wait_for(lambda: (x := the_alloc(dev.port, a['id']))['client_status'] == 'complete'
                   and x, 30, 'the stopped allocation to end')
    assert old['desired_description'] == USER_STOP
    assert repl['id'] != a['id'] and repl['client_status'] == 'running'
    wait_for(lambda: pid_of(alloc_dir(dev, repl['id'])), 10, 'the replacement task to start')


def test_restart_and_signal_in_place(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    [a] = run_job(dev, tmp_path, 'svc', job('svc'), 1)
    aid = a['id']
    d = alloc_dir(dev, aid)
    pid1 = wait_for(lambda: pid_of(d), 10, 'the task to write its pid')

    # restart: a new process in the same allocation
    r = cli(dev.port, 'alloc', 'restart', aid[:8])
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'restarting t' in r.stdout, r.stdout
    pid2 = wait_for(lambda: (p := pid_of(d)) and p != pid1 and p, 30, 'a new task process')
    assert not alive(pid1)
    cur = wait_for(lambda: (x := the_alloc(dev.port, aid))['task_states']['t']['state']
                   == 'running' and x, 10, 'the task running again')
    assert cur['desired_status'] == 'run' and cur['client_status'] == 'running'
    assert cur['task_states']['t']['restarts'] == 1
    assert ('Restart Signaled', 'restarted by user') in task_events(cur), task_events(cur)
    assert [x['id'] for x in running_allocs(dev.port, 'svc')] == [aid]
    r = cli(dev.port, 'alloc', 'status', aid)
    assert 'Restart Signaled' in r.stdout and 'restarted by user' in r.stdout, r.stdout

    # a second one, by task name: two user restarts with attempts = 1
    r = cli(dev.port, 'alloc', 'restart', '-task', 't', aid)
    assert r.returncode == 0, r.stdout + r.stderr
    pid3 = wait_for(lambda: (p := pid_of(d)) and p != pid2 and p, 30, 'a third task process')
    # the policy's one attempt is still there: a failure is restarted
    (d / 'alloc' / 'fail').write_text('')
    wait_for(lambda: (p := pid_of(d)) and p != pid3, 30, 'the policy to restart the failed task')
    cur = wait_for(lambda: (x := the_alloc(dev.port, aid))['task_states']['t']['state']
                   == 'running' and x, 10, 'the task running after its failure')
    assert cur['task_states']['t']['restarts'] == 3
    assert not cur['task_states']['t']['failed']
    assert cur['client_status'] == 'running'
    assert any(t == 'Restarting' and m.startswith('task restarting in')
               for t, m in task_events(cur)), task_events(cur)
    pid4 = pid_of(d)

    # signal: the task's trap records it
    usr1 = d / 'alloc' / 'usr1'
    r = cli(dev.port, 'alloc', 'signal', '-s', 'SIGUSR1', aid)
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'SIGUSR1 sent to t' in r.stdout, r.stdout
    wait_for(lambda: usr1.exists() and usr1.read_text() == 'usr1\n', 10, 'the trap to run')
    r = cli(dev.port, 'alloc', 'signal', '-s', '10', '-task', 't', aid)   # by number
    assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: usr1.read_text() == 'usr1\nusr1\n', 10, 'the trap to run again')
    cur = the_alloc(dev.port, aid)
    assert ('Signaling', 'task being sent SIGUSR1 by user') in task_events(cur), task_events(cur)
    assert pid_of(d) == pid4 and alive(pid4)

    # bad input: a clear error, nothing sent or restarted
    r = cli(dev.port, 'alloc', 'signal', '-s', 'SIGNOPE', aid)
    assert r.returncode == 1 and 'unknown signal "SIGNOPE"' in r.stderr, r.stderr
    r = cli(dev.port, 'alloc', 'signal', '-s', 'USR1', '-task', 'nope', aid)
    assert r.returncode == 1 and 'no task "nope"' in r.stderr, r.stderr
    r = cli(dev.port, 'alloc', 'restart', '-task', 'no/pe', aid)
    assert r.returncode == 1 and 'task must be a task name' in r.stderr, r.stderr
    node_api = the_alloc(dev.port, aid)['node_http_addr']
    status, body = call(node_api, f'/v1/client/allocation/{aid}/signal', method='POST',
                        body={'signal': 'USR1', 'extra': 1})
    assert status == 400 and 'unknown field' in body['error']['message'], body
    status, body = call(node_api, f'/v1/client/allocation/{aid}/restart', method='POST',
                        body={'task': 'x' * 20000})
    assert status == 413, body
    status, body = call(node_api, f'/v1/client/allocation/{aid}/restart')
    assert status == 405 and body['error']['message'] == 'only POST', body
    status, body = call(node_api, f'/v1/client/allocation/{aid}/stats', method='PUT', body={})
    assert status == 405 and body['error']['message'] == 'only GET', body
    assert usr1.read_text() == 'usr1\nusr1\n'
    assert pid_of(d) == pid4 and alive(pid4)
    cur = the_alloc(dev.port, aid)
    assert cur['task_states']['t']['restarts'] == 3


def test_acl_read_only_token_is_refused(agents, tmp_path):
    port, addr, mgmt, secrets, client = acl_cluster(agents, tmp_path, [
        ('submit', 'namespace "team-a" {\n  policy = "submit"\n}\n'),
        ('read', 'namespace "team-a" {\n  policy = "read"\n}\n'),
    ])

    f = write_job(tmp_path, 'svc', job('svc'))
    r = herd_as(port, 'job', 'run', '-namespace', 'team-a', f, token=secrets['submit'], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    [a] = call(addr, '/v1/job/svc/allocations?namespace=team-a', token=secrets['read'])[1]
    d = pathlib.Path(client.dir) / 'data' / 'alloc' / a['id']
    pid = wait_for(lambda: pid_of(d), 10, 'the task to start')

    reader = secrets['read']
    for args in (['stop'], ['restart'], ['signal', '-s', 'USR1']):
        r = herd_as(port, 'alloc', *args, '-namespace', 'team-a', a['id'][:8], token=reader)
        assert r.returncode == 1, (args, r.stdout)
        assert 'permission denied' in r.stderr, (args, r.stderr)
    node_api = call(addr, f'/v1/allocation/{a["id"]}', token=reader)[1]['node_http_addr']
    for op, body in (('restart', {}), ('signal', {'signal': 'USR1'})):
        status, _ = call(node_api, f'/v1/client/allocation/{a["id"]}/{op}', token=reader,
                         method='POST', body=body)
        assert status == 403, (op, status)
        status, _ = call(node_api, f'/v1/client/allocation/{a["id"]}/{op}', method='POST',
                         body=body)
        assert status in (403, 404), (op, status)
    # nothing happened
    cur = call(addr, f'/v1/allocation/{a["id"]}', token=reader)[1]
    assert cur['desired_status'] == 'run' and cur['task_states']['t']['restarts'] == 0
    assert pid_of(d) == pid and alive(pid) and not (d / 'alloc' / 'usr1').exists()

    # the token that may submit there may
    r = herd_as(port, 'alloc', 'signal', '-s', 'USR1', '-namespace', 'team-a', a['id'][:8],
                token=secrets['submit'])
    assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: (d / 'alloc' / 'usr1').exists(), 10, 'the trap to run')


def test_docker_signal_and_restart(engine, agents, tmp_path):
    """The docker driver: the signal through the Engine API's kill, a
    restart as a new container of the same allocation."""
    from test_tasks_docker import docker_job, start_docker_cluster
    server, client, _ = start_docker_cluster(agents, tmp_path, engine['socket'])
    f = write_job(tmp_path, 'dk', docker_job(
        'dk', "echo $(date +%s%N) >> /alloc/starts; trap 'echo usr1 >> /alloc/usr1' USR1; "
        "while true; do sleep 0.1; done"))
    r = cli(server.port, 'job', 'run', '-detach', f)
    assert r.returncode == 0, r.stdout + r.stderr
    a = wait_for(lambda: [x for x in job_allocs(server.port, 'dk')
                          if x.get('task_states', {}).get('box', {}).get('state') == 'running'],
                 60, f'the docker task to run\n{client.log()[-2000:]}')[0]
    d = alloc_dir(client, a['id']) / 'alloc'
    wait_for(lambda: (d / 'starts').exists(), 20, 'the container to start')

    r = cli(server.port, 'alloc', 'signal', '-s', 'USR1', a['id'])
    assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: (d / 'usr1').exists() and (d / 'usr1').read_text() == 'usr1\n', 20,
             'the container\'s trap to run')

    r = cli(server.port, 'alloc', 'restart', a['id'])
    assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: len((d / 'starts').read_text().splitlines()) == 2, 60,
             f'the container to start again\n{client.log()[-2000:]}')
    cur = wait_for(lambda: (x := api(server.port, f'/v1/allocation/{a["id"]}'))
                   ['task_states']['box']['state'] == 'running' and x, 30, 'running again')
    assert cur['task_states']['box']['restarts'] == 1 and cur['client_status'] == 'running'
    assert 'Restart Signaled' in [e['type'] for e in cur['task_states']['box']['events']]
