"""End-to-end: logs { disabled = true } (docs/jobspec.md, "logs").

A dev agent runs two batch tasks that write to stdout and stderr, one with
logs disabled: it leaves no log file in the allocation's alloc/logs (only
the marker that says why), `herd alloc logs` says it keeps none, and the
task ran to completion all the same (it wrote a file); the other task's
logs are there as usual."""
import os

from test_control_plane import agents, api, cli, start_dev, wait_for, write_job  # noqa: F401
from test_tasks import alloc_dir

JOB = '''
job "quiet" {
  type = "batch"
  group "g" {
    task "%s" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args = ["-c", "echo out; echo err >&2; touch $HERD_ALLOC_DIR/%s.ran"]
      }
      logs {
        disabled = %s
      }
    }
  }
}
'''


def test_disabled_logs_leave_no_files(agents, tmp_path):  # noqa: F811
    dev = start_dev(agents, tmp_path, 't4-2x.json')
    done = {}
    for name, off in (('silent', 'true'), ('chatty', 'false')):
        text = JOB.replace('"quiet"', f'"{name}"') % (name, name, off)
        r = cli(dev.port, 'job', 'run', write_job(tmp_path, name, text))
        assert r.returncode == 0, r.stdout + r.stderr
        [al] = api(dev.port, f'/v1/job/{name}/allocations')
        wait_for(lambda: api(dev.port, f'/v1/allocation/{al["id"]}')['client_status'] == 'complete',
                 30, f'{name} complete')
        done[name] = al['id']

    silent = alloc_dir(dev, done['silent'])
    assert (silent / 'alloc' / 'silent.ran').exists()
    logs = sorted(os.listdir(silent / 'alloc' / 'logs'))
    assert logs == ['silent.logs-disabled'], logs
    r = cli(dev.port, 'alloc', 'logs', done['silent'], 'silent')
    assert r.returncode == 1 and 'keeps no logs' in r.stderr, r.stdout + r.stderr

    r = cli(dev.port, 'alloc', 'logs', done['chatty'], 'chatty')
    assert r.returncode == 0 and r.stdout == 'out\n', r.stdout + r.stderr
    r = cli(dev.port, 'alloc', 'logs', '-stderr', done['chatty'], 'chatty')
    assert r.returncode == 0 and r.stdout == 'err\n', r.stdout + r.stderr
