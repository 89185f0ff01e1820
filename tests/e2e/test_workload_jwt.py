"""End-to-end: workload identities as signed JWTs (docs/teams.md, "Workload
identity"; docs/api.md, "Workload identity keys").

A server with ACL on and `server { oidc_issuer }`, a client with its node
token.  A service task has the default identity (file) and a named one,
"vault", with an aud and a ttl of 12 s, change_mode signal.  As a service
outside herd would, the test fetches /.well-known/jwks.json without a token
and checks each token's RS256 signature with python3-cryptography, then its
claims.  herd itself takes the default identity's token (its job's
variable) but not the named one's, nor a tampered one.  After `herd
operator keyring rotate` the renewed token carries the new key's kid, the
old token still verifies and still reads; the named token file is renewed
(and SIGHUP sent) while the task runs.  Once the job is stopped the
default token reads nothing, and once the old key is removed the old
token verifies against nothing published."""
import base64
import json
import time

# python3-cryptography (scripts/install): what a service outside herd
# checks the tokens with
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from test_acl import call, secret_of
from test_control_plane import GPUS, Agent, agents, wait_for, write_job  # noqa: F401
from test_tasks import alloc_dir
from test_vars import herd

ISSUER = 'https://herd.example/wi'

JOB = '''
job "svc" {
  namespace = "team-a"
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args = ["-c", "trap 'echo hup >> $HERD_ALLOC_DIR/hups' HUP; while true; do sleep 0.2; done"]
      }
      identity {
        file = true
      }
      identity "vault" {
        aud = ["vault.io", "other"]
        file = true
        env = true
        ttl = "12s"
        change_mode = "signal"
        change_signal = "SIGHUP"
      }
    }
  }
}
'''


def b64(part):
    return base64.urlsafe_b64decode(part + '=' * (-len(part) % 4))


def claims_of(token):
    return json.loads(b64(token.split('.')[1]))


def verify(token, jwks):
    """The token's claims when its RS256 signature is one of jwks' keys'
    (as a service outside herd checks it), else None."""
    head, body, sig = token.split('.')
    header = json.loads(b64(head))
    assert header['alg'] == 'RS256' and header['typ'] == 'JWT', header
    for k in jwks['keys']:
        if k['kid'] != header['kid']:
            continue
        assert k['kty'] == 'RSA' and k['alg'] == 'RS256' and k['use'] == 'sig', k
        pub = rsa.RSAPublicNumbers(int.from_bytes(b64(k['e']), 'big'),
                                   int.from_bytes(b64(k['n']), 'big')).public_key()
        try:
            pub.verify(b64(sig), f'{head}.{body}'.encode(), padding.PKCS1v15(), hashes.SHA256())
        except InvalidSignature:
            return None
        return json.loads(b64(body))
    return None


def kid_of(token):
    return json.loads(b64(token.split('.')[0]))['kid']


