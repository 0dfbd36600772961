// node-redlock (npm `redlock` 5.0.0-beta and 4.x) and @sesamecare-oss/redlock over ioredis: one
// lock over several resources whose keys live on both shards of the server, taken, extended,
// automatically extended and released by the real clients, which send their Lua scripts by
// SHA1 (EVALSHA, then EVAL on NOSCRIPT). deadbolt runs them natively and atomically across
// shards: of several clients racing for overlapping resources, never two win the same key.
'use strict';

const { test, after } = require('node:test');
const assert = require('node:assert/strict');
const { client, closeAll, onShard, shardOf, sleep } = require('./helpers');

const Redlock5 = require('redlock').default;
const Redlock4 = require('redlock4');
const { Redlock: SesameRedlock } = require('@sesamecare-oss/redlock');

after(closeAll);

// The three clients behind one interface: acquire(resources, ms) -> lock with value,
// extend(lock, ms) -> lock, release(lock).
const flavours = {
  'redlock 5.0.0-beta': {
    make: (c) => new Redlock5([c], { retryCount: 0 }),
    acquire: (r, res, ms) => r.acquire(res, ms),
    extend: (r, lock, ms) => lock.extend(ms),
    release: (r, lock) => lock.release(),
  },
  'redlock 4.x': {
    make: (c) => new Redlock4([c], { retryCount: 0 }),
    acquire: (r, res, ms) => r.lock(res, ms),
    extend: (r, lock, ms) => lock.extend(ms),
    release: (r, lock) => lock.unlock(),
  },
  '@sesamecare-oss/redlock': {
    make: (c) => new SesameRedlock([c], { retryCount: 0 }),
    acquire: (r, res, ms) => r.acquire(res, ms),
    extend: (r, lock, ms) => lock.extend(ms),
    release: (r, lock) => lock.release(),
  },
};

for (const [name, f] of Object.entries(flavours)) {
  test(`${name}: one lock over keys on both shards`, async () => {
    const c = client();
    const tag = name.replace(/[^a-z0-9]/g, '');
    const a = onShard(0, `${tag}:a`);
    const b = onShard(1, `${tag}:b`);
    const d = onShard(1, `${tag}:d`);
    assert.deepEqual([shardOf(a), shardOf(b)], [0, 1]);
    await c.del(a, b, d);
    const redlock = f.make(c);

    // The PTTLs read back are bounded below by the lease minus the time since the acquire
    // (measured, so a slow machine widens the window instead of failing), plus 2 ms of rounding.
    const acquiredAt = Date.now();
    const lock = await f.acquire(redlock, [a, b], 5000);
    assert.equal(typeof lock.value, 'string');
    assert.deepEqual(await c.mget(a, b), [lock.value, lock.value]);
    const ttl = await c.pttl(b);
    assert.ok(ttl >= 5000 - (Date.now() - acquiredAt) - 2 && ttl <= 5000, `PTTL ${ttl}`);

    // Any overlap with a held resource is refused; nothing of the refused lock is written.
    const other = f.make(client());
    await assert.rejects(f.acquire(other, [d, b], 5000));
    assert.equal(await c.exists(d), 0);
    const free = await f.acquire(other, [d], 5000);
    assert.equal(await c.get(d), free.value);
    await f.release(other, free);
    assert.equal(await c.exists(d), 0);

    const extendedAt = Date.now();
    const extended = await f.extend(redlock, lock, 20000);
    for (const k of [a, b]) {
      const t = await c.pttl(k);
      assert.ok(t >= 20000 - (Date.now() - extendedAt) - 2 && t <= 20000,
                `PTTL of ${k} after extend: ${t}`);
    }

    await f.release(redlock, extended);
    assert.equal(await c.exists(a, b), 0);

    // Another owner's value in one key: extending fails and extends nothing. (What the client
    // does next differs: redlock 4 then releases what it still holds.)
    const again = await f.acquire(redlock, [a, b], 5000);
    await c.set(b, 'someone-else', 'PX', 20000);
    await assert.rejects(f.extend(redlock, again, 60000));
    assert.ok((await c.pttl(a)) <= 5000);
    assert.equal(await c.get(b), 'someone-else');
    await c.del(a, b);
  });

  test(`${name}: racing clients never both win a key`, async () => {
    const tag = name.replace(/[^a-z0-9]/g, '');
    const keys = [0, 1, 2, 3, 4, 5].map((i) => onShard(i % 2, `${tag}:race${i}`));
    for (let round = 0; round < 10; round++) {
      const admin = client();
      await admin.del(...keys);
      const contenders = [];
      for (let i = 0; i < 8; i++) {
        const c = client();
        const resources = [keys[i % 6], keys[(i + 1) % 6], keys[(i + 3) % 6]];
        contenders.push({ redlock: f.make(c), resources });
      }
      const results = await Promise.allSettled(
        contenders.map((x) => f.acquire(x.redlock, x.resources, 30000)));
      const winners = results
        .map((r, i) => ({ r, resources: contenders[i].resources }))
        .filter((x) => x.r.status === 'fulfilled');
      assert.ok(winners.length >= 1, `round ${round}: nobody won`);
      const taken = new Set();
      for (const w of winners) {
        for (const k of w.resources) {
          assert.ok(!taken.has(k), `round ${round}: ${k} won twice`);
          taken.add(k);
          assert.equal(await admin.get(k), w.r.value.value, `round ${round}: ${k}`);
        }
      }
      await closeAll();
    }
  });
}

test('redlock 5: using() extends the lock automatically while the routine runs', async () => {
  const c = client();
  const a = onShard(0, 'using:a');
  const b = onShard(1, 'using:b');
  await c.del(a, b);
  const redlock = new Redlock5([c], { retryCount: 0, automaticExtensionThreshold: 200 });
  let value;
  await redlock.using([a, b], 500, async (signal) => {
    value = await c.get(a);
    await sleep(1200);  // past the first 500 ms: only the extensions keep it
    assert.equal(signal.aborted, false, signal.error && signal.error.message);
    assert.deepEqual(await c.mget(a, b), [value, value]);
  });
  assert.equal(await c.exists(a, b), 0);
});

test('@sesamecare-oss/redlock: the lock lives in the database of its settings', async () => {
  const c = client();
  const db2 = client({ db: 2 });
  const a = onShard(0, 'sesdb:a');
  const b = onShard(1, 'sesdb:b');
  await db2.del(a, b);
  await c.del(a, b);
  const redlock = new SesameRedlock([c], { retryCount: 0, db: 2 });
  const lock = await redlock.acquire([a, b], 5000);
  assert.equal(await c.exists(a, b), 0);
  assert.deepEqual(await db2.mget(a, b), [lock.value, lock.value]);
  await lock.release();
  assert.equal(await db2.exists(a, b), 0);
});

test('the clients fall back to EVAL after NOSCRIPT only where the server lacks the script', async () => {
  // SCRIPT FLUSH: Redis forgets the scripts (the clients then send EVAL with the text);
  // deadbolt's are built in. Either way the lock works.
  const c = client();
  const a = onShard(0, 'flush:a');
  await c.del(a);
  await c.script('FLUSH');
  const redlock = new Redlock5([c], { retryCount: 0 });
  const lock = await redlock.acquire([a], 2000);
  assert.equal(await c.get(a), lock.value);
  await lock.release();
  assert.equal(await c.exists(a), 0);
});
