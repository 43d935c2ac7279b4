// Routes of the service itself: health (and /status, its upstream name), metrics, taking a snapshot, and this API's OpenAPI document.

import { basename } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { metricsContentType } from '../metrics.js';
import { obj, str } from '../openapi.js';
import { route, type Readiness, type RouteDecl, type RouteResult } from '../route.js';

const snapshotResult = obj({
  snapshot: obj({
    taken: { type: 'boolean' }, reason: str,
    file: { type: 'string', description: 'The snapshot\'s file name within the data directory (DATA_DIR), not its path.' },
    base_seq: { type: 'integer' }, entities: { type: 'integer' },
    bytes: { type: 'integer' }, duration_ms: { type: 'number' }, event_loop_delay_max_ms: { type: 'number' },
    event_loop_delay_p99_ms: { type: 'number' },
  }, ['taken']),
});

/** GET /health and its upstream name GET /status: the process answers. */
const liveness = {
  method: 'GET', tag: 'Service', access: 'public', audit: 'none', result: obj({ status: { type: 'string', const: 'ok' } }),
  handler: () => ({ result: '{"status":"ok"}' }),
} as const;

export const serviceRoutes: readonly RouteDecl[] = [
  route({ ...liveness, pattern: '/health', operationId: 'health', summary: 'Liveness check' }),
  route({
    ...liveness, pattern: '/status', operationId: 'status', summary: 'Liveness check, as GET /health',
    description: 'Compatibility with the monitors of the upstream API (econtext-auth), which call this path; `GET /health` is the same.',
  }),
  route({
    method: 'GET', pattern: '/health/ready', operationId: 'ready', tag: 'Service', summary: 'Readiness check: 200 once the node serves with everything it should know, else 503',
    access: 'public', audit: 'none', result: obj({ status: { type: 'string', enum: ['ready', 'catching_up', 'degraded'] } }),
    handler: ({ deps }) => {
      // degraded: a cluster node without NATS, or without a stream leader, still answers reads and authentications, but not writes.
      const answer = (status: Readiness): RouteResult => ({ status: status === 'ready' ? 200 : 503, result: `{"status":"${status}"}` });
      const status = deps.readiness();
      return status instanceof Promise ? status.then(answer) : answer(status);
    },
  }),
  route({
    method: 'GET', pattern: '/metrics', operationId: 'metrics', tag: 'Service', summary: 'Prometheus metrics (text format 0.0.4)',
    access: 'read', audit: 'none', raw: 'text/plain', result: { type: 'string' },
    handler: ({ deps }) => ({ result: deps.metrics.render(), contentType: metricsContentType }),
  }),
  route({
    method: 'POST', pattern: '/admin/snapshot', operationId: 'takeSnapshot', tag: 'Admin', summary: 'Write a snapshot now',
    access: 'admin', audit: 'snapshot.take', result: snapshotResult,
    handler: async ({ deps }) => {
      // Measured around the snapshot so an operator can see that writing it did not stall requests.
      const delay = monitorEventLoopDelay({ resolution: 1 });
      delay.enable();
      const written = await deps.snapshots.snapshot();
      delay.disable();
      const snapshot = written === undefined
        ? { taken: false, reason: 'nothing changed since the newest snapshot' }
        : {
          // The name within DATA_DIR only: the answer need not tell a caller where the server keeps its files.
          taken: true, file: basename(written.path), base_seq: written.baseSeq, entities: written.entities, bytes: written.bytes,
          duration_ms: Math.round(written.durationMs * 1000) / 1000,
          event_loop_delay_max_ms: Math.round(delay.max / 1e3) / 1e3,
          event_loop_delay_p99_ms: Math.round(delay.percentile(99) / 1e3) / 1e3,
        };
      return { result: JSON.stringify({ snapshot }) };
    },
  }),
];
