"""End-to-end: SIGHUP reloads an agent's configuration (docs/agent-config.md,
"Reloading").  A TLS certificate replaced on disk reaches new connections
after SIGHUP while an open connection finishes on the old one, and so does
a new CA that callers' certificates are checked against; a client's own
connections to servers take files rotated in place with no signal at all; a
broken
certificate changes nothing and the agent keeps serving; log_level changes
at once; changes that need a restart are named; an agent without -config
survives SIGHUP.

Certificates are made with openssl at test time (test_tls's fixture); real
herd agents on 127.0.0.1 (test_control_plane's `agents`).  No timings are
asserted: each wait polls with a generous deadline."""
import http.client
import os
import re
import signal
import socket
import ssl
import urllib.request

from test_control_plane import GPUS, Agent, agents, wait_for  # noqa: F401
from test_tls import certs, make_ca, make_cert, run, run_batch, tls_env  # noqa: F401


def served_cert(port, ca):
    """The DER certificate a new TLS connection to port gets."""
    ctx = ssl.create_default_context(cafile=str(ca))
    with socket.create_connection(('127.0.0.1', port), timeout=10) as s:
        with ctx.wrap_socket(s, server_hostname='127.0.0.1') as t:
            return t.getpeercert(binary_form=True)


def der(path):
    return ssl.PEM_cert_to_DER_cert(path.read_text())


def replace(path, text):
    """As a rotation tool writes a file: a temporary one renamed over it."""
    tmp = path.with_name(path.name + '.tmp')
    tmp.write_text(text)
    os.replace(tmp, path)


def count(agent, text):
    return agent.log().count(text)


def hup_and_wait(agent, text, before):
    """SIGHUP, then wait for the log to hold one more line with text."""
    agent.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: count(agent, text) > before, 30, f'"{text}" in the log after SIGHUP')


def test_sighup_rotates_the_certificate(agents, tmp_path, certs):  # noqa: F811
    make_cert(certs, 'ca', 'agent-b', 'subjectAltName=IP:127.0.0.1\n'
              'extendedKeyUsage=serverAuth,clientAuth\n')
    live, live_key = certs / 'live.pem', certs / 'live-key.pem'
    replace(live, (certs / 'agent.pem').read_text())
    replace(live_key, (certs / 'agent-key.pem').read_text())
    cfg = tmp_path / 'server.hcl'
    # server and client in one agent: both listeners (the server's API, the
    # client's own) serve the certificate
    cfg.write_text('bind_addr = "127.0.0.1"\nserver {\n  enabled = true\n}\n'
                   'client {\n  enabled = true\n}\n'
                   f'tls {{\n  http = true\n  ca_file = "{certs}/ca.pem"\n'
                   f'  cert_file = "{live}"\n  key_file = "{live_key}"\n}}\n')
    srv = Agent(tmp_path, 'server', ['-config', str(cfg), '-http-port', '0'],
                gpu_file=GPUS / 't4-2x.json').start()
    agents.append(srv)
    ca = certs / 'ca.pem'
    a, b = der(certs / 'agent.pem'), der(certs / 'agent-b.pem')
    assert a != b
    wait_for(lambda: served_cert(srv.port, ca) == a, 30, 'the agent to serve certificate A')
    m = wait_for(lambda: re.search(r'client: http api on 127\.0\.0\.1:(\d+) \(https\)',
                                   srv.log()), 30, "the client API's port")
    client_port = int(m.group(1))
    assert served_cert(client_port, ca) == a

    # a keep-alive connection opened on A
    ctx = ssl.create_default_context(cafile=str(ca))
    kept = http.client.HTTPSConnection('127.0.0.1', srv.port, context=ctx, timeout=30)
    kept.request('GET', '/v1/nodes')
    r = kept.getresponse()
    assert r.status == 200, r.read()
    r.read()
    assert kept.sock.getpeercert(binary_form=True) == a

    # B replaces A on disk (same paths, same CA); SIGHUP
    replace(live, (certs / 'agent-b.pem').read_text())
    replace(live_key, (certs / 'agent-b-key.pem').read_text())
    hup_and_wait(srv, 'new connections get the certificate of', 0)
    assert served_cert(srv.port, ca) == b
    assert served_cert(client_port, ca) == b
    with urllib.request.urlopen(f'https://127.0.0.1:{srv.port}/v1/nodes', context=ctx,
                                timeout=30) as resp:
        assert resp.status == 200
    # the connection from before finishes on A
    kept.request('GET', '/v1/nodes')
    r = kept.getresponse()
    assert r.status == 200, r.read()
    r.read()
    assert kept.sock.getpeercert(binary_form=True) == a
    kept.close()

    # a broken certificate: the error is logged, nothing changes, B is served
    replace(live, 'not a certificate\n')
    failed = count(srv, 'reload: nothing changed; still running')
    hup_and_wait(srv, 'reload: nothing changed; still running', failed)
    assert 'cert_file' in srv.log() and str(live) in srv.log()
    assert srv.proc.poll() is None
    assert served_cert(srv.port, ca) == b

    # a certificate that does not go with the key: the same
    replace(live, (certs / 'agent.pem').read_text())   # A's certificate, B's key
    failed = count(srv, 'reload: nothing changed; still running')
    hup_and_wait(srv, 'reload: nothing changed; still running', failed)
    assert 'does not go with' in srv.log()
    assert srv.proc.poll() is None
    assert served_cert(srv.port, ca) == b

    # A again, whole: served again
    replace(live_key, (certs / 'agent-key.pem').read_text())
    swaps = count(srv, 'new connections get the certificate of')
    hup_and_wait(srv, 'new connections get the certificate of', swaps)
    assert served_cert(srv.port, ca) == a
    assert served_cert(client_port, ca) == a
    assert srv.proc.poll() is None


