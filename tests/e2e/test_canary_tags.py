"""End-to-end: service canary_tags / canary_meta and on_update
(docs/jobspec.md "service", "check", "Canaries").

While an allocation is a canary of its deployment not yet promoted, the
registry lists its service instances with canary_tags and canary_meta;
once promoted, with tags and meta.  A template reading the service
(nomadService) sees the same.  on_update decides what a check's status
means for the deployment's health (health_check = "checks"); the registry
still shows the check's real status.

A dev agent on 127.0.0.1; killed in teardown.  No timing assertions: each
wait polls with a generous deadline; what happened is read from the
records."""
import urllib.request

import pytest

from test_canary import live, wait_deployment
from test_control_plane import agents, api, cli, wait_for, write_job  # noqa: F401
from test_tasks import alloc_dir, start_dev

TAGS_JOB = '''
job "ctag" {
  update {
    max_parallel     = 1
    min_healthy_time = "1s"
    healthy_deadline = "60s"
    canary           = 1
    auto_promote     = false
  }
  group "g" {
    count = 1
    service {
      name        = "ctag"
      port        = 4242
      tags        = ["live", "i${NOMAD_ALLOC_INDEX}"]
      canary_tags = ["canary", "i${NOMAD_ALLOC_INDEX}"]
      meta {
        v = "stable"
      }
      canary_meta {
        v = "canary"
      }
    }
    task "t" {
      driver = "raw_exec"
      env {
        WHICH = "WHICH_VALUE"
      }
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
      template {
        data        = "{{ range nomadService \\"ctag\\" }}{{ .AllocID }}={{ join \\",\\" .Tags }};{{ end }}\\n"
        destination = "local/svc.txt"
        change_mode = "noop"
      }
    }
  }
}
'''


def instances(port):
    return {i['alloc_id']: i for i in api(port, '/v1/service/ctag')}


def index_of(port, path):
    with urllib.request.urlopen(f'http://127.0.0.1:{port}{path}', timeout=60) as r:
        return int(r.headers['X-Herd-Index'])


