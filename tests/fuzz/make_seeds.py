#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses (tests/fuzz/corpus/<harness>/).

  /usr/bin/python3 tests/fuzz/make_seeds.py [journal file]

RESP and command seeds come from the command vectors below, the ones the unit and socket tests
use for locks and collections. Journal seeds come from a journal file a real server wrote (give
its path; without one the journal seeds already in the corpus are kept): the file as it is
(raw mode) and its frames' payloads (framed mode, see journal_load_fuzz.cc).
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

COMMANDS = [
    ["SET", "lock:1", "tok", "NX", "PX", "30000"],
    ["set", "lock:1", "tok", "px", "100", "nx", "get"],
    ["SET", "lock:1", "tok2", "IFEQ", "tok", "KEEPTTL"],
    ["SETNX", "lock:2", "1"], ["GETSET", "lock:2", "17000000"], ["GET", "lock:2"],
    ["DELIFEQ", "lock:1", "tok"], ["DELEX", "lock:1", "IFEQ", "tok"], ["DIGEST", "lock:1"],
    ["INCR", "n"], ["INCRBYFLOAT", "n", "1.5e3"], ["EXPIRE", "n", "10", "NX"], ["PTTL", "n"],
    ["APPEND", "s", "abc"], ["SETRANGE", "s", "10", "x"], ["GETRANGE", "s", "-3", "-1"],
    ["HSET", "h", "owner:1", "1"], ["HINCRBY", "h", "owner:1", "1"], ["HGETALL", "h"],
    ["HSCAN", "h", "0", "MATCH", "o*", "COUNT", "2"], ["PEXPIRE", "h", "30000"],
    ["ZADD", "z", "NX", "CH", "1", "a", "2.5", "b", "-inf", "c"], ["ZINCRBY", "z", "2", "a"],
    ["ZRANGE", "z", "(1", "+inf", "BYSCORE", "LIMIT", "0", "2", "WITHSCORES"],
    ["ZRANGEBYLEX", "z", "[a", "(c"], ["ZREMRANGEBYSCORE", "z", "-inf", "1"], ["ZPOPMIN", "z", "2"],
    ["ZRANDMEMBER", "z", "-3", "WITHSCORES"], ["ZSCAN", "z", "0"], ["ZMSCORE", "z", "a", "x"],
    ["LPUSH", "l", "a", "b", "c"], ["RPUSH", "l", "1", "2"], ["LPOS", "l", "a", "RANK", "-1"],
    ["LINSERT", "l", "BEFORE", "a", "x"], ["LTRIM", "l", "1", "-2"], ["LRANGE", "l", "0", "-1"],
    ["LMOVE", "l", "l", "LEFT", "RIGHT"], ["LREM", "l", "0", "a"], ["LSET", "l", "0", "y"],
    ["SADD", "s1", "1", "2", "3"], ["SADD", "s1", "x"], ["SPOP", "s1", "2"], ["SMEMBERS", "s1"],
    ["SINTERCARD", "2", "s1", "s1", "LIMIT", "1"], ["SRANDMEMBER", "s1", "-2"],
    ["SSCAN", "s1", "0", "COUNT", "1"], ["SMOVE", "s1", "s1", "2"],
    ["TYPE", "z"], ["DEL", "l"], ["EXISTS", "z", "h"], ["COPY", "z", "z2"], ["RENAME", "z2", "z3"],
    ["LOCK.ACQUIRE", "nl", "30000"], ["LOCK.INFO", "nl"], ["LOCK.RELEASE", "nl", "1"],
    ["MSET", "a", "1", "b", "2"], ["MGET", "a", "b", "c"], ["SCAN", "0", "TYPE", "zset"],
    ["EVAL", "return redis.call('GET', KEYS[1])", "1", "a"],
    ["EVAL", "redis.call('SET', KEYS[1], ARGV[1]); return {1, 'x', {ok='y'}}", "1", "a", "v"],
    ["EVALSHA", "b70c2384248f88e6b75b9f89241a180f856ad852", "1", "lock:1", "tok"],
]


def resp(args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a.encode() if isinstance(a, str) else a
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def write(harness, name, data):
    d = os.path.join(HERE, "corpus", harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def main():
    stream = b"".join(resp(c) for c in COMMANDS)
    # resp_parser_fuzz: mode byte, number of piece sizes, the sizes, then the bytes.
    write("resp_parser_fuzz", "pipeline-whole", b"\x00\x00" + stream)
    write("resp_parser_fuzz", "pipeline-pieces", b"\x00\x03\x01\x07\x20" + stream)
    write("resp_parser_fuzz", "inline", b"\x00\x01\x05" + b'SET k "a b\\x41" \'c\'\r\nPING\n\r\n')
    write("resp_parser_fuzz", "limits", b"\x03\x02\x01\x02" + resp(["SET", "k", "v" * 70]))
    # command_fuzz: mode byte (RESP2/3, clock step), then requests.
    for i in range(0, len(COMMANDS), 8):
        chunk = b"".join(resp(c) for c in COMMANDS[i:i + 8])
        write("command_fuzz", "vectors-%02d" % (i // 8), bytes([i % 2 | 2]) + chunk)
    write("command_fuzz", "all-resp3", b"\x01" + stream)
    if len(sys.argv) > 1:
        journal = open(sys.argv[1], "rb").read()
        write("journal_load_fuzz", "raw", b"\x01" + journal)
        payloads, off = [], 0
        while off + 12 <= len(journal):
            (length,) = struct.unpack_from("<I", journal, off)
            payloads.append(journal[off + 12:off + 12 + length])
            off += 12 + length
        write("journal_load_fuzz", "framed", b"\x00" + b"\xff\xfe".join(payloads))
        write("journal_load_fuzz", "manifest", b"\x01" + b"deadbolt-journal-manifest 1\n")


if __name__ == "__main__":
    main()
