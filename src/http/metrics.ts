// Prometheus metrics: requests and latency per route, authentication outcomes, hash queue, log and snapshot figures, entity counts, collection pauses and event-loop delay.
//
// Per request the cost is one Map lookup by a route label made once at start-up (Reply.route), a few
// number increments and a scan of fourteen bucket bounds: no allocation once a route has answered
// with a given status for the first time. Everything else is read from its owner when scraped.

import type { VerifyCacheCounts } from '../auth/verify-cache.js';
import { eventLoopDelaySampleMs } from '../config/limits.js';
import { tokenAlgs, type TokenAlg } from '../domain/entities.js';
import type { PersistenceStats } from '../persist/persistence.js';
import { Histogram } from './histogram.js';
import { routeKey } from './router.js';
import type { RuntimeStats } from './runtime-stats.js';

/** Latency bucket bounds in seconds: sub-millisecond for cached checks up to the multi-second tail of argon2 under load. */
const latencyBucketsS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

/** The label of replies that matched no route (404 route_not_found, 405) or were refused before routing (413, 408). */
const unmatchedLabel = '(unmatched)';

export const metricsContentType = 'text/plain; version=0.0.4; charset=utf-8';

export interface MetricsSources {
  counts(): { applications: number; groups: number; organizations: number; users: number };
  readonly lastSeq: number;
  hashQueueDepth(): number;
  /** Worker threads of the hash pool. */
  readonly hashWorkers: number;
  /** True while the search index is (re)built in the background and searches scan instead. */
  searchIndexBuilding(): boolean;
  /** The embedded log and snapshots; absent in cluster mode. */
  readonly persistence?: { readonly stats: PersistenceStats };
  /** Cluster mode (src/cluster/): this node's readiness and its writes' fate. */
  readonly cluster?: {
    readonly readiness: string; readonly conflicts: number; readonly refused: number;
    /** Messages from NATS that did not open under the server key, by kind (src/cluster/rejected.ts). */
    readonly rejected?: Readonly<Record<string, number>>;
  };
  /** Collection pauses and event-loop delay, when the process observes them (main.ts starts it). */
  readonly runtime?: RuntimeStats;
  /** Bytes held by the kept User renderings (src/http/render.ts). */
  renderCacheBytes?(): number;
  /** The verify cache (src/auth/verify-cache.ts): its size and what became of its entries. */
  readonly verifyCache?: { readonly size: number; readonly counts: Readonly<VerifyCacheCounts> };
}

class RouteStats {
  readonly byStatus = new Map<number, number>();
  readonly latency = new Histogram(latencyBucketsS);

  constructor(readonly method: string, readonly route: string) {}
}

type CredentialKind = 'username' | 'apikey';

