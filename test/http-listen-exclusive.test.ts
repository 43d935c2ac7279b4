// A front end does not start on a port another server listens on: two authd processes started on one port by mistake
// (each with its own data directory) must not each answer part of the traffic from its own state; and a start that
// cannot listen leaves no data directory or key behind.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { AdapterOptions, RunningServer } from '../src/http/adapter.js';
import { startNodeServer } from '../src/http/front-node.js';
import { startUwsServer } from '../src/http/front-uws.js';
import { loadUws } from '../src/http/uws-loader.js';
import { freePorts } from './helpers/nats-cluster.js';

function options(port: number, answer: string): AdapterOptions {
  return {
    host: '127.0.0.1', port, bodyBytesMax: 1024, bodyReceiveTimeoutMs: 1000,
    handler: () => ({ status: 200, body: answer }),
    onFinished: () => undefined,
    earlyReply: () => ({ status: 400, body: '{}' }),
  };
}

const uws = loadUws({ untraceable: false });
const frontEnds: [string, (opts: AdapterOptions) => Promise<RunningServer>][] = [['node:http', startNodeServer]];
if (uws.loaded) frontEnds.push(['uWS', (opts) => startUwsServer(uws.uws, opts)]);

for (const [firstName, startFirst] of frontEnds) {
  for (const [secondName, startSecond] of frontEnds) {
    test(`${secondName} refuses the port ${firstName} listens on, and every request reaches the first`, async () => {
      // A port named, not 0: the kernel does not share a port it chose itself, whatever the socket's options.
      const [port] = await freePorts(1);
      const first = await startFirst(options(port!, '"first"'));
      try {
        await assert.rejects(startSecond(options(first.port, '"second"')));
        for (let i = 0; i < 20; i++) {
          const res = await fetch(`http://127.0.0.1:${first.port}/`, { headers: { connection: 'close' } });
          assert.equal(await res.text(), '"first"');
        }
      } finally {
        await first.close(100);
      }
    });
  }
}

const mainJs = fileURLToPath(new URL('../src/main.js', import.meta.url));

for (const frontEnd of uws.loaded ? ['node', 'uws'] : ['node']) {
  test(`authd on FRONT_END=${frontEnd} started on a port in use exits 1, and no data directory or key is created`, async () => {
    const [port] = await freePorts(1);
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(port!, '127.0.0.1', resolve));
    const dir = mkdtempSync(join(tmpdir(), 'authd-port-in-use-'));
    try {
      // A first start: without the port, it must not bootstrap (an admin whose generated password only this failed start would print).
      const run = spawnSync(process.execPath, [mainJs], {
        env: { PATH: process.env['PATH'], FRONT_END: frontEnd, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: join(dir, 'data'), KEY_FILE: join(dir, 'key'), LOG_LEVEL: 'info' },
        encoding: 'utf8', timeout: 15_000,
      });
      assert.equal(run.status, 1, run.stderr);
      assert.match(run.stderr, /cannot start: .*127\.0\.0\.1:\d+|EADDRINUSE/);
      assert.equal(existsSync(join(dir, 'data')), false, 'no data directory may be bootstrapped');
      assert.equal(existsSync(join(dir, 'key')), false, 'no server key may be created');
    } finally {
      holder.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
