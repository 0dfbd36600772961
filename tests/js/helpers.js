// Shared by the JS client tests: the server's port (tests/js/run.py starts the server and sets
// DEADBOLT_PORT), ioredis clients that are closed after each test file, and key names on a
// chosen shard of a `--threads 2` deadbolt (slots below 8192 live on shard 0).
'use strict';

const assert = require('node:assert/strict');
const Redis = require('ioredis');

function port() {
  const p = Number(process.env.DEADBOLT_PORT);
  assert.ok(p > 0, 'DEADBOLT_PORT is not set: run the JS tests through tests/js/run.py');
  return p;
}

// The ports of every server run.py started (the first is port()).
function ports() {
  const list = (process.env.DEADBOLT_PORTS || '').split(',').filter(Boolean).map(Number);
  return list.length ? list : [port()];
}

const clients = [];

// A new ioredis client on the server under test; `options` are ioredis options (e.g. {db: 3}).
function client(options = {}) {
  const c = new Redis({
    host: '127.0.0.1',
    port: port(),
    lazyConnect: false,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: true,
    ...options,
  });
  c.on('error', () => {});  // failures surface on the commands themselves
  clients.push(c);
  return c;
}

async function closeAll() {
  await Promise.all(clients.splice(0).map((c) => c.quit().catch(() => c.disconnect())));
}

// CRC16/XMODEM of the key, or of its {tag}, modulo 16384: the Redis Cluster slot.
function keySlot(key) {
  let k = Buffer.from(key);
  const open = k.indexOf('{');
  if (open >= 0) {
    const close = k.indexOf('}', open + 1);
    if (close > open + 1) k = k.subarray(open + 1, close);
  }
  let crc = 0;
  for (const byte of k) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}

function shardOf(key) {
  return keySlot(key) < 8192 ? 0 : 1;
}

// `${name}:N` with the smallest N whose slot is on `shard`.
function onShard(shard, name) {
  for (let n = 0; n < 1000; n++) {
    const key = `${name}:${n}`;
    if (shardOf(key) === shard) return key;
  }
  throw new Error(`no key for shard ${shard}`);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

module.exports = { client, closeAll, port, ports, keySlot, shardOf, onShard, sleep };
