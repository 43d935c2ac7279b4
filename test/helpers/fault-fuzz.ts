// Hostile requests for every endpoint, as fast-check arbitraries: shared by the in-process fuzz, the real-server fuzz and the long run.
//
// A request is drawn as a plan (route, how to fill each path parameter, a body recipe, a content type,
// credentials) and resolved against the ids that exist when it is sent, so that the plans reach deep
// into the API (real ids, valid-looking bodies with one hostile field) as well as its edges (odd path
// segments, malformed JSON, wrong types, lone surrogates, prototype keys, deep nesting, huge strings,
// malformed Basic headers).

import fc from 'fast-check';

export interface RouteInfo {
  readonly method: string;
  readonly pattern: string;
  readonly public: boolean;
}

/** Ids that exist right now, per path parameter kind. */
export interface KnownIds {
  readonly application: readonly string[];
  readonly group: readonly string[];
  readonly user: readonly string[];
  readonly organization: readonly string[];
  /** API Keys with their owner. */
  readonly apikey: ReadonlyArray<{ readonly user: string; readonly key: string }>;
}

type ParamFill = { readonly kind: 'known'; readonly index: number } | { readonly kind: 'unknown' } | { readonly kind: 'odd'; readonly text: string };

export type BodyPlan =
  | { readonly kind: 'none' }
  | { readonly kind: 'template'; readonly drop: readonly string[]; readonly hostile: ReadonlyArray<readonly [string, unknown]>; readonly extra: Record<string, unknown> }
  | { readonly kind: 'json'; readonly value: unknown }
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'bytes'; readonly bytes: readonly number[] };

export type AuthPlan = { readonly kind: 'admin' } | { readonly kind: 'none' } | { readonly kind: 'raw'; readonly value: string };

export interface RequestPlan {
  readonly route: number;
  readonly params: readonly ParamFill[];
  readonly tail: string;
  readonly body: BodyPlan;
  readonly contentType: string | undefined;
  readonly auth: AuthPlan;
  readonly query: string;
}

export interface ResolvedRequest {
  readonly method: string;
  readonly path: string;
  readonly query: string;
  readonly body: Uint8Array | undefined;
  readonly contentType: string;
  /** The raw Authorization value ('' for none); 'admin' means the admin's Basic pair. */
  readonly authorization: string | 'admin';
  /** The route as `METHOD pattern`, when the path was built from a pattern unchanged. */
  readonly route: string | undefined;
  readonly describe: string;
}

/** Path segments that have broken routers and decoders elsewhere. */
const oddSegments = [
  '', '.', '..', '%2e%2e', '%2E', '%2F', '%2f..%2f', '%00', '%ZZ', '%', '%C0%AF', '%F0%9F%98%80', '%ED%A0%80', '😀', 'ÿ', '%20', ' ',
  '*', ';', ',', 'a'.repeat(65), 'A'.repeat(4000), '0', '-1', 'null', '__proto__', 'constructor', 'prototype', 'toString',
  'ZZZZZZZZZZZZZZZZZZZZZZ', 'zzzzzzzzzzzzzzzzzzzzzzzzz', '%5Cx', 'x%0Ay', 'x%0D%0Ay',
];

/** One JSON value after another of increasing nastiness. */
function hostileValue(): fc.Arbitrary<unknown> {
  const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => `a${String.fromCharCode(c)}b`);
  const protoKey = fc.constantFrom('__proto__', 'constructor', 'prototype');
  const nested = (depth: number, leaf: unknown): unknown => {
    let v: unknown = leaf;
    for (let i = 0; i < depth; i++) v = i % 2 === 0 ? { k: v } : [v];
    return v;
  };
  return fc.oneof(
    fc.string({ maxLength: 40 }),
    fc.string({ unit: 'binary', maxLength: 40 }),
    loneSurrogate,
    fc.constantFrom(255, 256, 257, 1024, 4097, 65_537, 300_000).map((n) => 'x'.repeat(n)),
    fc.constantFrom(31, 32, 33, 200, 2000).map((d) => nested(d, 'leaf')),
    fc.constantFrom(null, true, false, 0, -0, 1.5, -1, 2 ** 53 + 1, Number.MAX_VALUE, 1e-300, [], {}, ''),
    fc.jsonValue({ maxDepth: 3 }),
    protoKey.map((k) => JSON.parse(`{"${k}":{"polluted":"yes","status":"DISABLED"}}`) as unknown),
    protoKey.map((k) => JSON.parse(`{"a":{"${k}":{"polluted":"yes"}}}`) as unknown),
    fc.constantFrom('ENABLED', 'DISABLED', 'UNVERIFIED', 'enabled', 'username', 'apikey'),
    fc.string({ maxLength: 20 }).map((s) => `${s}@example.com`),
    fc.constantFrom('line\nbreak', 'cr\rhere', 'nul\u0000byte', '\u2028\u2029', '\u001b[31mred', '{"level":60,"msg":"forged"}\n'),
  );
}

