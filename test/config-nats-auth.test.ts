// Cluster mode's NATS credential and TLS settings (issue 42): each kind is read, conflicting or incomplete ones are refused naming the settings, an open NATS on another machine is refused before any connection, and no secret is echoed.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { inspect } from 'node:util';
import { test } from 'node:test';
import { ConfigError, loadConfig, Secret, settings, type ClusterConfig, type NatsCredential } from '../src/config/config.js';
import { authctl } from './helpers/authctl.js';
import { freePorts } from './helpers/nats-cluster.js';
import { startServer } from './helpers/server.js';

/** A remote server: an address from TEST-NET-1 (RFC 5737). Nothing here connects to it: the refusal comes first. */
const remote = 'nats://192.0.2.1:4222';

function cluster(env: Record<string, string>): ClusterConfig {
  const c = loadConfig(env, []).cluster;
  assert.ok(c !== undefined);
  return c;
}

function refused(env: Record<string, string>, message: RegExp): ConfigError {
  let error: unknown;
  assert.throws(() => loadConfig(env, []), (err: unknown) => {
    error = err;
    return err instanceof ConfigError && message.test(err.message);
  }, `${JSON.stringify(env)} is refused with ${message}`);
  return error as ConfigError;
}

/** The credential with its secrets revealed, for comparison. */
function plain(credential: NatsCredential): unknown {
  const reveal = (value: unknown): unknown => {
    if (value instanceof Secret) return `revealed:${value.reveal()}`;
    if (typeof value !== 'object' || value === null) return value;
    return Object.fromEntries(Object.entries(value).map(([key, v]) => [key, reveal(v)]));
  };
  return reveal(credential);
}

test('issue 42: each kind of NATS credential is read from its settings', () => {
  const user = cluster({ CLUSTER_NATS_SERVERS: remote, CLUSTER_NATS_USER: 'authd', CLUSTER_NATS_PASSWORD: 'pw' });
  assert.deepEqual(plain(user.nats.credential), { kind: 'user', user: 'authd', password: { value: 'revealed:pw' }, from: 'CLUSTER_NATS_USER' });
  assert.equal(user.nats.tls, undefined);
  const userFile = cluster({ CLUSTER_NATS_SERVERS: remote, CLUSTER_NATS_USER: 'authd', CLUSTER_NATS_PASSWORD_FILE: '/run/credentials/authd/nats' });
  assert.deepEqual(plain(userFile.nats.credential), { kind: 'user', user: 'authd', password: { file: '/run/credentials/authd/nats', setting: 'CLUSTER_NATS_PASSWORD_FILE' }, from: 'CLUSTER_NATS_USER' });
  assert.deepEqual(plain(cluster({ CLUSTER_NATS_SERVERS: remote, CLUSTER_NATS_TOKEN: 't0k' }).nats.credential), { kind: 'token', token: { value: 'revealed:t0k' }, from: 'CLUSTER_NATS_TOKEN' });
  assert.deepEqual(plain(cluster({ CLUSTER_NATS_SERVERS: remote, CLUSTER_NATS_TOKEN_FILE: '/etc/t' }).nats.credential), { kind: 'token', token: { file: '/etc/t', setting: 'CLUSTER_NATS_TOKEN_FILE' }, from: 'CLUSTER_NATS_TOKEN_FILE' });
  assert.deepEqual(cluster({ CLUSTER_NATS_SERVERS: remote, CLUSTER_NATS_CREDS: '/etc/authd.creds' }).nats.credential, { kind: 'creds', file: '/etc/authd.creds' });
  assert.deepEqual(cluster({ CLUSTER_NATS_SERVERS: remote, CLUSTER_NATS_NKEY_SEED_FILE: '/etc/authd.nk' }).nats.credential, { kind: 'nkey', seedFile: '/etc/authd.nk' });
  // Flags too, for the settings that are not secrets themselves.
  const flags = loadConfig({}, ['--cluster-nats-servers', remote, '--cluster-nats-creds', '/etc/authd.creds', '--cluster-nats-tls-ca=/etc/ca.crt']).cluster!;
  assert.deepEqual(flags.nats, { credential: { kind: 'creds', file: '/etc/authd.creds' }, tls: { caFile: '/etc/ca.crt', certFile: undefined, keyFile: undefined } });
});

