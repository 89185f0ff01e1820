"""End-to-end: shutdown_delay (docs/jobspec.md "group", "task"): a stopped
allocation leaves the service registry first, its tasks keep running for
the delay, and only then get their kill_signal; the group's delay counts
once for the allocation, a task's comes after it; an agent that shuts down
during the delay leaves the task running and the restarted agent goes on
with the same delay; a dev agent's own shutdown does not wait for it.

Each task traps SIGTERM and writes the time it got it (date +%s.%N, the
wall clock the test reads too).  The comparisons have margins of a second
or more: they check the order and the presence of the wait, not speed."""
import time

from test_control_plane import agents, api, cli, job_allocs, wait_for, write_job  # noqa: F401
from test_tasks import start_dev


def trap_task(name, out, extra=''):
    """A raw_exec task that writes out/term-<name> with the time it gets
    SIGTERM, then exits 0."""
    return f'''
    task "{name}" {{
      driver       = "raw_exec"
      kill_signal  = "SIGTERM"
      kill_timeout = "20s"
      {extra}
      config {{
        command = "/bin/sh"
        args    = ["-c", "trap 'date +%s.%N > {out}/term-{name}; exit 0' TERM; while :; do sleep 0.1; done"]
      }}
    }}'''


def one_task_job(job_id, out, delay='3s'):
    return f'''
job "{job_id}" {{
  group "g" {{
    service {{
      name = "{job_id}-svc"
      port = 8080
    }}
{trap_task("t", out, f'shutdown_delay = "{delay}"')}
  }}
}}
'''


def listed(port, name):
    return name in {s['name'] for s in api(port, '/v1/services')}


def term_time(out, task):
    f = out / f'term-{task}'
    return float(f.read_text()) if f.exists() and f.read_text().strip() else None


def task_events(alloc, task):
    return [(e['type'], e['message']) for e in alloc['task_states'][task]['events']]


def test_services_leave_before_the_kill_signal(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    out = tmp_path / 'out'
    out.mkdir()
    job = write_job(tmp_path, 'drain', one_task_job('drain', out))
    r = cli(dev.port, 'job', 'run', '-detach', job)
    assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: listed(dev.port, 'drain-svc'), 60, 'the service to register')
    [a] = wait_for(lambda: [a for a in job_allocs(dev.port, 'drain')
                            if a['client_status'] == 'running'], 30, 'the task to run')

    r = cli(dev.port, 'job', 'stop', 'drain')
    assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: not listed(dev.port, 'drain-svc'), 30, 'the service to leave')
    gone = time.time()
    assert term_time(out, 't') is None, 'SIGTERM came before the service left the registry'

    # the task runs on during the delay, and says why
    a = wait_for(lambda: [x for x in job_allocs(dev.port, 'drain')
                          if ('Waiting Shutdown Delay', 'waiting shutdown_delay 3s')
                          in task_events(x, 't')], 30, 'the delay\'s event')[0]
    assert a['desired_status'] == 'stop'
    assert a['task_states']['t']['state'] == 'running', a['task_states']['t']
    assert term_time(out, 't') is None

    term = wait_for(lambda: term_time(out, 't'), 60, 'the task to get SIGTERM')
    assert term > gone
    assert term - gone >= 2.0, f'SIGTERM {term - gone:.2f}s after the service left'
    a = wait_for(lambda: [x for x in job_allocs(dev.port, 'drain')
                          if x['client_status'] == 'complete'], 60, 'the alloc to end')[0]
    types = [t for t, _ in task_events(a, 't')]
    assert types.index('Waiting Shutdown Delay') < types.index('Killing'), types


