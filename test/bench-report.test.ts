// The benchmark's page and summary (issue 24): self-contained, every string from the report escaped, each row's outcome shown.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { htmlPathBeside, htmlReport } from '../bench/lib/html-report.js';
import { latencyTargetsMs, targetSummary, type BenchReport, type ScenarioResult } from '../bench/lib/report.js';

const hostileName = `apikey <script>alert('x')</script> & "distinct" {id}`;

function row(fields: Partial<ScenarioResult> & Pick<ScenarioResult, 'id' | 'name'>): ScenarioResult {
  return { reqPerSec: null, p50Ms: null, p99Ms: null, ratio: null, ceiling: null, target: '-', pass: null, verdict: '', extra: {}, ...fields };
}

const scenarios: ScenarioResult[] = [
  row({ id: '0', name: 'GET /health', reqPerSec: 90_000, p50Ms: 0.4, p99Ms: 1.5, ratio: 0.95, ceiling: 'GET', verdict: 'the pipeline' }),
  row({ id: 'A', name: 'POST /authenticate, apikey (repeat)', reqPerSec: 60_000, p50Ms: 0.55, p99Ms: 4.9, ratio: 0.66, ceiling: 'POST', ratioMin: 0.6, target: '>= 0.6 x ceiling', pass: true, verdict: '0.66 x' }),
  row({
    id: "A'", name: hostileName, reqPerSec: 20_000, p50Ms: 1.6, p99Ms: 145, ratio: 0.23, ceiling: 'POST', ratioMin: 0.5,
    target: '>= 0.5 x ceiling fed the same requests', pass: false, verdict: '0.23 x; ceiling 87,000/s <b>',
    cpu: { generator: 'wrk', generatorShare: 0.25, serverShare: 1.2 }, extra: { ceilingCpu: { generator: 'wrk', generatorShare: 0.91, serverShare: 0.98 } },
  }),
  row({
    id: "F'", name: 'GET /users/search/{term}?limit=20 & <more>', reqPerSec: 2_500, p50Ms: 0.25, p99Ms: 2.4, ratio: 0.23, ceiling: 'GET',
    target: 'p50 <= 0.3 ms, p99 <= 2 ms', pass: false, verdict: 'p50 0.25 / p99 2.40 ms',
    cpu: { generator: 'wrk', generatorShare: Number.NaN, serverShare: 0.86 },
  }),
  row({ id: 'G', name: "start-up of 1,000 users <'fast'>", target: '<= 5 s, RSS <= 1,500 MB', pass: true, verdict: '3.1 s spawn to /health OK; RSS 1,100 MB' }),
  row({
    id: 'M', name: 'mix', target: '-', pass: false, verdict: 'ERROR: sanity request failed (500 <html><script src="https://evil.example/x.js"></script>)',
    extra: { error: 'sanity request failed' },
  }),
];

const report: BenchReport = {
  mode: 'quick', users: 1_000, connections: 50, durationS: 3, totalS: 80,
  machine: { cpus: 2, availableParallelism: 2, model: 'Test CPU <R>', memoryGiB: 4, node: 'v20.15.0', kernel: '6.1 & co', date: '2026-11-25T00:00:00.000Z' },
  frontEnd: { kind: 'uws', build: 'uWebSockets.js 20.30.0', reason: 'a build loads' },
  server: { FSYNC: 'always', LOG_LEVEL: '<warn>' },
  ceilings: { meanPerSec: { GET: 95_000, POST: 87_000 }, runs: [{ get: { reqPerSec: 95_000 }, post: { reqPerSec: 87_000 } }], beside: { A: 90_000 } },
  scenarios,
  micro: {
    users: 1_000, loadMs: 100, searchBuildMs: 50, searchSpeedup: 100, searchTerms: 10, searchPerTerm: [], argon2VerifyMs: 50, argon2HashMs: 50,
    results: [{ name: 'verify <fast>', group: "argon2id & 'friends'", opsPerSec: 20, meanUs: 50_000, marginPct: 2.5, samples: 30 }],
  },
};