test('issue 42: userinfo in the server URLs is a user and password or a token, taken out of the URLs', () => {
  const c = cluster({ CLUSTER_NATS_SERVERS: 'nats://authd:p%40ss%3Aw%2Frd@10.0.0.1:4222, nats://authd:p%40ss%3Aw%2Frd@10.0.0.2:4222' });
  assert.deepEqual(c.servers, ['nats://10.0.0.1:4222', 'nats://10.0.0.2:4222']);
  assert.deepEqual(plain(c.nats.credential), { kind: 'user', user: 'authd', password: { value: 'revealed:p@ss:w/rd' }, from: 'CLUSTER_NATS_SERVERS' });
  const t = cluster({ CLUSTER_NATS_SERVERS: 'tls://s3cr3t-token@nats.example.net:4222,s3cr3t-token@10.0.0.3:4222' });
  assert.deepEqual(t.servers, ['tls://nats.example.net:4222', '10.0.0.3:4222']);
  assert.deepEqual(plain(t.nats.credential), { kind: 'token', token: { value: 'revealed:s3cr3t-token' }, from: 'CLUSTER_NATS_SERVERS' });
  // A tls:// URL requires TLS, with the system's CAs.
  assert.deepEqual(t.nats.tls, { caFile: undefined, certFile: undefined, keyFile: undefined });
  assert.deepEqual(cluster({ CLUSTER_NATS_SERVERS: 'nats://[::1]:4222,localhost:4222' }).servers, ['nats://[::1]:4222', 'localhost:4222']);
});

test('issue 42: TLS settings: a CA, a client certificate with its key', () => {
  const c = cluster({ CLUSTER_NATS_SERVERS: remote, CLUSTER_NATS_TLS_CA: '/etc/ca.crt', CLUSTER_NATS_TLS_CERT: '/etc/c.crt', CLUSTER_NATS_TLS_KEY: '/etc/c.key' });
  assert.deepEqual(c.nats, { credential: { kind: 'none' }, tls: { caFile: '/etc/ca.crt', certFile: '/etc/c.crt', keyFile: '/etc/c.key' } });
});

test('issue 42: conflicting or incomplete NATS settings are refused, naming them', () => {
  const base = { CLUSTER_NATS_SERVERS: 'nats://127.0.0.1:4222' };
  const cases: [Record<string, string>, RegExp][] = [
    [{ CLUSTER_NATS_USER: 'authd' }, /^CLUSTER_NATS_USER is set without CLUSTER_NATS_PASSWORD or CLUSTER_NATS_PASSWORD_FILE$/],
    [{ CLUSTER_NATS_PASSWORD: 'pw' }, /^CLUSTER_NATS_PASSWORD is set without CLUSTER_NATS_USER$/],
    [{ CLUSTER_NATS_PASSWORD_FILE: '/f' }, /^CLUSTER_NATS_PASSWORD_FILE is set without CLUSTER_NATS_USER$/],
    [{ CLUSTER_NATS_USER: 'authd', CLUSTER_NATS_PASSWORD: 'pw', CLUSTER_NATS_PASSWORD_FILE: '/f' }, /^CLUSTER_NATS_PASSWORD and CLUSTER_NATS_PASSWORD_FILE are both set: set one$/],
    [{ CLUSTER_NATS_TOKEN: 't', CLUSTER_NATS_TOKEN_FILE: '/f' }, /^CLUSTER_NATS_TOKEN and CLUSTER_NATS_TOKEN_FILE are both set/],
    [{ CLUSTER_NATS_USER: 'authd', CLUSTER_NATS_PASSWORD: 'pw', CLUSTER_NATS_TOKEN: 't' }, /more than one kind are set \(CLUSTER_NATS_USER, CLUSTER_NATS_TOKEN\)/],
    [{ CLUSTER_NATS_CREDS: '/c', CLUSTER_NATS_NKEY_SEED_FILE: '/n' }, /more than one kind are set \(CLUSTER_NATS_CREDS, CLUSTER_NATS_NKEY_SEED_FILE\)/],
    [{ CLUSTER_NATS_SERVERS: 'nats://a:pw@127.0.0.1:4222', CLUSTER_NATS_USER: 'authd', CLUSTER_NATS_PASSWORD: 'pw' }, /more than one kind are set \(a user in the CLUSTER_NATS_SERVERS URLs, CLUSTER_NATS_USER\)/],
    [{ CLUSTER_NATS_SERVERS: 'nats://tok@127.0.0.1:4222', CLUSTER_NATS_CREDS: '/c' }, /more than one kind are set \(a token in the CLUSTER_NATS_SERVERS URLs, CLUSTER_NATS_CREDS\)/],
    [{ CLUSTER_NATS_TLS_CERT: '/c.crt' }, /^CLUSTER_NATS_TLS_CERT is set without CLUSTER_NATS_TLS_KEY/],
    [{ CLUSTER_NATS_TLS_KEY: '/c.key' }, /^CLUSTER_NATS_TLS_KEY is set without CLUSTER_NATS_TLS_CERT$/],
    [{ CLUSTER_NATS_SERVERS: 'nats://a:pw@127.0.0.1:4222,nats://a:other@127.0.0.2:4222' }, /the URLs carry different userinfo/],
    [{ CLUSTER_NATS_SERVERS: 'nats://a:pw@127.0.0.1:4222,nats://127.0.0.2:4222' }, /the URLs carry different userinfo/],
    [{ CLUSTER_NATS_SERVERS: 'nats://a:@127.0.0.1:4222' }, /a URL names a user with no password/],
    [{ CLUSTER_NATS_SERVERS: 'nats://@127.0.0.1:4222' }, /a URL has an @ but no user or token before it/],
    [{ CLUSTER_NATS_SERVERS: 'nats://a:%zz@127.0.0.1:4222' }, /userinfo is not valid percent-encoding/],
    [{ CLUSTER_NATS_INSECURE: 'yes' }, /^CLUSTER_NATS_INSECURE must be one of true, false, 1, 0, got "yes"$/],
  ];
  for (const [env, message] of cases) refused({ ...base, ...env }, message);
});