def test_tokens_verify_against_published_keys(agents, tmp_path):  # noqa: F811
    cfg = tmp_path / 'server.hcl'
    cfg.write_text('bind_addr = "127.0.0.1"\nserver {\n  enabled = true\n'
                   f'  oidc_issuer = "{ISSUER}"\n}}\nacl {{\n  enabled = true\n}}\n')
    srv = Agent(tmp_path, 'server', ['-config', str(cfg), '-http-port', '0']).start()
    agents.append(srv)
    addr = f'127.0.0.1:{srv.port}'
    wait_for(lambda: call(addr, '/v1/agent/health')[0] == 200, 10, 'the server')
    mgmt = secret_of(herd(srv.port, 'acl', 'bootstrap').stdout)
    assert herd(srv.port, 'namespace', 'apply', 'team-a', token=mgmt).returncode == 0
    pol = tmp_path / 'nodes.hcl'
    pol.write_text('node {\n  policy = "write"\n}\n')
    assert herd(srv.port, 'acl', 'policy', 'apply', 'nodes', str(pol), token=mgmt).returncode == 0
    node_tok = secret_of(herd(srv.port, 'acl', 'token', 'create', '-name', 'n', '-policy',
                              'nodes', token=mgmt).stdout)
    r = herd(srv.port, 'var', 'put', '-namespace', 'team-a', 'nomad/jobs/svc', 'lr=0.1',
             token=mgmt)
    assert r.returncode == 0, r.stderr
    ccfg = tmp_path / 'client.hcl'
    ccfg.write_text('bind_addr = "127.0.0.1"\nname = "n1"\nclient {\n  enabled = true\n'
                    f'  servers = ["{addr}"]\n  token = "{node_tok}"\n}}\n'
                    'plugin "raw_exec" {\n  config {\n    enabled = true\n  }\n}\n')
    client = Agent(tmp_path, 'client', ['-config', str(ccfg), '-http-port', '0'],
                   gpu_file=GPUS / 't4-2x.json').start()
    agents.append(client)
    wait_for(lambda: [n for n in call(addr, '/v1/nodes', token=mgmt)[1]
                      if n['status'] == 'ready'], 20, 'the client node')

    r = herd(srv.port, 'job', 'run', '-detach', write_job(tmp_path, 'svc', JOB), token=mgmt)
    assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: call(addr, '/v1/job/svc/allocations?namespace=team-a', token=mgmt)[1],
             20, 'svc placed')
    alloc = call(addr, '/v1/job/svc/allocations?namespace=team-a', token=mgmt)[1][0]
    wait_for(lambda: call(addr, f'/v1/allocation/{alloc["id"]}', token=mgmt)[1]
             ['client_status'] == 'running', 30, 'svc running')
    secrets = alloc_dir(client, alloc['id']) / 't' / 'secrets'
    default = (secrets / 'herd_token').read_text()
    vault = (secrets / 'herd_token_vault').read_text()
    assert (secrets / 'nomad_token_vault').read_text() == vault
    assert (secrets / 'herd_token_vault').stat().st_mode & 0o777 == 0o600

    # the keys and the discovery document, with no token (ACL on)
    st, jwks = call(addr, '/.well-known/jwks.json')
    assert st == 200 and len(jwks['keys']) == 1, jwks
    assert call(addr, '/v1/.well-known/jwks.json') == (200, jwks)
    st, oidc = call(addr, '/.well-known/openid-configuration')
    assert st == 200 and oidc['issuer'] == ISSUER, oidc
    assert oidc['jwks_uri'] == ISSUER + '/.well-known/jwks.json'
    assert oidc['id_token_signing_alg_values_supported'] == ['RS256']

    # signatures and claims as an outside service sees them
    c = verify(default, jwks)
    assert c is not None
    now = time.time()
    assert c['iss'] == ISSUER and c['sub'] == 'global:team-a:svc:g:t:default', c
    assert 'aud' not in c and 'exp' not in c and abs(c['iat'] - now) < 60 and c['nbf'] == c['iat']
    assert len(c['jti']) == 32
    for k, v in (('namespace', 'team-a'), ('job_id', 'svc'), ('allocation_id', alloc['id']),
                 ('task', 't')):
        assert c['herd_' + k] == v and c['nomad_' + k] == v, (k, c)
    assert c['herd_group'] == 'g' and c['herd_node_id'] == alloc['node_id'], c
    v = verify(vault, jwks)
    assert v['sub'] == 'global:team-a:svc:g:t:vault' and v['aud'] == ['vault.io', 'other'], v
    assert v['exp'] - v['iat'] == 12, v
    assert kid_of(default) == jwks['keys'][0]['kid']

    # herd: the default identity reads its job's variable, the named one
    # and a tampered one nothing
    st, var = call(addr, '/v1/var/nomad/jobs/svc?namespace=team-a', token=default)
    assert st == 200 and var['items'] == {'lr': '0.1'}
    assert call(addr, '/v1/var/nomad/jobs/svc?namespace=team-a', token=vault)[0] == 403
    # the named token made to look like the default one: its signature
    # no longer matches, herd refuses it
    head, body, sig = vault.split('.')
    forged = dict(v, sub='global:team-a:svc:g:t:default')
    fbody = base64.urlsafe_b64encode(json.dumps(forged).encode()).decode().rstrip('=')
    assert verify(f'{head}.{fbody}.{sig}', jwks) is None
    assert call(addr, '/v1/var/nomad/jobs/svc?namespace=team-a',
                token=f'{head}.{fbody}.{sig}')[0] == 403

    # a rotation: two keys published, the old token still verifies and reads
    r = herd(srv.port, 'operator', 'keyring', 'rotate', token=mgmt)
    assert r.returncode == 0, r.stdout + r.stderr
    st, jwks2 = call(addr, '/.well-known/jwks.json')
    assert len(jwks2['keys']) == 2, jwks2
    old_kid = kid_of(default)
    new_kid = [k['kid'] for k in jwks2['keys'] if k['kid'] != old_kid][0]
    assert verify(default, jwks2) == c
    assert call(addr, '/v1/var/nomad/jobs/svc?namespace=team-a', token=default)[0] == 200

    # the named token is renewed at half its ttl, signed with the new key
    wait_for(lambda: (secrets / 'herd_token_vault').read_text() != vault, 20, 'a renewal')
    renewed = (secrets / 'herd_token_vault').read_text()
    rc = verify(renewed, jwks2)
    assert rc is not None and kid_of(renewed) == new_kid and rc['exp'] > v['exp'], rc
    assert rc['jti'] != v['jti']
    assert (secrets / 'herd_token_vault').stat().st_mode & 0o777 == 0o600
    hups = alloc_dir(client, alloc['id']) / 'alloc' / 'hups'
    wait_for(lambda: hups.exists() and 'hup' in hups.read_text(), 10, 'SIGHUP at the renewal')
    st, al = call(addr, f'/v1/allocation/{alloc["id"]}', token=mgmt)
    assert al['client_status'] == 'running'

    # the job stopped: the default token, signature still good, reads nothing
    r = herd(srv.port, 'job', 'stop', '-namespace', 'team-a', 'svc', token=mgmt)
    assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: call(addr, f'/v1/allocation/{alloc["id"]}', token=mgmt)[1]
             ['client_status'] in ('complete', 'failed'), 30, 'svc stopped')
    assert verify(default, jwks2) is not None
    assert call(addr, '/v1/var/nomad/jobs/svc?namespace=team-a', token=default)[0] == 403

    # the old key removed: nothing published verifies the old token
    r = herd(srv.port, 'operator', 'keyring', 'remove', old_kid, token=mgmt)
    assert r.returncode == 0, r.stdout + r.stderr
    st, jwks3 = call(addr, '/.well-known/jwks.json')
    assert [k['kid'] for k in jwks3['keys']] == [new_kid]
    assert verify(default, jwks3) is None


