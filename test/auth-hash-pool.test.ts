// Pins the hash pool: argon2id and bcrypt verification in workers, the bounded queue with known-good jobs first and a share per address, bcrypt held to argon2id time, crashes, close().

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
import type { Worker } from 'node:worker_threads';
import { bcrypt } from 'hash-wasm';
import {
  argon2HashBytes,
  argon2IterationsDefault,
  argon2MemoryKiBDefault,
  argon2ParallelismDefault,
  argon2SaltBytes,
  hashRetryAfterS,
  passwordBytesMax,
} from '../src/config/limits.js';
import { HashPool, HashPoolError, isArgon2idHash, OverloadedError, type Argon2Params } from '../src/auth/hash-pool.js';
import { parseArgon2idHash } from '../src/auth/password-hash-format.js';

/** Small params keep the suite fast; one test below runs the production defaults. */
const fast: Argon2Params = { memoryKiB: 1024, iterations: 1, parallelism: 1 };
/** Long enough (tens of ms) that a job is certainly still running when the test acts on it. */
const slow: Argon2Params = { memoryKiB: 8192, iterations: 10, parallelism: 1 };

const pools: HashPool[] = [];
function makePool(opts: Partial<{ workers: number; queueMax: number; argon2: Argon2Params }> = {}): HashPool {
  const pool = new HashPool({ workers: opts.workers ?? 2, queueMax: opts.queueMax ?? 64, argon2: opts.argon2 ?? fast });
  pools.push(pool);
  return pool;
}
after(async () => {
  await Promise.all(pools.map((pool) => pool.close()));
});

async function bcryptHash(password: string, costFactor = 4): Promise<string> {
  const salt = new Uint8Array(16).map((_, i) => (i * 37 + 11) & 0xff);
  return bcrypt({ password, salt, costFactor, outputType: 'encoded' });
}

describe('argon2id', () => {
  test('a hash verifies with its password and not with another', async () => {
    const pool = makePool();
    const phc = await pool.hashPassword('correct horse battery staple');
    assert.equal(await pool.verifyPassword('correct horse battery staple', phc), true);
    assert.equal(await pool.verifyPassword('correct horse battery stapl', phc), false);
    assert.equal(await pool.verifyPassword('', phc), false);
  });

  test('an empty password is refused by hashPassword and verifies false', async () => {
    const pool = makePool();
    await assert.rejects(pool.hashPassword(''), RangeError);
    assert.equal(await pool.verifyPassword('', await pool.hashPassword('x')), false);
  });

  test('the PHC string carries the pool params, a 16-byte salt and a 32-byte hash', async () => {
    const pool = makePool({ argon2: { memoryKiB: 2048, iterations: 2, parallelism: 2 } });
    const phc = await pool.hashPassword('pässwörd ✓');
    assert.ok(phc.startsWith('$argon2id$v=19$m=2048,t=2,p=2$'), phc);
    assert.ok(isArgon2idHash(phc));
    const parts = parseArgon2idHash(phc);
    assert.ok(parts !== null);
    assert.equal(parts.salt.length, argon2SaltBytes);
    assert.equal(parts.hash.length, argon2HashBytes);
    assert.equal(await pool.verifyPassword('pässwörd ✓', phc), true);
  });

  test('the same password hashes differently each time (random salt)', async () => {
    const pool = makePool();
    const [a, b] = await Promise.all([pool.hashPassword('same'), pool.hashPassword('same')]);
    assert.notEqual(a, b);
  });

  test('a published argon2id vector made by another implementation verifies', async () => {
    const pool = makePool();
    const phc = '$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc';
    assert.equal(await pool.verifyPassword('password', phc), true);
    assert.equal(await pool.verifyPassword('Password', phc), false);
  });

  test('production default params hash and verify', async () => {
    const argon2 = { memoryKiB: argon2MemoryKiBDefault, iterations: argon2IterationsDefault, parallelism: argon2ParallelismDefault };
    const pool = makePool({ workers: 1, argon2 });
    const phc = await pool.hashPassword('default params');
    assert.ok(phc.startsWith(`$argon2id$v=19$m=${argon2MemoryKiBDefault},t=${argon2IterationsDefault},p=${argon2ParallelismDefault}$`));
    assert.equal(await pool.verifyPassword('default params', phc), true);
    assert.equal(await pool.verifyPassword('default param', phc), false);
  });

  test('hashPassword refuses a password over passwordBytesMax without quoting it', async () => {
    const pool = makePool();
    const password = 'p'.repeat(passwordBytesMax + 1);
    await assert.rejects(pool.hashPassword(password), (err: Error) => err instanceof RangeError && !err.message.includes('ppp'));
  });
});

