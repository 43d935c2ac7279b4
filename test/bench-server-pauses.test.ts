// The benchmark's per-scenario pause line: the difference of two /metrics expositions, bucket by bucket, and its summary.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describePauses, over, pausesBetween, routeTimesBetween } from '../bench/lib/server-pauses.js';
import { Histogram } from '../src/http/histogram.js';
import { pauseBucketsS } from '../src/http/runtime-stats.js';

/** An exposition as the server writes it: one major and one minor series, and the loop delay. */
function exposition(major: number[], minor: number[], loop: number[]): string {
  const out: string[] = ['# TYPE nodejs_gc_duration_seconds histogram'];
  const fill = (values: number[]): Histogram => {
    const h = new Histogram(pauseBucketsS);
    for (const v of values) h.record(v);
    return h;
  };
  fill(major).render(out, 'nodejs_gc_duration_seconds', 'kind="major"');
  fill(minor).render(out, 'nodejs_gc_duration_seconds', 'kind="minor"');
  out.push('authd_entities{kind="users"} 3');
  fill(loop).render(out, 'authd_event_loop_delay_seconds', '');
  return `${out.join('\n')}\n`;
}

test('only what happened between the scrapes counts, in the bucket it fell in', () => {
  const first = exposition([0.03], [0.004, 0.004], [0.001, 0.07]);
  const second = exposition([0.03, 0.04, 0.3], [0.004, 0.004, 0.006], [0.001, 0.07, 0.002, 0.03, 0.12]);
  const p = pausesBetween(first, second)!;
  assert.equal(p.gc['major']!.count, 2);
  assert.ok(Math.abs(p.gc['major']!.seconds - 0.34) < 1e-9);
  assert.deepEqual(p.gc['major']!.perBucket.filter((b) => b.n !== 0), [{ le: '0.05', n: 1 }, { le: '0.5', n: 1 }]);
  assert.equal(p.gc['minor']!.count, 1);
  assert.equal(p.loopDelay.count, 3);
  assert.deepEqual(p.loopDelay.perBucket.filter((b) => b.n !== 0), [{ le: '0.005', n: 1 }, { le: '0.05', n: 1 }, { le: '0.25', n: 1 }]);
  assert.equal(
    describePauses(p),
    'event loop late by more than 20 ms 2 times, the longest (100, 250] ms; GC: 2 major (340 ms, longest (250, 500] ms), 1 minor (6 ms, longest (5, 10] ms)',
  );
});

test('CPU, when measured, closes the line', () => {
  const same = exposition([], [], []);
  const p = { ...pausesBetween(same, same)!, cpu: { serverPct: 101, eventLoopPct: 97, generatorPct: 63 } };
  assert.ok(describePauses(p).endsWith('; GC: none; CPU (% of a core): server 101 (event loop 97), load generator 63'));
});

test('a quiet window says so; a server without the histograms gives nothing', () => {
  const same = exposition([], [0.002], [0.001]);
  assert.equal(describePauses(pausesBetween(same, same)!), 'event loop never late by more than 20 ms; GC: none');
  assert.equal(pausesBetween('', 'authd_entities{kind="users"} 3\n'), undefined);
});

test("a route's requests between the scrapes, by the server's own time; other routes apart", () => {
  const bounds = [0.0005, 0.001, 0.0025, 0.005] as const;
  const routes = (search: number[], other: number[]): string => {
    const out: string[] = [];
    const fill = (values: number[], route: string): void => {
      const h = new Histogram(bounds);
      for (const v of values) h.record(v);
      h.render(out, 'authd_http_request_duration_seconds', `method="GET",route="${route}"`);
    };
    fill(search, '/users/search/:search');
    fill(other, '/users/user/:userid');
    return `${out.join('\n')}\n`;
  };
  const first = routes([0.0002, 0.003], [0.004]);
  const second = routes([0.0002, 0.003, 0.0003, 0.0008, 0.002, 0.004], [0.004, 0.004, 0.004]);
  const t = routeTimesBetween(first, second, 'GET', '/users/search/:search')!;
  assert.equal(t.count, 4);
  assert.equal(t.count - over(t, 0.001), 2);
  assert.equal(over(t, 0.0025), 1);
  assert.equal(routeTimesBetween(first, second, 'GET', '/users/users'), undefined);
});
