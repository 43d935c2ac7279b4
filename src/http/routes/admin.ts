// Operator routes: take a snapshot now (for backups, the CLI and the benchmark), reporting how long serving paused.

import { basename } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { RouteSpec } from '../pipeline.js';
import type { RouteDeps } from './context.js';

export function adminRoutes({ snapshots }: RouteDeps): RouteSpec[] {
  return [
    {
      method: 'POST', pattern: '/admin/snapshot',
      handler: async () => {
        // Measured around the snapshot so an operator can see that writing it did not stall requests.
        const delay = monitorEventLoopDelay({ resolution: 1 });
        delay.enable();
        const written = await snapshots.snapshot();
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
    },
  ];
}
