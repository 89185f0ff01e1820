"""End-to-end: the template options of docs/jobspec.md "template: options":
left_delimiter / right_delimiter, error_on_missing_key, uid / gid, wait { min
max } (with splay = "0s") and restart's render_templates.

A real dev agent on 127.0.0.1 (server and client in one process); every
process is killed in teardown.  No timing assertions: each wait polls with
a generous deadline.  The wait test needs service data that the test
changes when it wants: service "probe" has an http check against a server
of the test's own, whose answer (200, 429, 500) makes the instance passing,
warning or critical."""
import http.server
import os
import threading

import pytest

from test_control_plane import agents, api, cli, job_allocs, wait_for, write_job  # noqa: F401
from test_tasks import alloc_dir, http_files, start_dev  # noqa: F401


def run(dev, path):
    r = cli(dev.port, 'job', 'run', '-detach', path)
    assert r.returncode == 0, r.stdout + r.stderr


def read(path):
    try:
        return path.read_text()
    except FileNotFoundError:
        return None


def group_alloc(dev, job, group, status='running'):
    allocs = [a for a in job_allocs(dev.port, job)
              if a['task_group'] == group and a['client_status'] == status]
    return allocs[0] if len(allocs) == 1 else None


def task_state(dev, alloc_id, task):
    return api(dev.port, f'/v1/allocation/{alloc_id}')['task_states'][task]


# A Helm-like file: "{{ }}" is text, "[[ ]]" are the actions; a second
# template with "<% %>", given to another owner; a third reads a meta key
# the node lacks, which is "" without error_on_missing_key.
DELIMS_JOB = '''
job "delims" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
      template {
        data            = <<EOT
image: {{ .Values.image | quote }}
task: [[ env "NOMAD_TASK_NAME" | toUpper ]]
[[- /* a comment */ ]]
{{- if .Values.debug }}debug{{ end }}
EOT
        destination     = "local/values.yaml"
        left_delimiter  = "[["
        right_delimiter = "]]"
      }
      template {
        data            = "job=<% env \\"NOMAD_JOB_NAME\\" %> {{ raw }}\\n"
        destination     = "local/owned.conf"
        left_delimiter  = "<%"
        right_delimiter = "%>"
        perms           = "0640"
        uid             = UID
        gid             = GID
      }
      template {
        data        = "[{{ meta \\"herd_test_no_such_key\\" }}]\\n"
        destination = "local/meta.txt"
      }
    }
  }
}
'''