def start_server(tmp_path, agents, name, cfg):  # noqa: F811
    srv = Agent(tmp_path, name, ['-config', str(cfg), '-http-port', '0']).start()
    agents.append(srv)
    addr = f'127.0.0.1:{srv.port}'
    wait_for(lambda: call(addr, '/v1/agent/health')[0] == 200, 10, f'{name} up')
    return srv, addr


def test_keys_are_derived_from_the_keyring(agents, tmp_path):  # noqa: F811
    """The signing key is derived from the keyring key, nothing stored: a
    restart publishes the same key; a `.jwt.pem` file a pre-release build
    left is ignored; a second server whose data dir got a copy of the
    first one's variables.key before its first start (servers of one
    PostgreSQL store, docs/operations.md) publishes the same keys, so a
    token one signed verifies at the other; a server with a key of its own
    publishes another."""
    cfg = tmp_path / 'server.hcl'
    cfg.write_text('bind_addr = "127.0.0.1"\nserver {\n  enabled = true\n}\n')
    srv, addr = start_server(tmp_path, agents, 'server', cfg)
    jwks = call(addr, '/.well-known/jwks.json')[1]
    st, oidc = call(addr, '/.well-known/openid-configuration')
    # the default issuer: the advertised address, with its real port
    assert oidc['issuer'] == f'http://{addr}', oidc
    assert len(jwks['keys']) == 1, jwks
    kid = jwks['keys'][0]['kid']
    data = tmp_path / 'server' / 'data' / 'server'
    assert (data / 'variables.key').exists()
    assert list(tmp_path.rglob('*.jwt.pem')) == [] and not (data / 'variables.keys').exists()
    srv.stop()

    # as a pre-release build left it: a stored signing key, not even a key
    (data / 'variables.keys').mkdir(mode=0o700)
    stale = data / 'variables.keys' / f'{kid}.jwt.pem'
    stale.write_text('-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n')
    stale.chmod(0o644)
    srv, addr = start_server(tmp_path, agents, 'server', cfg)
    assert call(addr, '/.well-known/jwks.json')[1] == jwks
    srv.stop()

    # a second server with a copy of the key, and a third with its own
    twin = tmp_path / 'twin' / 'data' / 'server'
    twin.mkdir(parents=True)
    (twin / 'variables.key').write_bytes((data / 'variables.key').read_bytes())
    (twin / 'variables.key').chmod(0o600)
    srv, addr = start_server(tmp_path, agents, 'twin', cfg)
    assert call(addr, '/.well-known/jwks.json')[1] == jwks
    srv.stop()
    srv, addr = start_server(tmp_path, agents, 'other', cfg)
    other = call(addr, '/.well-known/jwks.json')[1]
    assert [k['kid'] for k in other['keys']] != [kid]
    assert other['keys'][0]['n'] != jwks['keys'][0]['n']


