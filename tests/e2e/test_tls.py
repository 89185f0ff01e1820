"""End-to-end: TLS (docs/operations.md, "TLS").  A server and a client agent
with tls { http = true }, certificates made with openssl at test time, and
the CLI over https: jobs, task logs through the client's API, refusals
without the CA, over plain http, and without a client certificate when the
agents ask for one.

Real herd agents on 127.0.0.1 (the `agents` fixture of test_control_plane)."""
import json
import os
import shutil
import socket
import ssl
import subprocess
import urllib.error
import urllib.request

import pytest

from conftest import HERD, REPO
from test_control_plane import GPUS, Agent, agents, wait_for  # noqa: F401


def openssl(*args, cwd):
    subprocess.run(['openssl', *args], cwd=cwd, check=True, capture_output=True)


def make_ca(d, name):
    openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
            '-nodes', '-keyout', f'{name}-key.pem', '-out', f'{name}.pem', '-days', '2',
            '-subj', f'/CN={name}', cwd=d)


def make_cert(d, ca, name, ext):
    (d / f'{name}.ext').write_text(ext)
    openssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
            '-keyout', f'{name}-key.pem', '-out', f'{name}.csr', '-subj', f'/CN={name}', cwd=d)
    openssl('x509', '-req', '-in', f'{name}.csr', '-CA', f'{ca}.pem', '-CAkey', f'{ca}-key.pem',
            '-CAcreateserial', '-out', f'{name}.pem', '-days', '2', '-extfile', f'{name}.ext',
            cwd=d)


@pytest.fixture
def certs(tmp_path):
    """A CA; the agents' certificate (for 127.0.0.1, server and client use,
    as Nomad's agents have); the CLI's client certificate; and a client
    certificate of another CA."""
    if not shutil.which('openssl'):
        pytest.fail('openssl is not installed (scripts/install installs it)')
    d = tmp_path / 'certs'
    d.mkdir()
    make_ca(d, 'ca')
    make_cert(d, 'ca', 'agent', 'subjectAltName=IP:127.0.0.1\n'
              'extendedKeyUsage=serverAuth,clientAuth\n')
    make_cert(d, 'ca', 'cli', 'extendedKeyUsage=clientAuth\n')
    make_ca(d, 'rogue-ca')
    make_cert(d, 'rogue-ca', 'rogue', 'extendedKeyUsage=clientAuth\n')
    return d


def tls_block(certs, verify_client):
    return (f'tls {{\n  http = true\n  ca_file = "{certs}/ca.pem"\n'
            f'  cert_file = "{certs}/agent.pem"\n  key_file = "{certs}/agent-key.pem"\n'
            f'  verify_https_client = {"true" if verify_client else "false"}\n'
            f'  verify_server_hostname = true\n}}\n')


def tls_env(port, certs, ca=True, client=False, client_name='cli'):
    env = dict(os.environ, HERD_ADDR=f'https://127.0.0.1:{port}')
    for k in ('HERD_CACERT', 'HERD_CLIENT_CERT', 'HERD_CLIENT_KEY', 'HERD_SKIP_VERIFY',
              'HERD_TOKEN', 'HERD_NAMESPACE'):
        env.pop(k, None)
    if ca:
        env['HERD_CACERT'] = str(certs / 'ca.pem')
    if client:
        env['HERD_CLIENT_CERT'] = str(certs / f'{client_name}.pem')
        env['HERD_CLIENT_KEY'] = str(certs / f'{client_name}-key.pem')
    return env


