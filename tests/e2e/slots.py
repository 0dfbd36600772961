"""Which shard a key lives on: Redis Cluster's slot (CRC16/XMODEM of the key, or of its {tag}),
with the 16,384 slots split evenly over the shards (--threads N: slots 0-8191 on shard 0 and
8192-16383 on shard 1 with two). Shared by the e2e tests and bench/ scripts."""


def crc16(data):
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


def key_slot(key):
    if isinstance(key, str):
        key = key.encode()
    open_ = key.find(b"{")
    if open_ >= 0:
        close = key.find(b"}", open_ + 1)
        if close > open_ + 1:
            key = key[open_ + 1:close]
    return crc16(key) % 16384


def shard_of(key, shards=2):
    """Shard of `key` on a --threads `shards` server."""
    return key_slot(key) * shards // 16384


def on_shard(shard, name, shards=2):
    """`name:N` with the smallest N whose slot is on `shard` (deterministic, readable keys)."""
    for n in range(1000):
        key = "%s:%d" % (name, n)
        if shard_of(key, shards) == shard:
            return key
    raise AssertionError("no key for shard %d" % shard)
