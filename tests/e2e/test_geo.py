"""Geo commands: GEOADD GEOPOS GEODIST GEOHASH GEOSEARCH GEOSEARCHSTORE GEORADIUS[_RO]
GEORADIUSBYMEMBER[_RO]. Every expected reply is what redis-server 7.0 sends, unsorted results in
its order too (the same cells scanned in the same order); the file also runs against it
(DEADBOLT_AGAINST_REDIS=1). A search storing into a key of the other shard stores atomically."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import NIL, NIL_ARRAY, OK, array, bulk, decode, integer, wrong_args  # noqa: E402
from slots import on_shard  # noqa: E402


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


SYNTAX = b"-ERR syntax error\r\n"
UNIT = b"-ERR unsupported unit provided. please use M, KM, FT, MI\r\n"
CITIES = ["13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania",
          "13.583333", "37.316667", "Agrigento", "12.5", "37.8", "Marsala",
          "14.25", "37.066667", "Gela", "15.55", "38.1833", "Messina"]


def names(*members):
    return array(*[bulk(m) for m in members])


class GeoTest(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.assertReply(OK, "FLUSHALL")
        self.key = on_shard(0, "sicily")
        self.assertReply(integer(6), "GEOADD", self.key, *CITIES)

    def test_positions_distances_hashes(self):
        k = self.key
        self.assertReplies([
            (("GEOPOS", k, "Agrigento", "nobody"),
             array(array(bulk("13.5833314061164856"), bulk("37.31666804993816555")), NIL_ARRAY)),
            (("GEODIST", k, "Palermo", "Catania"), bulk("166274.1516")),
            (("GEODIST", k, "Palermo", "Catania", "km"), bulk("166.2742")),
            (("GEODIST", k, "Palermo", "Catania", "MI"), bulk("103.3182")),
            (("GEODIST", k, "Palermo", "nobody"), NIL),
            (("GEODIST", k, "Palermo", "Catania", "parsec"), UNIT),
            (("GEOHASH", k, "Palermo", "Catania", "nobody"),
             array(bulk("sqc8b49rny0"), bulk("sqdtr74hyu0"), NIL)),
            (("GEOPOS", "missing", "a"), array(NIL_ARRAY)),
            (("ZSCORE", k, "Palermo"), bulk("3479099956230698")),
        ])

    def test_geoadd_options_and_errors(self):
        k = self.key
        self.assertReplies([
            (("GEOADD", k, "NX", "1", "1", "Palermo"), integer(0)),
            (("GEOADD", k, "XX", "CH", "13.361389", "38.115556", "Palermo", "1", "1", "new"),
             integer(0)),
            (("GEOADD", k, "CH", "1", "1", "Palermo"), integer(1)),
            (("GEOADD", k, "NX", "XX", "1", "1", "x"), SYNTAX),
            (("GEOADD", k, "NX", "1", "1"), SYNTAX),
            (("GEOADD", k, "200", "10", "x"),
             b"-ERR invalid longitude,latitude pair 200.000000,10.000000\r\n"),
            (("GEOADD", k, "abc", "10", "x"), b"-ERR value is not a valid float\r\n"),
            (("GEOADD", k, "1", "2"), wrong_args("geoadd")),
        ])
        self.c.cmd("SET", "str", "x")
        self.assertReply(b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
                         "GEOPOS", "str", "a")

    def test_searches_in_redis_order(self):
        k = self.key
        self.assertReplies([
            (("GEOSEARCH", k, "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km"),
             names("Gela", "Agrigento", "Palermo", "Catania", "Messina")),
            (("GEOSEARCH", k, "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "ASC",
              "WITHDIST"),
             array(array(bulk("Catania"), bulk("56.4413")), array(bulk("Gela"), bulk("67.0041")),
                   array(bulk("Agrigento"), bulk("130.4235")),
                   array(bulk("Messina"), bulk("140.2558")),
                   array(bulk("Palermo"), bulk("190.4424")))),
            (("GEOSEARCH", k, "FROMMEMBER", "Palermo", "BYBOX", "200", "100", "km", "DESC",
              "WITHCOORD"),
             array(array(bulk("Marsala"),
                         array(bulk("12.49999791383743286"), bulk("37.79999881948555895"))),
                   array(bulk("Palermo"),
                         array(bulk("13.36138933897018433"), bulk("38.11555639549629859"))))),
            (("GEORADIUS", k, "15", "37", "200", "km", "COUNT", "2", "ANY"),
             names("Gela", "Agrigento")),
            (("GEORADIUS_RO", k, "15", "37", "200", "km", "COUNT", "2"), names("Catania", "Gela")),
            (("GEORADIUSBYMEMBER_RO", k, "Catania", "100", "km", "ASC"),
             names("Catania", "Messina", "Gela")),
            (("GEOSEARCH", "missing", "FROMMEMBER", "x", "BYRADIUS", "1", "km"), array()),
        ])

    def test_stores_on_either_shard(self):
        k = self.key
        for dst in (on_shard(0, "near"), on_shard(1, "near")):
            self.assertReply(integer(3), "GEOSEARCHSTORE", dst, k, "FROMLONLAT", "15", "37",
                             "BYRADIUS", "200", "km", "ASC", "COUNT", "3", "STOREDIST")
            self.assertEqual(decode(self.c.cmd("ZRANGE", dst, "0", "-1")),
                             [b"Catania", b"Gela", b"Agrigento"])
            self.assertReply(bulk("56.441257870158204"), "ZSCORE", dst, "Catania")
            self.assertReply(integer(5), "GEORADIUS", k, "15", "37", "200", "km", "STORE", dst)
            self.assertReply(bulk("3479099956230698"), "ZSCORE", dst, "Palermo")
            # A source that is missing deletes the destination.
            self.assertReply(integer(0), "GEORADIUSBYMEMBER", "missing", "x", "1", "km",
                             "STORE", dst)
            self.assertReply(integer(0), "EXISTS", dst)
        self.assertReply(names(k, "d"), "COMMAND", "GETKEYS", "GEORADIUS", k, "0", "0", "1",
                         "km", "STORE", "d")

    def test_search_errors(self):
        k = self.key
        self.assertReplies([
            (("GEOSEARCH", k, "FROMLONLAT", "15", "37", "ASC", "WITHDIST"),
             b"-ERR exactly one of BYRADIUS and BYBOX can be specified for GEOSEARCH\r\n"),
            (("geosearch", k, "BYRADIUS", "10", "km", "WITHDIST", "ASC"),
             b"-ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for geosearch\r\n"),
            (("GEOSEARCH", k, "FROMMEMBER", "nobody", "BYRADIUS", "10", "km"),
             b"-ERR could not decode requested zset member\r\n"),
            (("GEOSEARCH", k, "FROMLONLAT", "15", "37", "BYRADIUS", "-1", "km"),
             b"-ERR radius cannot be negative\r\n"),
            (("GEOSEARCH", k, "FROMLONLAT", "15", "37", "BYRADIUS", "x", "km"),
             b"-ERR need numeric radius\r\n"),
            (("GEOSEARCH", k, "FROMLONLAT", "15", "37", "BYBOX", "10", "-1", "km"),
             b"-ERR height or width cannot be negative\r\n"),
            (("GEOSEARCH", k, "FROMLONLAT", "15", "37", "BYRADIUS", "10", "parsec"), UNIT),
            (("GEOSEARCH", k, "FROMLONLAT", "15", "37", "BYRADIUS", "10", "km", "COUNT", "0"),
             b"-ERR COUNT must be > 0\r\n"),
            (("GEOSEARCH", k, "FROMLONLAT", "15", "37", "BYRADIUS", "10", "km", "ANY"),
             b"-ERR the ANY argument requires COUNT argument\r\n"),
            (("GEOSEARCH", k, "FROMLONLAT", "15", "37", "BYRADIUS", "10", "km", "STORE", "x"),
             SYNTAX),
            (("GEOSEARCHSTORE", "d", k, "FROMLONLAT", "15", "37", "BYRADIUS", "9", "km",
              "WITHDIST"),
             b"-ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD "
             b"options\r\n"),
            (("GEORADIUS", k, "15", "37", "200", "km", "STORE", "d", "WITHDIST"),
             b"-ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and "
             b"WITHCOORD options\r\n"),
            (("GEORADIUS_RO", k, "15", "37", "200", "km", "STORE", "d"), SYNTAX),
            (("GEORADIUSBYMEMBER", k, "nobody", "200", "km"),
             b"-ERR could not decode requested zset member\r\n"),
        ])

    def test_resp3_coordinates_are_doubles(self):
        c = self.conn()
        c.cmd("HELLO", "3")
        self.assertReply(b"*1\r\n*2\r\n,13.5833314061164856\r\n,37.31666804993816555\r\n",
                         "GEOPOS", self.key, "Agrigento", c=c)


if __name__ == "__main__":
    unittest.main()
