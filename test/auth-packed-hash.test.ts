// Pins the packed form of a stored password hash (issue 24): the exact PHC string back from every hash our pool makes, ASCII only, and everything else left as it came.

import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { bcrypt } from 'hash-wasm';
import {
  argon2HashBytes, argon2IterationsDefault, argon2IterationsMax, argon2MemoryKiBDefault, argon2MemoryKiBMax,
  argon2ParallelismDefault, argon2ParallelismMax, argon2SaltBytes,
} from '../src/config/limits.js';
import { HashPool, type Argon2Params } from '../src/auth/hash-pool.js';
import { packedHashMarker, packPasswordHash, unpackPasswordHash } from '../src/auth/packed-hash.js';
import { parseArgon2idHash } from '../src/auth/password-hash-format.js';
import { prng } from './helpers/prng.js';

/** Characters the 16-byte salt and 32-byte hash take at 7 bits each. */
const bytesChars = Math.ceil(((argon2SaltBytes + argon2HashBytes) * 8) / 7);

const pools: HashPool[] = [];
after(async () => {
  await Promise.all(pools.map((pool) => pool.close()));
});

/** Characters a parameter takes: 6 bits of value per character. */
function varintChars(value: number): number {
  let chars = 1;
  while (value >= 64 ** chars) chars++;
  return chars;
}

/** What every packed form must be: the marker, ASCII only (one byte per character in msgpack and in V8), and as long as its params say. */
function assertPacked(packed: string, params: Argon2Params, phc: string, label = phc): void {
  assert.equal(packed[0], packedHashMarker, label);
  for (let i = 0; i < packed.length; i++) assert.ok(packed.charCodeAt(i) < 0x80, `char ${i} of the packed ${label}`);
  assert.equal(Buffer.byteLength(packed, 'utf8'), packed.length);
  const paramChars = varintChars(params.memoryKiB) + varintChars(params.iterations) + varintChars(params.parallelism);
  assert.equal(packed.length, 1 + paramChars + bytesChars, label);
  assert.equal(unpackPasswordHash(packed), phc, label);
}

function phcOf(params: Argon2Params, salt: Uint8Array, hash: Uint8Array): string {
  const b64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64').replace(/=+$/, '');
  return `$argon2id$v=19$m=${params.memoryKiB},t=${params.iterations},p=${params.parallelism}$${b64(salt)}$${b64(hash)}`;
}

describe('hashes the pool makes', () => {
  const defaults: Argon2Params = { memoryKiB: argon2MemoryKiBDefault, iterations: argon2IterationsDefault, parallelism: argon2ParallelismDefault };

  test('with the default params: packed to 61 ASCII chars, unpacked to the same PHC string, which verifies', async () => {
    const pool = new HashPool({ workers: 1, queueMax: 16, argon2: defaults });
    pools.push(pool);
    for (let i = 0; i < 5; i++) {
      const phc = await pool.hashPassword(`correct horse ${i}`);
      const packed = packPasswordHash(phc);
      assertPacked(packed, defaults, phc);
      assert.equal(packed.length, 61);
      assert.equal(await pool.verifyPassword(`correct horse ${i}`, unpackPasswordHash(packed)), true);
    }
  });

  test('with params of every varint size, up to the limits', async () => {
    const sets: Argon2Params[] = [
      { memoryKiB: 8, iterations: 1, parallelism: 1 },
      { memoryKiB: 63, iterations: argon2IterationsMax, parallelism: 1 },
      { memoryKiB: 64, iterations: 3, parallelism: 8 },
      { memoryKiB: 4095, iterations: 1, parallelism: 1 },
      { memoryKiB: 4096, iterations: 1, parallelism: argon2ParallelismMax },
      { memoryKiB: argon2MemoryKiBMax, iterations: argon2IterationsMax, parallelism: argon2ParallelismMax },
    ];
    for (const params of sets) {
      const pool = new HashPool({ workers: 1, queueMax: 16, argon2: params });
      pools.push(pool);
      const phc = await pool.hashPassword('another password');
      assert.ok(phc.startsWith(`$argon2id$v=19$m=${params.memoryKiB},t=${params.iterations},p=${params.parallelism}$`), phc);
      assertPacked(packPasswordHash(phc), params, phc);
    }
  });
});

test('every salt and hash bit survives: random, all-zero and all-one bytes (seeded)', () => {
  const seed = 24;
  const random = prng(seed);
  const params: Argon2Params = { memoryKiB: 19456, iterations: 2, parallelism: 1 };
  const bytes = (n: number, fill?: number): Uint8Array => Uint8Array.from({ length: n }, () => fill ?? Math.floor(random() * 256));
  const cases: [Uint8Array, Uint8Array][] = [
    [bytes(argon2SaltBytes, 0), bytes(argon2HashBytes, 0)],
    [bytes(argon2SaltBytes, 0xff), bytes(argon2HashBytes, 0xff)],
  ];
  for (let i = 0; i < 5000; i++) cases.push([bytes(argon2SaltBytes), bytes(argon2HashBytes)]);
  const seen = new Set<string>();
  for (const [salt, hash] of cases) {
    const phc = phcOf(params, salt, hash);
    assert.notEqual(parseArgon2idHash(phc), null, phc);
    const packed = packPasswordHash(phc);
    assertPacked(packed, params, phc, `${phc} (seed ${seed})`);
    seen.add(packed);
  }
  assert.equal(seen.size, cases.length, 'different hashes pack differently');
});

