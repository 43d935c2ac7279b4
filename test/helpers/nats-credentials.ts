// Credentials for tests of NATS servers that require them: a CA with server and client certificates (made with openssl), nkey users, and an operator, account and user as JWTs with the user's .creds file.

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { nkeys } from '@nats-io/transport-node';

// ---- TLS ----

export interface TlsFiles {
  readonly caCert: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCert: string;
  readonly clientKey: string;
  /** A client certificate from another CA, which a server verifying clients refuses. */
  readonly strangerCert: string;
  readonly strangerKey: string;
}

function openssl(dir: string, args: readonly string[]): void {
  const run = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`openssl ${args.join(' ')} failed (${run.status}): ${run.stderr}`);
}

/** A key (P-256) and a certificate for it signed by the CA in dir (or self-signed as the CA), valid a day. */
function certificate(dir: string, name: string, subject: string, extensions: string, ca: string | undefined): void {
  writeFileSync(join(dir, `${name}.ext`), extensions);
  openssl(dir, ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject]);
  const signer = ca === undefined ? ['-key', `${name}.key`] : ['-CA', `${ca}.crt`, '-CAkey', `${ca}.key`, '-CAcreateserial'];
  openssl(dir, ['x509', '-req', '-in', `${name}.csr`, ...signer, '-out', `${name}.crt`, '-days', '1', '-extfile', `${name}.ext`]);
}

/** A test CA, a certificate for a server on 127.0.0.1 / localhost, and client certificates, in dir. */
export function makeTlsFiles(dir: string): TlsFiles {
  const caExtensions = 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n';
  certificate(dir, 'ca', '/CN=authd test CA', caExtensions, undefined);
  certificate(dir, 'server', '/CN=nats test server', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n', 'ca');
  certificate(dir, 'client', '/CN=authd', 'extendedKeyUsage=clientAuth\n', 'ca');
  certificate(dir, 'stranger-ca', '/CN=another CA', caExtensions, undefined);
  certificate(dir, 'stranger', '/CN=authd', 'extendedKeyUsage=clientAuth\n', 'stranger-ca');
  const at = (file: string): string => join(dir, file);
  return {
    caCert: at('ca.crt'), serverCert: at('server.crt'), serverKey: at('server.key'), clientCert: at('client.crt'), clientKey: at('client.key'),
    strangerCert: at('stranger.crt'), strangerKey: at('stranger.key'),
  };
}

// ---- nkeys ----

export interface NkeyUser {
  readonly publicKey: string;
  readonly seedFile: string;
}

/** A user nkey; its seed in a file of mode 0600, as an operator would keep it. */
export function makeNkeyUser(dir: string, name: string): NkeyUser {
  const user = nkeys.createUser();
  const seedFile = join(dir, `${name}.nk`);
  writeFileSync(seedFile, `${new TextDecoder().decode(user.getSeed())}\n`, { mode: 0o600 });
  return { publicKey: user.getPublicKey(), seedFile };
}

// ---- JWTs (operator mode) ----

type KeyPair = ReturnType<typeof nkeys.createOperator>;

function base64url(data: string | Uint8Array): string {
  return Buffer.from(data).toString('base64url');
}

/** The base32 alphabet of RFC 4648 without padding, as NATS writes a JWT's id. */
function base32(bytes: Uint8Array): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += alphabet[(value << (5 - bits)) & 31];
  return out;
}

/** A NATS JWT: claims about subject, issued and signed (ed25519) by issuer. */
function natsJwt(issuer: KeyPair, subject: string, name: string, nats: Record<string, unknown>): string {
  const header = base64url(JSON.stringify({ typ: 'JWT', alg: 'ed25519-nkey' }));
  const claims: Record<string, unknown> = { jti: '', iat: Math.floor(Date.now() / 1000), iss: issuer.getPublicKey(), name, sub: subject, nats: { ...nats, version: 2 } };
  claims['jti'] = base32(createHash('sha256').update(JSON.stringify(claims)).digest());
  const payload = base64url(JSON.stringify(claims));
  const signature = issuer.sign(new TextEncoder().encode(`${header}.${payload}`));
  return `${header}.${payload}.${base64url(signature)}`;
}

export interface OperatorMode {
  /** The server's configuration lines: the operator, and the account preloaded in a memory resolver. */
  readonly serverConfig: string;
  /** The user's .creds file (its JWT and nkey seed), mode 0600. */
  readonly credsFile: string;
  /** A .creds file of a user of another operator, which the server refuses. */
  readonly strangerCredsFile: string;
}

function userCreds(dir: string, name: string, account: KeyPair): string {
  const user = nkeys.createUser();
  const jwt = natsJwt(account, user.getPublicKey(), name, { type: 'user', pub: {}, sub: {}, subs: -1, data: -1, payload: -1 });
  const file = join(dir, `${name}.creds`);
  const seed = new TextDecoder().decode(user.getSeed());
  writeFileSync(file, [
    '-----BEGIN NATS USER JWT-----', jwt, '------END NATS USER JWT------', '',
    '************************* IMPORTANT *************************', 'NKEY Seed printed below can be used to sign and prove identity.', '',
    '-----BEGIN USER NKEY SEED-----', seed, '------END USER NKEY SEED------', '',
  ].join('\n'), { mode: 0o600 });
  return file;
}

/** An operator, an account with JetStream, and a user of it with a .creds file in dir. */
export function makeOperatorMode(dir: string): OperatorMode {
  const operator = nkeys.createOperator();
  const account = nkeys.createAccount();
  const operatorJwt = natsJwt(operator, operator.getPublicKey(), 'authd-test-operator', { type: 'operator' });
  const accountJwt = natsJwt(operator, account.getPublicKey(), 'AUTHD', {
    type: 'account',
    limits: { subs: -1, data: -1, payload: -1, imports: -1, exports: -1, wildcards: true, conn: -1, leaf: -1, mem_storage: -1, disk_storage: -1, streams: -1, consumer: -1 },
  });
  // JetStream needs the system account, which holds the servers' own internal subscriptions.
  const system = nkeys.createAccount();
  const systemJwt = natsJwt(operator, system.getPublicKey(), 'SYS', { type: 'account', limits: { subs: -1, data: -1, payload: -1, imports: -1, exports: -1, wildcards: true, conn: -1, leaf: -1 } });
  const stranger = nkeys.createAccount();
  return {
    serverConfig: [
      `operator: ${JSON.stringify(operatorJwt)}`,
      `system_account: ${system.getPublicKey()}`,
      'resolver: MEMORY',
      `resolver_preload: { ${account.getPublicKey()}: ${JSON.stringify(accountJwt)}, ${system.getPublicKey()}: ${JSON.stringify(systemJwt)} }`,
    ].join('\n'),
    credsFile: userCreds(dir, 'authd', account),
    strangerCredsFile: userCreds(dir, 'stranger', stranger),
  };
}
