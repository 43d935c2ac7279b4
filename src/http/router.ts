// Path matching: literal routes by exact path, parameterised ones by segment count; tells 404 from 405.

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** The label a route's replies carry (Reply.route), e.g. `GET /users/user/:userid`. */
export function routeKey(route: { readonly method: string; readonly pattern: string }): string {
  return `${route.method} ${route.pattern}`;
}

export interface Route<H> {
  readonly method: Method;
  /** e.g. `/users/user/:userid/apikey/:apikeyid` */
  readonly pattern: string;
  readonly handler: H;
}

interface Compiled<H> {
  readonly pattern: string;
  readonly segments: readonly string[];
  readonly methods: Map<string, H>;
}

export type Match<H> =
  | { readonly kind: 'found'; readonly handler: H; readonly params: Record<string, string>; readonly pattern: string }
  | { readonly kind: 'method_not_allowed'; readonly allow: string }
  | { readonly kind: 'not_found' };

export class Router<H> {
  private readonly literal = new Map<string, Compiled<H>>();
  private readonly bySegmentCount = new Map<number, Compiled<H>[]>();
  private readonly patterns = new Map<string, Compiled<H>>();

  add(route: Route<H>): void {
    let compiled = this.patterns.get(route.pattern);
    if (compiled === undefined) {
      compiled = { pattern: route.pattern, segments: route.pattern.split('/').slice(1), methods: new Map() };
      this.patterns.set(route.pattern, compiled);
      if (!route.pattern.includes(':')) {
        this.literal.set(route.pattern, compiled);
      } else {
        const list = this.bySegmentCount.get(compiled.segments.length) ?? [];
        list.push(compiled);
        this.bySegmentCount.set(compiled.segments.length, list);
      }
    }
    if (compiled.methods.has(route.method)) throw new Error(`duplicate route ${route.method} ${route.pattern}`);
    compiled.methods.set(route.method, route.handler);
  }

  /** `path` is raw; a trailing slash is ignored. Parameters come back raw: handlers validate or decode them. */
  match(method: string, path: string): Match<H> {
    const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
    const literal = this.literal.get(trimmed);
    if (literal !== undefined) return this.pick(literal, method, {});
    const segments = trimmed.split('/').slice(1);
    const candidates = this.bySegmentCount.get(segments.length);
    if (candidates === undefined) return { kind: 'not_found' };
    for (const compiled of candidates) {
      const params = matchSegments(compiled.segments, segments);
      if (params !== undefined) return this.pick(compiled, method, params);
    }
    return { kind: 'not_found' };
  }

  routes(): { pattern: string; methods: string[] }[] {
    return [...this.patterns.entries()].map(([pattern, c]) => ({ pattern, methods: [...c.methods.keys()] }));
  }

  private pick(compiled: Compiled<H>, method: string, params: Record<string, string>): Match<H> {
    const handler = compiled.methods.get(method);
    if (handler === undefined) return { kind: 'method_not_allowed', allow: [...compiled.methods.keys()].join(', ') };
    return { kind: 'found', handler, params, pattern: compiled.pattern };
  }
}

function matchSegments(pattern: readonly string[], actual: readonly string[]): Record<string, string> | undefined {
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i]!;
    const a = actual[i]!;
    if (p.startsWith(':')) {
      if (a.length === 0) return undefined;
      params[p.slice(1)] = a;
    } else if (p !== a) {
      return undefined;
    }
  }
  return params;
}