describe('bcrypt (imported hashes)', () => {
  test('$2a$, $2b$ and $2y$ hashes verify with the right password only', async () => {
    const pool = makePool();
    const made = await bcryptHash('imported secret');
    assert.ok(made.startsWith('$2a$04$'), made);
    for (const minor of ['a', 'b', 'y']) {
      // Same algorithm for passwords of at most 72 bytes: the letters only record which bug fixes applied.
      const phc = `$2${minor}${made.slice(3)}`;
      assert.equal(await pool.verifyPassword('imported secret', phc), true, minor);
      assert.equal(await pool.verifyPassword('imported secreT', phc), false, minor);
    }
  });

  test('published crypt_blowfish vectors verify', async () => {
    const pool = makePool();
    assert.equal(await pool.verifyPassword('U*U', '$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW'), true);
    assert.equal(await pool.verifyPassword('U*U*', '$2a$05$CCCCCCCCCCCCCCCCCCCCC.VGOzA784oUp/Z0DY336zx7pLYAy0lwK'), true);
    assert.equal(await pool.verifyPassword('U*U*', '$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW'), false);
  });

  test('passwords past 72 bytes are cut there, as by the bcrypt that made the hash', async () => {
    const pool = makePool();
    const long = 'x'.repeat(72);
    const phc = await bcryptHash(long);
    assert.equal(await pool.verifyPassword(`${long}anything after byte 72`, phc), true);
    assert.equal(await pool.verifyPassword(long.slice(0, 71), phc), false);
  });

  test('an empty password is false, not an error', async () => {
    const pool = makePool();
    assert.equal(await pool.verifyPassword('', await bcryptHash('nonempty')), false);
  });
});

describe('malformed hashes and unknown users', () => {
  test('a malformed stored hash answers false instead of throwing', async () => {
    const pool = makePool();
    const good = await pool.hashPassword('pw');
    const malformed = [
      '',
      'garbage',
      good.slice(0, -1),
      good.replace('$argon2id$', '$argon2i$'),
      good.replace('m=1024', 'm=01024'),
      good.replace('m=1024', 'm=99999999'),
      `${good}=`,
      '$2a$99$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW',
      '$2x$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW',
      '$'.repeat(10_000),
    ];
    for (const phc of malformed) assert.equal(await pool.verifyPassword('pw', phc), false, phc.slice(0, 80));
  });

  test('verifyDummy answers false, whatever the password', async () => {
    const pool = makePool();
    await pool.ready();
    assert.equal(await pool.verifyDummy('any password'), false);
    assert.equal(await pool.verifyDummy(''), false);
  });
});

describe('queue bound', () => {
  test('past queueMax a job is refused at once with OverloadedError carrying retryAfterS', async () => {
    const pool = makePool({ workers: 1, queueMax: 3, argon2: slow });
    await pool.ready();
    const accepted = [pool.hashPassword('a'), pool.hashPassword('b'), pool.verifyDummy('c')];
    assert.equal(pool.queueDepth, 3);
    const refusals = [pool.hashPassword('d'), pool.verifyPassword('e', '$argon2id$broken'), pool.verifyDummy('f')];
    for (const refused of refusals) {
      await assert.rejects(refused, (err: unknown) => err instanceof OverloadedError && err.retryAfterS === hashRetryAfterS);
    }
    assert.equal(pool.queueDepth, 3, 'refused jobs never entered the queue');
    const [a] = await Promise.all(accepted);
    assert.ok(isArgon2idHash(a as string));
    assert.equal(pool.queueDepth, 0);
    assert.equal(await pool.verifyPassword('a', a as string), true, 'accepts work again once drained');
  });

  test('jobs beyond the workers wait in order and all complete', async () => {
    const pool = makePool({ workers: 2, queueMax: 20 });
    const phcs = await Promise.all(Array.from({ length: 12 }, (_, i) => pool.hashPassword(`pw${i}`)));
    const results = await Promise.all(phcs.map((phc, i) => pool.verifyPassword(`pw${i}`, phc)));
    assert.deepEqual(results, Array(12).fill(true));
    assert.equal(pool.workerCount, 2);
  });
});