def test_group_delay_once_then_each_tasks_own(agents, tmp_path):
    """group shutdown_delay 2s, task a 2s more, task b none: both wait the
    group's (counted once, from the stop), a then its own; herd alloc stop."""
    dev = start_dev(agents, tmp_path)
    out = tmp_path / 'out'
    out.mkdir()
    text = f'''
job "pair" {{
  group "g" {{
    shutdown_delay = "2s"
    service {{
      name = "pair-group"
      port = 8080
    }}
{trap_task("a", out, 'shutdown_delay = "2s"')}
{trap_task("b", out)}
  }}
}}
'''
    job = write_job(tmp_path, 'pair', text)
    r = cli(dev.port, 'job', 'run', '-detach', job)
    assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: listed(dev.port, 'pair-group'), 60, 'the service to register')
    [a] = wait_for(lambda: [a for a in job_allocs(dev.port, 'pair')
                            if a['client_status'] == 'running'], 30, 'the tasks to run')
    start = time.time()
    r = cli(dev.port, 'alloc', 'stop', '-detach', a['id'])
    assert r.returncode == 0, r.stdout + r.stderr
    # its replacement registers the service again: the stopped one's entry leaves
    wait_for(lambda: a['id'] not in {i['alloc_id'] for i in
                                     api(dev.port, '/v1/service/pair-group')},
             30, 'the service to leave')
    ta = wait_for(lambda: term_time(out, 'a'), 60, 'task a to get SIGTERM')
    tb = wait_for(lambda: term_time(out, 'b'), 60, 'task b to get SIGTERM')
    # b: the group's delay only; a: the group's, then its own
    assert tb - start >= 1.5, f'b got SIGTERM {tb - start:.2f}s after the stop'
    assert ta - start >= 3.5, f'a got SIGTERM {ta - start:.2f}s after the stop'
    assert ta - tb >= 1.0, f'a {ta - start:.2f}s, b {tb - start:.2f}s after the stop'
    a = wait_for(lambda: [x for x in job_allocs(dev.port, 'pair')
                          if x['client_status'] == 'complete'], 60, 'the alloc to end')[0]
    ea, eb = task_events(a, 'a'), task_events(a, 'b')
    assert ('Waiting Shutdown Delay', 'waiting group shutdown_delay 2s') in ea, ea
    assert ('Waiting Shutdown Delay', 'waiting shutdown_delay 2s') in ea, ea
    assert ('Waiting Shutdown Delay', 'waiting group shutdown_delay 2s') in eb, eb
    assert not [m for t, m in eb if m == 'waiting shutdown_delay 2s'], eb


def test_agent_restart_during_the_delay(agents, tmp_path):
    """A client that shuts down during the delay leaves the task running
    (it is not killed); the restarted client goes on with the delay that
    began before (the event says what is left), then sends SIGTERM."""
    from test_control_plane import GPUS, Agent
    from test_tasks import _client_hcl, _server_hcl
    server = Agent(tmp_path, 'server', ['-config', str(_server_hcl(tmp_path)),
                                        '-http-port', '0']).start()
    agents.append(server)
    client = Agent(tmp_path, 'c1', ['-config', str(_client_hcl(tmp_path)), '-servers',
                                    f'127.0.0.1:{server.port}', '-node', 'c1',
                                    '-http-port', '0'],
                   gpu_file=GPUS / 't4-2x.json').start()
    agents.append(client)
    wait_for(lambda: [n for n in api(server.port, '/v1/nodes') if n['status'] == 'ready'], 10,
             'the client node')
    out = tmp_path / 'out'
    out.mkdir()
    job = write_job(tmp_path, 'slow', one_task_job('slow', out, delay='8s'))
    assert cli(server.port, 'job', 'run', '-detach', job).returncode == 0
    wait_for(lambda: listed(server.port, 'slow-svc'), 60, 'the service to register')
    wait_for(lambda: [a for a in job_allocs(server.port, 'slow')
                      if a['client_status'] == 'running'], 30, 'the task to run')
    assert cli(server.port, 'job', 'stop', 'slow').returncode == 0
    wait_for(lambda: not listed(server.port, 'slow-svc'), 30, 'the service to leave')
    gone = time.time()
    wait_for(lambda: [x for x in job_allocs(server.port, 'slow')
                      if ('Waiting Shutdown Delay', 'waiting shutdown_delay 8s')
                      in task_events(x, 't')], 30, 'the delay\'s event')
    client.stop()   # SIGTERM: a client leaves its tasks running
    assert client.proc.returncode is not None
    assert term_time(out, 't') is None, 'the client\'s shutdown killed the task'
    time.sleep(1)
    assert term_time(out, 't') is None
    client.port = None
    client.start()
    wait_for(lambda: 'recovered' in client.log(), 15, 'the recovery')
    term = wait_for(lambda: term_time(out, 't'), 60, 'the task to get SIGTERM')
    assert term - gone >= 6.0, f'SIGTERM {term - gone:.2f}s after the service left'
    a = wait_for(lambda: [x for x in job_allocs(server.port, 'slow')
                          if x['client_status'] == 'complete'], 60, 'the alloc to end')[0]
    left = [m for t, m in task_events(a, 't')
            if m.startswith('waiting shutdown_delay 8s (') and m.endswith('s left)')]
    assert left, task_events(a, 't')