/** Field names that bodies of this API use, for hostile replacement and for templates of unknown routes. */
const fieldNames = [
  'name', 'description', 'custom_data', 'status', 'email', 'password', 'password_hash', 'applications', 'groups', 'organization',
  'application', 'type', 'credential', 'ip_address', 'username',
];

export function requestPlan(routeCount: number): fc.Arbitrary<RequestPlan> {
  const param: fc.Arbitrary<ParamFill> = fc.oneof(
    { weight: 6, arbitrary: fc.nat(1000).map((index) => ({ kind: 'known' as const, index })) },
    { weight: 1, arbitrary: fc.constant({ kind: 'unknown' as const }) },
    { weight: 2, arbitrary: fc.constantFrom(...oddSegments).map((text) => ({ kind: 'odd' as const, text })) },
  );
  const body: fc.Arbitrary<BodyPlan> = fc.oneof(
    { weight: 6, arbitrary: fc.record({
      drop: fc.subarray(fieldNames, { maxLength: 2 }),
      hostile: fc.array(fc.tuple(fc.constantFrom(...fieldNames), hostileValue()), { maxLength: 2 }),
      extra: fc.dictionary(fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom('__proto__', 'constructor', 'prototype')), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 2 }),
    }).map((r) => ({ kind: 'template' as const, ...r })) },
    { weight: 1, arbitrary: fc.constant({ kind: 'none' as const }) },
    { weight: 2, arbitrary: hostileValue().map((value) => ({ kind: 'json' as const, value })) },
    { weight: 1, arbitrary: fc.oneof(
      fc.string({ maxLength: 60 }),
      fc.constantFrom('{', '{"name":', '{"name":"x"}}', '\uFEFF{"name":"x"}', '{"name":"x",}', "{'name':'x'}", 'null', '[]', '"str"', '1e400', '{"a":1e400}', 'NaN', '{"name":"\\ud800"}'),
    ).map((text) => ({ kind: 'text' as const, text })) },
    { weight: 1, arbitrary: fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 40 }).map((bytes) => ({ kind: 'bytes' as const, bytes })) },
  );
  const auth: fc.Arbitrary<AuthPlan> = fc.oneof(
    { weight: 12, arbitrary: fc.constant({ kind: 'admin' as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'none' as const }) },
    { weight: 2, arbitrary: fc.oneof(
      fc.constantFrom(
        `Basic ${Buffer.from('nocolon').toString('base64')}`,
        `Basic ${Buffer.from('a:b:c').toString('base64')}`,
        `Basic ${Buffer.from(':').toString('base64')}`,
        'Basic !!!!', 'Basic', 'Basic ', 'basic YTpi', 'Bearer abc', 'Basic YTpi=', 'Basic YTpi====', 'Basic\tYTpi',
        `Basic ${'A'.repeat(9000)}`, `Basic ${Buffer.from(`admin@example.com:${'p'.repeat(9000)}`).toString('base64')}`,
        `Basic ${Buffer.from([0xff, 0xfe, 0x3a, 0x41]).toString('base64')}`,
      ),
      fc.tuple(fc.string({ maxLength: 20 }), fc.string({ maxLength: 20 })).map(([u, p]) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`),
    ).map((value) => ({ kind: 'raw' as const, value })) },
  );
  return fc.record({
    route: fc.nat(Math.max(0, routeCount - 1)),
    params: fc.array(param, { minLength: 4, maxLength: 4 }),
    tail: fc.oneof({ weight: 12, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.constantFrom('/', '//', '/x', '/..', '?', '%3F') }),
    body,
    contentType: fc.oneof(
      { weight: 8, arbitrary: fc.constant(undefined) },
      { weight: 2, arbitrary: fc.constantFrom('application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON', 'application/problem+json', '', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json;;', ';') },
    ),
    auth,
    query: fc.oneof({ weight: 10, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.constantFrom('limit=1', 'limit=0', 'limit=99999999', 'cursor=zzz', 'limit=2&cursor=', 'limit=1&limit=2', 'a=%ZZ', 'limit=1e3') }),
  });
}

function fillParam(name: string, fill: ParamFill, known: KnownIds, userForKey: { value: string | undefined }): string {
  if (fill.kind === 'odd') return fill.text;
  if (fill.kind === 'unknown') return name === 'apikeyid' ? 'ZZZZZZZZZZZZZZZZZZZZZZZZZ' : 'ZZZZZZZZZZZZZZZZZZZZZZ';
  const pick = (ids: readonly string[]): string => (ids.length === 0 ? 'ZZZZZZZZZZZZZZZZZZZZZZ' : ids[fill.index % ids.length]!);
  if (name.startsWith('app')) return pick(known.application);
  if (name.startsWith('group')) return pick(known.group);
  if (name.startsWith('org')) return pick(known.organization);
  if (name.startsWith('apikey')) {
    const owned = known.apikey.filter((k) => userForKey.value === undefined || k.user === userForKey.value);
    return owned.length === 0 ? 'ZZZZZZZZZZZZZZZZZZZZZZZZZ' : owned[fill.index % owned.length]!.key;
  }
  if (name.startsWith('user')) {
    // An API Key route needs the key's owner: prefer users that have keys.
    const owners = [...new Set(known.apikey.map((k) => k.user))];
    const id = pick(owners.length > 0 && fill.index % 2 === 0 ? owners : known.user);
    userForKey.value = id;
    return id;
  }
  return pick(known.user);
}

let uniqueCounter = 0;

/** A plausible body for the route, so that one hostile field gets past the others. */
function template(route: RouteInfo, known: KnownIds): Record<string, unknown> {
  const n = ++uniqueCounter;
  const pickOr = (ids: readonly string[]): string => ids[n % Math.max(1, ids.length)] ?? 'ZZZZZZZZZZZZZZZZZZZZZZ';
  const key = `${route.method} ${route.pattern}`;
  if (key === 'POST /users/user') return { email: `fuzz-${n}@example.com`, password: `fuzz-pass-${n}`, name: `Fuzz ${n}`, applications: [pickOr(known.application)], custom_data: { n } };
  if (key.startsWith('PUT /users/user/:')) return { name: `Fuzz ${n}`, custom_data: { n } };
  if (key === 'POST /groups/group') return { name: `fuzz group ${n}`, application: pickOr(known.application), custom_data: {} };
  if (key === 'POST /authenticate') return { type: 'username', application: pickOr(known.application), credential: { username: 'admin@example.com', password: `guess-${n}` } };
  if (route.pattern.includes('apikey')) return { name: `fuzz key ${n}`, description: 'd' };
  return { name: `fuzz ${n}`, description: `d${n}`, custom_data: { n } };
}

function bodyBytes(plan: BodyPlan, route: RouteInfo, known: KnownIds): { bytes: Uint8Array | undefined; json: boolean } {
  switch (plan.kind) {
    case 'none': return { bytes: undefined, json: false };
    case 'text': return { bytes: Buffer.from(plan.text, 'utf8'), json: true };
    case 'bytes': return { bytes: Uint8Array.from(plan.bytes), json: true };
    case 'json': return { bytes: Buffer.from(JSON.stringify(plan.value) ?? 'null', 'utf8'), json: true };
    case 'template': {
      const body = template(route, known);
      for (const k of plan.drop) delete body[k];
      for (const [k, v] of plan.hostile) body[k] = v;
      // Own keys named __proto__ survive only through JSON text: assign them as properties to be sure.
      for (const [k, v] of Object.entries(plan.extra)) Object.defineProperty(body, k, { value: v, enumerable: true, writable: true, configurable: true });
      return { bytes: Buffer.from(JSON.stringify(body), 'utf8'), json: true };
    }
  }
}

/** The plan made concrete against the ids that exist now. */
export function resolvePlan(plan: RequestPlan, routes: readonly RouteInfo[], known: KnownIds): ResolvedRequest {
  const route = routes[plan.route % routes.length]!;
  let i = 0;
  const userForKey = { value: undefined as string | undefined };
  const path = route.pattern.split('/').map((seg) => (seg.startsWith(':') ? fillParam(seg.slice(1), plan.params[i++ % plan.params.length]!, known, userForKey) : seg)).join('/') + plan.tail;
  const unchanged = plan.tail === '' && plan.params.slice(0, i).every((p) => p.kind === 'known');
  const { bytes, json } = route.method === 'GET' || route.method === 'DELETE' ? (plan.body.kind === 'none' ? { bytes: undefined, json: false } : bodyBytes(plan.body, route, known)) : bodyBytes(plan.body, route, known);
  const contentType = plan.contentType ?? (json ? 'application/json' : '');
  const authorization = plan.auth.kind === 'admin' ? 'admin' : plan.auth.kind === 'none' ? '' : plan.auth.value;
  const shownBody = bytes === undefined ? '' : ` ${Buffer.from(bytes).toString('utf8').slice(0, 160)}`;
  return {
    method: route.method, path, query: plan.query, body: bytes, contentType, authorization,
    route: unchanged ? `${route.method} ${route.pattern}` : undefined,
    describe: `${route.method} ${path.slice(0, 120)}${plan.query === '' ? '' : `?${plan.query}`} [${contentType}] auth=${plan.auth.kind}${shownBody}`,
  };
}

/** Own property names of the built-in prototypes, to prove nothing was added or replaced. */
export function prototypeFingerprint(): string {
  const protos: Array<[string, object]> = [['Object', Object.prototype], ['Array', Array.prototype], ['Function', Function.prototype], ['String', String.prototype]];
  return JSON.stringify(protos.map(([name, p]) => [name, Object.getOwnPropertyNames(p).sort(), Object.getOwnPropertyNames(p).map((k) => typeof (Object.getOwnPropertyDescriptor(p, k)?.value))]));
}