test('issue 42: no credential to a NATS server on another machine is refused before any connection, saying what to set', () => {
  for (const servers of [remote, 'nats://nats.example.net:4222', 'nats://[2001:db8::1]:4222', `nats://127.0.0.1:4222,${remote}`, '10.1.2.3:4222', 'nats://127.0.0.1.example.net:4222']) {
    const err = refused({ CLUSTER_NATS_SERVERS: servers }, /which is not this machine, and no NATS credential is set: anyone who reaches that server could read and write the cluster's log/);
    assert.match(err.message, /CLUSTER_NATS_USER with CLUSTER_NATS_PASSWORD or CLUSTER_NATS_PASSWORD_FILE, CLUSTER_NATS_TOKEN, CLUSTER_NATS_CREDS, CLUSTER_NATS_NKEY_SEED_FILE, or a TLS client certificate/);
    assert.match(err.message, /or set CLUSTER_NATS_INSECURE=true to connect without one/);
  }
  // TLS that only checks the server is no credential.
  refused({ CLUSTER_NATS_SERVERS: remote, CLUSTER_NATS_TLS_CA: '/ca.crt' }, /no NATS credential is set/);
  refused({ CLUSTER_NATS_SERVERS: `tls://${remote.slice('nats://'.length)}` }, /no NATS credential is set/);
  // This machine: loopback addresses and localhost.
  for (const servers of ['nats://127.0.0.1:4222', 'nats://127.8.9.10:4222', 'nats://localhost:4222', 'LOCALHOST:4222', 'nats://[::1]:4222', 'nats://[0:0:0:0:0:0:0:1]:4222']) {
    assert.deepEqual(cluster({ CLUSTER_NATS_SERVERS: servers }).nats.credential, { kind: 'none' }, servers);
  }
  // Any credential, a client certificate, or the explicit switch.
  for (const extra of <Record<string, string>[]>[
    { CLUSTER_NATS_USER: 'authd', CLUSTER_NATS_PASSWORD: 'pw' }, { CLUSTER_NATS_TOKEN_FILE: '/t' }, { CLUSTER_NATS_CREDS: '/c' },
    { CLUSTER_NATS_NKEY_SEED_FILE: '/n' }, { CLUSTER_NATS_TLS_CERT: '/c.crt', CLUSTER_NATS_TLS_KEY: '/c.key' },
    { CLUSTER_NATS_INSECURE: 'true' }, { CLUSTER_NATS_INSECURE: '1' },
  ]) {
    assert.doesNotThrow(() => cluster({ CLUSTER_NATS_SERVERS: remote, ...extra }), JSON.stringify(extra));
  }
  assert.doesNotThrow(() => cluster({ CLUSTER_NATS_SERVERS: 'nats://authd:pw@192.0.2.1:4222' }));
  refused({ CLUSTER_NATS_SERVERS: remote, CLUSTER_NATS_INSECURE: 'false' }, /not this machine/);
});

test('issue 42: no setting, error or printed config carries a NATS secret', () => {
  const bad = refused({ CLUSTER_NATS_SERVERS: 'nats://authd:hunter2-secret@10.0.0.1:99999' }, /is not a NATS URL/);
  assert.ok(!bad.message.includes('hunter2'), bad.message);
  assert.match(bad.message, /"nats:\/\/\*\*\*@10\.0\.0\.1:99999"/);
  const scheme = refused({ CLUSTER_NATS_SERVERS: 'http://authd:hunter2-secret@10.0.0.1:4222' }, /the scheme is http, not nats or tls/);
  assert.ok(!scheme.message.includes('hunter2'), scheme.message);
  const twice = refused({ CLUSTER_NATS_SERVERS: 'nats://authd:hunter2-secret@127.0.0.1:4222', CLUSTER_NATS_TOKEN: 'token-secret' }, /more than one kind/);
  assert.ok(!/hunter2|token-secret/.test(twice.message), twice.message);

  const c = cluster({ CLUSTER_NATS_SERVERS: 'nats://authd:hunter2-secret@10.0.0.1:4222' });
  for (const shown of [JSON.stringify(c), inspect(c, { depth: 10 }), String((c.nats.credential as { password: { value: Secret } }).password.value)]) {
    assert.ok(!shown.includes('hunter2'), shown);
  }
  // A password or token as a flag would be visible to every user of the machine (ps).
  for (const flag of ['--cluster-nats-password', '--cluster-nats-token']) {
    assert.throws(() => loadConfig({}, [flag, 'flag-secret']), (err: unknown) => err instanceof ConfigError && /is read from the environment only/.test(err.message) && !err.message.includes('flag-secret'));
  }
});

test('issue 42: authd and authctl refuse an open NATS on another machine at once, naming the settings, and echo no secret', async () => {
  await assert.rejects(startServer({ env: { CLUSTER_NATS_SERVERS: remote } }), /authd: cannot start: CLUSTER_NATS_SERVERS names nats:\/\/192\.0\.2\.1:4222, which is not this machine.*CLUSTER_NATS_INSECURE=true/s);
  const status = await authctl(['cluster', 'status', '--nats', remote]);
  assert.equal(status.code, 2, status.stderr);
  assert.match(status.stderr, /--nats \(CLUSTER_NATS_SERVERS\) names nats:\/\/192\.0\.2\.1:4222, which is not this machine/);
  // A closed port on this machine: the error names the server without its userinfo.
  const [closedPort] = await freePorts(1);
  // Everything on the cluster's NATS is sealed under the server key, which authctl reads before it connects.
  const serverKey = { SERVER_KEY: randomBytes(32).toString('hex') };
  const closed = await authctl(['cluster', 'status', '--nats', `nats://authd:hunter2-secret@127.0.0.1:${closedPort}`], { env: serverKey });
  assert.equal(closed.code, 1, closed.stderr);
  assert.match(closed.stderr, new RegExp(`cannot reach the stream authd on nats://127\\.0\\.0\\.1:${closedPort}: no NATS server answered`));
  assert.ok(!(closed.stdout + closed.stderr).includes('hunter2'), closed.stderr);
  // A credential file that cannot be read stops authctl before it connects, naming the setting.
  const missing = await authctl(['cluster', 'status', '--nats', `nats://127.0.0.1:${closedPort}`, '--nats-creds', '/nonexistent/authd.creds'], { env: serverKey });
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /CLUSTER_NATS_CREDS: cannot read \/nonexistent\/authd\.creds \(ENOENT\)/);
});

test('the README names every setting', () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  for (const name of Object.keys(settings)) assert.ok(readme.includes(`\`${name}\``), `README names ${name}`);
});
