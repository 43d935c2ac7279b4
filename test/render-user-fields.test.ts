// A User's renderings field by field: the pieces the renderer writes (constants that close one field and open the
// next, around each field's text as it stands or escaped) read as the object JSON.stringify would write, in order.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ApiKey, User } from '../src/domain/entities.js';
import { formatTimestamp } from '../src/domain/time.js';
import { Renderer } from '../src/http/render.js';
import { State } from '../src/store/state.js';

const url = 'http://127.0.0.1:8080';
const org = { id: 'O1', name: 'org "one"', description: '', customData: { region: 'eu' }, status: 'ENABLED', createdAt: 1, modifiedAt: 1 };
const app = { id: 'A1', name: 'app', description: 'the base', customData: {}, status: 'ENABLED', createdAt: 2, modifiedAt: 2 };
const group = { id: 'G1', name: 'g\u2028', description: '', customData: { n: 1 }, status: 'ENABLED', application: 'A1', createdAt: 3, modifiedAt: 3 };

function key(id: string, name: string, description: string, roles?: string[]): ApiKey {
  return { id, name, description, status: 'ENABLED', nonce: 'n', ...(roles === undefined ? {} : { roles }), createdAt: 4, modifiedAt: 4 } as ApiKey;
}

const users: User[] = [
  // Plain text throughout, a key with roles and one without, a User of the base Application (roles shown).
  {
    id: 'U1', email: 'ann@x.example', name: 'Ann', status: 'ENABLED', customData: { plan: 'pro' }, passwordHash: 'h', organization: 'O1',
    applications: ['A1'], groups: ['G1'], apikeys: [key('K1', 'ci', 'for CI', ['reader']), key('K2', 'k2', '')], roles: ['reader'],
    createdAt: 1701305979639520, modifiedAt: 1701305979639521,
  },
  // Text to escape in every field the plain path would copy, and times of none and of the year 9999.
  {
    id: 'U"2', email: 'zoë@x.example', name: 'Zoë "q" \\ \u{1f511}', status: 'UNVERIFIED', customData: null, passwordHash: 'h', organization: 'O1',
    applications: [], groups: ['G1'], apikeys: [key('K"3', 'n\u007f', 'd"'), key('K4', 'plain', 'tab\there')],
    createdAt: 0, modifiedAt: 253402300799999999,
  },
] as User[];

function state(): State {
  const s = new State();
  const put = (kind: 'meta' | 'organization' | 'application' | 'group' | 'user', value: unknown): void => {
    s.apply({ seq: s.lastSeq + 1, at: 1, ops: [{ op: 'put', kind, value } as never] });
  };
  put('meta', { baseApplication: 'A1', defaultOrganization: 'O1' });
  put('organization', org);
  put('application', app);
  put('group', group);
  for (const u of users) put('user', u);
  return s;
}

const times = (u: User): Record<string, string> => ({ created_at: formatTimestamp(u.createdAt), modified_at: formatTimestamp(u.modifiedAt) });
const head = (u: User): Record<string, unknown> => ({ id: u.id, username: u.email, email: u.email, name: u.name, status: u.status, custom_data: u.customData });
const href = (u: User): string => `${url}/users/user/${u.id}`;
const tail = (u: User): Record<string, unknown> => ({ ...(u.applications.includes('A1') ? { roles: u.roles } : {}), href: href(u), ...times(u) });

test('a full rendering of a User is, byte for byte, JSON.stringify of its fields in order, plain or escaped', () => {
  const s = state();
  const r = new Renderer(url, s);
  for (const u of users) {
    const expected = JSON.stringify({
      ...head(u),
      organization: { id: org.id, name: org.name, custom_data: org.customData },
      applications: u.applications.map(() => JSON.parse(r.application(s.application('A1')!)) as unknown),
      groups: u.groups.map(() => JSON.parse(r.group(s.group('G1')!)) as unknown),
      apikeys: u.apikeys.map((k) => ({
        id: k.id, name: k.name, description: k.description, status: k.status, ...(k.roles === undefined ? {} : { roles: k.roles }),
        href: `${href(u)}/apikey/${k.id}`,
      })),
      ...tail(u),
    });
    const user = s.user(u.id)!;
    assert.equal(r.userFull(user), expected, u.id);
    assert.equal(r.userFullParts(user).join(''), expected, u.id);
  }
});

test('an authentication\'s and a minimal rendering of a User are JSON.stringify of their fields in order, plain or escaped', () => {
  const s = state();
  const r = new Renderer(url, s);
  for (const u of users) {
    const user = s.user(u.id)!;
    assert.equal(r.userAuthenticated(user), JSON.stringify({
      ...head(u),
      organization: { id: org.id, name: org.name },
      applications: u.applications.map(() => ({ id: app.id, name: app.name, status: app.status })),
      groups: u.groups.map(() => ({ id: group.id, name: group.name, status: group.status, application: group.application })),
      apikeys: u.apikeys.map((k) => ({ id: k.id, name: k.name, status: k.status })),
      ...tail(u),
    }), u.id);
    assert.equal(r.userMinimal(user), JSON.stringify({ ...head(u), organization: { id: org.id, name: org.name, custom_data: org.customData }, ...tail(u) }), u.id);
  }
});