def test_dev_agent_shutdown_does_not_wait(agents, tmp_path):
    """A dev agent stops its tasks when it exits: a long delay under way is
    cut short (the agent's own shutdown is not the job's stop)."""
    dev = start_dev(agents, tmp_path)
    out = tmp_path / 'out'
    out.mkdir()
    job = write_job(tmp_path, 'long', one_task_job('long', out, delay='5m'))
    assert cli(dev.port, 'job', 'run', '-detach', job).returncode == 0
    wait_for(lambda: [a for a in job_allocs(dev.port, 'long')
                      if a['client_status'] == 'running'], 60, 'the task to run')
    assert cli(dev.port, 'job', 'stop', 'long').returncode == 0
    wait_for(lambda: [x for x in job_allocs(dev.port, 'long')
                      if ('Waiting Shutdown Delay', 'waiting shutdown_delay 300s')
                      in task_events(x, 't')], 30, 'the delay\'s event')
    dev.proc.send_signal(__import__('signal').SIGTERM)
    dev.proc.wait(timeout=60)
    assert term_time(out, 't') is not None, 'the dev agent exited without stopping the task'


def test_stop_while_the_agent_is_down(agents, tmp_path):
    """The job is stopped while its client is down: the restarted client
    recovers the running task and stops it as a stop does (the delay, then
    SIGTERM), whether it hears of the stop before or after the recovery."""
    from test_control_plane import GPUS, Agent
    from test_tasks import _client_hcl, _server_hcl
    server = Agent(tmp_path, 'server', ['-config', str(_server_hcl(tmp_path)),
                                        '-http-port', '0']).start()
    agents.append(server)
    client = Agent(tmp_path, 'c1', ['-config', str(_client_hcl(tmp_path)), '-servers',
                                    f'127.0.0.1:{server.port}', '-node', 'c1',
                                    '-http-port', '0'],
                   gpu_file=GPUS / 't4-2x.json').start()
    agents.append(client)
    wait_for(lambda: [n for n in api(server.port, '/v1/nodes') if n['status'] == 'ready'], 10,
             'the client node')
    out = tmp_path / 'out'
    out.mkdir()
    job = write_job(tmp_path, 'away', one_task_job('away', out, delay='2s'))
    assert cli(server.port, 'job', 'run', '-detach', job).returncode == 0
    wait_for(lambda: [a for a in job_allocs(server.port, 'away')
                      if a['client_status'] == 'running'], 30, 'the task to run')
    client.stop()   # SIGTERM: the task keeps running
    assert cli(server.port, 'job', 'stop', 'away').returncode == 0
    wait_for(lambda: not listed(server.port, 'away-svc'), 30, 'the service to leave')
    time.sleep(1)
    assert term_time(out, 't') is None
    client.port = None
    client.start()
    wait_for(lambda: term_time(out, 't'), 60, 'the recovered task to get SIGTERM')
    a = wait_for(lambda: [x for x in job_allocs(server.port, 'away')
                          if x['client_status'] == 'complete'], 60, 'the alloc to end')[0]
    assert ('Waiting Shutdown Delay', 'waiting shutdown_delay 2s') in task_events(a, 't'), \
        task_events(a, 't')