def run(env, *args, timeout=60, stdin=None):
    return subprocess.run([str(HERD), *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=REPO, input=stdin)


def start_tls_cluster(agents, tmp_path, certs, verify_client):
    """A server and one client agent (raw_exec on), both with tls on;
    returns (server, client, the env of a CLI that may talk to them)."""
    block = tls_block(certs, verify_client)
    scfg = tmp_path / 'server.hcl'
    scfg.write_text('bind_addr = "127.0.0.1"\nserver {\n  enabled = true\n}\n' + block)
    srv = Agent(tmp_path, 'server', ['-config', str(scfg), '-http-port', '0']).start()
    agents.append(srv)
    ccfg = tmp_path / 'client.hcl'
    ccfg.write_text('bind_addr = "127.0.0.1"\nclient {\n  enabled = true\n}\n'
                    'plugin "raw_exec" {\n  config {\n    enabled = true\n  }\n}\n' + block)
    cl = Agent(tmp_path, 'client', ['-config', str(ccfg), '-servers', f'127.0.0.1:{srv.port}',
                                    '-node', 'tls-node', '-http-port', '0'],
               gpu_file=GPUS / 't4-2x.json').start()
    agents.append(cl)
    env = tls_env(srv.port, certs, client=verify_client)

    def ready():
        r = run(env, 'node', 'status', '-json')
        return r.returncode == 0 and any(n['name'] == 'tls-node' and n['status'] == 'ready'
                                         for n in json.loads(r.stdout))
    wait_for(ready, 20, 'the client to register over https')
    return srv, cl, env


JOB = '''
job "hello-tls" {
  type = "batch"
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo secret-over-tls; echo to-stderr >&2"]
      }
    }
  }
}
'''

SLEEPER = '''
job "sleeper" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["300"]
      }
    }
  }
}
'''


def alloc_rows(env, job_id):
    """The rows of `job status`'s Allocations table, split in fields."""
    r = run(env, 'job', 'status', job_id)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    start = lines.index('Allocations') + 2 if 'Allocations' in lines else len(lines)
    return [ln.split() for ln in lines[start:] if ln.strip()]


def run_batch(env, tmp_path):
    """Submits JOB (job run follows it to its end) and returns its one
    allocation's id, complete."""
    job = tmp_path / 'hello-tls.hcl'
    job.write_text(JOB)
    r = run(env, 'job', 'run', str(job))
    assert r.returncode == 0, r.stdout + r.stderr
    rows = alloc_rows(env, 'hello-tls')
    assert len(rows) == 1 and rows[0][5] == 'complete', rows
    return rows[0][0]


def test_tls_cluster_runs_a_job_and_serves_its_logs(agents, tmp_path, certs):
    srv, cl, env = start_tls_cluster(agents, tmp_path, certs, verify_client=False)
    assert f'listening on https://127.0.0.1:{srv.port}' in srv.log()
    alloc = run_batch(env, tmp_path)
    # the task's log from the client's own API, which speaks https too
    r = run(env, 'alloc', 'logs', alloc, 't')
    assert r.returncode == 0, r.stderr
    assert r.stdout == 'secret-over-tls\n'
    r = run(env, 'alloc', 'logs', '-stderr', alloc, 't')
    assert r.returncode == 0 and r.stdout == 'to-stderr\n', r.stdout + r.stderr
    # the server's backup goes over https too (its own curl handle)
    r = run(env, 'operator', 'snapshot', 'save', str(tmp_path / 'backup.db'))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / 'backup.db').stat().st_size > 0
    # a plain client of the node's API is not answered
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        urllib.request.urlopen(f'http://127.0.0.1:{cl.port}/v1/client/allocation/x/stats',
                               timeout=10)


def test_cli_without_the_ca_or_over_http_fails(agents, tmp_path, certs):
    srv, _, env = start_tls_cluster(agents, tmp_path, certs, verify_client=False)
    r = run(tls_env(srv.port, certs, ca=False), 'node', 'status')
    assert r.returncode == 1
    assert "the server's certificate is not trusted" in r.stderr, r.stderr
    assert 'HERD_CACERT' in r.stderr
    assert r.stdout == ''
    # plain http to the TLS port: refused, and the message says why
    plain = dict(env, HERD_ADDR=f'http://127.0.0.1:{srv.port}')
    r = run(plain, 'node', 'status')
    assert r.returncode == 1
    assert 'answers only https://' in r.stderr, r.stderr
    # a bad TLS environment is an error of its own, before any connection
    r = run(dict(env, HERD_SKIP_VERIFY='perhaps'), 'node', 'status')
    assert r.returncode == 1 and 'HERD_SKIP_VERIFY' in r.stderr, r.stderr
    # skipping the check works (and is what HERD_SKIP_VERIFY is for)
    r = run(dict(tls_env(srv.port, certs, ca=False), HERD_SKIP_VERIFY='1'), 'node', 'status')
    assert r.returncode == 0 and 'tls-node' in r.stdout, r.stderr


