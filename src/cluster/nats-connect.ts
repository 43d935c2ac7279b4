// How a node's NATS connection proves who it is and is encrypted: the cluster's credential and TLS settings as nats.js connection options, their files read once, before any connection is made.

import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { credsAuthenticator, nkeyAuthenticator, nkeys, type NodeConnectionOptions } from '@nats-io/transport-node';
import { ConfigError, type NatsAccess, type NatsCredential, type SecretSource, type SettingName } from '../config/config.js';

/** What a connection shows NATS: the part of the client's options that StreamLog.open adds to its own. */
export type NatsAuthOptions = Pick<NodeConnectionOptions, 'user' | 'pass' | 'token' | 'authenticator' | 'tls'>;

/** No credential, TLS only where a server offers it: a NATS server on this machine. */
export const anonymousNats: NatsAccess = { credential: { kind: 'none' }, tls: undefined };

/**
 * The client's options for access. Every file is read now, so that a missing or malformed one is a ConfigError naming
 * its setting before any socket is opened, and a reconnection needs no file. Errors never quote a file's contents.
 */
export function natsAuthOptions(access: NatsAccess): NatsAuthOptions {
  const options: NatsAuthOptions = { ...credentialOptions(access.credential) };
  if (access.tls !== undefined) {
    const { caFile, certFile, keyFile } = access.tls;
    // An object, even empty, makes nats.js require TLS: a server (or someone in the middle) offering none is refused.
    const tls: { ca?: string; cert?: string; key?: string } = {};
    if (caFile !== undefined) {
      tls.ca = readText('CLUSTER_NATS_TLS_CA', caFile);
      try {
        new X509Certificate(tls.ca);
      } catch {
        throw new ConfigError(`CLUSTER_NATS_TLS_CA: ${caFile} holds no PEM certificate`);
      }
    }
    if (certFile !== undefined && keyFile !== undefined) {
      tls.cert = readText('CLUSTER_NATS_TLS_CERT', certFile);
      tls.key = readText('CLUSTER_NATS_TLS_KEY', keyFile);
      let certificate: X509Certificate;
      try {
        certificate = new X509Certificate(tls.cert);
      } catch {
        throw new ConfigError(`CLUSTER_NATS_TLS_CERT: ${certFile} holds no PEM certificate`);
      }
      let matches: boolean;
      try {
        matches = certificate.checkPrivateKey(createPrivateKey(tls.key));
      } catch {
        throw new ConfigError(`CLUSTER_NATS_TLS_KEY: ${keyFile} holds no PEM private key (an encrypted key is not supported)`);
      }
      if (!matches) throw new ConfigError(`CLUSTER_NATS_TLS_KEY: ${keyFile} is not the private key of the certificate in ${certFile}`);
    }
    options.tls = tls;
  }
  return options;
}

function credentialOptions(credential: NatsCredential): NatsAuthOptions {
  switch (credential.kind) {
    case 'none':
      return {};
    case 'user':
      return { user: credential.user, pass: secretText(credential.password) };
    case 'token':
      return { token: secretText(credential.token) };
    case 'creds': {
      const creds = readBytes('CLUSTER_NATS_CREDS', credential.file);
      const authenticator = credsAuthenticator(creds);
      try {
        // Without a nonce it parses the JWT and the seed and signs nothing: a check of the file's shape.
        authenticator(undefined);
      } catch {
        throw new ConfigError(`CLUSTER_NATS_CREDS: ${credential.file} is not a NATS .creds file (a user JWT and its nkey seed)`);
      }
      return { authenticator };
    }
    case 'nkey': {
      const seed = new TextEncoder().encode(readText('CLUSTER_NATS_NKEY_SEED_FILE', credential.seedFile).trim());
      let kind: string;
      try {
        kind = nkeys.fromSeed(seed).getPublicKey().charAt(0);
      } catch {
        throw new ConfigError(`CLUSTER_NATS_NKEY_SEED_FILE: ${credential.seedFile} holds no nkey seed`);
      }
      if (kind !== 'U') throw new ConfigError(`CLUSTER_NATS_NKEY_SEED_FILE: ${credential.seedFile} holds the seed of an nkey that is not a user's (SU...)`);
      return { authenticator: nkeyAuthenticator(seed) };
    }
  }
}

/** A password or token: the setting's value, or its file less the line end an editor or `echo` leaves. */
function secretText(source: SecretSource): string {
  if ('value' in source) return source.value.reveal();
  const text = readText(source.setting, source.file).replace(/\r?\n$/, '');
  if (text === '') throw new ConfigError(`${source.setting}: ${source.file} is empty`);
  return text;
}

function readBytes(setting: SettingName, file: string): Uint8Array {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new ConfigError(`${setting}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

function readText(setting: SettingName, file: string): string {
  return Buffer.from(readBytes(setting, file)).toString('utf8');
}

/** Which settings gave the credential NATS refused, for the message that says so. */
export function describeCredential(access: NatsAccess): string {
  const c = access.credential;
  const client = access.tls?.certFile !== undefined ? ' and the client certificate CLUSTER_NATS_TLS_CERT' : '';
  switch (c.kind) {
    case 'none':
      return client === ''
        ? 'no NATS credential is set: give the node its NATS user (CLUSTER_NATS_USER and CLUSTER_NATS_PASSWORD, CLUSTER_NATS_TOKEN, CLUSTER_NATS_CREDS, CLUSTER_NATS_NKEY_SEED_FILE or a TLS client certificate; docs/cluster.md)'
        : 'the server wants a NATS user besides the client certificate (CLUSTER_NATS_USER, CLUSTER_NATS_CREDS, ...), or maps no user to CLUSTER_NATS_TLS_CERT';
    case 'user':
      return c.from === 'CLUSTER_NATS_USER' ? `check CLUSTER_NATS_USER and its password${client}` : `check the user and password in the CLUSTER_NATS_SERVERS URLs${client}`;
    case 'token':
      return `check the token (${c.from})${client}`;
    case 'creds':
      return `check CLUSTER_NATS_CREDS (${c.file})${client}`;
    case 'nkey':
      return `check CLUSTER_NATS_NKEY_SEED_FILE (${c.seedFile})${client}`;
  }
}