def test_delimiters_and_owner(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    # as root, the file goes to another user; otherwise the agent's own
    uid, gid = (4242, 4343) if os.geteuid() == 0 else (os.geteuid(), os.getegid())
    run(dev, write_job(tmp_path, 'delims',
                       DELIMS_JOB.replace('UID', str(uid)).replace('GID', str(gid))))
    a = wait_for(lambda: group_alloc(dev, 'delims', 'g'), 60, 'the task to run')
    local = alloc_dir(dev, a['id']) / 't' / 'local'
    assert (local / 'values.yaml').read_text() == (
        'image: {{ .Values.image | quote }}\n'
        'task: T\n'
        '{{- if .Values.debug }}debug{{ end }}\n')
    owned = local / 'owned.conf'
    assert owned.read_text() == 'job=delims {{ raw }}\n'
    st = owned.stat()
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (uid, gid, 0o640)
    # error_on_missing_key off (the default): the missing key is ""
    assert (local / 'meta.txt').read_text() == '[]\n'


def test_delimiters_validated_at_submission(agents, tmp_path):
    """An inline template is parsed with its own delimiters: with "[[ ]]" a
    mistake in an action is refused, naming group, task, destination and
    line; the same file with the default delimiters is refused for its
    "{{" text."""
    dev = start_dev(agents, tmp_path)
    bad = DELIMS_JOB.replace('[[- /* a comment */ ]]', '[[ nope ]]')
    r = cli(dev.port, 'job', 'run', '-detach', write_job(tmp_path, 'bad', bad.replace(
        'UID', '-1').replace('GID', '-1')))
    assert r.returncode != 0
    assert ('group "g", task "t", template "local/values.yaml": template line 3: '
            'unknown function nope') in r.stdout + r.stderr, r.stdout + r.stderr
    plain = DELIMS_JOB.replace('left_delimiter  = "[["', '').replace(
        'right_delimiter = "]]"', '').replace('UID', '-1').replace('GID', '-1')
    r = cli(dev.port, 'job', 'run', '-detach', write_job(tmp_path, 'plain', plain))
    assert r.returncode != 0
    assert ('template "local/values.yaml": template line 1: unknown function quote'
            in r.stdout + r.stderr), r.stdout + r.stderr
    assert api(dev.port, '/v1/jobs') == []


MISSING_JOB = '''
job "missing" {
  group "strict" {
    restart {
      attempts = 0
      mode     = "fail"
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
      template {
        data                 = "rack={{ meta \\"herd_test_rack\\" }}\\n"
        destination          = "local/rack.txt"
        error_on_missing_key = true
      }
    }
  }
  group "lenient" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
      template {
        data                 = "rack={{ meta \\"herd_test_rack\\" }}\\n"
        destination          = "local/rack.txt"
        error_on_missing_key = false
      }
    }
  }
}
'''


def test_error_on_missing_key(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    run(dev, write_job(tmp_path, 'missing', MISSING_JOB))
    ok = wait_for(lambda: group_alloc(dev, 'missing', 'lenient'), 60, 'the lenient task to run')
    assert (alloc_dir(dev, ok['id']) / 't' / 'local' / 'rack.txt').read_text() == 'rack=\n'
    bad = wait_for(lambda: group_alloc(dev, 'missing', 'strict', 'failed'), 60,
                   'the strict task to fail')
    st = task_state(dev, bad['id'], 't')
    setup = [e['message'] for e in st['events'] if e['type'] == 'Setup Failure']
    assert setup == ['template: template line 1: meta "herd_test_rack": the node has no such '
                     'meta key (error_on_missing_key)'], st['events']
    assert st['state'] == 'dead' and st['failed'], st
    assert not (alloc_dir(dev, bad['id']) / 't' / 'local' / 'rack.txt').exists()


@pytest.fixture
def probe_server():
    """An http server whose answer the test sets: yields (port, set_code)."""
    state = {'code': 200}

    class Probe(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(state['code'])
            self.send_header('Content-Length', '0')
            self.end_headers()

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Probe)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv.server_address[1], lambda code: state.update(code=code)
    srv.shutdown()


PROBE_JOB = '''
job "probe" {
  group "g" {
    network {
      port "http" { static = PORT }
    }
    service {
      name = "probe"
      port = "http"
      check {
        type     = "http"
        path     = "/"
        interval = "1s"
        timeout  = "1s"
      }
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
    }
  }
}
'''

# At each SIGHUP the task appends what its file says to alloc/hups: one
# line per re-rendering whose output changed.
WATCHER_JOB = '''
job "JOB" {
  group "g" {
    task "w" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "trap 'cat \\"$NOMAD_TASK_DIR/local/status.txt\\" >> \\"$NOMAD_ALLOC_DIR/hups\\"' HUP; while :; do sleep 0.2; done"]
      }
      template {
        data          = "{{ range nomadService \\"probe|any\\" }}{{ .Status }}{{ end }}\\n"
        destination   = "local/status.txt"
        change_mode   = "signal"
        change_signal = "SIGHUP"
        splay         = "0s"
        WAIT
      }
    }
  }
}
'''


def probe_health(dev):
    inst = api(dev.port, '/v1/service/probe')
    return inst[0]['health'] if len(inst) == 1 else None


def test_wait_coalesces_changes(agents, tmp_path, probe_server):
    """Two changes of the service, a second or two apart (the check runs
    every second): the template with wait { min = "20s" } renders once, with
    the second's data; the one without renders (and signals) for each.  The
    wait is far longer than the gap so that a slow machine (a sanitizer
    build) does not split the two."""
    port, set_code = probe_server
    dev = start_dev(agents, tmp_path)
    run(dev, write_job(tmp_path, 'probe', PROBE_JOB.replace('PORT', str(port))))
    wait_for(lambda: probe_health(dev) == 'passing', 60, 'the probe to be passing')
    run(dev, write_job(tmp_path, 'now', WATCHER_JOB.replace('JOB', 'now').replace('WAIT', '')))
    run(dev, write_job(tmp_path, 'quiet', WATCHER_JOB.replace('JOB', 'quiet').replace(
        'WAIT', 'wait {\n          min = "20s"\n          max = "120s"\n        }')))
    now = wait_for(lambda: group_alloc(dev, 'now', 'g'), 60, 'the watcher without wait to run')
    quiet = wait_for(lambda: group_alloc(dev, 'quiet', 'g'), 60, 'the watcher with wait to run')
    hups_now = alloc_dir(dev, now['id']) / 'alloc' / 'hups'
    hups_quiet = alloc_dir(dev, quiet['id']) / 'alloc' / 'hups'
    status_quiet = alloc_dir(dev, quiet['id']) / 'w' / 'local' / 'status.txt'
    assert status_quiet.read_text() == 'passing\n'

    # change 1: warning; the watcher without wait signals at once
    set_code(429)
    wait_for(lambda: read(hups_now) == 'warning\n', 60, 'the first change to be signalled')
    # change 2: critical, while the other still waits for quiet
    set_code(500)
    wait_for(lambda: read(hups_now) == 'warning\ncritical\n', 60,
             'the second change to be signalled')
    wait_for(lambda: read(hups_quiet) is not None, 60, 'the waiting template to render')
    assert read(hups_quiet) == 'critical\n'
    assert status_quiet.read_text() == 'critical\n'
    # and no second rendering comes after it
    wait_for(lambda: probe_health(dev) == 'critical', 30, 'the probe to stay critical')
    assert read(hups_quiet) == 'critical\n'
    def signalled():
        st = task_state(dev, quiet['id'], 'w')
        return [e for e in st['events'] if e['type'] == 'Signaling'] and st

    st = wait_for(signalled, 30, 'the signal to be reported')
    assert [e['message'] for e in st['events'] if e['type'] == 'Signaling'] == [
        'template re-rendered: sent SIGHUP'], st['events']
    assert st['restarts'] == 0


# The artifact in.tpl (from the test's http server) is the template's
# source.  Each start appends its rendering and $STAGE (an env template) to
# alloc/seen, then the task waits for alloc/fail and fails; restarts are 1s
# apart.
RERENDER_GROUP = '''
  group "@NAME@" {
    restart {
      attempts = 3
      delay    = "1s"
      interval = "1h"
      mode     = "fail"
      @RENDER@
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "cat \\"$NOMAD_TASK_DIR/local/out.txt\\" >> \\"$NOMAD_ALLOC_DIR/seen\\"; echo \\"$STAGE\\" >> \\"$NOMAD_ALLOC_DIR/seen\\"; while [ ! -e \\"$NOMAD_ALLOC_DIR/fail\\" ]; do sleep 0.2; done; rm -f \\"$NOMAD_ALLOC_DIR/fail\\"; exit 1"]
      }
      artifact {
        source = "@BASE@/in.tpl"
      }
      template {
        source      = "local/in.tpl"
        destination = "local/out.txt"
      }
      template {
        data        = "STAGE=env-{{ env \\"NOMAD_GROUP_NAME\\" }}\\n"
        destination = "local/stage.env"
        env         = true
      }
    }
  }
'''


def test_render_templates_after_failure(agents, tmp_path, http_files):
    base, www = http_files
    (www / 'in.tpl').write_text('stage one {{ env "NOMAD_GROUP_NAME" }}\n')
    dev = start_dev(agents, tmp_path)
    # one job, two groups: one renders again at a restart, one keeps its files
    groups = {'fresh': 'render_templates = true', 'kept': ''}
    text = 'job "rerender" {\n' + ''.join(
        RERENDER_GROUP.replace('@NAME@', g).replace('@RENDER@', r).replace('@BASE@', base)
        for g, r in groups.items()) + '}\n'
    run(dev, write_job(tmp_path, 'rerender', text))
    a = {g: wait_for(lambda g=g: group_alloc(dev, 'rerender', g), 60, f'group {g} to run')
         for g in groups}
    d = {g: alloc_dir(dev, a[g]['id']) for g in a}
    for g in a:
        wait_for(lambda g=g: read(d[g] / 'alloc' / 'seen') == f'stage one {g}\nenv-{g}\n', 30,
                 f'{g} to read its file')

    # the source changes; the tasks fail and restart
    (www / 'in.tpl').write_text('stage two {{ env "NOMAD_GROUP_NAME" }}\n')
    for g in a:
        (d[g] / 'alloc' / 'fail').touch()
    wait_for(lambda: read(d['fresh'] / 'alloc' / 'seen') ==
             'stage one fresh\nenv-fresh\nstage two fresh\nenv-fresh\n',
             60, 'the fresh group to restart with a new rendering')
    wait_for(lambda: read(d['kept'] / 'alloc' / 'seen') ==
             'stage one kept\nenv-kept\nstage one kept\nenv-kept\n',
             60, 'the kept group to restart with its old file')
    # both fetched the new source; only one rendered it
    assert read(d['kept'] / 't' / 'local' / 'in.tpl') == 'stage two {{ env "NOMAD_GROUP_NAME" }}\n'
    assert read(d['kept'] / 't' / 'local' / 'out.txt') == 'stage one kept\n'
    assert read(d['fresh'] / 't' / 'local' / 'out.txt') == 'stage two fresh\n'
    for g in a:
        st = task_state(dev, a[g]['id'], 't')
        assert st['restarts'] == 1 and st['state'] == 'running', st


MIXED_JOB = '''
job "mixed" {
  group "g" {
    restart {
      attempts = 3
      delay    = "1s"
      interval = "1h"
      mode     = "fail"
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "cat \\"$NOMAD_TASK_DIR/local/status.txt\\" \\"$NOMAD_TASK_DIR/local/out.txt\\" >> \\"$NOMAD_ALLOC_DIR/seen\\"; while [ ! -e \\"$NOMAD_ALLOC_DIR/fail\\" ]; do sleep 0.2; done; rm -f \\"$NOMAD_ALLOC_DIR/fail\\"; exit 1"]
      }
      artifact {
        source = "BASE/in.tpl"
      }
      template {
        data        = "{{ range nomadService \\"probe|any\\" }}{{ .Status }}{{ end }}\\n"
        destination = "local/status.txt"
        change_mode = "noop"
      }
      template {
        source      = "local/in.tpl"
        destination = "local/out.txt"
      }
    }
  }
}
'''


def test_kept_files_follow_the_watch(agents, tmp_path, http_files, probe_server):
    """render_templates false (the default): a restart keeps the files, and
    those the watch rendered while the task ran are as current as the watch
    made them; the source template the watch does not follow is not
    rendered again, and no template change restarts the task."""
    base, www = http_files
    port, set_code = probe_server
    (www / 'in.tpl').write_text('stage one\n')
    dev = start_dev(agents, tmp_path)
    run(dev, write_job(tmp_path, 'probe', PROBE_JOB.replace('PORT', str(port))))
    wait_for(lambda: probe_health(dev) == 'passing', 60, 'the probe to be passing')
    run(dev, write_job(tmp_path, 'mixed', MIXED_JOB.replace('BASE', base)))
    a = wait_for(lambda: group_alloc(dev, 'mixed', 'g'), 60, 'the task to run')
    d = alloc_dir(dev, a['id'])
    first = 'passing\nstage one\n'
    wait_for(lambda: read(d / 'alloc' / 'seen') == first, 30, 'the task to read its files')

    (www / 'in.tpl').write_text('stage two\n')
    set_code(500)
    wait_for(lambda: read(d / 't' / 'local' / 'status.txt') == 'critical\n', 60,
             'the watch to render the change')
    (d / 'alloc' / 'fail').touch()
    wait_for(lambda: read(d / 'alloc' / 'seen') == first + 'critical\nstage one\n', 60,
             'the restart to read the kept files')
    assert read(d / 't' / 'local' / 'in.tpl') == 'stage two\n'
    assert read(d / 't' / 'local' / 'out.txt') == 'stage one\n'
    st = task_state(dev, a['id'], 't')
    assert st['restarts'] == 1, st
    assert not [e for e in st['events'] if e['type'] == 'Restart Signaled'], st['events']