def test_verify_https_client(agents, tmp_path, certs):
    srv, cl, env = start_tls_cluster(agents, tmp_path, certs, verify_client=True)
    # without a client certificate: refused with a clear message
    r = run(tls_env(srv.port, certs), 'node', 'status')
    assert r.returncode == 1
    assert 'no client certificate was presented' in r.stderr, r.stderr
    # a certificate of another CA: refused as well
    r = run(tls_env(srv.port, certs, client=True, client_name='rogue'), 'node', 'status')
    assert r.returncode == 1
    assert 'not signed by a CA this agent trusts' in r.stderr, r.stderr
    # with the CLI's certificate everything works, the node's API included
    alloc = run_batch(env, tmp_path)
    r = run(env, 'alloc', 'logs', alloc, 't')
    assert r.returncode == 0 and r.stdout == 'secret-over-tls\n', r.stdout + r.stderr
    # the client's own API refuses a caller without a certificate itself
    ctx = ssl.create_default_context(cafile=str(certs / 'ca.pem'))
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(f'https://127.0.0.1:{cl.port}/v1/client/allocation/'
                               f'{alloc}/stats', timeout=10, context=ctx)
    assert e.value.code == 403
    body = json.loads(e.value.read())
    assert body['error']['code'] == 'tls_client_certificate'
    # and answers one with a certificate (404: the allocation has ended, so
    # it has no stats)
    ctx.load_cert_chain(str(certs / 'cli.pem'), str(certs / 'cli-key.pem'))
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(f'https://127.0.0.1:{cl.port}/v1/client/allocation/'
                               f'{alloc}/stats', timeout=10, context=ctx)
    assert e.value.code == 404
    assert json.loads(e.value.read())['error']['code'] == 'not_found'