RECOVER_JOB = '''
job "long" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args = ["-c", "while true; do sleep 0.2; done"]
      }
      identity "store" {
        aud = ["s3"]
        file = true
        ttl = "1h"
        change_mode = "restart"
      }
    }
  }
}
'''


def test_recovered_task_gets_its_token_renewed(agents, tmp_path):  # noqa: F811
    """An agent restarted while a task runs did not start it and has no
    token of it: it renews the task's file tokens with a ttl at once (not
    waiting for half an hour it cannot know), without restarting the task
    for a change_mode restart."""
    cfg = tmp_path / 'server.hcl'
    cfg.write_text('bind_addr = "127.0.0.1"\nserver {\n  enabled = true\n}\n')
    srv = Agent(tmp_path, 'server', ['-config', str(cfg), '-http-port', '0']).start()
    agents.append(srv)
    addr = f'127.0.0.1:{srv.port}'
    wait_for(lambda: call(addr, '/v1/agent/health')[0] == 200, 10, 'the server')
    ccfg = tmp_path / 'client.hcl'
    ccfg.write_text('bind_addr = "127.0.0.1"\nname = "n1"\nclient {\n  enabled = true\n'
                    f'  servers = ["{addr}"]\n}}\n'
                    'plugin "raw_exec" {\n  config {\n    enabled = true\n  }\n}\n')
    client = Agent(tmp_path, 'client', ['-config', str(ccfg), '-http-port', '0'],
                   gpu_file=GPUS / 't4-2x.json').start()
    agents.append(client)
    wait_for(lambda: [n for n in call(addr, '/v1/nodes')[1] if n['status'] == 'ready'], 20,
             'the client node')
    r = herd(srv.port, 'job', 'run', '-detach', write_job(tmp_path, 'long', RECOVER_JOB))
    assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: call(addr, '/v1/job/long/allocations')[1], 20, 'long placed')
    alloc = call(addr, '/v1/job/long/allocations')[1][0]
    wait_for(lambda: call(addr, f'/v1/allocation/{alloc["id"]}')[1]['client_status'] ==
             'running', 30, 'long running')
    token_file = alloc_dir(client, alloc['id']) / 't' / 'secrets' / 'herd_token_store'
    first = token_file.read_text()
    client.stop()
    client = Agent(tmp_path, 'client', ['-config', str(ccfg), '-http-port', '0'],
                   gpu_file=GPUS / 't4-2x.json').start()
    agents.append(client)
    wait_for(lambda: token_file.read_text() != first, 20, 'the token renewed after recovery')
    jwks = call(addr, '/.well-known/jwks.json')[1]
    c = verify(token_file.read_text(), jwks)
    assert c['herd_allocation_id'] == alloc['id'] and c['aud'] == ['s3'], c
    al = call(addr, f'/v1/allocation/{alloc["id"]}')[1]
    assert al['client_status'] == 'running'
    assert al['task_states']['t'].get('restarts', 0) == 0, al['task_states']['t']