def test_job_stop_no_shutdown_delay(agents, tmp_path):
    """herd job stop -no-shutdown-delay: the allocations are marked
    (desired_transition.no_shutdown_delay) and the task gets SIGTERM without
    waiting its 5 minute delay.  The deadline is generous (a minute), yet far
    below the delay: a stop that waited it would fail here."""
    dev = start_dev(agents, tmp_path)
    out = tmp_path / 'out'
    out.mkdir()
    job = write_job(tmp_path, 'quick', one_task_job('quick', out, delay='5m'))
    assert cli(dev.port, 'job', 'run', '-detach', job).returncode == 0
    wait_for(lambda: listed(dev.port, 'quick-svc'), 60, 'the service to register')
    [a] = wait_for(lambda: [a for a in job_allocs(dev.port, 'quick')
                            if a['client_status'] == 'running'], 30, 'the task to run')
    stop = time.time()
    r = cli(dev.port, 'job', 'stop', '-no-shutdown-delay', 'quick')
    assert r.returncode == 0, r.stdout + r.stderr
    a = api(dev.port, f'/v1/allocation/{a["id"]}')
    assert a.get('desired_transition', {}).get('no_shutdown_delay') is True, a
    term = wait_for(lambda: term_time(out, 't'), 60, 'the task to get SIGTERM')
    assert term - stop < 60, f'SIGTERM {term - stop:.2f}s after the stop'
    a = wait_for(lambda: [x for x in job_allocs(dev.port, 'quick')
                          if x['client_status'] == 'complete'], 60, 'the alloc to end')[0]
    assert not listed(dev.port, 'quick-svc')
    types = [t for t, _ in task_events(a, 't')]
    assert 'Waiting Shutdown Delay' not in types, types
    assert 'Killing' in types, types


def test_alloc_stop_no_shutdown_delay_cuts_a_delay_short(agents, tmp_path):
    """A plain job stop begins the 5 minute delay; herd job stop
    -no-shutdown-delay of the stopped job marks its allocation and ends the
    wait under way.  A second allocation,
    stopped with herd alloc stop -no-shutdown-delay, is killed at once."""
    dev = start_dev(agents, tmp_path)
    out = tmp_path / 'out'
    out.mkdir()
    job = write_job(tmp_path, 'cut', one_task_job('cut', out, delay='5m'))
    assert cli(dev.port, 'job', 'run', '-detach', job).returncode == 0
    wait_for(lambda: [a for a in job_allocs(dev.port, 'cut')
                      if a['client_status'] == 'running'], 60, 'the task to run')
    assert cli(dev.port, 'job', 'stop', 'cut').returncode == 0
    wait_for(lambda: [x for x in job_allocs(dev.port, 'cut')
                      if ('Waiting Shutdown Delay', 'waiting shutdown_delay 300s')
                      in task_events(x, 't')], 30, 'the delay\'s event')
    time.sleep(1)
    assert term_time(out, 't') is None, 'the plain stop did not wait its delay'
    r = cli(dev.port, 'job', 'stop', '-no-shutdown-delay', 'cut')
    assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: term_time(out, 't'), 60, 'the waiting task to get SIGTERM')

    out2 = tmp_path / 'out2'
    out2.mkdir()
    job = write_job(tmp_path, 'cut2', one_task_job('cut2', out2, delay='5m'))
    assert cli(dev.port, 'job', 'run', '-detach', job).returncode == 0
    [a] = wait_for(lambda: [a for a in job_allocs(dev.port, 'cut2')
                            if a['client_status'] == 'running'], 60, 'the task to run')
    r = cli(dev.port, 'alloc', 'stop', '-detach', '-no-shutdown-delay', a['id'])
    assert r.returncode == 0, r.stdout + r.stderr
    assert api(dev.port, f'/v1/allocation/{a["id"]}')['desired_transition'] == \
        {'no_shutdown_delay': True}
    wait_for(lambda: term_time(out2, 't'), 60, 'the stopped task to get SIGTERM')
    a = wait_for(lambda: [x for x in job_allocs(dev.port, 'cut2') if x['id'] == a['id']
                          and x['client_status'] == 'complete'], 60, 'the alloc to end')[0]
    assert 'Waiting Shutdown Delay' not in [t for t, _ in task_events(a, 't')]
