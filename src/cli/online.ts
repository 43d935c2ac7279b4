// authctl commands against a running server, through the typed client: applications, groups, users, API keys, signing keys, snapshot.

import { AuthClient } from '../client/client.js';
import type { Page, PageRequest, Role, UserCreate } from '../client/types.js';
import { pageItemsMax, tokenTtlSecondsMax } from '../config/limits.js';
import { tokenAlgs, type TokenAlg } from '../domain/entities.js';
import { roleNames } from '../domain/roles.js';
import {
  jsonObjectOption, listOption, positiveIntOption, readStdin, requiredOption, stringOption, table, UsageError,
  type Command, type Options, type Output, type Values,
} from './command.js';

const connectionOptions: Options = {
  url: { type: 'string' },
  user: { type: 'string' },
  password: { type: 'string' },
  json: { type: 'boolean' },
};

const connectionHelp = `
Connection (every option also from the environment):
  --url URL          the server (AUTHCTL_URL; default http://localhost:8080)
  --user NAME        email, or API Key id, of a User of the base Application (AUTHCTL_USER)
  --password SECRET  its password or API Key secret (AUTHCTL_PASSWORD; prefer the variable:
                     a flag shows in the process list)
  --json             print JSON (one object per line) instead of a table`;

export function clientFrom(values: Values, env: NodeJS.ProcessEnv = process.env): AuthClient {
  const baseUrl = stringOption(values, 'url') ?? env['AUTHCTL_URL'] ?? 'http://localhost:8080';
  if (!/^https?:\/\/[^\s/]+/.test(baseUrl)) throw new UsageError(`--url must be an http(s) URL, got "${baseUrl}"`);
  const username = stringOption(values, 'user') ?? env['AUTHCTL_USER'];
  const password = stringOption(values, 'password') ?? env['AUTHCTL_PASSWORD'];
  if (username === undefined || password === undefined) {
    throw new UsageError('credentials needed: --user and --password, or AUTHCTL_USER and AUTHCTL_PASSWORD');
  }
  return new AuthClient({ baseUrl, credentials: { username, password } });
}

/** Every item of a listing, a page at a time (so a million users never arrive as one answer). */
async function all<T>(client: AuthClient, list: (page: PageRequest) => Promise<Page<T>>, pageSize: number): Promise<T[]> {
  const out: T[] = [];
  for await (const item of client.paginate(list, pageSize)) out.push(item);
  return out;
}

function printJson(io: Output, items: readonly unknown[]): void {
  for (const item of items) io.out(JSON.stringify(item));
}

/** `--role R` given once per role; undefined when none was given. */
function rolesOption(values: Values): Role[] | undefined {
  const roles = listOption(values, 'role');
  for (const role of roles) {
    if (!(roleNames as readonly string[]).includes(role)) throw new UsageError(`--role must be one of ${roleNames.join(', ')}, got "${role}"`);
  }
  return roles.length === 0 ? undefined : roles as Role[];
}

const roleHelp = `  --role ROLE          ${roleNames.join(', ')}; repeat for several (admin only; see README, Roles)`;

const pageSizeOption: Options = { 'page-size': { type: 'string' } };
const pageSizeHelp = `  --page-size N      entities fetched per request (1..${pageItemsMax}, default 500)`;
const pageSize = (values: Values): number => positiveIntOption(values, 'page-size', 500, pageItemsMax);