// Issue 23, part 3 ("Argon2 exhaustion"): a flood of bad logins made a legitimate one wait 15.5 s behind it.
describe('known-good verifications first, and a bounded share per address and per caller', () => {
  test('a known-good verification is dispatched before every other waiting one', async () => {
    const pool = makePool({ workers: 1, queueMax: 64, argon2: slow });
    await pool.ready();
    const phc = await pool.hashPassword('right-password');
    const order: string[] = [];
    const flood = Array.from({ length: 10 }, (_, i) => pool.verifyDummy(`guess-${i}`, { knownGood: false, address: `i:198.51.100.${i}`, caller: `caller-${i}` }).then(() => order.push(`flood-${i}`)));
    const good = pool.verifyPassword('right-password', phc, { knownGood: true, address: 'i:203.0.113.5', caller: '' }).then((ok) => order.push(`good-${ok}`));
    await Promise.all([...flood, good]);
    // The first guess was already running when the known-good one came; it goes next.
    assert.deepEqual(order.slice(0, 2), ['flood-0', 'good-true'], order.join(' '));
  });

  test('one address holds at most its share of the queue; other addresses still get in', async () => {
    const pool = makePool({ workers: 1, queueMax: 8, argon2: slow });
    await pool.ready();
    const share = 8 * 0.25;
    const mine = Array.from({ length: share }, (_, i) => pool.verifyDummy(`guess-${i}`, { knownGood: false, address: 'i:198.51.100.1', caller: '' }));
    assert.equal(pool.refuses({ knownGood: false, address: 'i:198.51.100.1', caller: '' }), true);
    await assert.rejects(pool.verifyDummy('one-more', { knownGood: false, address: 'i:198.51.100.1', caller: '' }), OverloadedError);
    const other = pool.verifyDummy('elsewhere', { knownGood: false, address: 'i:198.51.100.2', caller: '' });
    await Promise.all([...mine, other]);
    assert.equal(pool.refuses({ knownGood: false, address: 'i:198.51.100.1', caller: '' }), false, 'the share comes back as its jobs end');
  });

  // Issue 42, finding 2: a caller rotating ip_address escaped the per-address share.
  test('issue 42: one caller holds at most its share of the queue whatever addresses it names; another caller and a Basic caller still get in', async () => {
    const pool = makePool({ workers: 1, queueMax: 8, argon2: slow });
    await pool.ready();
    const share = 8 * 0.5;
    const rotating = Array.from({ length: share }, (_, i) => pool.verifyDummy(`guess-${i}`, { knownGood: false, address: `i:Flooder1\u0000198.51.100.${i}`, caller: 'Flooder1' }));
    const next = { knownGood: false, address: 'i:Flooder1\u0000198.51.100.99', caller: 'Flooder1' };
    assert.equal(pool.refuses(next), true, 'a new address of the same caller');
    await assert.rejects(pool.verifyDummy('one-more', next), OverloadedError);
    const other = pool.verifyDummy('other', { knownGood: false, address: 'i:Other2\u0000198.51.100.99', caller: 'Other2' });
    const basic = pool.verifyDummy('basic', { knownGood: false, address: 'i:203.0.113.9', caller: '' });
    await Promise.all([...rotating, other, basic]);
    assert.equal(pool.refuses(next), false, 'the share comes back as its jobs end');
  });

  test('a known-good verification that finds the queue full takes the place of the newest other one', async () => {
    const pool = makePool({ workers: 1, queueMax: 4, argon2: slow });
    await pool.ready();
    const phc = await pool.hashPassword('right-password');
    const settled: string[] = [];
    const others = Array.from({ length: 4 }, (_, i) => pool.verifyDummy(`guess-${i}`, { knownGood: false, address: `i:198.51.100.${i}`, caller: `caller-${i}` })
      .then(() => settled.push(`other-${i}`), (err: unknown) => settled.push(err instanceof OverloadedError ? `shed-${i}` : 'error')));
    assert.equal(pool.full, true);
    assert.equal(pool.refuses({ knownGood: true, address: 'i:203.0.113.5', caller: '' }), false);
    const good = pool.verifyPassword('right-password', phc, { knownGood: true, address: 'i:203.0.113.5', caller: '' }).then((ok) => settled.push(`good-${ok}`));
    await Promise.all([...others, good]);
    assert.deepEqual(settled, ['shed-3', 'other-0', 'good-true', 'other-1', 'other-2'], settled.join(' '));
  });
});

// Issue 23, part 3: an account whose imported bcrypt hash is cheaper than argon2id answered a wrong password sooner.
describe('bcrypt answers as late as argon2id', () => {
  test('a bcrypt verification is held until an argon2id verification of the pool\'s params would have ended; argon2id ones are not', async () => {
    const holds: Array<{ ms: number; resume: () => void }> = [];
    const pool = new HashPool({ workers: 1, queueMax: 8, argon2: slow, hold: (ms, resume) => holds.push({ ms, resume }) });
    pools.push(pool);
    await pool.ready();
    const phc = await pool.hashPassword('argon-password');
    assert.equal(await pool.verifyPassword('wrong', phc), false);
    assert.equal(await pool.verifyDummy('wrong'), false);
    assert.equal(holds.length, 0, 'argon2id answers are never held');
    const hash = await bcryptHash('bcrypt-password', 4);
    let answered = false;
    const verdict = pool.verifyPassword('wrong', hash).then((ok) => { answered = true; return ok; });
    while (holds.length === 0 && !answered) await new Promise((resolve) => setImmediate(resolve));
    assert.equal(holds.length, 1, 'the answer is held');
    assert.ok(holds[0]!.ms > 0, `held ${holds[0]!.ms} ms`);
    assert.equal(pool.queueDepth, 1, 'the worker stays taken while held');
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(answered, false);
    holds[0]!.resume();
    assert.equal(await verdict, false);
    assert.equal(pool.queueDepth, 0);
  });
});