def test_sighup_changes_the_log_level(agents, tmp_path):  # noqa: F811
    cfg = tmp_path / 'server.hcl'
    base = 'bind_addr = "127.0.0.1"\nserver {\n  enabled = true\n}\n'
    cfg.write_text(base + 'log_level = "info"\n')
    srv = Agent(tmp_path, 'server', ['-config', str(cfg), '-http-port', '0']).start()
    agents.append(srv)
    reloading = 'agent: SIGHUP: reloading'
    hup_and_wait(srv, 'reload: nothing changed', 0)
    assert count(srv, reloading) == 1

    # warn: the reload says so (at info, before it takes effect) ...
    cfg.write_text(base + 'log_level = "warn"\n')
    hup_and_wait(srv, 'log_level warn (was info)', 0)
    assert count(srv, reloading) == 2
    # ... and from then on info lines are gone: this reload's own info line
    # is not written, its warning (a change that needs a restart) is
    cfg.write_text(base + 'log_level = "warn"\ndatacenter = "dc9"\n')
    hup_and_wait(srv, 'applied only at a restart: datacenter', 0)
    assert count(srv, reloading) == 2
    assert srv.proc.poll() is None

    # debug: the reload's first line still falls under warn, what it says
    # after the change is written
    cfg.write_text(base + 'log_level = "debug"\n')
    hup_and_wait(srv, 'log_level debug (was warn)', 0)
    assert count(srv, reloading) == 2

    # a file that does not parse changes nothing (the level stays debug,
    # so this reload's info line is there)
    cfg.write_text(base + 'log_level = \n')
    hup_and_wait(srv, 'reload: nothing changed; still running', 0)
    assert count(srv, reloading) == 3
    assert srv.proc.poll() is None


def test_sighup_without_config(agents, tmp_path):  # noqa: F811
    dev = Agent(tmp_path, 'dev', ['-dev', '-http-port', '0']).start()
    agents.append(dev)
    for i in range(3):
        hup_and_wait(dev, 'no -config file, nothing to reload', i)
    assert dev.proc.poll() is None
    with urllib.request.urlopen(f'http://127.0.0.1:{dev.port}/v1/nodes', timeout=30) as r:
        assert r.status == 200


