"""End-to-end: `herd alloc exec`, a command inside a running task.

The command gets the task's environment and directory (raw_exec), stdin,
stdout, stderr and the exit code pass through, -t gives it a terminal (the
CLI itself runs on a pty here, from python's pty module), a hang-up of the
CLI or the end of the task ends the command; unknown allocations and
tasks, ended allocations and a read-only token are refused with clear
errors.  Real herd agents on 127.0.0.1 (the `agents` fixture of
test_control_plane)."""
import fcntl
import hashlib
import os
import pathlib
import pty
import select
import signal
import struct
import subprocess
import termios

from test_acl import acl_cluster, call, herd as herd_as
from test_control_plane import (HERD, REPO, agents, api, cli,  # noqa: F401
                                running_allocs, wait_for, write_job)
from test_tasks import alloc_dir, start_dev

LOOP = '''
    task "{name}" {{
      driver = "raw_exec"
      config {{
        command = "/bin/sh"
        args = ["-c", "while true; do sleep 0.2; done"]
      }}
      resources {{
        cpu = 100
        memory = 64
      }}
    }}
'''


def job(job_id, tasks=('t',), jtype='service', extra=''):
    body = ''.join(LOOP.format(name=t) for t in tasks)
    return f'job "{job_id}" {{\n  type = "{jtype}"\n  group "g" {{\n{body}{extra}  }}\n}}\n'


def run_job(dev, tmp_path, name, text):
    r = cli(dev.port, 'job', 'run', '-detach', write_job(tmp_path, name, text))
    assert r.returncode == 0, r.stdout + r.stderr
    [a] = wait_for(lambda: running_allocs(dev.port, name), 30, f'{name} running')
    return wait_for(lambda: (x := api(dev.port, f'/v1/allocation/{a["id"]}'))
                    and all(t['state'] == 'running' for t in x['task_states'].values()) and x,
                    30, 'every task running')


