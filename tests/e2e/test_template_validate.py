"""End-to-end: a job whose inline template does not parse is refused at
submission (docs/jobspec.md, "template: helpers and safety"): `herd job
validate`, `plan`, `run` and POST /v1/jobs name the group, the task, the
template's destination and the template's line, and nothing is stored.  A
template given by `source` lives on the node and is not read then.

A real dev agent on 127.0.0.1; every process is killed in teardown."""
import json
import urllib.error
import urllib.request

from test_control_plane import agents, api, cli, write_job  # noqa: F401
from test_tasks import start_dev

BROKEN = '''
job "broken" {
  type = "batch"
  group "api" {
    task "web" {
      driver = "raw_exec"
      config {
        command = "/bin/true"
      }
      template {
        data        = "port={{ env \\"PORT\\" }}\\n{{ nope \\"x\\" }}\\n"
        destination = "local/app.conf"
      }
    }
  }
}
'''

FROM_SOURCE = BROKEN.replace('data        = "port={{ env \\"PORT\\" }}\\n{{ nope \\"x\\" }}\\n"',
                             'source      = "/nonexistent/{{ key"')

WANT = ('groups[0].tasks[0].templates[0]: group "api", task "web", template "local/app.conf": '
        'template line 2: unknown function nope')


def test_broken_inline_template_is_refused_at_submission(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    path = write_job(tmp_path, 'broken', BROKEN)
    for verb in ('validate', 'plan', 'run'):
        r = cli(dev.port, 'job', verb, path)
        assert r.returncode != 0, (verb, r.stdout, r.stderr)
        assert WANT in r.stderr, (verb, r.stderr)
        # the file position is the template block's
        assert f'{path}:10:' in r.stderr, (verb, r.stderr)
    st = cli(dev.port, 'job', 'status', 'broken')
    assert st.returncode != 0
    assert 'job_not_found' in st.stderr, st.stderr

    # the server checks what the API is given, whatever the client did
    job = json.loads(cli(dev.port, 'job', 'inspect', '-json',
                         write_job(tmp_path, 'source', FROM_SOURCE)).stdout)
    del job['groups'][0]['tasks'][0]['templates'][0]['source']
    job['groups'][0]['tasks'][0]['templates'][0]['data'] = 'a\n{{ end }}'
    req = urllib.request.Request(f'http://127.0.0.1:{dev.port}/v1/jobs', method='POST',
                                 data=json.dumps({'job': job}).encode())
    try:
        urllib.request.urlopen(req, timeout=30)
        raise AssertionError('POST /v1/jobs took a broken template')
    except urllib.error.HTTPError as e:
        assert e.code == 400
        err = json.loads(e.read())['error']
    assert err['code'] == 'invalid_job', err
    assert [d['message'] for d in err['diagnostics'] if d['level'] == 'error'] == [
        'groups[0].tasks[0].templates[0]: group "api", task "web", template "local/app.conf": '
        'template line 2: {{ end }} with no block to close'], err
    assert all(j['id'] != 'broken' for j in api(dev.port, '/v1/jobs'))


def test_source_templates_are_not_read_at_submission(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    r = cli(dev.port, 'job', 'validate', write_job(tmp_path, 'source', FROM_SOURCE))
    assert r.returncode == 0, r.stderr
