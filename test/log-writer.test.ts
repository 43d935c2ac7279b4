// The log output: audit lines read back as the JSON they describe, whatever their text; lines keep their order, leave together logFlushMs after the first, and survive a batch that fills.

import assert from 'node:assert/strict';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { auditFieldCharsMax, logBatchBytes, logFlushMs } from '../src/config/limits.js';
import { Audit, authenticationTargets, type AuditEntry } from '../src/service/audit.js';
import { fdOutput, LogWriter } from '../src/service/log-writer.js';

function collector(): { writer: LogWriter; writes: string[]; lines(): Record<string, unknown>[] } {
  const writes: string[] = [];
  // The bytes are the writer's own buffer, reused after the call: read them now.
  const writer = new LogWriter((bytes) => writes.push(Buffer.from(bytes).toString('utf8')));
  return {
    writer, writes,
    lines: () => writes.join('').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

/** Past the writer's wait (timers of equal delay run in the order they were set). */
const flushed = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, logFlushMs));

test('an audit line reads back as the entry, whatever text its fields hold', async () => {
  const { writer, lines } = collector();
  const audit = new Audit(writer);
  const hostile = ['Zoë Ångström', 'emoji \u{1f511} key', 'lone \ud800 surrogate', 'quote " and \\ backslash', 'line\nbreak\r\u0000', 'sep\u2028\u2029\u202e', ''];
  const entries: AuditEntry[] = hostile.map((s, i) => ({
    action: `authenticate ${s}`, caller: i % 2 === 0 ? null : s, targets: { application: s, [`k${s}`]: 'v' },
    outcome: 'failure', reason: s, address: s, peer: `${s}-peer`,
  }));
  entries.push({ action: 'caller.authenticate', caller: 'id1', targets: {}, outcome: 'success', address: '10.0.0.1', peer: '10.0.0.1' });
  const before = Date.now();
  for (const e of entries) audit.record(e);
  await flushed();
  const got = lines();
  assert.equal(got.length, entries.length);
  // Separators that viewers take as line breaks arrive as \uXXXX text; a lone surrogate, escaped by JSON.stringify, as itself.
  const text = (s: string): string => s.replace(/[\u2028\u2029\u202e]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    const line = got[i]!;
    assert.equal(line['level'], 30);
    assert.ok(typeof line['time'] === 'number' && line['time'] >= before && line['time'] <= Date.now());
    assert.equal(line['service'], 'authd');
    assert.equal(line['msg'], 'audit');
    assert.equal(line['audit'], text(e.action));
    assert.equal(line['caller'], e.caller === null ? null : text(e.caller));
    assert.deepEqual(line['targets'], Object.fromEntries(Object.entries(e.targets).map(([k, v]) => [text(k), text(v)])));
    assert.equal(line['outcome'], e.outcome);
    assert.equal(line['address'], text(e.address));
    assert.equal(line['reason'], e.reason === undefined ? undefined : text(e.reason));
    assert.equal(line['peer'], e.peer === e.address ? undefined : text(e.peer!));
  }
});

test("an authentication's line from its parts, kept (as bytes) or not, is the line of the whole entry, for any caller", async () => {
  const { writer, writes } = collector();
  const audit = new Audit(writer);
  type Parts = { application?: string; user?: string; apikey?: string; outcome: string; reason?: string; address: string; peer?: string };
  const cases: Parts[] = [
    { application: 'a1', user: 'u1', apikey: 'k1', outcome: 'success', address: '203.0.113.7', peer: '10.0.0.1' },
    { user: 'Zoë "q" \u2028 \u{1f511}', outcome: 'success', address: '10.0.0.1', peer: '10.0.0.1' },
    { application: 'x\ud800y\udc00', apikey: 'K\u202e', outcome: 'failure', reason: 'wrong_secret', address: 'x\ny' },
    { outcome: 'locked', reason: 'locked_address', address: '198.51.100.2' },
    // Plain text at the cut (as bytes) and one past it (cut, as text), every ASCII edge of plain text, the targets one by one.
    { application: 'a'.repeat(auditFieldCharsMax), user: 'u1', outcome: 'success', address: ' !#[]~', peer: '::1' },
    { apikey: 'k'.repeat(auditFieldCharsMax + 1), outcome: 'failure', address: '10.0.0.4' },
    { apikey: 'k1', outcome: 'failure', reason: 'key_disabled', address: '10.0.0.2', peer: '10.0.0.2' },
    { application: 'a1', apikey: 'k1', outcome: 'success', address: 'x\u007fy' },
    { user: 'u1', apikey: 'k1', outcome: 'overloaded', address: 'x\\y' },
    { user: 'u1', outcome: 'error', address: '10.0.0.3', peer: 'p"q' },
  ];
  for (const c of cases) {
    const targets: Record<string, string> = {};
    if (c.application !== undefined) targets['application'] = c.application;
    if (c.user !== undefined) targets['user'] = c.user;
    if (c.apikey !== undefined) targets['apikey'] = c.apikey;
    const text = authenticationTargets(c.application, c.user, c.apikey);
    for (const caller of [null, 'c1', 'bad "caller"\u2029']) {
      audit.record({ action: 'authenticate', caller, targets, outcome: c.outcome, reason: c.reason, address: c.address, peer: c.peer });
      audit.recordAuthentication('authenticate', caller, c.application, c.user, c.apikey, c.outcome, c.reason, c.address, c.peer);
      audit.recordPrepared(audit.prepareAuthentication(text, c.outcome, c.reason, c.address, c.peer, { caller }), caller);
      // Kept for another caller: written as text, with this one.
      audit.recordPrepared(audit.prepareAuthentication(text, c.outcome, c.reason, c.address, c.peer, { caller: 'someone else' }), caller);
    }
  }
  await flushed();
  const got = writes.join('').split('\n').filter((l) => l !== '').map((l) => l.replace(/"time":[0-9]+/, ''));
  assert.equal(got.length, cases.length * 12);
  for (let i = 0; i < got.length; i += 4) {
    for (let j = 1; j < 4; j++) assert.equal(got[i + j], got[i]);
  }
  assert.ok(got.some((l) => l.includes('\\ud800')), 'a lone surrogate arrives escaped, kept or not');
});

