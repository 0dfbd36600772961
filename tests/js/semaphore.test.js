// redis-semaphore's Mutex and RedlockMutex over ioredis: acquire is SET NX PX; refresh and
// release are Lua scripts sent by SHA1, which deadbolt runs natively. Its Semaphore,
// MultiSemaphore and RedlockSemaphore (over the three servers run.py starts): sorted sets
// handled by acquire / refresh scripts, released by ZREM or a script.
'use strict';

const { test, after } = require('node:test');
const assert = require('node:assert/strict');
const { client, closeAll, ports, sleep } = require('./helpers');

const {
  Mutex, RedlockMutex, Semaphore, MultiSemaphore, RedlockSemaphore, RedlockMultiSemaphore,
} = require('redis-semaphore');

after(closeAll);

test('Mutex: acquire, exclude, refresh, release', async () => {
  const c = client();
  await c.del('mutex:sem1');
  const m1 = new Mutex(c, 'sem1', { lockTimeout: 600, refreshInterval: 150, acquireTimeout: 200,
                                    retryInterval: 20 });
  const m2 = new Mutex(client(), 'sem1', { lockTimeout: 600, acquireTimeout: 200,
                                           retryInterval: 20 });
  await m1.acquire();
  assert.equal(m1.isAcquired, true);
  assert.equal(await c.get('mutex:sem1'), m1.identifier);
  assert.equal(await m2.tryAcquire(), false);
  // Held past several lockTimeouts: only the refresh script keeps it.
  await sleep(1500);
  assert.equal(await c.get('mutex:sem1'), m1.identifier);
  const ttl = await c.pttl('mutex:sem1');
  assert.ok(ttl > 0 && ttl <= 600, `PTTL ${ttl}`);
  assert.equal(await m2.tryAcquire(), false);
  await m1.release();
  assert.equal(await c.exists('mutex:sem1'), 0);
  assert.equal(await m2.tryAcquire(), true);
  await m2.release();
});

test('Mutex: a release by a non-owner leaves the lock alone', async () => {
  const c = client();
  await c.del('mutex:sem2');
  const owner = new Mutex(c, 'sem2', { lockTimeout: 5000, refreshInterval: 0 });
  await owner.acquire();
  const impostor = new Mutex(c, 'sem2', { identifier: 'not-the-owner', acquiredExternally: true,
                                          lockTimeout: 5000, refreshInterval: 0 });
  await impostor.release();
  assert.equal(await c.get('mutex:sem2'), owner.identifier);
  await owner.release();
  assert.equal(await c.exists('mutex:sem2'), 0);
});

test('Mutex: a stolen lock is reported lost by the refresh', async () => {
  const c = client();
  await c.del('mutex:sem3');
  let lost = null;
  const m = new Mutex(c, 'sem3', { lockTimeout: 1000, refreshInterval: 100,
                                   onLockLost: (err) => { lost = err; } });
  await m.acquire();
  await c.set('mutex:sem3', 'thief', 'PX', 5000);
  // The refresh runs every 100 ms; waiting up to 60 s only guards against a hang (a slow
  // machine may delay the timer).
  for (let i = 0; i < 3000 && !lost; i++) await sleep(20);
  assert.ok(lost, 'onLockLost was not called');
  assert.equal(await c.get('mutex:sem3'), 'thief');
  m.stopRefresh();
});

test('RedlockMutex over two "nodes" (two databases of the server)', async () => {
  const c1 = client();
  const c2 = client({ db: 1 });
  await c1.del('mutex:sem4');
  await c2.del('mutex:sem4');
  const m = new RedlockMutex([c1, c2], 'sem4', { lockTimeout: 1000, refreshInterval: 200 });
  await m.acquire();
  assert.equal(await c1.get('mutex:sem4'), m.identifier);
  await sleep(400);
  assert.ok((await c1.pttl('mutex:sem4')) > 500);
  assert.equal(await c2.get('mutex:sem4'), m.identifier);
  await m.release();
  assert.equal(await c1.exists('mutex:sem4'), 0);
  assert.equal(await c2.exists('mutex:sem4'), 0);
});

// 10 contenders, each taking the semaphore `rounds` times and holding it briefly. `make(i)`
// builds contender i's semaphore; `weight(i)` is how much of the limit it takes. While it holds,
// the holders' total weight never exceeds `limit`, and `check()` (the servers' view) is run.
async function contend({ make, weight = () => 1, limit, rounds = 4, check = async () => {} }) {
  let held = 0;
  let most = 0;
  let acquisitions = 0;
  const problems = [];
  const contender = async (i) => {
    const s = make(i);
    for (let r = 0; r < rounds; r++) {
      await s.acquire();
      held += weight(i);
      most = Math.max(most, held);
      if (held > limit) problems.push(`contender ${i} round ${r}: ${held} held`);
      acquisitions++;
      await check();
      await sleep(5 + ((i * 7 + r * 3) % 20));
      held -= weight(i);
      await s.release();
    }
  };
  await Promise.all(Array.from({ length: 10 }, (_, i) => contender(i)));
  assert.deepEqual(problems, []);
  assert.equal(acquisitions, 10 * rounds);
  assert.ok(most <= limit && most >= 1, `most held at once: ${most}`);
}

const contention = { lockTimeout: 5000, acquireTimeout: 60000, retryInterval: 5 };

