"""End-to-end: parameterized jobs through the CLI and a dev agent.

A parameterized raw_exec job is registered but not placed; `herd job
dispatch -meta user=alice JOB FILE` registers a child that runs to
completion, whose task reads its payload from local/ and the dispatch's meta
from its environment; a dispatch without the required meta is refused and
stores nothing; a service cannot be parameterized."""
from test_control_plane import (agents, api, cli, job_allocs,  # noqa: F401
                                start_dev, wait_for, write_job)


def param_job(tmp_path, jtype='batch'):
    return write_job(tmp_path, 'render', f'''
job "render" {{
  type = "{jtype}"
  meta {{
    team = "ml"
  }}
  parameterized {{
    payload       = "required"
    meta_required = ["user"]
    meta_optional = ["quality"]
  }}
  group "g" {{
    task "t" {{
      driver = "raw_exec"
      config {{
        command = "/bin/sh"
        args = ["-c", "cat local/input.json; echo; echo user=${{NOMAD_META_user}} team=$HERD_META_team"]
      }}
      dispatch_payload {{
        file = "input.json"
      }}
      resources {{
        cpu    = 100
        memory = 64
      }}
    }}
  }}
}}
''')


def children(port):
    return [j for j in api(port, '/v1/jobs') if j.get('parent_id') == 'render']


def test_dispatch_runs_a_child_with_payload_and_meta(agents, tmp_path):
    dev = start_dev(agents, tmp_path, 't4-2x.json')
    job = param_job(tmp_path)

    r = cli(dev.port, 'job', 'run', job)
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'parameterized job "render" registered in namespace default' in r.stdout
    parent = api(dev.port, '/v1/job/render')
    assert parent['status'] == 'running'
    assert job_allocs(dev.port, 'render') == []

    # required meta missing: refused, nothing stored
    payload = tmp_path / 'payload.json'
    payload.write_text('{"prompt": "a heron at dawn"}')
    r = cli(dev.port, 'job', 'dispatch', 'render', str(payload))
    assert r.returncode == 1
    assert 'requires meta key "user"' in r.stderr
    r = cli(dev.port, 'job', 'dispatch', '-meta', 'user=alice', '-meta', 'color=red', 'render',
            str(payload))
    assert r.returncode == 1
    assert 'meta key "color"' in r.stderr
    assert children(dev.port) == []

    # dispatch: followed until the child completes
    r = cli(dev.port, 'job', 'dispatch', '-meta', 'user=alice', 'render', str(payload))
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'dispatched job "render-dispatch-' in r.stdout
    [child] = children(dev.port)
    assert child['id'] in r.stdout
    wait_for(lambda: api(dev.port, f'/v1/job/{child["id"]}')['status'] == 'dead', 30,
             'the child to complete')
    [alloc] = job_allocs(dev.port, child['id'])
    assert alloc['client_status'] == 'complete'
    r = cli(dev.port, 'alloc', 'logs', alloc['id'][:8], 't')
    assert r.returncode == 0, r.stderr
    assert '{"prompt": "a heron at dawn"}' in r.stdout
    assert 'user=alice team=ml' in r.stdout
    assert job_allocs(dev.port, 'render') == []

    # status: the parent's type and its children; the child's parent and payload size
    r = cli(dev.port, 'job', 'status')
    assert r.returncode == 0, r.stderr
    assert 'batch/parameterized' in r.stdout
    r = cli(dev.port, 'job', 'status', 'render')
    assert r.returncode == 0, r.stderr
    assert 'batch/parameterized' in r.stdout and child['id'] in r.stdout
    r = cli(dev.port, 'job', 'status', child['id'])
    assert 'Parent       render' in r.stdout
    assert f'Payload      {len(payload.read_bytes())} bytes' in r.stdout
    # the parent's inspect holds no payload
    r = cli(dev.port, 'job', 'inspect', 'render')
    assert r.returncode == 0, r.stderr
    assert 'heron' not in r.stdout and 'payload_size' not in r.stdout

    # payload from stdin, -detach: the child's id and evaluation, not followed
    env_payload = '{"prompt": "stdin"}'
    import os
    import subprocess
    from test_control_plane import HERD, REPO
    p = subprocess.run([str(HERD), 'job', 'dispatch', '-detach', '-meta', 'user=bob', 'render',
                        '-'], input=env_payload, capture_output=True, text=True, cwd=REPO,
                       env=dict(os.environ, HERD_ADDR=f'http://127.0.0.1:{dev.port}'),
                       timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    assert 'dispatched job "render-dispatch-' in p.stdout
    assert len(children(dev.port)) == 2


def test_service_cannot_be_parameterized(agents, tmp_path):
    dev = start_dev(agents, tmp_path, 't4-2x.json')
    r = cli(dev.port, 'job', 'run', param_job(tmp_path, jtype='service'))
    assert r.returncode == 1
    assert 'only batch jobs can be parameterized' in r.stdout + r.stderr
    assert api(dev.port, '/v1/jobs') == []