export const onlineCommands: Command[] = [
  {
    name: 'applications list', summary: 'list Applications',
    help: `authctl applications list [--page-size N] [connection options]\n\n${pageSizeHelp}\n${connectionHelp}`,
    options: { ...connectionOptions, ...pageSizeOption },
    async run(values, _p, io) {
      const client = clientFrom(values);
      const apps = await all(client, (p) => client.applications.list(p), pageSize(values));
      if (values['json'] === true) printJson(io, apps);
      else table(io, ['ID', 'STATUS', 'NAME'], apps.map((a) => [a.id, a.status, a.name]));
      return 0;
    },
  },
  {
    name: 'applications create', summary: 'create an Application',
    help: `authctl applications create --name NAME [--description TEXT] [--custom-data JSON] [connection options]\n${connectionHelp}`,
    options: { ...connectionOptions, name: { type: 'string' }, description: { type: 'string' }, 'custom-data': { type: 'string' } },
    async run(values, _p, io) {
      const client = clientFrom(values);
      const app = await client.applications.create({
        name: requiredOption(values, 'name'), description: stringOption(values, 'description'), custom_data: jsonObjectOption(values, 'custom-data'),
      });
      io.out(values['json'] === true ? JSON.stringify(app) : `created Application ${app.id} (${app.name})`);
      return 0;
    },
  },
  {
    name: 'groups list', summary: 'list Groups (of one Application with --application)',
    help: `authctl groups list [--application ID] [--page-size N] [connection options]\n\n${pageSizeHelp}\n${connectionHelp}`,
    options: { ...connectionOptions, ...pageSizeOption, application: { type: 'string' } },
    async run(values, _p, io) {
      const client = clientFrom(values);
      const app = stringOption(values, 'application');
      const list = app === undefined ? client.groups.list : client.applications.groups(app);
      const groups = await all(client, (p) => list(p), pageSize(values));
      if (values['json'] === true) printJson(io, groups);
      else table(io, ['ID', 'APPLICATION', 'STATUS', 'NAME'], groups.map((g) => [g.id, g.application, g.status, g.name]));
      return 0;
    },
  },
  {
    name: 'groups create', summary: 'create a Group in an Application',
    help: `authctl groups create --name NAME --application ID [--description TEXT] [--custom-data JSON] [connection options]\n${connectionHelp}`,
    options: { ...connectionOptions, name: { type: 'string' }, application: { type: 'string' }, description: { type: 'string' }, 'custom-data': { type: 'string' } },
    async run(values, _p, io) {
      const client = clientFrom(values);
      const group = await client.groups.create({
        name: requiredOption(values, 'name'), application: requiredOption(values, 'application'),
        description: stringOption(values, 'description'), custom_data: jsonObjectOption(values, 'custom-data'),
      });
      io.out(values['json'] === true ? JSON.stringify(group) : `created Group ${group.id} (${group.name}) in Application ${group.application}`);
      return 0;
    },
  },
  {
    name: 'users list', summary: 'list Users (all, or matching --search, or of one --application)',
    help: `authctl users list [--search TERM | --application ID] [--page-size N] [connection options]\n\n${pageSizeHelp}\n${connectionHelp}`,
    options: { ...connectionOptions, ...pageSizeOption, search: { type: 'string' }, application: { type: 'string' } },
    async run(values, _p, io) {
      const client = clientFrom(values);
      const search = stringOption(values, 'search');
      const app = stringOption(values, 'application');
      if (search !== undefined && app !== undefined) throw new UsageError('give --search or --application, not both');
      // The per-Application listing has memberships as ids, the others as objects: the columns shown are in both.
      const list: (page: PageRequest) => Promise<Page<{ id: string; status: string; email: string; name: string }>> =
        app !== undefined ? client.applications.users(app) : search !== undefined ? client.users.search(search) : client.users.list;
      const users = await all(client, list, pageSize(values));
      if (values['json'] === true) printJson(io, users);
      else table(io, ['ID', 'STATUS', 'EMAIL', 'NAME'], users.map((u) => [u.id, u.status, u.email, u.name]));
      return 0;
    },
  },
  {
    name: 'users create', summary: 'create a User',
    help: `authctl users create --email EMAIL --application ID [--application ID ...]
                     (--password-stdin | --password-hash HASH)
                     [--name NAME] [--group ID ...] [--organization ID] [--custom-data JSON] [--role ROLE ...] [connection options]

  --password-stdin     read the new User's password from standard input
  --password-hash HASH an argon2id PHC string or a bcrypt hash brought from another system
${roleHelp}; a User of the base Application without one is an admin
${connectionHelp}`,
    options: {
      ...connectionOptions, email: { type: 'string' }, name: { type: 'string' }, application: { type: 'string', multiple: true }, role: { type: 'string', multiple: true },
      group: { type: 'string', multiple: true }, organization: { type: 'string' }, 'custom-data': { type: 'string' },
      'password-stdin': { type: 'boolean' }, 'password-hash': { type: 'string' },
    },
    async run(values, _p, io) {
      const client = clientFrom(values);
      const applications = listOption(values, 'application');
      if (applications.length === 0) throw new UsageError('--application is required (a User needs at least one)');
      const hash = stringOption(values, 'password-hash');
      const fromStdin = values['password-stdin'] === true;
      if ((hash === undefined) === !fromStdin) throw new UsageError('give exactly one of --password-stdin and --password-hash');
      const input: UserCreate = {
        email: requiredOption(values, 'email'), applications, groups: listOption(values, 'group'),
        name: stringOption(values, 'name'), organization: stringOption(values, 'organization'), custom_data: jsonObjectOption(values, 'custom-data'),
        roles: rolesOption(values),
      };
      if (hash !== undefined) input.password_hash = hash;
      else input.password = await readStdin();
      const user = await client.users.create(input);
      io.out(values['json'] === true ? JSON.stringify(user) : `created User ${user.id} (${user.email})`);
      return 0;
    },
  },
  {
    name: 'users roles', summary: 'set the roles of a User of the base Application (admin only)',
    help: `authctl users roles --user-id ID --role ROLE [--role ROLE ...] [connection options]\n\n${roleHelp}\n${connectionHelp}`,
    options: { ...connectionOptions, 'user-id': { type: 'string' }, role: { type: 'string', multiple: true } },
    async run(values, _p, io) {
      const client = clientFrom(values);
      const roles = rolesOption(values);
      if (roles === undefined) throw new UsageError('--role is required');
      const user = await client.users.update(requiredOption(values, 'user-id'), { roles });
      io.out(values['json'] === true ? JSON.stringify(user) : `User ${user.id} now has roles ${(user.roles ?? []).join(', ')}`);
      return 0;
    },
  },
  {
    name: 'apikeys create', summary: 'create an API Key for a User (prints its secret once)',
    help: `authctl apikeys create --user-id ID [--name NAME] [--description TEXT] [--role ROLE ...] [connection options]

  --role ROLE          narrows the owner's roles for callers using this key (e.g. authenticator for a client application)
${connectionHelp}`,
    options: { ...connectionOptions, 'user-id': { type: 'string' }, name: { type: 'string' }, description: { type: 'string' }, role: { type: 'string', multiple: true } },
    async run(values, _p, io) {
      const client = clientFrom(values);
      const key = await client.apikeys.create(requiredOption(values, 'user-id'), {
        name: stringOption(values, 'name'), description: stringOption(values, 'description'), roles: rolesOption(values),
      });
      if (values['json'] === true) io.out(JSON.stringify(key));
      else io.out(`created API Key ${key.id}\nsecret: ${key.secret}\n(use id and secret as Basic credentials or with POST /authenticate type apikey)`);
      return 0;
    },
  },
  {
    name: 'apikeys disable', summary: 'disable an API Key (it then authenticates nobody)',
    help: `authctl apikeys disable --user-id ID --key ID [connection options]\n${connectionHelp}`,
    options: { ...connectionOptions, 'user-id': { type: 'string' }, key: { type: 'string' } },
    async run(values, _p, io) {
      const client = clientFrom(values);
      const key = await client.apikeys.disable(requiredOption(values, 'user-id'), requiredOption(values, 'key'));
      const { secret: _secret, ...shown } = key;
      io.out(values['json'] === true ? JSON.stringify(shown) : `API Key ${key.id} is now ${key.status}`);
      return 0;
    },
  },
  {
    name: 'applications tokens', summary: 'set whether and how an Application issues access tokens (prints a new HS256 secret once)',
    help: `authctl applications tokens --id ID [--enabled true|false] [--ttl SECONDS] [--alg EdDSA|ES256|HS256] [connection options]

  Options left out keep their value. HS256 without a secret yet makes one, printed here once.
${connectionHelp}`,
    options: { ...connectionOptions, id: { type: 'string' }, enabled: { type: 'string' }, ttl: { type: 'string' }, alg: { type: 'string' } },
    async run(values, _p, io) {
      const enabled = stringOption(values, 'enabled');
      if (enabled !== undefined && enabled !== 'true' && enabled !== 'false') throw new UsageError(`--enabled must be true or false, got "${enabled}"`);
      const alg = stringOption(values, 'alg');
      if (alg !== undefined && !tokenAlgs.includes(alg as TokenAlg)) throw new UsageError(`--alg must be one of ${tokenAlgs.join(', ')}, got "${alg}"`);
      const tokens = {
        ...(enabled === undefined ? {} : { enabled: enabled === 'true' }),
        ...(values['ttl'] === undefined ? {} : { ttl: positiveIntOption(values, 'ttl', 0, tokenTtlSecondsMax) }),
        ...(alg === undefined ? {} : { alg: alg as TokenAlg }),
      };
      const app = await clientFrom(values).applications.update(requiredOption(values, 'id'), { tokens });
      if (values['json'] === true) io.out(JSON.stringify(app));
      else {
        io.out(`Application ${app.id}: tokens ${app.tokens.enabled ? 'enabled' : 'disabled'}, ttl ${app.tokens.ttl} s, ${app.tokens.alg}`);
        if (app.jwt_secret !== undefined) io.out(`jwt_secret: ${app.jwt_secret}\n(shown this once)`);
      }
      return 0;
    },
  },
  {
    name: 'signing-keys rotate', summary: 'make new current access-token signing keys (the old stay published until their tokens expire)',
    help: `authctl signing-keys rotate [connection options]\n${connectionHelp}`,
    options: connectionOptions,
    async run(values, _p, io) {
      const keys = await clientFrom(values).admin.rotateSigningKeys();
      if (values['json'] === true) printJson(io, keys);
      else table(io, ['KID', 'ALG', 'STATUS', 'PUBLISHED UNTIL'], keys.map((k) => [k.kid, k.alg, k.status, k.published_until || '-']));
      return 0;
    },
  },
  {
    name: 'snapshot', summary: 'make a running server write a snapshot now',
    help: `authctl snapshot [connection options]\n${connectionHelp}`,
    options: connectionOptions,
    async run(values, _p, io) {
      const snapshot = await clientFrom(values).admin.snapshot();
      if (values['json'] === true) io.out(JSON.stringify(snapshot));
      else if (snapshot.taken) io.out(`snapshot written: ${snapshot.file} (seq ${snapshot.base_seq}, ${snapshot.entities} entities, ${snapshot.bytes} bytes, ${snapshot.duration_ms} ms)`);
      else io.out(`no snapshot written: ${snapshot.reason}`);
      return 0;
    },
  },
];
