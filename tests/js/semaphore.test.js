// redis-semaphore's Mutex and RedlockMutex over ioredis: acquire is SET NX PX; refresh and
// release are Lua scripts sent by SHA1, which deadbolt runs natively.
'use strict';

const { test, after } = require('node:test');
const assert = require('node:assert/strict');
const { client, closeAll, sleep } = require('./helpers');

const { Mutex, RedlockMutex } = require('redis-semaphore');

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
