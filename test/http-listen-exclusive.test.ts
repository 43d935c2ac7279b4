// A front end does not start on a port another server listens on: two authd processes started on one port by mistake
// (each with its own data directory) must not each answer part of the traffic from its own state.

import assert from 'node:assert/strict';
import { test } from 'node:test';
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
