"""End-to-end: a batch group's time_limit (the agent stops the allocation,
which ends failed for good: neither restarted nor rescheduled), a job that
ends before its limit, the limit across a kill -9 of the agent, a task's
restart block over its group's, and a limit that passes while a failed
task waits to restart or downloads its artifact again.

Real herd agents on 127.0.0.1 with simulated GPUs (the `agents` fixture of
test_control_plane kills every process).  No timing assertions: every wait
polls with a generous deadline."""
import http.server
import os
import threading
import time

import pytest

from test_control_plane import (Agent, GPUS, agents, api, cli, job_allocs,  # noqa: F401
                                wait_for, write_job)
from test_tasks import _client_hcl, _server_hcl, events, start_dev


def limited_job(job_id, marker, limit='2s', extra=''):
    """A batch job whose task would sleep 300 s, SIGTERM its kill signal
    (the trap writes marker), a restart and a reschedule policy that would
    both run it again."""
    return f'''
job "{job_id}" {{
  type = "batch"
  {extra}
  group "g" {{
    time_limit = "{limit}"
    restart {{
      attempts = 2
      interval = "1m"
      delay    = "100ms"
    }}
    reschedule {{
      attempts  = 3
      interval  = "1h"
      delay     = "0s"
      unlimited = false
    }}
    task "t" {{
      driver      = "raw_exec"
      kill_signal = "SIGTERM"
      config {{
        command = "/bin/sh"
        args = ["-c", "trap 'echo TERM > {marker}; exit 0' TERM; sleep 300 & wait $!"]
      }}
    }}
  }}
}}
'''


def failure_evals_done(port, job_id):
    """The evaluations the allocation's failure made have run: one
    triggered by it, none left pending."""
    evs = api(port, f'/v1/job/{job_id}/evaluations')
    return ([e for e in evs if e['triggered_by'] == 'alloc-failure' and e['status'] == 'complete']
            and not [e for e in evs if e['status'] in ('pending', 'blocked')])


def assert_ended_by_limit(port, job_id, marker, limit='2s'):
    done = wait_for(lambda: [a for a in job_allocs(port, job_id)
                             if a['client_status'] == 'failed'], 60,
                    'the time limit to fail the allocation')[0]
    assert done['client_description'] == f'time limit {limit} reached', done
    assert done['time_limit']['reached'] is True, done['time_limit']
    evs = events(done, 't')
    assert 'Time limit reached' in evs and 'Killing' in evs, evs
    # not restarted in place, and (once the failure's evaluation ran) not
    # placed again: the one allocation is all there is
    assert evs.count('Started') == 1, evs
    assert done['task_states']['t']['restarts'] == 0
    wait_for(lambda: failure_evals_done(port, job_id), 30, 'the failure evaluation')
    assert [a['id'] for a in job_allocs(port, job_id)] == [done['id']]
    # the task got its kill signal (the trap ran)
    wait_for(lambda: marker.exists(), 10, 'the trap to write its marker')
    assert marker.read_text().strip() == 'TERM'
    return done


