"""The Lua scripts of Redisson's RReadWriteLock, RSemaphore, RCountDownLatch, RSpinLock,
RFencedLock, RFairLock and RPermitExpirableSemaphore, as Redisson sends them: each is the concatenation of the Java string
literals in its source, joined exactly (no separator; Java adds none).

Source: github.com/redisson/redisson, commit 0482efe14713f6ef660cccbd66118154d72f1425 (the 2024
sources of the 3.3x line, whose RLock acquire and release are the catalogue's 149c5a8b... and
686645923..., recomputed the same way), files redisson/src/main/java/org/redisson/
RedissonReadLock.java, RedissonWriteLock.java, RedissonSemaphore.java, RedissonCountDownLatch.java,
RedissonSpinLock.java, RedissonFencedLock.java, RedissonFairLock.java,
RedissonPermitExpirableSemaphore.java.

These are test data: deadbolt's catalogue keeps only their SHA1s (server/scripts/)."""

TEXTS = {
    # --- RLock (RedissonLock.java), already in the catalogue; here so that the tests run them
    # against Redis too ---
    # KEYS: lock; ARGV: lease ms, lockName
    "redisson_acquire": (
        "if ((redis.call('exists', KEYS[1]) == 0) " +
        "or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then " +
        "redis.call('hincrby', KEYS[1], ARGV[2], 1); " +
        "redis.call('pexpire', KEYS[1], ARGV[1]); " +
        "return nil; " +
        "end; " +
        "return redis.call('pttl', KEYS[1]);"),
    # KEYS: lock, channel, latch; ARGV: "0", lease ms, lockName, publish command, latch ms
    "redisson_release": (
        "local val = redis.call('get', KEYS[3]); " +
        "if val ~= false then " +
        "return tonumber(val);" +
        "end; " +
        "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then " +
        "return nil;" +
        "end; " +
        "local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); " +
        "if (counter > 0) then " +
        "redis.call('pexpire', KEYS[1], ARGV[2]); " +
        "redis.call('set', KEYS[3], 0, 'px', ARGV[5]); " +
        "return 0; " +
        "else " +
        "redis.call('del', KEYS[1]); " +
        "redis.call(ARGV[4], KEYS[2], ARGV[1]); " +
        "redis.call('set', KEYS[3], 1, 'px', ARGV[5]); " +
        "return 1; " +
        "end; "),
    # --- RReadWriteLock: read lock ---
    # KEYS: lock, "{lock}:<lockName>:rwlock_timeout"; ARGV: lease ms, lockName, lockName + ":write"
    "rw_read_acquire": (
        "local mode = redis.call('hget', KEYS[1], 'mode'); " +
        "if (mode == false) then " +
        "redis.call('hset', KEYS[1], 'mode', 'read'); " +
        "redis.call('hset', KEYS[1], ARGV[2], 1); " +
        "redis.call('set', KEYS[2] .. ':1', 1); " +
        "redis.call('pexpire', KEYS[2] .. ':1', ARGV[1]); " +
        "redis.call('pexpire', KEYS[1], ARGV[1]); " +
        "return nil; " +
        "end; " +
        "if (mode == 'read') or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then " +
        "local ind = redis.call('hincrby', KEYS[1], ARGV[2], 1); " +
        "local key = KEYS[2] .. ':' .. ind;" +
        "redis.call('set', key, 1); " +
        "redis.call('pexpire', key, ARGV[1]); " +
        "local remainTime = redis.call('pttl', KEYS[1]); " +
        "redis.call('pexpire', KEYS[1], math.max(remainTime, ARGV[1])); " +
        "return nil; " +
        "end;" +
        "return redis.call('pttl', KEYS[1]);"),
    # KEYS: lock, channel "redisson_rwlock:{lock}", timeout prefix, key prefix, unlock latch;
    # ARGV: "0", lockName, publish command, latch ms
    "rw_read_release": (
        "local val = redis.call('get', KEYS[5]); " +
        "if val ~= false then " +
        "return tonumber(val);" +
        "end; " +
        "local mode = redis.call('hget', KEYS[1], 'mode'); " +
        "if (mode == false) then " +
        "redis.call(ARGV[3], KEYS[2], ARGV[1]); " +
        "redis.call('set', KEYS[5], 1, 'px', ARGV[4]); " +
        "return 1; " +
        "end; " +
        "local lockExists = redis.call('hexists', KEYS[1], ARGV[2]); " +
        "if (lockExists == 0) then " +
        "return nil;" +
        "end; " +
        "local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1); " +
        "if (counter == 0) then " +
        "redis.call('hdel', KEYS[1], ARGV[2]); " +
        "end;" +
        "redis.call('del', KEYS[3] .. ':' .. (counter+1)); " +
        "if (redis.call('hlen', KEYS[1]) > 1) then " +
        "local maxRemainTime = -3; " +
        "local keys = redis.call('hkeys', KEYS[1]); " +
        "for n, key in ipairs(keys) do " +
        "counter = tonumber(redis.call('hget', KEYS[1], key)); " +
        "if type(counter) == 'number' then " +
        "for i=counter, 1, -1 do " +
        "local remainTime = redis.call('pttl', KEYS[4] .. ':' .. key .. ':rwlock_timeout:' .. i); " +
        "maxRemainTime = math.max(remainTime, maxRemainTime);" +
        "end; " +
        "end; " +
        "end; " +
        "if maxRemainTime > 0 then " +
        "redis.call('pexpire', KEYS[1], maxRemainTime); " +
        "redis.call('set', KEYS[5], 0, 'px', ARGV[4]); " +
        "return 0; " +
        "end;" +
        "if mode == 'write' then " +
        "redis.call('set', KEYS[5], 0, 'px', ARGV[4]); " +
        "return 0;" +
        "end; " +
        "end; " +
        "redis.call('del', KEYS[1]); " +
        "redis.call(ARGV[3], KEYS[2], ARGV[1]); " +
        "redis.call('set', KEYS[5], 1, 'px', ARGV[4]); " +
        "return 1; "),
    # KEYS: lock, key prefix; ARGV: lease ms, lockName
    "rw_read_renew": (
        "local counter = redis.call('hget', KEYS[1], ARGV[2]); " +
        "if (counter ~= false) then " +
        "redis.call('pexpire', KEYS[1], ARGV[1]); " +
        "if (redis.call('hlen', KEYS[1]) > 1) then " +
        "local keys = redis.call('hkeys', KEYS[1]); " +
        "for n, key in ipairs(keys) do " +
        "counter = tonumber(redis.call('hget', KEYS[1], key)); " +
        "if type(counter) == 'number' then " +
        "for i=counter, 1, -1 do " +
        "redis.call('pexpire', KEYS[2] .. ':' .. key .. ':rwlock_timeout:' .. i, ARGV[1]); " +
        "end; " +
        "end; " +
        "end; " +
        "end; " +
        "return 1; " +
        "end; " +
        "return 0;"),
    # KEYS: lock, channel; ARGV: "0", publish command
    "rw_read_force_unlock": (
        "if (redis.call('hget', KEYS[1], 'mode') == 'read') then " +
        "redis.call('del', KEYS[1]); " +
        "redis.call(ARGV[2], KEYS[2], ARGV[1]); " +
        "return 1; " +
        "end; " +
        "return 0; "),
    # KEYS: lock
    "rw_read_is_locked": (
        "local mode = redis.call('hget', KEYS[1], 'mode'); " +
        "if (mode == 'read') or (mode == 'write' and redis.call('hlen', KEYS[1]) > 2) then " +
        "return 1; " +
        "end; " +
        "return 0; "),
    # --- RReadWriteLock: write lock ---
    # KEYS: lock; ARGV: lease ms, lockName + ":write"
    "rw_write_acquire": (
        "local mode = redis.call('hget', KEYS[1], 'mode'); " +
        "if (mode == false) then " +
        "redis.call('hset', KEYS[1], 'mode', 'write'); " +
        "redis.call('hset', KEYS[1], ARGV[2], 1); " +
        "redis.call('pexpire', KEYS[1], ARGV[1]); " +
        "return nil; " +
        "end; " +
        "if (mode == 'write') then " +
        "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then " +
        "redis.call('hincrby', KEYS[1], ARGV[2], 1); " +
        "local currentExpire = redis.call('pttl', KEYS[1]); " +
        "redis.call('pexpire', KEYS[1], currentExpire + ARGV[1]); " +
        "return nil; " +
        "end; " +
        "end;" +
        "return redis.call('pttl', KEYS[1]);"),
    # KEYS: lock, channel, unlock latch; ARGV: "1", lease ms, lockName + ":write", publish
    # command, latch ms
    "rw_write_release": (
        "local val = redis.call('get', KEYS[3]); " +
        "if val ~= false then " +
        "return tonumber(val);" +
        "end; " +
        "local mode = redis.call('hget', KEYS[1], 'mode'); " +
        "if (mode == false) then " +
        "redis.call(ARGV[4], KEYS[2], ARGV[1]); " +
        "redis.call('set', KEYS[3], 1, 'px', ARGV[5]); " +
        "return 1; " +
        "end;" +
        "if (mode == 'write') then " +
        "local lockExists = redis.call('hexists', KEYS[1], ARGV[3]); " +
        "if (lockExists == 0) then " +
        "return nil;" +
        "else " +
        "local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); " +
        "if (counter > 0) then " +
        "redis.call('pexpire', KEYS[1], ARGV[2]); " +
        "redis.call('set', KEYS[3], 0, 'px', ARGV[5]); " +
        "return 0; " +
        "else " +
        "redis.call('hdel', KEYS[1], ARGV[3]); " +
        "if (redis.call('hlen', KEYS[1]) == 1) then " +
        "redis.call('del', KEYS[1]); " +
        "redis.call(ARGV[4], KEYS[2], ARGV[1]); " +
        "else " +
        "redis.call('hset', KEYS[1], 'mode', 'read'); " +
        "end; " +
        "redis.call('set', KEYS[3], 1, 'px', ARGV[5]); " +
        "return 1; " +
        "end; " +
        "end; " +
        "end; " +
        "return nil;"),
    # KEYS: lock, channel; ARGV: "1", publish command
    "rw_write_force_unlock": (
        "if (redis.call('hget', KEYS[1], 'mode') == 'write') then " +
        "redis.call('del', KEYS[1]); " +
        "redis.call(ARGV[2], KEYS[2], ARGV[1]); " +
        "return 1; " +
        "end; " +
        "return 0; "),
    # --- RSemaphore: a string key holding the available permits ---
    # KEYS: semaphore; ARGV: permits
    "sema_try_acquire": (
        "local value = redis.call('get', KEYS[1]); " +
        "if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then " +
        "local val = redis.call('decrby', KEYS[1], ARGV[1]); " +
        "return 1; " +
        "end; " +
        "return 0;"),
    # KEYS: semaphore, channel "redisson_sc:{semaphore}"; ARGV: permits, publish command
    "sema_release": (
        "local value = redis.call('incrby', KEYS[1], ARGV[1]); " +
        "redis.call(ARGV[2], KEYS[2], value); "),
    # KEYS: semaphore
    "sema_drain": (
        "local value = redis.call('get', KEYS[1]); " +
        "if (value == false) then " +
        "return 0; " +
        "end; " +
        "redis.call('set', KEYS[1], 0); " +
        "return value;"),
    # KEYS: semaphore, channel; ARGV: permits, publish command
    "sema_try_set_permits": (
        "local value = redis.call('get', KEYS[1]); " +
        "if (value == false) then " +
        "redis.call('set', KEYS[1], ARGV[1]); " +
        "redis.call(ARGV[2], KEYS[2], ARGV[1]); " +
        "return 1;" +
        "end;" +
        "return 0;"),
    # KEYS: semaphore, channel; ARGV: permits, publish command
    "sema_add_permits": (
        "local value = redis.call('get', KEYS[1]); " +
        "if (value == false) then " +
        "value = 0;" +
        "end;" +
        "redis.call('set', KEYS[1], value + ARGV[1]); " +
        "redis.call(ARGV[2], KEYS[2], value + ARGV[1]); "),
    # --- RCountDownLatch: a string key holding the count ---
    # KEYS: latch, channel "redisson_countdownlatch__channel__{latch}"; ARGV: "0", publish command
    "latch_count_down": (
        "local v = redis.call('decr', KEYS[1]);" +
        "if v <= 0 then redis.call('del', KEYS[1]) end;" +
        "if v == 0 then redis.call(ARGV[2], KEYS[2], ARGV[1]) end;"),
    # KEYS: latch, channel; ARGV: "1", count, publish command
    "latch_try_set_count": (
        "if redis.call('exists', KEYS[1]) == 0 then " +
        "redis.call('set', KEYS[1], ARGV[2]); " +
        "redis.call(ARGV[3], KEYS[2], ARGV[1]); " +
        "return 1 " +
        "else " +
        "return 0 " +
        "end"),
    # KEYS: latch, channel; ARGV: "1", publish command
    "latch_delete": (
        "if redis.call('del', KEYS[1]) == 1 then " +
        "redis.call(ARGV[2], KEYS[2], ARGV[1]); " +
        "return 1 " +
        "else " +
        "return 0 " +
        "end"),
    # --- RSpinLock: a hash as RLock's, no pub/sub ---
    # KEYS: lock; ARGV: lease ms, lockName (the 3.1x RLock acquire: "redisson_acquire_3x")
    # KEYS: lock, unlock latch; ARGV: lease ms, lockName, latch ms
    "spin_release": (
        "local val = redis.call('get', KEYS[2]); " +
        "if val ~= false then " +
        "return tonumber(val);" +
        "end; " +
        "if (redis.call('hexists', KEYS[1], ARGV[2]) == 0) then " +
        "return nil;" +
        "end; " +
        "local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1); " +
        "if (counter > 0) then " +
        "redis.call('pexpire', KEYS[1], ARGV[1]); " +
        "redis.call('set', KEYS[2], 0, 'px', ARGV[3]); " +
        "return 0; " +
        "else " +
        "redis.call('del', KEYS[1]); " +
        "redis.call('set', KEYS[2], 1, 'px', ARGV[3]); " +
        "return 1; " +
        "end; "),
    # KEYS: lock
    "spin_force_unlock": (
        "if (redis.call('del', KEYS[1]) == 1) then " +
        "return 1 " +
        "else " +
        "return 0 " +
        "end"),
    # --- RFencedLock: RLock plus a token counter "redisson_lock_token:{lock}" ---
    # KEYS: lock, token; ARGV: lease ms, lockName. Reply {-1, token} or {pttl, -1}.
    "fenced_acquire_token": (
        "if (redis.call('exists', KEYS[1]) == 0 " +
        "or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then " +
        "local token = redis.call('incr', KEYS[2]);" +
        "redis.call('hincrby', KEYS[1], ARGV[2], 1); " +
        "redis.call('pexpire', KEYS[1], ARGV[1]); " +
        "return {-1, token}; " +
        "end; " +
        "return {redis.call('pttl', KEYS[1]), -1};"),
    # KEYS: lock, token; ARGV: lease ms, lockName. Reply nil or the PTTL.
    "fenced_acquire": (
        "if ((redis.call('exists', KEYS[1]) == 0) " +
        "or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then " +
        "redis.call('incr', KEYS[2]);" +
        "redis.call('hincrby', KEYS[1], ARGV[2], 1); " +
        "redis.call('pexpire', KEYS[1], ARGV[1]); " +
        "return nil; " +
        "end; " +
        "return redis.call('pttl', KEYS[1]);"),
    # --- RFairLock: RLock's hash, a queue of waiters (list "redisson_lock_queue:{lock}") and
    # their timeouts (sorted set "redisson_lock_timeout:{lock}", unix ms) ---
    # KEYS: queue, timeouts; ARGV: holder, wait ms. A waiter gives up: out of the queue.
    "fair_acquire_failed": (
        "local queue = redis.call('lrange', KEYS[1], 0, -1);" +
        "local i = 1;" +
        "while i <= #queue and queue[i] ~= ARGV[1] do " +
        "i = i + 1;" +
        "end;" +
        "i = i + 1;" +
        "while i <= #queue do " +
        "redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), queue[i]);" +
        "i = i + 1;" +
        "end;" +
        "redis.call('zrem', KEYS[2], ARGV[1]);" +
        "redis.call('lrem', KEYS[1], 0, ARGV[1]);"),
    # KEYS: lock, queue, timeouts; ARGV: lease ms, holder, now ms, wait ms. tryLock() without
    # waiting: nil when taken, 1 when not (never queues).
    "fair_try_acquire": (
        "while true do " +
        "local firstThreadId2 = redis.call('lindex', KEYS[2], 0);" +
        "if firstThreadId2 == false then " +
        "break;" +
        "end;" +
        "local timeout = tonumber(redis.call('zscore', KEYS[3], firstThreadId2));" +
        "if timeout <= tonumber(ARGV[3]) then " +
        "redis.call('zrem', KEYS[3], firstThreadId2);" +
        "redis.call('lpop', KEYS[2]);" +
        "else " +
        "break;" +
        "end;" +
        "end;" +
        "if (redis.call('exists', KEYS[1]) == 0) " +
        "and ((redis.call('exists', KEYS[2]) == 0) " +
        "or (redis.call('lindex', KEYS[2], 0) == ARGV[2])) then " +
        "redis.call('lpop', KEYS[2]);" +
        "redis.call('zrem', KEYS[3], ARGV[2]);" +
        "local keys = redis.call('zrange', KEYS[3], 0, -1);" +
        "for i = 1, #keys, 1 do " +
        "redis.call('zincrby', KEYS[3], -tonumber(ARGV[4]), keys[i]);" +
        "end;" +
        "redis.call('hset', KEYS[1], ARGV[2], 1);" +
        "redis.call('pexpire', KEYS[1], ARGV[1]);" +
        "return nil;" +
        "end;" +
        "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then " +
        "redis.call('hincrby', KEYS[1], ARGV[2], 1);" +
        "redis.call('pexpire', KEYS[1], ARGV[1]);" +
        "return nil;" +
        "end;" +
        "return 1;"),
    # KEYS: lock, queue, timeouts; ARGV: lease ms, holder, wait ms, now ms. lock() / tryLock(wait):
    # nil when taken, else the time to wait, joining the queue (once) with timeout = the previous
    # waiter's (or the lock's PTTL) + wait.
    "fair_acquire": (
        "while true do " +
        "local firstThreadId2 = redis.call('lindex', KEYS[2], 0);" +
        "if firstThreadId2 == false then " +
        "break;" +
        "end;" +
        "local timeout = tonumber(redis.call('zscore', KEYS[3], firstThreadId2));" +
        "if timeout <= tonumber(ARGV[4]) then " +
        "redis.call('zrem', KEYS[3], firstThreadId2);" +
        "redis.call('lpop', KEYS[2]);" +
        "else " +
        "break;" +
        "end;" +
        "end;" +
        "if (redis.call('exists', KEYS[1]) == 0) " +
        "and ((redis.call('exists', KEYS[2]) == 0) " +
        "or (redis.call('lindex', KEYS[2], 0) == ARGV[2])) then " +
        "redis.call('lpop', KEYS[2]);" +
        "redis.call('zrem', KEYS[3], ARGV[2]);" +
        "local keys = redis.call('zrange', KEYS[3], 0, -1);" +
        "for i = 1, #keys, 1 do " +
        "redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), keys[i]);" +
        "end;" +
        "redis.call('hset', KEYS[1], ARGV[2], 1);" +
        "redis.call('pexpire', KEYS[1], ARGV[1]);" +
        "return nil;" +
        "end;" +
        "if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then " +
        "redis.call('hincrby', KEYS[1], ARGV[2],1);" +
        "redis.call('pexpire', KEYS[1], ARGV[1]);" +
        "return nil;" +
        "end;" +
        "local timeout = redis.call('zscore', KEYS[3], ARGV[2]);" +
        "if timeout ~= false then " +
        "return timeout - tonumber(ARGV[3]) - tonumber(ARGV[4]);" +
        "end;" +
        "local lastThreadId = redis.call('lindex', KEYS[2], -1);" +
        "local ttl;" +
        "if lastThreadId ~= false and lastThreadId ~= ARGV[2] then " +
        "ttl = tonumber(redis.call('zscore', KEYS[3], lastThreadId)) - tonumber(ARGV[4]);" +
        "else " +
        "ttl = redis.call('pttl', KEYS[1]);" +
        "end;" +
        "local timeout = ttl + tonumber(ARGV[3]) + tonumber(ARGV[4]);" +
        "if redis.call('zadd', KEYS[3], timeout, ARGV[2]) == 1 then " +
        "redis.call('rpush', KEYS[2], ARGV[2]);" +
        "end;" +
        "return ttl;"),
    # KEYS: lock, queue, timeouts, channel, unlock latch; ARGV: message, lease ms, holder, now
    # ms, publish command, latch ms. The next waiter hears on "<channel>:<its holder name>".
    "fair_release": (
        "local val = redis.call('get', KEYS[5]); " +
        "if val ~= false then " +
        "return tonumber(val);" +
        "end; " +
        "while true do " +
        "local firstThreadId2 = redis.call('lindex', KEYS[2], 0);" +
        "if firstThreadId2 == false then " +
        "break;" +
        "end; " +
        "local timeout = tonumber(redis.call('zscore', KEYS[3], firstThreadId2));" +
        "if timeout <= tonumber(ARGV[4]) then " +
        "redis.call('zrem', KEYS[3], firstThreadId2); " +
        "redis.call('lpop', KEYS[2]); " +
        "else " +
        "break;" +
        "end; " +
        "end;" +
        "if (redis.call('exists', KEYS[1]) == 0) then " +
        "local nextThreadId = redis.call('lindex', KEYS[2], 0); " +
        "if nextThreadId ~= false then " +
        "redis.call(ARGV[5], KEYS[4] .. ':' .. nextThreadId, ARGV[1]); " +
        "end; " +
        "redis.call('set', KEYS[5], 1, 'px', ARGV[6]); " +
        "return 1; " +
        "end;" +
        "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then " +
        "return nil;" +
        "end; " +
        "local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); " +
        "if (counter > 0) then " +
        "redis.call('pexpire', KEYS[1], ARGV[2]); " +
        "redis.call('set', KEYS[5], 0, 'px', ARGV[6]); " +
        "return 0; " +
        "end; " +
        "redis.call('del', KEYS[1]); " +
        "redis.call('set', KEYS[5], 1, 'px', ARGV[6]); " +
        "local nextThreadId = redis.call('lindex', KEYS[2], 0); " +
        "if nextThreadId ~= false then " +
        "redis.call(ARGV[5], KEYS[4] .. ':' .. nextThreadId, ARGV[1]); " +
        "end; " +
        "return 1; "),
    # KEYS: lock, queue, timeouts, channel; ARGV: message, now ms, publish command.
    "fair_force_unlock": (
        "while true do " +
        "local firstThreadId2 = redis.call('lindex', KEYS[2], 0);" +
        "if firstThreadId2 == false then " +
        "break;" +
        "end; " +
        "local timeout = tonumber(redis.call('zscore', KEYS[3], firstThreadId2));" +
        "if timeout <= tonumber(ARGV[2]) then " +
        "redis.call('zrem', KEYS[3], firstThreadId2); " +
        "redis.call('lpop', KEYS[2]); " +
        "else " +
        "break;" +
        "end; " +
        "end;" +
        "if (redis.call('del', KEYS[1]) == 1) then " +
        "local nextThreadId = redis.call('lindex', KEYS[2], 0); " +
        "if nextThreadId ~= false then " +
        "redis.call(ARGV[3], KEYS[4] .. ':' .. nextThreadId, ARGV[1]); " +
        "end; " +
        "return 1; " +
        "end; " +
        "return 0;"),
    # --- RPermitExpirableSemaphore: the permits left (string "name"), and the permits out
    # (sorted set "{name}:timeout" of permit id -> expiry, unix ms; 922337203685477: never). Its
    # trySetPermits is RSemaphore's. ---
    # KEYS: name, timeouts, channel "redisson_sc:{name}"; ARGV: permits, expiry, now, never,
    # publish command, the new permit ids (16 random bytes each). Expired permits come back
    # first. Reply "OK", or ":<the nearest expiry>", or nil.
    "pes_try_acquire": (
        "local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, ARGV[1]); " +
        "if #expiredIds > 0 then " +
        "redis.call('zrem', KEYS[2], unpack(expiredIds)); " +
        "local value = redis.call('incrby', KEYS[1], #expiredIds); " +
        "if tonumber(value) > 0 then " +
        "redis.call(ARGV[5], KEYS[3], value); " +
        "end;" +
        "end; " +
        "local value = redis.call('get', KEYS[1]); " +
        "if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then " +
        "redis.call('decrby', KEYS[1], ARGV[1]); " +
        "for i = 6, #ARGV, 1 do " +
        "redis.call('zadd', KEYS[2], ARGV[2], ARGV[i]); " +
        "end; " +
        "local ttl = redis.call('pttl', KEYS[1]); " +
        "if ttl > 0 then " +
        "redis.call('pexpire', KEYS[2], ttl); " +
        "end; " +
        "return 'OK'; " +
        "end; " +
        "local v = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES'); " +
        "if v[1] ~= nil and v[2] ~= ARGV[4] then " +
        "return ':' .. tostring(v[2]); " +
        "end " +
        "return nil;"),
    # KEYS: name, channel, timeouts; ARGV: permit id, 1, now, publish command. 1 if released in
    # time, 0 if it had expired or was not there.
    "pes_try_release": (
        "local expire = redis.call('zscore', KEYS[3], ARGV[1]);" +
        "local removed = redis.call('zrem', KEYS[3], ARGV[1]);" +
        "if tonumber(removed) ~= 1 then " +
        "return 0;" +
        "end;" +
        "local value = redis.call('incrby', KEYS[1], ARGV[2]); " +
        "redis.call(ARGV[4], KEYS[2], value); " +
        "if tonumber(expire) <= tonumber(ARGV[3]) then " +
        "return 0;" +
        "end;" +
        "return 1;"),
    # KEYS: name, channel, timeouts; ARGV: count, now, publish command, permit ids. Reply how
    # many were released.
    "pes_try_release_many": (
        "local expiredIds = redis.call('zrangebyscore', KEYS[3], 0, ARGV[2], 'limit', 0, -1); " +
        "if #expiredIds > 0 then " +
        "redis.call('zrem', KEYS[3], unpack(expiredIds)); " +
        "local value = redis.call('incrby', KEYS[1], #expiredIds); " +
        "if tonumber(value) > 0 then " +
        "redis.call(ARGV[3], KEYS[2], value); " +
        "end; " +
        "end; " +
        "local keys = {}; " +
        "for i = 4, #ARGV, 1 do " +
        "table.insert(keys, ARGV[i]); " +
        "end; " +
        "local removed = redis.call('zrem', KEYS[3], unpack(keys)); " +
        "if tonumber(removed) == 0 then " +
        "return 0;" +
        "end; " +
        "redis.call('incrby', KEYS[1], removed); " +
        "redis.call(ARGV[3], KEYS[2], removed); " +
        "return removed;"),
    # KEYS: name, timeouts, channel; ARGV: now, publish command.
    "pes_available_permits": (
        "local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[1], 'limit', 0, -1); " +
        "if #expiredIds > 0 then " +
        "redis.call('zrem', KEYS[2], unpack(expiredIds)); " +
        "local value = redis.call('incrby', KEYS[1], #expiredIds); " +
        "if tonumber(value) > 0 then " +
        "redis.call(ARGV[2], KEYS[3], value); " +
        "end;" +
        "return value; " +
        "end; " +
        "local ret = redis.call('get', KEYS[1]); " +
        "return ret == false and 0 or ret;"),
    # KEYS: name, channel; ARGV: permits, publish command.
    "pes_add_permits": (
        "local value = redis.call('get', KEYS[1]); " +
        "if (value == false) then " +
        "value = 0;" +
        "end;" +
        "redis.call('set', KEYS[1], tonumber(value) + tonumber(ARGV[1])); " +
        "if tonumber(ARGV[1]) > 0 then " +
        "redis.call(ARGV[2], KEYS[2], ARGV[1]); " +
        "end;"),
    # KEYS: name, timeouts, channel; ARGV: permit id, new expiry, now, publish command.
    "pes_update_lease_time": (
        "local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, -1); " +
        "if #expiredIds > 0 then " +
        "redis.call('zrem', KEYS[2], unpack(expiredIds)); " +
        "local value = redis.call('incrby', KEYS[1], #expiredIds); " +
        "if tonumber(value) > 0 then " +
        "redis.call(ARGV[4], KEYS[3], value); " +
        "end;" +
        "end; " +
        "local value = redis.call('zscore', KEYS[2], ARGV[1]); " +
        "if (value ~= false) then " +
        "redis.call('zadd', KEYS[2], ARGV[2], ARGV[1]); " +
        "return 1;" +
        "end;" +
        "return 0;"),
    # KEYS: name, timeouts, channel; ARGV: now, publish command. The permits out.
    "pes_acquired_permits": (
        "local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[1], 'limit', 0, -1); " +
        "if #expiredIds > 0 then " +
        "redis.call('zrem', KEYS[2], unpack(expiredIds)); " +
        "local value = redis.call('incrby', KEYS[1], #expiredIds); " +
        "if tonumber(value) > 0 then " +
        "redis.call(ARGV[2], KEYS[3], value); " +
        "end;" +
        "end; " +
        "local acquired = redis.call('zcount', KEYS[2], 0, '+inf'); " +
        "return acquired == false and 0 or acquired;"),
    # KEYS: name, timeouts, channel; ARGV: now, publish command. Permits left + out.
    "pes_get_permits": (
        "local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[1], 'limit', 0, -1); " +
        "if #expiredIds > 0 then " +
        "redis.call('zrem', KEYS[2], unpack(expiredIds)); " +
        "local value = redis.call('incrby', KEYS[1], #expiredIds); " +
        "if tonumber(value) > 0 then " +
        "redis.call(ARGV[2], KEYS[3], value); " +
        "end;" +
        "end; " +
        "local available = redis.call('get', KEYS[1]); " +
        "if available == false then " +
        "return 0 " +
        "end;" +
        "local acquired = redis.call('zcount', KEYS[2], 0, '+inf'); " +
        "if acquired == false then " +
        "return tonumber(available) " +
        "end;" +
        "return tonumber(available) + acquired;"),
    # KEYS: name, channel, timeouts; ARGV: permits, publish command. Sets the total.
    "pes_set_permits": (
        "local available = redis.call('get', KEYS[1]); " +
        "if (available == false) then " +
        "redis.call('set', KEYS[1], ARGV[1]); " +
        "redis.call(ARGV[2], KEYS[2], ARGV[1]); " +
        "return;" +
        "end;" +
        "local acquired = redis.call('zcount', KEYS[3], 0, '+inf'); " +
        "local maximum = (acquired == false and 0 or acquired) + tonumber(available); " +
        "if (maximum == tonumber(ARGV[1])) then " +
        "return;" +
        "end;" +
        "redis.call('incrby', KEYS[1], tonumber(ARGV[1]) - maximum); " +
        "redis.call(ARGV[2], KEYS[2], ARGV[1]);"),
}
