// node-redis 5 with client-side caching (RESP3, `clientSideCache`): it turns CLIENT TRACKING on
// when it connects, serves repeated reads from its own cache, and drops an entry when the
// server's invalidation push for the key arrives. Keys on both shards of the server; the writer
// is a second client, as another process of the application would be.
'use strict';

const { test, after } = require('node:test');
const assert = require('node:assert/strict');
const { createClient } = require('redis');
const { onShard, port, sleep } = require('./helpers');

const opened = [];
after(async () => {
  await Promise.all(opened.splice(0).map((c) => c.quit().catch(() => c.destroy())));
});

async function connect(options = {}) {
  const c = createClient({
    socket: { host: '127.0.0.1', port: port(), reconnectStrategy: false },
    ...options,
  });
  c.on('error', () => {});
  opened.push(c);
  await c.connect();
  return c;
}

// Reads `key` through the cache until it answers `want` (the invalidation travels on its own):
// fails after two seconds.
async function eventually(cached, key, want) {
  const deadline = Date.now() + 2000;
  for (;;) {
    const got = await cached.get(key);
    if (got === want) return;
    assert.ok(Date.now() < deadline, `${key}: still ${got}, not ${want}, after 2 s`);
    await sleep(10);
  }
}

test('node-redis client-side cache: hits, then an invalidation on either shard', async () => {
  const cached = await connect({ RESP: 3, clientSideCache: { ttl: 0, maxEntries: 0 } });
  const writer = await connect();
  const cache = cached.clientSideCache;
  for (const shard of [0, 1]) {
    const key = onShard(shard, 'csc:node');
    await writer.set(key, 'v1');
    const before = cache.stats();
    assert.equal(await cached.get(key), 'v1');
    assert.equal(await cached.get(key), 'v1');
    assert.equal(await cached.get(key), 'v1');
    const used = cache.stats().minus(before);
    assert.equal(used.missCount, 1, 'the first read goes to the server');
    assert.equal(used.hitCount, 2, 'the next ones come from the cache');
    await writer.set(key, 'v2');
    await eventually(cached, key, 'v2');
    await writer.del(key);
    await eventually(cached, key, null);
  }
});

test('node-redis invalidate events name the key a lock holder released', async () => {
  const watcher = await connect({ RESP: 3, emitInvalidate: true });
  const holder = await connect();
  const key = onShard(1, 'csc:lock');
  const heard = [];
  watcher.on('invalidate', (k) => heard.push(k === null ? null : k.toString()));
  assert.equal(await holder.set(key, 'owner-1', { NX: true, PX: 30000 }), 'OK');
  assert.equal(await watcher.get(key), 'owner-1');  // the waiter looks, and is now told
  const release = 'if redis.call("GET", KEYS[1]) == ARGV[1] then ' +
    'return redis.call("DEL", KEYS[1]) else return 0 end';
  assert.equal(await holder.eval(release, { keys: [key], arguments: ['owner-1'] }), 1);
  const deadline = Date.now() + 2000;
  while (!heard.includes(key)) {
    assert.ok(Date.now() < deadline, `no invalidation for ${key}: heard ${heard}`);
    await sleep(10);
  }
  assert.equal(await watcher.set(key, 'owner-2', { NX: true, PX: 30000 }), 'OK');
});