def test_time_limit_stops_the_task_and_fails_for_good(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    marker = tmp_path / 'signal'
    job = write_job(tmp_path, 'tl', limited_job('tl', marker))
    assert cli(dev.port, 'job', 'run', '-detach', job).returncode == 0
    running = wait_for(lambda: [a for a in job_allocs(dev.port, 'tl')
                                if a['client_status'] == 'running'], 30, 'the task to run')[0]
    assert running['time_limit']['limit'] == 2 * 10**9
    done = assert_ended_by_limit(dev.port, 'tl', marker)
    r = cli(dev.port, 'alloc', 'status', done['id'][:8])
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'time limit 2s reached' in r.stdout and 'Time Limit' in r.stdout, r.stdout
    assert '2s (reached)' in r.stdout, r.stdout


def test_job_level_limit_and_a_job_that_ends_in_time(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    go = tmp_path / 'go'
    job = write_job(tmp_path, 'quick', f'''
job "quick" {{
  type       = "batch"
  time_limit = "1h"
  group "g" {{
    task "t" {{
      driver = "raw_exec"
      config {{
        command = "/bin/sh"
        args = ["-c", "while [ ! -e {go} ]; do sleep 0.1; done"]
      }}
    }}
  }}
}}
''')
    assert cli(dev.port, 'job', 'run', '-detach', job).returncode == 0
    a = wait_for(lambda: [a for a in job_allocs(dev.port, 'quick')
                          if a['client_status'] == 'running'
                          and a.get('time_limit', {}).get('started_at')], 30,
                 'the task to run')[0]
    # the job's limit is the group's; alloc status says how much is left
    assert a['time_limit']['limit'] == 3600 * 10**9 and not a['time_limit']['reached']
    r = cli(dev.port, 'alloc', 'status', a['id'][:8])
    assert r.returncode == 0, r.stdout + r.stderr
    line = [ln for ln in r.stdout.splitlines() if ln.startswith('Time Limit')]
    assert line and ' 1h (' in line[0] and 'left)' in line[0], r.stdout
    go.touch()
    done = wait_for(lambda: [a for a in job_allocs(dev.port, 'quick')
                             if a['client_status'] in ('complete', 'failed')], 30,
                    'the task to end')[0]
    assert done['client_status'] == 'complete', done
    assert done['client_description'] == 'all tasks completed'
    assert done['time_limit']['reached'] is False
    assert 'Time limit reached' not in events(done, 't')


def test_time_limit_survives_an_agent_restart(agents, tmp_path):
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
    marker = tmp_path / 'signal'
    job = write_job(tmp_path, 'kept', limited_job('kept', marker, limit='3s'))
    assert cli(server.port, 'job', 'run', '-detach', job).returncode == 0
    a = wait_for(lambda: [a for a in job_allocs(server.port, 'kept')
                          if a['client_status'] == 'running'
                          and a.get('time_limit', {}).get('started_at')], 30,
                 'the task to run')[0]
    client.kill9()
    # the limit passes while no agent watches; the restarted one stops the
    # recovered task at once, from its saved first start
    started = a['time_limit']['started_at'] / 1e9
    wait_for(lambda: time.time() > started + 3.5, 30, 'the limit to pass')
    assert not marker.exists()
    client.port = None
    client.start()
    wait_for(lambda: 'recovered' in client.log(), 15, 'the recovery')
    assert_ended_by_limit(server.port, 'kept', marker, limit='3s')


def test_task_restart_block_overrides_the_group(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    # Each task fails on its first run and succeeds after: the group's
    # policy restarts one; the other's own restart block says no restarts.
    body = ('n=$(cat $HERD_ALLOC_DIR/runs 2>/dev/null || echo 0); '
            'echo $((n + 1)) > $HERD_ALLOC_DIR/runs; [ $n -ge 1 ]')
    groups = ''
    for name, task_restart in (('own', 'restart { attempts = 0 }'), ('group', '')):
        groups += f'''
  group "{name}" {{
    restart {{
      attempts = 3
      interval = "1m"
      delay    = "100ms"
    }}
    reschedule {{
      attempts  = 0
      unlimited = false
    }}
    task "t" {{
      driver = "raw_exec"
      {task_restart}
      config {{
        command = "/bin/sh"
        args = ["-c", "{body}"]
      }}
    }}
  }}'''
    job = write_job(tmp_path, 'rs', f'job "rs" {{\n  type = "batch"\n{groups}\n}}\n')
    r = cli(dev.port, 'job', 'validate', job)
    assert r.returncode == 0 and 'restart' not in r.stderr, r.stdout + r.stderr
    assert cli(dev.port, 'job', 'run', '-detach', job).returncode == 0
    def both_ended():
        ended = [a for a in job_allocs(dev.port, 'rs')
                 if a['client_status'] in ('complete', 'failed')]
        return ended if len(ended) == 2 else None
    ended = wait_for(both_ended, 60, 'both allocations to end')
    by_group = {a['task_group']: a for a in ended}
    own, grp = by_group['own'], by_group['group']
    assert own['client_status'] == 'failed', own
    assert own['task_states']['t']['restarts'] == 0
    assert events(own, 't')[-1] == 'Not Restarting', events(own, 't')
    assert grp['client_status'] == 'complete', grp
    assert grp['task_states']['t']['restarts'] == 1
    # the job's file keeps the task's block; the merged policy is served
    job_json = api(dev.port, '/v1/job/rs')
    tasks = {g['name']: g['tasks'][0] for g in job_json['groups']}
    assert tasks['own']['restart']['attempts'] == 0
    assert tasks['own']['restart']['delay'] == 100 * 10**6   # the group's
    assert tasks['group']['restart'] is None


def test_service_with_a_time_limit_is_refused(agents, tmp_path, herd):
    job = write_job(tmp_path, 'svc', '''
job "svc" {
  time_limit = "1h"
  group "g" {
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
''')
    r = herd('job', 'validate', str(job))
    assert r.returncode != 0
    assert 'only batch jobs can have a time limit' in r.stdout + r.stderr, r.stdout + r.stderr
    assert os.path.exists(job)


def restarting_job(job_id, limit, delay, artifact=''):
    """A batch job whose task fails at once, restarted after delay (its
    setup fetching artifact first, when given)."""
    art = f'artifact {{\n        source = "{artifact}"\n      }}' if artifact else ''
    return f'''
job "{job_id}" {{
  type = "batch"
  group "g" {{
    time_limit = "{limit}"
    restart {{
      attempts = 3
      interval = "1h"
      delay    = "{delay}"
    }}
    reschedule {{
      attempts  = 3
      interval  = "1h"
      delay     = "0s"
      unlimited = false
    }}
    task "t" {{
      driver = "raw_exec"
      {art}
      config {{
        command = "/bin/sh"
        args = ["-c", "exit 1"]
      }}
    }}
  }}
}}
'''


def assert_ended_while_restarting(port, job_id, limit):
    """The allocation failed by its limit while its task waited to start
    again: started once, never again, and not placed again."""
    done = wait_for(lambda: [a for a in job_allocs(port, job_id)
                             if a['client_status'] == 'failed'], 60,
                    'the time limit to fail the allocation')[0]
    assert done['client_description'] == f'time limit {limit} reached', done
    assert done['time_limit']['reached'] is True, done['time_limit']
    evs = events(done, 't')
    assert evs.count('Started') == 1 and 'Restarting' in evs, evs
    assert evs[-1] == 'Time limit reached', evs
    assert 'Failed Artifact Download' not in evs, evs
    wait_for(lambda: failure_evals_done(port, job_id), 30, 'the failure evaluation')
    assert [a['id'] for a in job_allocs(port, job_id)] == [done['id']]
    return done


def test_time_limit_reached_during_the_restart_delay(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    # The restart would come after 10 minutes; the limit ends it first.
    job = write_job(tmp_path, 'rd', restarting_job('rd', '2s', '10m'))
    assert cli(dev.port, 'job', 'run', '-detach', job).returncode == 0
    done = assert_ended_while_restarting(dev.port, 'rd', '2s')
    assert done['task_states']['t']['restarts'] == 1


@pytest.fixture
def stalling_artifact():
    """An http server that serves its file once and then answers no
    request (it holds the connection open): the restart's download hangs.
    Yields its URL."""
    release = threading.Event()
    served = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            served.append(self.path)
            if len(served) > 1:
                release.wait(300)
                return
            body = b'data\n'
            self.send_response(200)
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    srv.daemon_threads = True
    srv.block_on_close = False
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f'http://127.0.0.1:{srv.server_address[1]}/input.txt', served
    release.set()
    srv.shutdown()
    srv.server_close()


def test_time_limit_reached_while_the_restart_downloads(agents, tmp_path, stalling_artifact):
    url, served = stalling_artifact
    dev = start_dev(agents, tmp_path)
    job = write_job(tmp_path, 'ra', restarting_job('ra', '3s', '100ms', url))
    assert cli(dev.port, 'job', 'run', '-detach', job).returncode == 0
    # the first start downloaded it; the restart's download hangs until
    # the limit abandons it (the source would stall it for minutes)
    assert_ended_while_restarting(dev.port, 'ra', '3s')
    assert len(served) == 2, served