def test_sighup_rotates_the_ca_of_client_certificates(agents, tmp_path, certs):  # noqa: F811
    """verify_https_client: a new CA (another name) with a new agent
    certificate; after SIGHUP the CLI (libcurl, GnuTLS: it presents its
    certificate though the agent names no CA) gets in with a certificate
    of the new CA, and one of the old CA is refused."""
    make_ca(certs, 'ca2')
    make_cert(certs, 'ca2', 'agent2', 'subjectAltName=IP:127.0.0.1\n'
              'extendedKeyUsage=serverAuth,clientAuth\n')
    make_cert(certs, 'ca2', 'cli2', 'extendedKeyUsage=clientAuth\n')
    live_ca, live, live_key = certs / 'live-ca.pem', certs / 'live.pem', certs / 'live-key.pem'
    replace(live_ca, (certs / 'ca.pem').read_text())
    replace(live, (certs / 'agent.pem').read_text())
    replace(live_key, (certs / 'agent-key.pem').read_text())
    cfg = tmp_path / 'server.hcl'
    cfg.write_text('bind_addr = "127.0.0.1"\nserver {\n  enabled = true\n}\n'
                   f'tls {{\n  http = true\n  ca_file = "{live_ca}"\n'
                   f'  cert_file = "{live}"\n  key_file = "{live_key}"\n'
                   '  verify_https_client = true\n}\n')
    srv = Agent(tmp_path, 'server', ['-config', str(cfg), '-http-port', '0']).start()
    agents.append(srv)
    old = tls_env(srv.port, certs, client=True)
    new = tls_env(srv.port, certs, client=True, client_name='cli2')
    new['HERD_CACERT'] = str(certs / 'ca2.pem')
    wait_for(lambda: run(old, 'node', 'status').returncode == 0, 30, 'the CLI of the old CA')
    r = run(new, 'node', 'status')
    assert r.returncode != 0   # the agent's certificate is of the old CA

    replace(live_ca, (certs / 'ca2.pem').read_text())
    replace(live, (certs / 'agent2.pem').read_text())
    replace(live_key, (certs / 'agent2-key.pem').read_text())
    hup_and_wait(srv, 'checked against the CA of', 0)
    r = run(new, 'node', 'status')
    assert r.returncode == 0, r.stderr
    # a certificate of the old CA is refused now
    stale = tls_env(srv.port, certs, client=True)
    stale['HERD_CACERT'] = str(certs / 'ca2.pem')
    r = run(stale, 'node', 'status')
    assert r.returncode != 0
    assert 'tls_client_certificate' in r.stderr and 'not signed by a CA' in r.stderr, r.stderr
    assert 'applied only at a restart' not in srv.log()


def test_client_connections_take_files_rotated_in_place(agents, tmp_path, certs):  # noqa: F811
    """A client agent's connections to its server read ca_file, cert_file
    and key_file at each new connection: the client's files rotated in
    place to a new CA, the server's too (SIGHUP) and then restarted (no
    connection survives), and the client, never signalled, runs a job
    through the new certificates.  With its old certificate it would be
    refused (the server trusts only the new CA)."""
    make_ca(certs, 'ca2')
    ext = 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n'
    make_cert(certs, 'ca2', 'agent2', ext)
    make_cert(certs, 'ca2', 'cli2', 'extendedKeyUsage=clientAuth\n')

    def files(prefix):
        return certs / f'{prefix}-ca.pem', certs / f'{prefix}.pem', certs / f'{prefix}-key.pem'

    def install(prefix, ca, cert):
        for path, src in zip(files(prefix), (ca, cert, cert.replace('.pem', '-key.pem'))):
            replace(path, (certs / src).read_text())

    def block(prefix):
        ca, cert, key = files(prefix)
        return (f'tls {{\n  http = true\n  ca_file = "{ca}"\n  cert_file = "{cert}"\n'
                f'  key_file = "{key}"\n  verify_https_client = true\n}}\n')

    install('s', 'ca.pem', 'agent.pem')
    install('c', 'ca.pem', 'agent.pem')
    scfg = tmp_path / 'server.hcl'
    scfg.write_text('bind_addr = "127.0.0.1"\nserver {\n  enabled = true\n}\n' + block('s'))
    srv = Agent(tmp_path, 'server', ['-config', str(scfg), '-http-port', '0']).start()
    agents.append(srv)
    port = srv.port
    ccfg = tmp_path / 'client.hcl'
    ccfg.write_text('bind_addr = "127.0.0.1"\nclient {\n  enabled = true\n}\n'
                    'plugin "raw_exec" {\n  config {\n    enabled = true\n  }\n}\n' + block('c'))
    cl = Agent(tmp_path, 'client', ['-config', str(ccfg), '-servers', f'127.0.0.1:{port}',
                                    '-node', 'rot-node', '-http-port', '0'],
               gpu_file=GPUS / 't4-2x.json').start()
    agents.append(cl)
    old = tls_env(port, certs, client=True)
    wait_for(lambda: 'rot-node' in run(old, 'node', 'status').stdout, 30,
             'the client to register')

    install('c', 'ca2.pem', 'agent2.pem')     # the client: no signal
    install('s', 'ca2.pem', 'agent2.pem')
    hup_and_wait(srv, 'checked against the CA of', 0)
    srv.kill9()                               # no connection of the client survives
    again = Agent(tmp_path, 'server', ['-config', str(scfg), '-http-port', str(port)],
                  port=port).start()
    agents.append(again)
    new = tls_env(port, certs, client=True, client_name='cli2')
    new['HERD_CACERT'] = str(certs / 'ca2.pem')
    wait_for(lambda: run(new, 'node', 'status').returncode == 0, 30, 'the restarted server')
    run_batch(new, tmp_path)
    assert cl.proc.poll() is None
    assert 'refused this node' not in cl.log()