test('bcrypt, argon2id of other salt or hash lengths, and anything unparsable are left as they are', async () => {
  const params: Argon2Params = { memoryKiB: 1024, iterations: 1, parallelism: 1 };
  const kept = [
    await bcrypt({ password: 'legacy', salt: new Uint8Array(16).fill(7), costFactor: 4, outputType: 'encoded' }),
    phcOf(params, new Uint8Array(8).fill(1), new Uint8Array(argon2HashBytes).fill(2)),
    phcOf(params, new Uint8Array(argon2SaltBytes).fill(1), new Uint8Array(16).fill(2)),
    phcOf(params, new Uint8Array(argon2SaltBytes).fill(1), new Uint8Array(64).fill(2)),
    phcOf(params, new Uint8Array(argon2SaltBytes).fill(1), new Uint8Array(argon2HashBytes).fill(2)).replace('$argon2id$', '$argon2i$'),
    `${phcOf(params, new Uint8Array(argon2SaltBytes).fill(1), new Uint8Array(argon2HashBytes).fill(2))}=`,
    phcOf(params, new Uint8Array(argon2SaltBytes).fill(1), new Uint8Array(argon2HashBytes).fill(2)).replace('m=1024', 'm=01024'),
    'not-a-hash',
    '',
  ];
  for (const stored of kept) {
    assert.equal(packPasswordHash(stored), stored, stored);
    assert.equal(unpackPasswordHash(stored), stored, 'unpack of what is not packed is the identity');
  }
  const packed = packPasswordHash(phcOf(params, new Uint8Array(argon2SaltBytes).fill(1), new Uint8Array(argon2HashBytes).fill(2)));
  assert.equal(packPasswordHash(packed), packed, 'packing a packed form changes nothing');
});

test('packs exactly the strings parseArgon2idHash accepts with our lengths: every one-character change, insertion and deletion of real hashes', () => {
  const hashes = [
    '$argon2id$v=19$m=19456,t=2,p=1$f6V/2cU0BrHdWBMrEjIovg$6cJ27nZUV6OEbNRrZRWFO03p8BvxsqNN6+IPG1QDuWg',
    '$argon2id$v=19$m=65536,t=10,p=16$q+DDG044+UBBztxDgKIIiA$52ghkMUR1aNj8JVfdZd/DtQEY2G7PSh5673jMk12QpU',
  ];
  const chars = [...new Set([...'$,=+/09AZaz', ...hashes.join('')])];
  let packedCount = 0;
  let variants = 0;
  for (const hash of hashes) {
    for (let i = 0; i <= hash.length; i++) {
      const changed = [hash.slice(0, i) + hash.slice(i + 1)];
      for (const c of chars) changed.push(hash.slice(0, i) + c + hash.slice(i + 1), hash.slice(0, i) + c + hash.slice(i));
      for (const variant of changed) {
        const parts = parseArgon2idHash(variant);
        const expected = parts !== null && parts.salt.length === argon2SaltBytes && parts.hash.length === argon2HashBytes;
        const packed = packPasswordHash(variant);
        assert.equal(packed !== variant, expected, JSON.stringify(variant));
        if (expected) {
          assert.equal(unpackPasswordHash(packed), variant);
          packedCount++;
        }
        variants++;
      }
    }
  }
  assert.ok(packedCount > 1000 && packedCount < variants / 2, `${packedCount} of ${variants} variants packed`);
});

test('a damaged packed form is returned as it is (the pool then refuses it as no known hash)', () => {
  const params: Argon2Params = { memoryKiB: 19456, iterations: 2, parallelism: 1 };
  const phc = phcOf(params, new Uint8Array(argon2SaltBytes).fill(0x5a), new Uint8Array(argon2HashBytes).fill(0xa5));
  const packed = packPasswordHash(phc);
  assert.equal(unpackPasswordHash(packed), phc);
  const damaged = [
    packed.slice(0, -1),
    `${packed}\u0000`,
    `${packed.slice(0, -1)}\u0080`,
    // The last character's padding bit set.
    `${packed.slice(0, -1)}${String.fromCharCode(packed.charCodeAt(packed.length - 1) | 1)}`,
    // m cut off: a continuation flag with nothing after it.
    `${packedHashMarker}\u0040`,
    // m written with a superfluous zero group.
    `${packedHashMarker}\u0048\u0000${packed.slice(4)}`,
    packedHashMarker,
  ];
  for (const stored of damaged) assert.equal(unpackPasswordHash(stored), stored, JSON.stringify(stored));
});