def test_alloc_exec_over_https(agents, tmp_path, certs):
    srv, cl, env = start_tls_cluster(agents, tmp_path, certs, verify_client=True)
    job = tmp_path / 'sleeper.hcl'
    job.write_text(SLEEPER)
    r = run(env, 'job', 'run', '-detach', str(job))
    assert r.returncode == 0, r.stderr

    def running():
        rows = [row for row in alloc_rows(env, 'sleeper') if row[5] == 'running']
        return rows and rows[0][0]
    alloc = wait_for(running, 20, 'the sleeper to run')
    # alloc status asks the node for the task's usage, over https
    r = run(env, 'alloc', 'status', alloc)
    assert r.returncode == 0, r.stderr
    assert 'Resource usage:' in r.stdout and 'unknown' not in r.stdout, r.stdout + r.stderr
    r = run(env, 'alloc', 'exec', '-i=true', alloc, '/bin/sh', '-c',
            'cat; echo " from $HERD_TASK_NAME"; exit 3', stdin='typed-in')
    assert r.stdout == 'typed-in from t\n', r.stdout + r.stderr
    assert r.returncode == 3, r.stderr
    # megabytes both ways: many TLS records, reads that leave decrypted
    # data behind, sends that would block
    big = 'x' * 3_000_000
    r = run(env, 'alloc', 'exec', alloc, '/bin/sh', '-c', 'wc -c; head -c 2000000 /dev/zero',
            stdin=big)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith('3000000\n'), r.stdout[:100]
    assert len(r.stdout) == len('3000000\n') + 2_000_000
    # the agent stops while a session runs: the session ends with it
    p = subprocess.Popen([str(HERD), 'alloc', 'exec', '-i=false', alloc, '/bin/sh', '-c',
                          'echo started; exec sleep 300'], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
    try:
        assert p.stdout.readline() == 'started\n'
        cl.stop()
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert cl.proc.returncode == 0, cl.log()
    assert p.returncode != 0
    assert 'the agent is stopping' in err, err
    # a client certificate of another CA: the server refuses the lookup
    rogue = dict(env, HERD_CLIENT_CERT=str(certs / 'rogue.pem'),
                 HERD_CLIENT_KEY=str(certs / 'rogue-key.pem'))
    r = run(rogue, 'alloc', 'exec', alloc, 'true')
    assert r.returncode == 1 and 'not signed by a CA' in r.stderr, r.stderr


def test_server_and_client_in_one_agent(agents, tmp_path, certs):
    """One agent that is both (as -dev with a tls file), whose certificate
    names only localhost: its client reaches its server in-process, the
    log API's token checks included, so the name of 127.0.0.1 does not
    matter there."""
    make_cert(certs, 'ca', 'local', 'subjectAltName=DNS:localhost\n'
              'extendedKeyUsage=serverAuth,clientAuth\n')
    cfg = tmp_path / 'agent.hcl'
    cfg.write_text('bind_addr = "127.0.0.1"\nadvertise {\n  http = "localhost"\n}\n'
                   'server {\n  enabled = true\n}\nclient {\n  enabled = true\n}\n'
                   'plugin "raw_exec" {\n  config {\n    enabled = true\n  }\n}\n'
                   f'tls {{\n  http = true\n  ca_file = "{certs}/ca.pem"\n'
                   f'  cert_file = "{certs}/local.pem"\n  key_file = "{certs}/local-key.pem"\n}}\n')
    # a port of our own: with -http-port 0 the agent advertises the address
    # it listens on (127.0.0.1), not the advertise block's host
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    a = Agent(tmp_path, 'both', ['-config', str(cfg), '-http-port', str(port)],
              gpu_file=GPUS / 't4-2x.json', port=port).start()
    agents.append(a)
    env = dict(tls_env(a.port, certs), HERD_ADDR=f'https://localhost:{a.port}')

    def ready():
        r = run(env, 'node', 'status', '-json')
        return r.returncode == 0 and any(n['status'] == 'ready' for n in json.loads(r.stdout))
    wait_for(ready, 20, 'the node to be ready')
    alloc = run_batch(env, tmp_path)
    r = run(env, 'alloc', 'logs', alloc, 't')
    assert r.returncode == 0 and r.stdout == 'secret-over-tls\n', r.stdout + r.stderr
    # the certificate does not name 127.0.0.1: a caller that dials it so
    # is refused, which is what makes the in-process check necessary
    r = run(tls_env(a.port, certs), 'node', 'status')
    assert r.returncode == 1 and 'not trusted' in r.stderr, r.stderr


def test_agent_with_a_bad_tls_file_does_not_start(agents, tmp_path, certs):
    bad = tmp_path / 'not.pem'
    bad.write_text('not a certificate\n')
    cfg = tmp_path / 'server.hcl'
    cfg.write_text('bind_addr = "127.0.0.1"\nserver {\n  enabled = true\n}\n'
                   f'tls {{\n  http = true\n  cert_file = "{bad}"\n'
                   f'  key_file = "{certs}/agent-key.pem"\n}}\n')
    r = subprocess.run([str(HERD), 'agent', '-config', str(cfg), '-http-port', '0',
                        '-data-dir', str(tmp_path / 'data')], capture_output=True, text=True,
                       timeout=30, cwd=REPO)
    assert r.returncode != 0
    assert f'tls: cert_file {bad}: no PEM certificate in it' in r.stderr, r.stderr
    cfg.write_text('bind_addr = "127.0.0.1"\nserver {\n  enabled = true\n}\n'
                   'tls {\n  http = true\n}\n')
    r = subprocess.run([str(HERD), 'agent', '-config', str(cfg), '-http-port', '0',
                        '-data-dir', str(tmp_path / 'data')], capture_output=True, text=True,
                       timeout=30, cwd=REPO)
    assert r.returncode != 0
    assert 'tls: cert_file is not set' in r.stderr, r.stderr