test('a kept line carries its own time, whatever its digits', async () => {
  const { writer, lines } = collector();
  const audit = new Audit(writer);
  const prepared = audit.prepareAuthentication(authenticationTargets(undefined, 'u1', undefined), 'success', undefined, '10.0.0.1', undefined, { caller: 'c1' });
  const times = [0, 7, 10, 99, 100, 1_000_000_000_000, 1_795_312_557_943, Number.MAX_SAFE_INTEGER];
  const realNow = Date.now;
  try {
    for (const time of times) {
      Date.now = () => time;
      audit.recordPrepared(prepared, 'c1');
    }
  } finally {
    Date.now = realNow;
  }
  await flushed();
  assert.deepEqual(lines().map((l) => l['time']), times);
  assert.ok(lines().every((l) => l['caller'] === 'c1' && l['audit'] === 'authenticate'));
});

test('lines leave together logFlushMs after the first, in the order they were written', async () => {
  const { writer, writes, lines } = collector();
  const audit = new Audit(writer);
  writer.write('{"msg":"first"}\n');
  audit.record({ action: 'authenticate', caller: null, targets: {}, outcome: 'success', address: '10.0.0.1' });
  writer.write('{"msg":"third"}\n');
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(writes.length, 0, 'nothing written before the wait is over');
  await flushed();
  assert.equal(writes.length, 1, 'one write for all three');
  assert.deepEqual(lines().map((l) => l['msg']), ['first', 'audit', 'third']);
  await flushed();
  assert.equal(writes.length, 1, 'nothing more to write, no write');
});

test('more lines than a batch holds are written more than once, and every line arrives whole and in order', async () => {
  const { writer, writes, lines } = collector();
  const audit = new Audit(writer);
  const count = Math.ceil((logBatchBytes * 3) / 200);
  for (let i = 0; i < count; i++) {
    if (i % 10 === 0) writer.write(`${JSON.stringify({ msg: 'pino', i, text: 'é'.repeat(50) })}\n`);
    else audit.record({ action: 'authenticate', caller: `caller-${i}`, targets: { user: `user-${i}` }, outcome: 'success', address: '10.0.0.1' });
  }
  await flushed();
  assert.ok(writes.length >= 3, `${writes.length} writes`);
  const got = lines();
  assert.equal(got.length, count);
  got.forEach((line, i) => {
    if (i % 10 === 0) assert.equal(line['i'], i);
    else assert.equal(line['caller'], `caller-${i}`);
  });
  assert.ok(writes.every((w) => Buffer.byteLength(w) <= logBatchBytes), 'a batch never grows past logBatchBytes');
  // A line longer than a whole batch goes out at once, after what came before it.
  const long = `${JSON.stringify({ msg: 'long', text: 'x'.repeat(logBatchBytes) })}\n`;
  audit.record({ action: 'before', caller: null, targets: {}, outcome: 'success', address: 'a' });
  writer.write(long);
  await flushed();
  assert.deepEqual(lines().slice(-2).map((l) => l['audit'] ?? l['msg']), ['before', 'long']);
});

test('fdOutput writes every byte to the file descriptor, of short lines and of one longer than a batch', () => {
  const dir = mkdtempSync(join(tmpdir(), 'authd-log-'));
  try {
    const path = join(dir, 'out.log');
    const fd = openSync(path, 'w');
    const writer = new LogWriter(fdOutput(fd));
    const text = `${'ab\u00e9\u{1f511}'.repeat(logBatchBytes)}\n`;
    writer.write('{"msg":"one"}\n');
    writer.flush();
    writer.write(text);
    writer.write('{"msg":"two"}\n');
    writer.flush();
    closeSync(fd);
    assert.equal(readFileSync(path, 'utf8'), `{"msg":"one"}\n${text}{"msg":"two"}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