/** The escaping the page must use, written out here so that a fault in the page's own cannot hide itself. */
function escaped(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

/** The table row of one scenario, found by its escaped id. */
function tableRow(html: string, id: string): string {
  const rows = html.split('<tr ').map((r) => r.slice(0, r.indexOf('</tr>'))).filter((r) => r.startsWith('class="row ') && r.includes(`<span class="sid">${escaped(id)}</span>`));
  assert.equal(rows.length, 1, `one targets row for ${id}`);
  return rows[0]!;
}

const page = htmlReport(report);

test('the page fetches nothing: no URL in its markup, no script, stylesheet link, image or frame', () => {
  for (const match of page.matchAll(/https?:\/\//g)) {
    // Only inside text, where the error message put it, escaped: never inside a tag.
    const before = page.slice(0, match.index);
    assert.ok(before.lastIndexOf('>') > before.lastIndexOf('<'), `a URL inside a tag at ${match.index}`);
  }
  for (const banned of [/<script/i, /<link/i, /<img/i, /<iframe/i, /<object/i, /<embed/i, /url\(/i, /@import/i]) assert.doesNotMatch(page, banned);
  // With every '<' of the data escaped, each '<' left opens one of the page's own tags.
  for (const [tag] of page.matchAll(/<[^>]*>/g)) assert.doesNotMatch(tag, /\s(?:src|href|xlink:href|srcset|action)=/i, tag);
  assert.match(page, /^<!DOCTYPE html>/);
});

test('the charts are inline SVG', () => {
  assert.ok((page.match(/<svg /g) ?? []).length >= 3);
  assert.equal((page.match(/<svg /g) ?? []).length, (page.match(/<\/svg>/g) ?? []).length);
  assert.doesNotMatch(page, /xlink:href|<use/);
});

test("every '<' and '&' of the report's strings is escaped: only the page's own tags and entities remain", () => {
  const allowed = new Set([
    'html', 'head', 'meta', 'title', 'style', 'body', 'h1', 'h2', 'p', 'dl', 'dt', 'dd', 'strong', 'span', 'br', 'details', 'summary',
    'table', 'tr', 'th', 'td', 'svg', 'g', 'rect', 'line', 'circle', 'path', 'text',
  ]);
  for (const m of page.matchAll(/<\/?([a-zA-Z][a-zA-Z0-9]*)/g)) assert.ok(allowed.has(m[1]!.toLowerCase()), `unexpected tag <${m[1]}>`);
  assert.doesNotMatch(page, /&(?!(?:amp|lt|gt|quot|#39|le|ge|plusmn);)/, 'a bare & in the page');
  assert.ok(page.includes(escaped(hostileName)), 'the hostile name, escaped');
  assert.ok(page.includes(escaped("start-up of 1,000 users <'fast'>")));
  assert.ok(page.includes(escaped('<warn>')), 'server settings escaped');
  assert.ok(page.includes(escaped("argon2id & 'friends'")), 'micro table escaped');
});

test('each scenario appears, with its outcome: met, missed, error or info', () => {
  for (const s of scenarios) assert.ok(page.includes(`<span class="sid">${escaped(s.id)}</span>`), `scenario ${s.id}`);
  assert.match(tableRow(page, 'A'), /^class="row met"/);
  const missed = tableRow(page, "A'");
  assert.match(missed, /^class="row missed"/);
  assert.match(missed, />MISSED</);
  assert.match(missed, /0\.23 x POST ceiling<br>target &ge; 0\.5/);
  assert.match(tableRow(page, 'M'), /^class="row error"[\s\S]*>ERROR</);
  assert.match(tableRow(page, '0'), /^class="row info"/);
  assert.match(tableRow(page, 'G'), /^class="row met"[\s\S]*3\.1 s spawn to \/health OK/);
});

test('a latency row shows p50 and p99 against their bounds in ms, the missed one red', () => {
  const latency = tableRow(page, "F'");
  assert.match(latency, /p50 0\.25 ms \(&le; 0\.3 ms\)<br>p99 2\.40 ms \(&le; 2 ms\)/);
  assert.match(latency, /fill="#c62828"><title>p99: 2\.40 ms<\/title>/);
  assert.match(latency, /fill="#2e7d32"><title>p50: 0\.25 ms<\/title>/);
  assert.match(page, /aria-label="p50 and p99 latency per scenario, log scale"/);
});

test('a generator above 80% of a core is flagged', () => {
  assert.equal((page.match(/GENERATOR-BOUND<\/span>/g) ?? []).length, 1);
  assert.match(page, /wrk \? \/ server 86%/, 'a share that was not measured (NaN) shows as ?');
});

test('the page is drawn the same from the report read back from its JSON (NaN written as null)', () => {
  const readBack = JSON.parse(JSON.stringify(report)) as BenchReport;
  assert.equal(htmlReport(readBack), page);
});

test('the summary: one line per target with its value, then the count', () => {
  const lines = targetSummary(scenarios);
  assert.deepEqual(lines.map((l) => l.split(/\s+/)[0]), ['A', "A'", "F'", 'G', 'M', '2']);
  assert.match(lines[1]!, /^A' +0\.23 x ceiling +\(target >= 0\.5\) +MISSED by 0\.27$/);
  assert.match(lines[0]!, /^A +0\.66 x ceiling +\(target >= 0\.6\) +MET$/);
  assert.match(lines[2]!, /^F' +p50 0\.25 ms, p99 2\.40 ms +\(target p50 <= 0\.3 ms, p99 <= 2 ms\) +MISSED p99 by 0\.40 ms$/);
  assert.match(lines[3]!, /^G +3\.1 s spawn to \/health OK +\(target <= 5 s, RSS <= 1,500 MB\) +MET$/);
  assert.match(lines[4]!, /^M +ERROR: sanity request failed/);
  assert.equal(lines[5], '2 of 5 targets met');
});

test('a row measured beside the floor gives the floor\'s ratio after its own', () => {
  const aPrime = scenarios.find((r) => r.id === "A'")!;
  const [line, count] = targetSummary([{ ...aPrime, extra: { ...aPrime.extra, floor: { reqPerSec: 53_796, ratio: 0.456 } } }]);
  assert.match(line!, /^A' +0\.23 x ceiling +\(target >= 0\.5\) +MISSED by 0\.27; the floor 0\.46$/);
  assert.equal(count, '0 of 1 targets met');
});

test('latency bounds are read only from the opening of a target', () => {
  assert.deepEqual(latencyTargetsMs('p50 <= 0.3 ms, p99 <= 2 ms'), { p50Ms: 0.3, p99Ms: 2 });
  assert.deepEqual(latencyTargetsMs('p50 <= 1 ms, p99 <= 5 ms, >= 100x linear scan'), { p50Ms: 1, p99Ms: 5 });
  assert.equal(latencyTargetsMs('>= 0.9 x workers/verify; /health p99 < 5 ms'), undefined);
  assert.equal(latencyTargetsMs('event-loop delay max <= 20 ms'), undefined);
});

test('the page of latest-uws.json is latest-uws.html beside it', () => {
  assert.equal(htmlPathBeside('/x/bench/results/latest-uws.json'), '/x/bench/results/latest-uws.html');
});