describe('worker failure and close', () => {
  test('a worker that dies mid-job is replaced and only its job rejects, without quoting the password', async () => {
    const pool = makePool({ workers: 1, argon2: slow });
    await pool.ready();
    const password = 'do-not-leak-this-password';
    const job = pool.hashPassword(password);
    // Reach inside only to simulate a crash (OOM, native fault) that the public API cannot cause.
    void (pool as unknown as { slots: { worker: Worker }[] }).slots[0]!.worker.terminate();
    await assert.rejects(job, (err: unknown) => err instanceof HashPoolError && !String((err as Error).stack).includes(password));
    assert.equal(pool.queueDepth, 0);
    assert.equal(pool.workerCount, 1);
    const phc = await pool.hashPassword('after the crash');
    assert.equal(await pool.verifyPassword('after the crash', phc), true);
  });

  test('close() rejects waiting and running jobs, then refuses new ones', async () => {
    const pool = makePool({ workers: 1, argon2: slow });
    const jobs = [pool.hashPassword('a'), pool.hashPassword('b'), pool.verifyDummy('c')];
    const rejections = jobs.map((job) => assert.rejects(job, HashPoolError));
    await pool.close();
    await Promise.all(rejections);
    await assert.rejects(pool.hashPassword('d'), HashPoolError);
    await pool.close(); // idempotent
  });

  test('the process exits after close(), and with an idle pool that was never closed', () => {
    const poolUrl = new URL('../src/auth/hash-pool.js', import.meta.url).href;
    for (const closeIt of [true, false]) {
      const script = `
        import { HashPool } from ${JSON.stringify(poolUrl)};
        const pool = new HashPool({ workers: 2, queueMax: 8, argon2: { memoryKiB: 1024, iterations: 1, parallelism: 1 } });
        const phc = await pool.hashPassword('pw');
        if (!(await pool.verifyPassword('pw', phc))) process.exit(3);
        ${closeIt ? 'await pool.close();' : ''}
        console.log('done');`;
      // A file, not --eval: workers inherit execArgv, and --input-type would stop them from starting.
      const file = join(mkdtempSync(join(tmpdir(), 'authd-hash-pool-')), 'child.mjs');
      writeFileSync(file, script);
      // The timeout only catches a hang; nothing here measures speed.
      const child = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 30_000 });
      rmSync(dirname(file), { recursive: true, force: true });
      assert.equal(child.signal, null, `child hung (close=${closeIt})`);
      assert.equal(child.status, 0, child.stderr);
      assert.equal(child.stdout.trim(), 'done');
    }
  });

  test('workers that cannot even start make jobs fail and the pool give up, instead of respawning forever', () => {
    const poolUrl = new URL('../src/auth/hash-pool.js', import.meta.url).href;
    // Workers inherit execArgv, and with --input-type they fail before loading: a stand-in for a broken install.
    const script = `
      import { HashPool } from ${JSON.stringify(poolUrl)};
      const pool = new HashPool({ workers: 2, queueMax: 8, argon2: { memoryKiB: 1024, iterations: 1, parallelism: 1 } });
      let last;
      for (let i = 0; i < 100; i++) {
        try { await pool.hashPassword('pw'); console.log('unexpected success'); process.exit(2); }
        catch (err) { last = err; if (err.message.includes('cannot start')) break; }
      }
      console.log(last.name + ': ' + last.message);`;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(child.signal, null, 'child hung');
    assert.equal(child.status, 0, child.stderr);
    assert.equal(child.stdout.trim(), 'HashPoolError: hash workers cannot start; password hashing is unavailable');
  });

  test('the constructor refuses params our own verify would refuse', () => {
    assert.throws(() => new HashPool({ workers: 0, queueMax: 1, argon2: fast }), RangeError);
    assert.throws(() => new HashPool({ workers: 1, queueMax: 0, argon2: fast }), RangeError);
    assert.throws(() => new HashPool({ workers: 1, queueMax: 1, argon2: { ...fast, memoryKiB: 1 << 30 } }), RangeError);
    assert.throws(() => new HashPool({ workers: 1, queueMax: 1, argon2: { ...fast, iterations: 0 } }), RangeError);
    assert.throws(() => new HashPool({ workers: 1, queueMax: 1, argon2: { memoryKiB: 16, iterations: 1, parallelism: 4 } }), RangeError);
  });
});
