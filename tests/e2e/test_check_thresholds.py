"""End-to-end: check thresholds (docs/jobspec.md "check"):
success_before_passing keeps a check non-passing until that many
successes in a row; failures_before_critical keeps a passing check passing
until that many failures in a row; failures_before_warning shows warning
before.  Script checks whose exit code a file of the test decides; each
run numbers itself in its output ("run N code C"), so that what the
registry shows can be matched to the run that made it."""
import re

from test_control_plane import agents, api, cli, job_allocs, wait_for, write_job  # noqa: F401
from test_tasks import start_dev


def counted_check(out, name, extra):
    """A script check that counts its runs in out/n-<name> and exits with
    the code in out/code-<name>."""
    script = (f"n=$(cat {out}/n-{name} 2>/dev/null || echo 0); n=$((n+1)); "
              f"echo $n > {out}/n-{name}; c=$(cat {out}/code-{name}); echo run $n code $c; "
              f"exit $c")
    return f'''
      service {{
        name = "thr-{name}"
        port = 8080
        check {{
          type     = "script"
          command  = "/bin/sh"
          args     = ["-c", "{script}"]
          interval = "1s"
          timeout  = "1s"
          {extra}
        }}
      }}'''


WARN_EXTRA = 'failures_before_critical = 3\n          failures_before_warning = 1'


def job_text(out):
    return f'''
job "thr" {{
  group "g" {{
    task "t" {{
      driver = "raw_exec"
      config {{
        command = "/bin/sleep"
        args    = ["600"]
      }}
{counted_check(out, 'pass', 'success_before_passing = 3')}
{counted_check(out, 'crit', 'failures_before_critical = 2')}
{counted_check(out, 'warn', WARN_EXTRA)}
    }}
  }}
}}
'''


class Watch:
    """What the registry showed of one check: {run: set of statuses}."""

    def __init__(self, port, name):
        self.port, self.name, self.seen = port, name, {}

    def look(self):
        for inst in api(self.port, f'/v1/service/thr-{self.name}'):
            for c in inst['checks']:
                m = re.match(r'run (\d+) code (\d+)', c['output'])
                if m:
                    run = int(m.group(1))
                    self.seen.setdefault(run, {})[c['status']] = int(m.group(2))
        return self.seen

    def until(self, pred, what, also=()):
        """Looks (at the others too: their runs go on meanwhile) until
        pred holds of what this one saw."""
        def look():
            for o in also:
                o.look()
            return pred(self.look())
        wait_for(look, 60, what, step=0.05)
        return self.seen


def test_check_thresholds(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    out = tmp_path / 'out'
    out.mkdir()
    for name, code in (('pass', 0), ('crit', 0), ('warn', 0)):
        (out / f'code-{name}').write_text(f'{code}\n')
    job = write_job(tmp_path, 'thr', job_text(out))
    r = cli(dev.port, 'job', 'run', '-detach', job)
    assert r.returncode == 0, r.stdout + r.stderr

    # success_before_passing = 3: the first two successes leave it critical
    # (its initial status), the third makes it passing
    p = Watch(dev.port, 'pass')
    seen = p.until(lambda s: 3 in s and 'passing' in s[3], 'the third success')
    assert 1 in seen or 2 in seen, seen
    for run in (1, 2):
        assert set(seen.get(run, {})) <= {'critical'}, seen
    listed = {s['name']: s for s in api(dev.port, '/v1/services')}
    assert listed['thr-pass']['healthy'] == 1

    # failures_before_critical = 2 and failures_before_warning = 1 below
    # failures_before_critical = 3: both passing first
    c, w = Watch(dev.port, 'crit'), Watch(dev.port, 'warn')
    c.until(lambda s: any('passing' in v for v in s.values()), 'crit to pass')
    w.until(lambda s: any('passing' in v for v in s.values()), 'warn to pass')
    (out / 'code-crit').write_text('2\n')
    (out / 'code-warn').write_text('2\n')

    def failing_runs(s, n):
        runs = sorted(r for r, v in s.items() if 2 in v.values())
        return runs if len(runs) >= n else None
    runs = failing_runs(c.until(lambda s: failing_runs(s, 2), 'two failures of crit', [w]), 2)
    first, second = runs[0], runs[1]
    assert second == first + 1, c.seen
    assert set(c.seen[first]) == {'passing'}, c.seen     # one failure: still passing
    assert set(c.seen[second]) == {'critical'}, c.seen   # two: critical
    inst = api(dev.port, '/v1/service/thr-crit')[0]
    assert inst['health'] == 'critical'

    runs = failing_runs(w.until(lambda s: failing_runs(s, 3), 'three failures of warn'), 3)
    assert runs[:3] == [runs[0], runs[0] + 1, runs[0] + 2], w.seen
    assert [set(w.seen[r]) for r in runs[:3]] == [{'warning'}, {'warning'}, {'critical'}], w.seen


DEPLOY_JOB = '''
job "thd" {
  update {
    max_parallel      = 1
    min_healthy_time  = "1s"
    healthy_deadline  = "8s"
    progress_deadline = "1m"
    health_check      = "checks"
  }
  group "g" {
    service {
      name = "thd"
      port = 8080
      check {
        type     = "script"
        command  = "/bin/sh"
        args     = ["-c", "echo fine"]
        interval = "1s"
        timeout  = "1s"
        success_before_passing = SUCCESSES
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


def test_deployment_health_reads_the_thresholds(agents, tmp_path):
    """health_check = "checks" reads the status the thresholds let through:
    every run of the check succeeds, yet with success_before_passing = 100
    it is still critical when healthy_deadline (8s) runs out."""
    from test_deployments import wait_deployment
    dev = start_dev(agents, tmp_path)
    job = write_job(tmp_path, 'thd', DEPLOY_JOB.replace('SUCCESSES', '2'))
    r = cli(dev.port, 'job', 'run', '-detach', job)
    assert r.returncode == 0, r.stdout + r.stderr
    wait_deployment(dev.port, 'thd', 0, ('successful',))
    job = write_job(tmp_path, 'thd', DEPLOY_JOB.replace('SUCCESSES', '100'))
    r = cli(dev.port, 'job', 'run', '-detach', job)
    assert r.returncode == 0, r.stdout + r.stderr
    d = wait_deployment(dev.port, 'thd', 1, ('failed',))
    assert d['groups']['g']['unhealthy_allocs'] == 1, d
    [inst] = [i for i in api(dev.port, '/v1/service/thd')
              if i['alloc_id'] in {a['id'] for a in job_allocs(dev.port, 'thd')
                                   if a['job_version'] == 1}]
    [c] = inst['checks']
    assert c['status'] == 'critical' and c['output'].startswith('fine (passing '), c