def test_canary_tags_until_promoted(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    r = cli(dev.port, 'job', 'run', write_job(tmp_path, 'ctag',
                                               TAGS_JOB.replace('WHICH_VALUE', 'zero')),
            timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    wait_deployment(dev.port, 0, ('successful',), job='ctag')
    [old] = wait_for(lambda: [i for i in instances(dev.port).values()], 60,
                     'the first instance to register')
    # not a canary: its tags and meta
    assert old['tags'] == ['live', 'i0'] and old['meta'] == {'v': 'stable'}, old

    r = cli(dev.port, 'job', 'run', write_job(tmp_path, 'ctag',
                                               TAGS_JOB.replace('WHICH_VALUE', 'one')),
            timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    d = wait_deployment(dev.port, 1, ('running',), job='ctag')
    [canary] = [a for a in live(dev.port, 'ctag') if a['job_version'] == 1]
    insts = wait_for(lambda: (lambda i: i if len(i) == 2 else None)(instances(dev.port)), 60,
                     'the canary instance beside the old one')
    # the canary lists canary_tags (interpolated as tags are) and
    # canary_meta in place of meta; the old one its own
    assert insts[canary['id']]['tags'] == ['canary', 'i0'], insts
    assert insts[canary['id']]['meta'] == {'v': 'canary'}, insts
    assert insts[old['alloc_id']]['tags'] == ['live', 'i0'], insts
    assert insts[old['alloc_id']]['meta'] == {'v': 'stable'}, insts
    [summary] = [s for s in api(dev.port, '/v1/services') if s['name'] == 'ctag']
    assert sorted(summary['tags']) == ['canary', 'i0', 'live'], summary
    # a template reading the service sees the same tags
    svc_file = alloc_dir(dev, canary['id']) / 't' / 'local' / 'svc.txt'
    wait_for(lambda: svc_file.exists() and f'{canary["id"]}=canary,i0;' in svc_file.read_text()
             and f'{old["alloc_id"]}=live,i0;' in svc_file.read_text(), 60,
             'the canary\'s template to list both instances')

    # the promotion switches the tags; a blocking query wakes for it
    idx = index_of(dev.port, '/v1/service/ctag')
    r = cli(dev.port, 'deployment', 'promote', d['id'][:8])
    assert r.returncode == 0, r.stdout + r.stderr
    assert index_of(dev.port, f'/v1/service/ctag?index={idx}&wait=30s') > idx
    wait_deployment(dev.port, 1, ('successful',), job='ctag')
    insts = wait_for(lambda: (lambda i: i if list(i) == [canary['id']] else None)(
        instances(dev.port)), 60, 'only the promoted instance')
    assert insts[canary['id']]['tags'] == ['live', 'i0'], insts
    assert insts[canary['id']]['meta'] == {'v': 'stable'}, insts
    wait_for(lambda: svc_file.read_text() == f'{canary["id"]}=live,i0;\n', 60,
             'the template to show the promoted tags')


CHECKS_JOB = '''
job "onupd" {
  update {
    max_parallel      = 1
    health_check      = "checks"
    min_healthy_time  = "1s"
    healthy_deadline  = "6s"
    progress_deadline = "6s"
    auto_revert       = false
  }
  group "g" {
    count = 1
    restart {
      attempts = 0
      mode     = "fail"
    }
    reschedule {
      attempts  = 0
      unlimited = false
    }
    service {
      name = "onupd"
      port = 4243
      SVC_ON_UPDATE
      check {
        type     = "script"
        command  = "/bin/sh"
        args     = ["-c", "echo slow; exit EXIT"]
        interval = "1s"
        timeout  = "1s"
        CHECK_ON_UPDATE
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


@pytest.mark.parametrize('svc_on, check_on, code, status, outcome', [
    # a warning fails the deployment unless it is told to look past it
    ('', '', 1, 'warning', 'failed'),
    ('', 'on_update = "ignore_warnings"', 1, 'warning', 'successful'),
    # the service's on_update holds for its checks...
    ('on_update = "ignore_warnings"', '', 1, 'warning', 'successful'),
    # ...unless a check has its own
    ('on_update = "ignore_warnings"', 'on_update = "require_healthy"', 1, 'warning', 'failed'),
    # ignore_warnings does not cover a critical check; ignore does
    ('', 'on_update = "ignore_warnings"', 2, 'critical', 'failed'),
    ('on_update = "ignore"', '', 2, 'critical', 'successful'),
])
def test_on_update_decides_deployment_health(agents, tmp_path, svc_on, check_on, code, status,
                                             outcome):
    dev = start_dev(agents, tmp_path)
    job = write_job(tmp_path, 'onupd', CHECKS_JOB.replace('SVC_ON_UPDATE', svc_on)
                    .replace('CHECK_ON_UPDATE', check_on).replace('EXIT', str(code)))
    r = cli(dev.port, 'job', 'run', '-detach', job)
    assert r.returncode == 0, r.stdout + r.stderr
    d = wait_deployment(dev.port, 0, ('successful', 'failed'), job='onupd')
    assert d['status'] == outcome, d
    # the registry shows the check's real status all along
    [inst] = wait_for(lambda: api(dev.port, '/v1/service/onupd'), 30, 'the instance')
    assert [c['status'] for c in inst['checks']] == [status], inst
    assert inst['health'] == status, inst


def test_bad_on_update_is_refused(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    job = write_job(tmp_path, 'onupd', CHECKS_JOB.replace('SVC_ON_UPDATE', '')
                    .replace('CHECK_ON_UPDATE', 'on_update = "sometimes"').replace('EXIT', '0'))
    r = cli(dev.port, 'job', 'run', '-detach', job)
    assert r.returncode != 0
    out = r.stdout + r.stderr
    assert 'groups[0].services[0].checks[0].on_update' in out or 'on_update' in out, out
    assert 'expected one of "require_healthy", "ignore_warnings", "ignore"' in out, out
    assert api(dev.port, '/v1/jobs') == []
