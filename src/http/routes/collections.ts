// The routes Applications, Groups and Organizations share, declared once for all three: list, create, read, update, delete, and the Users of one.

import type { Schema } from '../../domain/schema.js';
import type { User } from '../../domain/entities.js';
import type { DecideContext, Decision } from '../../store/decide.js';
import type { Page, PagePosition } from '../../store/creation-order.js';
import type { State } from '../../store/state.js';
import { deleted, listOf, one, ref } from '../openapi.js';
import { listing, minimalRequested, pageRequest, pageResult, rendering } from '../paging.js';
import type { Renderer } from '../render.js';
import { deletedTrue, guardNow, keyed, pathId, route, type RouteContext, type RouteDecl, type StateGuard } from '../route.js';

/** What differs between the three kinds. */
export interface Collection<E extends PagePosition, C, U> {
  /** `application`: the key of one in a result, and the audit action's prefix. */
  readonly kind: string;
  /** `applications`: the key of a listing. */
  readonly plural: string;
  /** `/applications/application`: the path of one, without its id. */
  readonly base: string;
  /** `appid`: the path parameter of one. */
  readonly param: string;
  /** `Application`: the OpenAPI tag's singular and the result schema's name. */
  readonly title: string;
  readonly summaries: { readonly create: string; readonly delete: string };
  readonly createBody: Schema<C>;
  readonly updateBody: Schema<U>;
  all(state: State): Iterable<E>;
  /** After a cursor's entity, or `offset` entities into the order (offset paging). */
  page(state: State, after: PagePosition | undefined, limit: number, offset: number): Page<E>;
  must(state: State, id: string): E;
  render(renderer: Renderer, entity: E): string;
  create(state: State, input: C, ctx: DecideContext): Decision<E>;
  update(state: State, id: string, input: U, ctx: DecideContext): Decision<E>;
  remove(state: State, id: string): Decision<true>;
  users(state: State, id: string): User[];
  usersPage(state: State, id: string, after: PagePosition | undefined, limit: number, offset: number): Page<User>;
  /**
   * Refuses a change that needs more than `manage` (the base Application and its Groups need admin): run against the
   * state before the change is committed, and again where it is decided (RouteContext.commit).
   */
  guard?(state: State, caller: { readonly caps: number }, change: { readonly id?: string; readonly input?: C }): void;
  /** Readies a create's or update's input before it is decided (Applications seal their HS256 secret). */
  prepare?<I extends C | U>(ctx: RouteContext<unknown>, input: I): I;
  /** The answer to a create or update, when it is more than render() (an HS256 secret the change set). */
  answer?(ctx: RouteContext<unknown>, input: C | U, before: E | undefined, after: E): string | undefined;
}

export function collectionRoutes<E extends PagePosition & { readonly id: string }, C, U>(c: Collection<E, C, U>): RouteDecl[] {
  const tag = `${c.title}s`;
  const schema = ref(c.title);
  const render = (ctx: RouteContext<unknown>) => (e: E): string => c.render(ctx.deps.renderer, e);
  /** The collection's guard for this change, run now (guardNow) and returned for ctx.commit. */
  const guarded = (ctx: RouteContext<unknown>, change: { readonly id?: string; readonly input?: C }): StateGuard | undefined => {
    const { guard } = c;
    return guard === undefined ? undefined : guardNow(ctx, (state, caller) => guard(state, caller, change));
  };
  return [
    route({
      method: 'GET', pattern: `/${c.plural}`, operationId: `list${tag}`, tag, summary: `List ${tag}`, paged: true,
      access: 'read', audit: 'none', result: listOf(c.plural, schema),
      handler: (ctx) => {
        const page = pageRequest(ctx.query);
        if (page !== undefined) return { result: pageResult(c.plural, c.page(ctx.deps.state, page.after, page.limit, page.offset), render(ctx)) };
        return listing(c.plural, rendering(c.all(ctx.deps.state), render(ctx)));
      },
    }),
    route<C>({
      method: 'POST', pattern: c.base, operationId: `create${c.title}`, tag, summary: c.summaries.create,
      access: 'manage', audit: `${c.kind}.create`, body: c.createBody, result: one(c.kind, schema),
      handler: async (ctx) => {
        const guard = guarded(ctx, { input: ctx.body });
        const input = c.prepare?.(ctx, ctx.body) ?? ctx.body;
        const entity = await ctx.commit((s, dc) => c.create(s, input, dc), guard);
        const answer = c.answer?.(ctx, input, undefined, entity) ?? c.render(ctx.deps.renderer, entity);
        return { result: keyed(c.kind, answer), targets: { [c.kind]: entity.id } };
      },
    }),
    route({
      method: 'GET', pattern: `${c.base}/:${c.param}`, operationId: `get${c.title}`, tag, summary: `Read ${article(c.title)}`,
      access: 'read', audit: 'none', result: one(c.kind, schema),
      handler: ({ params, deps }) => ({ result: keyed(c.kind, c.render(deps.renderer, c.must(deps.state, pathId(params, c.param)))) }),
    }),
    route<U>({
      method: 'PUT', pattern: `${c.base}/:${c.param}`, operationId: `update${c.title}`, tag, summary: `Update ${article(c.title)}`,
      access: 'manage', audit: `${c.kind}.update`, body: c.updateBody, result: one(c.kind, schema),
      handler: async (ctx) => {
        const id = pathId(ctx.params, c.param);
        c.must(ctx.deps.state, id);
        const guard = guarded(ctx, { id });
        const input = c.prepare?.(ctx, ctx.body) ?? ctx.body;
        let before: E | undefined;
        const entity = await ctx.commit((s, dc) => {
          before = c.must(s, id);
          return c.update(s, id, input, dc);
        }, guard);
        return { result: keyed(c.kind, c.answer?.(ctx, input, before, entity) ?? c.render(ctx.deps.renderer, entity)) };
      },
    }),
    route({
      method: 'DELETE', pattern: `${c.base}/:${c.param}`, operationId: `delete${c.title}`, tag, summary: c.summaries.delete,
      access: 'manage', audit: `${c.kind}.delete`, result: deleted,
      handler: async (ctx) => {
        const id = pathId(ctx.params, c.param);
        const guard = guarded(ctx, { id });
        await ctx.commit((s) => c.remove(s, id), guard);
        return { result: deletedTrue };
      },
    }),
    route({
      method: 'GET', pattern: `${c.base}/:${c.param}/users`, operationId: `list${c.title}Users`, tag,
      summary: `Users of ${article(c.title)} (memberships as ids)`, paged: true, minimal: true,
      access: 'read', audit: 'none', result: listOf('users', { oneOf: [ref('UserListed'), ref('UserListedMinimal')] }),
      handler: ({ params, query, deps }) => {
        const id = c.must(deps.state, pathId(params, c.param)).id;
        const page = pageRequest(query);
        const minimal = minimalRequested(query);
        if (page !== undefined) return { result: pageResult('users', c.usersPage(deps.state, id, page.after, page.limit, page.offset), (u) => deps.renderer.userIds(u, minimal)) };
        return listing('users', rendering(c.users(deps.state, id), (u) => deps.renderer.userIds(u, minimal)));
      },
    }),
  ];
}

function article(title: string): string {
  return /^[AEIOU]/.test(title) ? `an ${title}` : `a ${title}`;
}
