// Who is in a cluster and how far each node has got: nodes answer on the core NATS subject <stream>.status, sealed for the request's nonce; `authctl cluster status` asks.

import { randomBytes } from 'node:crypto';
import { NoRespondersError, type NatsConnection } from '@nats-io/transport-node';
import { nodeStatusNonceBytes } from '../config/limits.js';
import type { RejectedMessages } from './rejected.js';
import { sealContext, type ClusterSeal } from './seal.js';

export type NodeReadiness = 'ready' | 'catching_up' | 'degraded';

/** One node's answer: its name, the last stream sequence it applied, and since when it runs. */
export interface NodeStatus {
  readonly node: string;
  readonly applied_seq: number;
  readonly readiness: NodeReadiness;
  /** The package version the node runs (null when it has none). */
  readonly version: string | null;
  /** ISO time of the process start. */
  readonly started_at: string;
}

/** Core NATS, not the stream: a status request is not part of the log (the stream's subject is <stream>.log). */
export function statusSubject(stream: string): string {
  return `${stream}.status`;
}

/** An answer opens only for the request that carried this nonce: a captured answer does not answer another request. */
function answerContext(stream: string, nonce: Uint8Array): Buffer {
  return sealContext('status', stream, statusSubject(stream), Buffer.from(nonce).toString('hex'));
}

/**
 * Answers every status request with status() (its node field always nodeId), sealed for the request's nonce, until
 * stop(). A request that is not a nonce is counted as rejected and not answered.
 */
export function serveNodeStatus(
  nc: NatsConnection, stream: string, nodeId: string, status: () => NodeStatus, seal: ClusterSeal, rejected: RejectedMessages,
): { stop(): void } {
  const sub = nc.subscribe(statusSubject(stream), {
    callback: (err, msg) => {
      if (err !== null || msg.reply === undefined) return;
      if (msg.data.length !== nodeStatusNonceBytes) {
        rejected.reject('status', { subject: msg.subject, bytes: msg.data.length });
        return;
      }
      try {
        msg.respond(seal.seal(Buffer.from(JSON.stringify({ ...status(), node: nodeId })), answerContext(stream, msg.data)));
      } catch {
        // The connection is closing or away: the asker counts this node as not answering, which it is.
      }
    },
  });
  return { stop: () => sub.unsubscribe() };
}

const readinessValues: ReadonlySet<string> = new Set<NodeReadiness>(['ready', 'catching_up', 'degraded']);

/** The NodeStatus in an answer, or undefined when it is not one (another program on the subject, a newer format). */
export function parseNodeStatus(data: Uint8Array): NodeStatus | undefined {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(data).toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  if (typeof v['node'] !== 'string' || !Number.isSafeInteger(v['applied_seq']) || (v['applied_seq'] as number) < 0) return undefined;
  if (typeof v['readiness'] !== 'string' || !readinessValues.has(v['readiness'])) return undefined;
  if (v['version'] !== null && typeof v['version'] !== 'string') return undefined;
  if (typeof v['started_at'] !== 'string') return undefined;
  return {
    node: v['node'], applied_seq: v['applied_seq'] as number, readiness: v['readiness'] as NodeReadiness,
    version: v['version'] as string | null, started_at: v['started_at'],
  };
}

/**
 * Every node that answers a status request within waitMs, by name (a node is a subscriber, so each answers once).
 * Answers that do not open under the key for this request, or are not a NodeStatus, are counted in `unreadable`
 * rather than dropped silently.
 */
export async function askNodeStatus(nc: NatsConnection, stream: string, waitMs: number, seal: ClusterSeal): Promise<{ nodes: NodeStatus[]; unreadable: number }> {
  const nodes: NodeStatus[] = [];
  let unreadable = 0;
  const nonce = randomBytes(nodeStatusNonceBytes);
  const context = answerContext(stream, nonce);
  try {
    const answers = await nc.requestMany(statusSubject(stream), nonce, { strategy: 'timer', maxWait: waitMs });
    for await (const answer of answers) {
      const opened = seal.open(answer.data, context);
      const status = opened === undefined ? undefined : parseNodeStatus(opened);
      if (status === undefined) unreadable++;
      else nodes.push(status);
    }
  } catch (err) {
    // No subscriber on the subject: no node runs, which is an answer too.
    if (!(err instanceof NoRespondersError)) throw err;
  }
  nodes.sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
  return { nodes, unreadable };
}