test('Semaphore: 10 contenders, limit 3, never more than 3 holders', async () => {
  const c = client();
  await c.del('semaphore:sem10');
  await contend({
    make: () => new Semaphore(client(), 'sem10', 3, contention),
    limit: 3,
    check: async () => {
      const n = await c.zcard('semaphore:sem10');
      assert.ok(n <= 3, `ZCARD ${n}`);
    },
  });
  assert.equal(await c.exists('semaphore:sem10'), 0);
});

test('Semaphore: the 4th is refused while 3 hold; refresh keeps a holder past its timeout', async () => {
  const c = client();
  await c.del('semaphore:sem11');
  // Refreshed every 100 ms, a holder survives timers late by up to 1.4 s (a loaded machine).
  const opts = { lockTimeout: 1500, refreshInterval: 100, acquireTimeout: 200, retryInterval: 20 };
  const holders = [0, 1, 2].map(() => new Semaphore(client(), 'sem11', 3, opts));
  for (const h of holders) await h.acquire();
  const fourth = new Semaphore(client(), 'sem11', 3, opts);
  assert.equal(await fourth.tryAcquire(), false);
  await sleep(3500);  // over two lock timeouts: only the refresh script keeps them
  assert.equal(await c.zcard('semaphore:sem11'), 3);
  assert.equal(await fourth.tryAcquire(), false);
  assert.ok(holders.every((h) => h.isAcquired));
  await holders[0].release();
  assert.equal(await fourth.tryAcquire(), true);
  assert.deepEqual((await c.zrange('semaphore:sem11', 0, -1)).sort(),
                   [holders[1].identifier, holders[2].identifier, fourth.identifier].sort());
  for (const h of [holders[1], holders[2], fourth]) await h.release();
  assert.equal(await c.exists('semaphore:sem11'), 0);
});

test('MultiSemaphore: 10 contenders taking 1 or 2 permits of 3, never more than 3', async () => {
  const c = client();
  await c.del('semaphore:msem10');
  const weight = (i) => 1 + (i % 2);
  await contend({
    make: (i) => new MultiSemaphore(client(), 'msem10', 3, weight(i), contention),
    weight,
    limit: 3,
    check: async () => {
      const n = await c.zcard('semaphore:msem10');
      assert.ok(n <= 3, `ZCARD ${n}`);
    },
  });
  assert.equal(await c.exists('semaphore:msem10'), 0);
  // Refresh keeps a holder's permits; release removes all of them.
  // Refreshed every 100 ms, a holder survives timers late by up to 1.4 s (a loaded machine).
  const opts = { lockTimeout: 1500, refreshInterval: 100, acquireTimeout: 200, retryInterval: 20 };
  const m = new MultiSemaphore(client(), 'msem11', 3, 2, opts);
  await c.del('semaphore:msem11');
  await m.acquire();
  await sleep(3500);  // over two lock timeouts
  assert.deepEqual(await c.zrange('semaphore:msem11', 0, -1),
                   [`${m.identifier}_0`, `${m.identifier}_1`]);
  assert.equal(await new MultiSemaphore(client(), 'msem11', 3, 2, opts).tryAcquire(), false);
  await m.release();
  assert.equal(await c.exists('semaphore:msem11'), 0);
});

test('RedlockSemaphore over 3 servers: 10 contenders, limit 3, never more than 3 holders', async () => {
  const servers = ports();
  assert.equal(servers.length, 3, 'run.py starts three servers');
  const admin = servers.map((p) => client({ port: p }));
  for (const a of admin) await a.del('semaphore:rsem10');
  // The contenders share one connection per server, as an application's semaphores would: then
  // every server runs the same attempts in the same order and admits the same holders. (With a
  // connection per contender, attempts interleave differently on each server, and the client's
  // quorum rule alone lets a 4th holder in: 4 holders x 2 servers fit in 3 servers x 3 places,
  // while no server ever holds more than 3 - a property of redis-semaphore, on Redis too.)
  const shared = servers.map((p) => client({ port: p }));
  const warm = new RedlockSemaphore(shared, 'rsem10', 3, contention);
  await warm.acquire();  // against Redis, loads the script everywhere (EVALSHA, then EVAL)
  await warm.release();
  await contend({
    make: () => new RedlockSemaphore(shared, 'rsem10', 3, contention),
    limit: 3,
    check: async () => {
      for (const a of admin) {
        const n = await a.zcard('semaphore:rsem10');
        assert.ok(n <= 3, `ZCARD ${n}`);
      }
    },
  });
  for (const a of admin) assert.equal(await a.exists('semaphore:rsem10'), 0);
});

test('RedlockMultiSemaphore over 3 servers: permits on a quorum, released everywhere', async () => {
  const servers = ports();
  const admin = servers.map((p) => client({ port: p }));
  for (const a of admin) await a.del('semaphore:rmsem');
  // Refreshed every 100 ms, a holder survives timers late by up to 1.4 s (a loaded machine).
  const opts = { lockTimeout: 1500, refreshInterval: 100, acquireTimeout: 200, retryInterval: 20 };
  const make = (permits) => new RedlockMultiSemaphore(servers.map((p) => client({ port: p })),
                                                      'rmsem', 3, permits, opts);
  const two = make(2);
  await two.acquire();
  await sleep(3500);  // over two lock timeouts: refreshed on every server
  for (const a of admin) assert.equal(await a.zcard('semaphore:rmsem'), 2);
  assert.equal(await make(2).tryAcquire(), false);
  const one = make(1);
  assert.equal(await one.tryAcquire(), true);
  await two.release();
  await one.release();
  for (const a of admin) assert.equal(await a.exists('semaphore:rmsem'), 0);
});