function labelValue(s: string): string {
  return s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

export class Metrics {
  private readonly routes = new Map<string, RouteStats>();
  private readonly unmatched = new RouteStats('', unmatchedLabel);
  private readonly authentications = { username: { success: 0, failure: 0 }, apikey: { success: 0, failure: 0 } };
  private readonly callers = { success: 0, failure: 0 };
  private readonly tokensIssued: Record<TokenAlg, number> = { EdDSA: 0, ES256: 0, HS256: 0 };
  private readonly introspections = { active: 0, inactive: 0 };
  private readonly startedAtMs = Date.now();

  constructor(private readonly sources: MetricsSources) {}

  /** Counters for every route, made up front so the request path never creates them. */
  registerRoutes(routes: readonly { readonly method: string; readonly pattern: string }[]): void {
    for (const r of routes) {
      const key = routeKey(r);
      if (!this.routes.has(key)) this.routes.set(key, new RouteStats(r.method, r.pattern));
    }
  }

  /** Called once per answered request (src/http/adapter.ts onFinished). */
  requestFinished(route: string | undefined, status: number, durationMs: number): void {
    const stats = (route === undefined ? undefined : this.routes.get(route)) ?? this.unmatched;
    stats.byStatus.set(status, (stats.byStatus.get(status) ?? 0) + 1);
    stats.latency.record(durationMs / 1000);
  }

  /** The answer of one POST /authenticate. */
  authenticated(kind: CredentialKind, ok: boolean): void {
    this.authentications[kind][ok ? 'success' : 'failure']++;
  }

  /** An access token answered by POST /authenticate. */
  tokenIssued(alg: TokenAlg): void {
    this.tokensIssued[alg]++;
  }

  /** The answer of one POST /tokens/introspect. */
  tokenIntrospected(active: boolean): void {
    this.introspections[active ? 'active' : 'inactive']++;
  }

  /** The Basic credentials of one call to the admin API. */
  callerChecked(ok: boolean): void {
    this.callers[ok ? 'success' : 'failure']++;
  }

  render(): string {
    const out: string[] = [];
    const family = (name: string, type: 'counter' | 'gauge' | 'histogram', help: string): void => {
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    };
    const all = [...this.routes.values(), this.unmatched].filter((r) => r.latency.count > 0);

    family('authd_http_requests_total', 'counter', 'HTTP requests answered, by method, route pattern and status.');
    for (const r of all) {
      for (const [status, n] of r.byStatus) {
        out.push(`authd_http_requests_total{method="${labelValue(r.method)}",route="${labelValue(r.route)}",status="${status}"} ${n}`);
      }
    }
    family('authd_http_request_duration_seconds', 'histogram', 'Time from the request arriving to its answer being handed to the socket, by method and route pattern.');
    for (const r of all) r.latency.render(out, 'authd_http_request_duration_seconds', `method="${labelValue(r.method)}",route="${labelValue(r.route)}"`);

    family('authd_authentications_total', 'counter', 'POST /authenticate answers, by credential type and result.');
    for (const kind of ['username', 'apikey'] as const) {
      for (const result of ['success', 'failure'] as const) {
        out.push(`authd_authentications_total{type="${kind}",result="${result}"} ${this.authentications[kind][result]}`);
      }
    }
    family('authd_tokens_issued_total', 'counter', 'Access tokens answered by POST /authenticate, by signing algorithm.');
    for (const alg of tokenAlgs) out.push(`authd_tokens_issued_total{alg="${alg}"} ${this.tokensIssued[alg]}`);
    family('authd_token_introspections_total', 'counter', 'POST /tokens/introspect answers, by result.');
    for (const result of ['active', 'inactive'] as const) out.push(`authd_token_introspections_total{result="${result}"} ${this.introspections[result]}`);
    family('authd_caller_authentications_total', 'counter', 'Basic credentials checked for calls to the admin API, by result.');
    for (const result of ['success', 'failure'] as const) out.push(`authd_caller_authentications_total{result="${result}"} ${this.callers[result]}`);

    const gauge = (name: string, help: string, value: number, type: 'gauge' | 'counter' = 'gauge'): void => {
      family(name, type, help);
      out.push(`${name} ${value}`);
    };
    gauge('authd_hash_workers', 'Worker threads that run argon2id (HASH_WORKERS).', this.sources.hashWorkers);
    gauge('authd_hash_queue_depth', 'Password hashing jobs waiting for or running on a worker.', this.sources.hashQueueDepth());
    gauge('authd_search_index_building', '1 while the search index is being built (searches scan meanwhile), else 0.', this.sources.searchIndexBuilding() ? 1 : 0);
    const stats = this.sources.persistence?.stats;
    if (stats !== undefined) this.#persistence(gauge, stats);
    gauge('authd_log_last_seq', 'Sequence number of the newest record applied (in cluster mode, of the stream message).', this.sources.lastSeq);
    const cluster = this.sources.cluster;
    if (cluster !== undefined) {
      gauge('authd_cluster_ready', '1 once this node has applied what the stream held at its start and is connected to NATS, else 0.', cluster.readiness === 'ready' ? 1 : 0);
      gauge('authd_cluster_write_conflicts_total', 'Write batches decided again because another node appended first.', cluster.conflicts, 'counter');
      gauge('authd_cluster_writes_refused_total', 'Writes answered 503 because the stream was unavailable or kept moving.', cluster.refused, 'counter');
      if (cluster.rejected !== undefined) {
        family('authd_cluster_rejected_messages_total', 'counter', 'Messages from NATS never applied, by kind: not opening under the server key (log, failure, snapshot, status; replayed failures too), or a log message that landed at another sequence than it was decided for (void).');
        for (const [kind, n] of Object.entries(cluster.rejected)) out.push(`authd_cluster_rejected_messages_total{kind="${labelValue(kind)}"} ${n}`);
      }
    }

    if (this.sources.renderCacheBytes !== undefined) {
      gauge('authd_render_cache_bytes', 'Bytes held by kept User renderings (GET of a User, POST /authenticate), bounded by renderCacheBytesMax.', this.sources.renderCacheBytes());
    }
    const verify = this.sources.verifyCache;
    if (verify !== undefined) {
      const { hits, expiredIdle, expiredTtl, evicted } = verify.counts;
      gauge('authd_verify_cache_entries', 'Password verifications remembered (VERIFY_CACHE_IDLE_MS, VERIFY_CACHE_TTL_MS).', verify.size);
      gauge('authd_verify_cache_hits_total', 'Password checks answered by the verify cache instead of argon2id.', hits, 'counter');
      family('authd_verify_cache_expired_total', 'counter', 'Remembered verifications ended by the idle time or by the maximum since argon2id.');
      out.push(`authd_verify_cache_expired_total{reason="idle"} ${expiredIdle}`, `authd_verify_cache_expired_total{reason="ttl"} ${expiredTtl}`);
      gauge('authd_verify_cache_evicted_total', 'Remembered verifications pushed out by the entry limit.', evicted, 'counter');
    }

    family('authd_entities', 'gauge', 'Entities held, by kind.');
    for (const [kind, n] of Object.entries(this.sources.counts())) out.push(`authd_entities{kind="${kind}"} ${n}`);

    const memory = process.memoryUsage();
    gauge('process_resident_memory_bytes', 'Resident set size of the process.', memory.rss);
    gauge('nodejs_heap_used_bytes', 'V8 heap in use.', memory.heapUsed);
    gauge('process_uptime_seconds', 'Seconds since the metrics began (service start).', (Date.now() - this.startedAtMs) / 1000);

    const runtime = this.sources.runtime;
    if (runtime !== undefined) {
      family('nodejs_gc_duration_seconds', 'histogram', 'Garbage-collection pauses of the main thread, by kind.');
      for (const [kind, h] of runtime.gc) h.render(out, 'nodejs_gc_duration_seconds', `kind="${kind}"`);
      family('authd_event_loop_delay_seconds', 'histogram', `How late a ${eventLoopDelaySampleMs} ms timer ran, one sample per run: the wait a request arriving then would have had before being read.`);
      runtime.loopDelay.render(out, 'authd_event_loop_delay_seconds', '');
    }
    return `${out.join('\n')}\n`;
  }

  /** The embedded log's and snapshots' gauges. */
  #persistence(gauge: (name: string, help: string, value: number, type?: 'gauge' | 'counter') => void, stats: PersistenceStats): void {
    gauge('authd_wal_records_total', 'Records written to the write-ahead log by this process.', stats.wal.records, 'counter');
    gauge('authd_wal_bytes_total', 'Bytes written to the write-ahead log by this process.', stats.wal.bytes, 'counter');
    gauge('authd_wal_writes_total', 'Write calls to the write-ahead log (one per group commit, or more for large ones).', stats.wal.writes, 'counter');
    gauge('authd_wal_fsyncs_total', 'fdatasync calls on the write-ahead log.', stats.wal.fsyncs, 'counter');
    gauge('authd_wal_last_fsync_seconds', 'Duration of the most recent fdatasync of the write-ahead log.', stats.wal.lastFsyncMs / 1000);
    gauge('authd_snapshots_total', 'Snapshots written by this process.', stats.snapshotsTaken, 'counter');
    gauge('authd_snapshot_failures_total', 'Snapshots that failed to be written by this process.', stats.snapshotsFailed, 'counter');
    gauge('authd_snapshot_last_duration_seconds', 'How long writing the most recent snapshot took.', stats.lastSnapshotMs / 1000);
    gauge('authd_snapshot_last_bytes', 'Size of the most recent snapshot.', stats.lastSnapshotBytes);
    gauge('authd_records_since_snapshot', 'Log records written since the most recent snapshot.', stats.recordsSinceSnapshot);
  }
}
