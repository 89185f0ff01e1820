"""End-to-end: a template's change_script (docs/jobspec.md, "template:
change_script"): when a variable the template reads changes, the script
runs inside the task (its environment and directory: it writes a file of
the allocation), an event says how it went; a failing script with
fail_on_error kills the task, which its restart policy restarts; a script
past its timeout is killed and the event says it timed out.

Real agents on 127.0.0.1 (raw_exec); no timing assertions (each wait polls
with a generous deadline)."""
import pytest

from test_control_plane import agents, api, cli, job_allocs, wait_for, write_job  # noqa: F401
from test_tasks import alloc_dir, start_dev
from test_vars import herd, read


@pytest.fixture(autouse=True)
def no_ambient_token(monkeypatch):
    monkeypatch.delenv('HERD_TOKEN', raising=False)
    monkeypatch.delenv('HERD_NAMESPACE', raising=False)


def job(name, script_args, extra=''):
    return f'''
job "{name}" {{
  group "g" {{
    restart {{
      attempts = 3
      delay    = "1s"
      interval = "10m"
      mode     = "fail"
    }}
    task "t" {{
      driver = "raw_exec"
      config {{
        command = "/bin/sh"
        args    = ["-c", "while :; do sleep 0.2; done"]
      }}
      template {{
        data        = "{{{{ with nomadVar \\"cfg/{name}\\" }}}}v={{{{ .v }}}}{{{{ end }}}}\\n"
        destination = "local/cfg.txt"
        change_mode = "script"
        splay       = "0s"
        change_script {{
          command = "/bin/sh"
          args    = {script_args}
          {extra}
        }}
      }}
    }}
  }}
}}
'''


def run_job(dev, tmp_path, name, text):
    assert herd(dev.port, 'var', 'put', f'cfg/{name}', 'v=1').returncode == 0
    r = cli(dev.port, 'job', 'run', '-detach', write_job(tmp_path, name, text))
    assert r.returncode == 0, r.stdout + r.stderr

    def running():
        allocs = [a for a in job_allocs(dev.port, name) if a['client_status'] == 'running'
                  and a['task_states'].get('t', {}).get('state') == 'running']
        return allocs[0] if allocs else None
    return wait_for(running, 60, f'{name} to run')


def script_events(dev, alloc_id):
    st = api(dev.port, f'/v1/allocation/{alloc_id}')['task_states']['t']
    return [e['message'] for e in st['events'] if e['type'] == 'Template Script'], st


def test_script_runs_in_the_task_on_a_change(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    # the task's environment and directory: NOMAD_ALLOC_DIR, local/ relative
    a = run_job(dev, tmp_path, 'ok', job('ok', '["-c", "cat local/cfg.txt >> '
                                               '\\"$NOMAD_ALLOC_DIR/scripted\\""]'))
    out = alloc_dir(dev, a['id']) / 'alloc' / 'scripted'
    assert read(out) is None   # the first rendering runs no script
    assert herd(dev.port, 'var', 'put', 'cfg/ok', 'v=2').returncode == 0
    wait_for(lambda: read(out) == 'v=2\n', 60, 'the change_script to write its file')
    msgs, st = wait_for(lambda: (lambda m: m if m[0] else None)(script_events(dev, a['id'])),
                        60, 'the script event')
    assert any('ran (exit code 0)' in m for m in msgs), msgs
    assert st['restarts'] == 0 and st['state'] == 'running', st


def test_failing_script_with_fail_on_error_restarts_the_task(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    a = run_job(dev, tmp_path, 'bad', job('bad', '["-c", "echo broken >&2; exit 3"]',
                                          'fail_on_error = true'))
    assert herd(dev.port, 'var', 'put', 'cfg/bad', 'v=2').returncode == 0

    def restarted():
        st = api(dev.port, f'/v1/allocation/{a["id"]}')['task_states']['t']
        return st if st['restarts'] >= 1 and st['state'] == 'running' else None
    st = wait_for(restarted, 60, 'the task to be restarted by its policy')
    msgs = [e['message'] for e in st['events'] if e['type'] == 'Template Script']
    assert any(m.endswith('failed with exit code 3: broken') for m in msgs), msgs
    types = [e['type'] for e in st['events']]
    assert 'Killing' in types, types
    # counted against the restart policy, unlike a change_mode restart
    assert any('task restarting in' in e['message'] for e in st['events']), st['events']


def test_failing_script_without_fail_on_error_leaves_the_task(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    a = run_job(dev, tmp_path, 'soft', job('soft', '["-c", "exit 4"]'))
    assert herd(dev.port, 'var', 'put', 'cfg/soft', 'v=2').returncode == 0
    msgs, st = wait_for(lambda: (lambda m: m if m[0] else None)(script_events(dev, a['id'])),
                        60, 'the script event')
    assert any('failed with exit code 4' in m for m in msgs), msgs
    assert st['restarts'] == 0 and st['state'] == 'running', st


def test_script_past_its_timeout_is_killed(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    a = run_job(dev, tmp_path, 'slow', job('slow', '["-c", "sleep 30"]', 'timeout = "1s"'))
    assert herd(dev.port, 'var', 'put', 'cfg/slow', 'v=2').returncode == 0
    msgs, st = wait_for(lambda: (lambda m: m if m[0] else None)(script_events(dev, a['id'])),
                        60, 'the script event')
    assert any('timed out after 1s and was killed' in m for m in msgs), msgs
    assert st['restarts'] == 0 and st['state'] == 'running', st


def test_script_runs_inside_an_exec_driver_task(agents, tmp_path):
    """exec: the script is entered into the task's root, cgroup and user,
    as herd alloc exec's command is; past its timeout it is killed there."""
    from test_tasks import exec_usable
    why = exec_usable()
    if why:
        pytest.skip(why)
    dev = start_dev(agents, tmp_path)
    text = job('iso', '["-c", "id -u > /alloc/scripted; cat /proc/self/cgroup >> /alloc/scripted; '
                      'cat /local/cfg.txt >> /alloc/scripted"]').replace('raw_exec', 'exec')
    a = run_job(dev, tmp_path, 'iso', text)
    out = alloc_dir(dev, a['id']) / 'alloc' / 'scripted'
    assert herd(dev.port, 'var', 'put', 'cfg/iso', 'v=2').returncode == 0
    wait_for(lambda: (read(out) or '').endswith('v=2\n'), 60, 'the change_script inside the task')
    lines = read(out).splitlines()
    assert lines[0] == '65534', lines                              # the task's user
    assert any(f'{a["id"]}.t' in line for line in lines[1:-1]), lines   # the task's cgroup
    msgs, st = wait_for(lambda: (lambda m: m if m[0] else None)(script_events(dev, a['id'])),
                        60, 'the script event')
    assert any('ran (exit code 0)' in m for m in msgs), msgs