def exec_cli(port, *args, stdin=None, timeout=60):
    env = dict(os.environ, HERD_ADDR=f'http://127.0.0.1:{port}')
    return subprocess.run([str(HERD), 'alloc', 'exec', *args], input=stdin,
                          capture_output=True, env=env, timeout=timeout, cwd=REPO)


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_exec_in_raw_exec_task(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    a = run_job(dev, tmp_path, 'svc', job('svc'))
    aid = a['id']
    task_dir = os.path.realpath(alloc_dir(dev, aid) / 't')

    # the task's environment and directory
    r = exec_cli(dev.port, aid[:8], 'sh', '-c', 'echo $HERD_ALLOC_ID; echo $HERD_TASK_NAME; pwd')
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode().splitlines()
    assert out[0] == aid and out[1] == 't', out
    assert os.path.realpath(out[2]) == task_dir, (out, task_dir)

    # stdin passes, its end ends cat; stdout and stderr stay apart
    r = exec_cli(dev.port, aid, 'cat', stdin=b'hello\nworld\n')
    assert r.returncode == 0 and r.stdout == b'hello\nworld\n', r
    r = exec_cli(dev.port, aid, 'sh', '-c', 'echo out; echo err >&2')
    assert r.returncode == 0 and r.stdout == b'out\n' and r.stderr == b'err\n', r
    # a few MiB both ways at once (neither side may block the other)
    data = os.urandom(3 << 20)
    r = exec_cli(dev.port, aid, 'cat', stdin=data, timeout=120)
    assert r.returncode == 0, r.stderr
    assert hashlib.sha256(r.stdout).hexdigest() == hashlib.sha256(data).hexdigest()
    # -i=false: no stdin, cat sees its end at once
    r = exec_cli(dev.port, '-i=false', aid, 'cat', stdin=b'not sent')
    assert r.returncode == 0 and r.stdout == b'', r

    # exit codes, and 128 + N for a signal
    r = exec_cli(dev.port, aid, 'sh', '-c', 'exit 7')
    assert r.returncode == 7, r
    r = exec_cli(dev.port, aid, 'sh', '-c', 'kill -9 $$')
    assert r.returncode == 137, r
    r = exec_cli(dev.port, aid, 'no-such-program-here')
    assert r.returncode == 127 and b'no-such-program-here' in r.stderr, r

    # errors: what is wrong, said once
    r = exec_cli(dev.port, 'ffffffff', 'true')
    assert r.returncode == 1 and b'no allocation' in r.stderr, r.stderr
    r = exec_cli(dev.port, '-task', 'nope', aid, 'true')
    assert r.returncode == 1 and b'no task "nope"' in r.stderr and b'its tasks: t' in r.stderr, r
    r = exec_cli(dev.port, aid)
    assert r.returncode == 2 and b'missing command' in r.stderr, r.stderr
    # the node itself refuses bad requests before anything runs
    node_api = a['node_http_addr']
    status, body = call(node_api, f'/v1/client/allocation/{aid}/exec?command=%5B%22true%22%5D')
    assert status == 426 and 'Upgrade' in body['error']['message'], body
    status, body = call(node_api, f'/v1/client/allocation/{aid}/exec', method='POST', body={})
    assert status == 405, body


def read_pty_until_exit(master, proc, limit=60):
    """Everything proc writes to the pty master until it exits."""
    out = b''
    deadline_polls = limit * 10
    while deadline_polls:
        r, _, _ = select.select([master], [], [], 0.1)
        if r:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
        deadline_polls -= 1
    proc.wait(timeout=10)
    return out


def test_commands_get_only_their_stdio(agents, tmp_path, monkeypatch):
    # An agent whose parent left it an fd that is not close-on-exec (as
    # libraries leave some too: libcurl 7.88's internal socket pair): no
    # task and no exec'd command may inherit it.
    r, w = os.pipe()
    real_popen = subprocess.Popen

    def leaky_popen(*args, **kw):
        return real_popen(*args, **dict(kw, pass_fds=(w,)))
    with monkeypatch.context() as m:
        m.setattr(subprocess, 'Popen', leaky_popen)
        dev = start_dev(agents, tmp_path)
    os.close(r)
    os.close(w)
    agent_fds = os.listdir(f'/proc/{dev.proc.pid}/fd')
    assert str(w) in agent_fds, 'the agent did not get the stray fd: the test tests nothing'
    task = ('    task "t" {\n      driver = "raw_exec"\n      config {\n'
            '        command = "/bin/sh"\n'
            '        args = ["-c", "ls /proc/$$/fd > $HERD_TASK_DIR/fds; sleep 300"]\n'
            '      }\n      resources {\n        cpu = 10\n        memory = 10\n      }\n'
            '    }\n')
    a = run_job(dev, tmp_path, 'fds', f'job "fds" {{\n  group "g" {{\n{task}  }}\n}}\n')
    fds = alloc_dir(dev, a['id']) / 't' / 'fds'
    listed = wait_for(lambda: fds.exists() and fds.read_text().split(), 30, "the task's fds")
    # dash keeps its redirected stdout on fd 10
    assert set(listed) - {'10'} == {'0', '1', '2'}, listed
    r = exec_cli(dev.port, a['id'], 'sh', '-c', 'ls /proc/$$/fd')
    assert r.returncode == 0 and sorted(r.stdout.decode().split()) == ['0', '1', '2'], r


def test_exec_with_a_terminal(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    aid = run_job(dev, tmp_path, 'svc', job('svc'))['id']
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack('HHHH', 33, 77, 0, 0))
    before = termios.tcgetattr(slave)
    env = dict(os.environ, HERD_ADDR=f'http://127.0.0.1:{dev.port}')
    p = subprocess.Popen([str(HERD), 'alloc', 'exec', aid, 'sh', '-c',
                          'tty; test -t 0 && echo is-a-tty; stty size; exit 3'],
                         stdin=slave, stdout=slave, stderr=slave, env=env, cwd=REPO)
    out = read_pty_until_exit(master, p).decode(errors='replace')
    assert p.returncode == 3, out
    assert '/dev/pts/' in out and 'is-a-tty' in out, out
    assert '33 77' in out, out   # the local window size went along
    # the local terminal is as it was (raw mode undone)
    assert termios.tcgetattr(slave) == before
    # -t=false on a terminal: pipes, no tty
    p = subprocess.Popen([str(HERD), 'alloc', 'exec', '-t=false', '-i=false', aid, 'sh', '-c',
                          'test -t 0 || echo no-tty'],
                         stdin=slave, stdout=slave, stderr=slave, env=env, cwd=REPO)
    out = read_pty_until_exit(master, p).decode(errors='replace')
    assert p.returncode == 0 and 'no-tty' in out, out
    os.close(master)
    os.close(slave)


def test_several_tasks_and_ended_allocations(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    aid = run_job(dev, tmp_path, 'two', job('two', tasks=('a', 'b')))['id']
    r = exec_cli(dev.port, aid, 'true')
    assert r.returncode == 1 and b'runs 2 tasks' in r.stderr and b'a, b' in r.stderr, r.stderr
    r = exec_cli(dev.port, '-task', 'b', aid, 'sh', '-c', 'echo $HERD_TASK_NAME')
    assert r.returncode == 0 and r.stdout == b'b\n', r

    # an allocation that ended
    f = write_job(tmp_path, 'quick', 'job "quick" {\n  type = "batch"\n  group "g" {\n'
                  '    task "t" {\n      driver = "raw_exec"\n      config {\n'
                  '        command = "/bin/true"\n      }\n    }\n  }\n}\n')
    assert cli(dev.port, 'job', 'run', f).returncode == 0
    [done] = wait_for(lambda: [x for x in api(dev.port, '/v1/job/quick/allocations')
                               if x['client_status'] == 'complete'], 30, 'the batch job to end')
    r = exec_cli(dev.port, done['id'], 'true')
    assert r.returncode == 1 and b'has ended (complete)' in r.stderr, r.stderr


def test_session_ends_with_the_caller_or_the_task(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    aid = run_job(dev, tmp_path, 'svc', job('svc'))['id']
    pidfile = alloc_dir(dev, aid) / 'alloc' / 'exec.pid'
    env = dict(os.environ, HERD_ADDR=f'http://127.0.0.1:{dev.port}')

    # the caller hangs up: the command is killed
    p = subprocess.Popen([str(HERD), 'alloc', 'exec', aid, 'sh', '-c',
                          'echo $$ > $HERD_ALLOC_DIR/exec.pid; exec sleep 600'],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, cwd=REPO)
    pid = wait_for(lambda: pidfile.exists() and pidfile.read_text().strip()
                   and int(pidfile.read_text()), 30, 'the command to start')
    assert alive(pid)
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=10)
    wait_for(lambda: not alive(pid), 30, 'the command to be killed')
    pidfile.unlink()

    # the task ends: so does the session, saying why
    p = subprocess.Popen([str(HERD), 'alloc', 'exec', aid, 'sh', '-c',
                          'echo $$ > $HERD_ALLOC_DIR/exec.pid; exec sleep 600'],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, cwd=REPO)
    pid = wait_for(lambda: pidfile.exists() and pidfile.read_text().strip()
                   and int(pidfile.read_text()), 30, 'the command to start')
    assert cli(dev.port, 'job', 'stop', 'svc').returncode == 0
    _, err = p.communicate(timeout=120)
    assert p.returncode == 137, err
    assert b'the task ended' in err, err
    wait_for(lambda: not alive(pid), 30, 'the command to be gone')


def test_acl_read_only_token_is_refused(agents, tmp_path):
    port, addr, mgmt, secrets, client = acl_cluster(agents, tmp_path, [
        ('submit', 'namespace "team-a" {\n  policy = "submit"\n}\n'),
        ('read', 'namespace "team-a" {\n  policy = "read"\n}\n'),
    ])
    f = write_job(tmp_path, 'svc', job('svc'))
    r = herd_as(port, 'job', 'run', '-namespace', 'team-a', f, token=secrets['submit'], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    [a] = call(addr, '/v1/job/svc/allocations?namespace=team-a', token=secrets['read'])[1]
    marker = pathlib.Path(client.dir) / 'data' / 'alloc' / a['id'] / 'alloc' / 'ran'
    wait_for(lambda: call(addr, f'/v1/allocation/{a["id"]}?namespace=team-a',
                          token=secrets['read'])[1]['task_states']['t']['state'] == 'running',
             30, 'the task to run')

    r = herd_as(port, 'alloc', 'exec', '-namespace', 'team-a', a['id'][:8], 'sh', '-c',
                'touch $HERD_ALLOC_DIR/ran', token=secrets['read'])
    assert r.returncode == 1 and 'permission denied' in r.stderr, r.stderr
    assert not marker.exists()
    r = herd_as(port, 'alloc', 'exec', '-namespace', 'team-a', a['id'][:8], 'sh', '-c',
                'touch $HERD_ALLOC_DIR/ran; echo done', token=secrets['submit'])
    assert r.returncode == 0 and r.stdout == 'done\n', r.stdout + r.stderr
    assert marker.exists()


def sleepers(arg):
    """Host pids of processes whose command line is `sleep ARG`."""
    found = []
    for d in pathlib.Path('/proc').iterdir():
        try:
            if d.name.isdigit() and (d / 'cmdline').read_bytes() == b'sleep\x00' + arg.encode() + b'\x00':
                found.append(int(d.name))
        except OSError:
            pass
    return found


def hang_up_kills(env, aid, arg):
    """exec `sleep ARG`, kill the CLI: the command must go."""
    p = subprocess.Popen([str(HERD), 'alloc', 'exec', aid, 'sleep', arg],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, cwd=REPO)
    wait_for(lambda: sleepers(arg), 30, 'the command to start')
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=10)
    wait_for(lambda: not sleepers(arg), 30, 'the command to be killed')


def test_exec_in_exec_driver_task(agents, tmp_path):
    """An exec-driver task: the command is in the task's root, PID
    namespace and cgroup, as the task's user."""
    from test_tasks import exec_usable
    why = exec_usable()
    if why:
        import pytest
        pytest.skip(why)
    dev = start_dev(agents, tmp_path)
    text = job('iso').replace('raw_exec', 'exec')
    aid = run_job(dev, tmp_path, 'iso', text)['id']
    (alloc_dir(dev, aid) / 't' / 'local' / 'marker').write_text('from the host\n')
    r = exec_cli(dev.port, aid, 'sh', '-c',
                 'id -u; pwd; cat /local/marker; echo $HERD_ALLOC_ID; '
                 'ls /proc | grep -c "^[0-9]"; '
                 'cat /proc/self/cgroup')
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode().splitlines()
    assert out[0] == '65534', out            # nobody, the exec driver's default user
    assert out[1] == '/', out                 # the task dir is the root
    assert out[2] == 'from the host', out
    assert out[3] == aid, out
    assert int(out[4]) < 10, out              # the task's PID namespace, not the host's
    assert any(f'{aid}.t' in line for line in out[5:]), out   # the task's cgroup
    # the host's files are not there
    r = exec_cli(dev.port, aid, 'sh', '-c', f'test -e {dev.dir} || echo hidden')
    assert r.returncode == 0 and r.stdout == b'hidden\n', r
    r = exec_cli(dev.port, aid, 'cat', stdin=b'through\n')
    assert r.returncode == 0 and r.stdout == b'through\n', r
    r = exec_cli(dev.port, aid, 'sh', '-c', 'exit 9')
    assert r.returncode == 9, r
    r = exec_cli(dev.port, aid, 'no-such-program-here')
    assert r.returncode == 127 and b'no-such-program-here' in r.stderr, r
    # a terminal inside the task
    master, slave = pty.openpty()
    env = dict(os.environ, HERD_ADDR=f'http://127.0.0.1:{dev.port}')
    p = subprocess.Popen([str(HERD), 'alloc', 'exec', aid, 'sh', '-c',
                          'test -t 0 && echo is-a-tty'],
                         stdin=slave, stdout=slave, stderr=slave, env=env, cwd=REPO)
    out = read_pty_until_exit(master, p).decode(errors='replace')
    assert p.returncode == 0 and 'is-a-tty' in out, out
    os.close(master)
    os.close(slave)
    # the caller hangs up: the command inside the task is killed too
    hang_up_kills(env, aid, '6001')


def test_exec_in_docker_task(engine, agents, tmp_path):
    """A docker task: an exec instance of the Engine API in its container."""
    from test_control_plane import job_allocs
    from test_tasks_docker import docker_job, start_docker_cluster
    server, client, _ = start_docker_cluster(agents, tmp_path, engine['socket'])
    f = write_job(tmp_path, 'dk', docker_job(
        'dk', 'echo in-the-box > /tmp/marker; while true; do sleep 0.2; done'))
    r = cli(server.port, 'job', 'run', '-detach', f)
    assert r.returncode == 0, r.stdout + r.stderr
    a = wait_for(lambda: [x for x in job_allocs(server.port, 'dk')
                          if x.get('task_states', {}).get('box', {}).get('state') == 'running'],
                 60, f'the docker task to run\n{client.log()[-2000:]}')[0]
    aid = a['id']
    # the container's files and environment
    r = exec_cli(server.port, aid, 'sh', '-c', 'cat /tmp/marker; echo $HERD_ALLOC_ID')
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().splitlines() == ['in-the-box', aid], r.stdout
    r = exec_cli(server.port, aid, 'sh', '-c', 'echo out; echo err >&2; exit 5')
    assert r.returncode == 5 and r.stdout == b'out\n' and r.stderr == b'err\n', r
    r = exec_cli(server.port, aid, 'cat', stdin=b'via the engine\n')
    assert r.returncode == 0 and r.stdout == b'via the engine\n', r
    # a terminal: the engine's pty.  Its first size may land after the
    # command started (engines before API 1.42 take it only by a resize,
    # and busybox's stty gives up on a 0x0 terminal), so the size checked
    # is a later one: the CLI passes a window change (SIGWINCH) on before
    # the line typed after it
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack('HHHH', 21, 61, 0, 0))
    env = dict(os.environ, HERD_ADDR=f'http://127.0.0.1:{server.port}')
    p = subprocess.Popen([str(HERD), 'alloc', 'exec', aid, 'sh', '-c',
                          'test -t 0 && echo is-a-tty; read x; stty size; read y'],
                         stdin=slave, stdout=slave, stderr=slave, env=env, cwd=REPO)
    out = b''
    for _ in range(600):
        if b'is-a-tty' in out or p.poll() is not None:
            break
        if select.select([master], [], [], 0.1)[0]:
            out += os.read(master, 65536)
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack('HHHH', 22, 62, 0, 0))
    p.send_signal(signal.SIGWINCH)
    os.write(master, b'go\r')
    for _ in range(600):
        if b'22 62' in out or p.poll() is not None:
            break
        if select.select([master], [], [], 0.1)[0]:
            out += os.read(master, 65536)
    os.write(master, b'done\r')
    out = (out + read_pty_until_exit(master, p)).decode(errors='replace')
    assert p.returncode == 0 and 'is-a-tty' in out and '22 62' in out, out + client.log()[-3000:]
    os.close(master)
    os.close(slave)
    # the caller hangs up: the engine's exec process is killed
    hang_up_kills(env, aid, '6002')


def test_sessions_per_node_are_limited(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    aid = run_job(dev, tmp_path, 'svc', job('svc'))['id']
    env = dict(os.environ, HERD_ADDR=f'http://127.0.0.1:{dev.port}')
    procs = [subprocess.Popen([str(HERD), 'alloc', 'exec', aid, 'sleep', '6003'],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=env, cwd=REPO) for _ in range(16)]
    try:
        wait_for(lambda: len(sleepers('6003')) == 16, 60, '16 sessions')
        r = exec_cli(dev.port, aid, 'true')
        assert r.returncode == 1 and b'too many exec sessions' in r.stderr, r
    finally:
        for p in procs:
            p.kill()
            p.wait(timeout=10)
    wait_for(lambda: not sleepers('6003'), 30, 'the commands to be killed')
    # the slots are free again
    r = wait_for(lambda: (x := exec_cli(dev.port, aid, 'true')).returncode == 0 and x, 30,
                 'a session to be accepted again')
    assert r.stderr == b''
