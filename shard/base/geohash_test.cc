#include "shard/base/geohash.h"

#include <gtest/gtest.h>

#include <string>

namespace deadbolt::shard::geo {
namespace {

// Values redis-server 7.0 gives for Palermo (GEOADD Sicily 13.361389 38.115556 Palermo).
TEST(GeoHash, ScorePositionAndHashAsRedis) {
  const uint64_t score = Score(13.361389, 38.115556);
  EXPECT_EQ(score, 3479099956230698u);
  double lon, lat;
  ASSERT_TRUE(Decode(static_cast<double>(score), &lon, &lat));
  EXPECT_NEAR(lon, 13.36138933897018433, 1e-14);
  EXPECT_NEAR(lat, 38.11555639549629859, 1e-14);
  std::string hash;
  ASSERT_TRUE(StandardHash(static_cast<double>(score), &hash));
  EXPECT_EQ(hash, "sqc8b49rny0");
}

TEST(GeoHash, TheWorldsEdgesAreClampedAsRedisDoes) {
  double lon, lat;
  ASSERT_TRUE(Decode(static_cast<double>(Score(180, kLatMax)), &lon, &lat));
  EXPECT_EQ(lon, 180);
  EXPECT_EQ(lat, kLatMax);
  EXPECT_FALSE(ValidLonLat(180.0001, 0));
  EXPECT_FALSE(ValidLonLat(0, 85.06));
  EXPECT_TRUE(ValidLonLat(-180, -85.05112878));
}

TEST(GeoHash, DistanceIsHaversineOnRedisEarth) {
  // GEODIST Sicily Palermo Catania: 166274.1516 m between the stored positions.
  double lon1, lat1, lon2, lat2;
  Decode(static_cast<double>(Score(13.361389, 38.115556)), &lon1, &lat1);
  Decode(static_cast<double>(Score(15.087269, 37.502669)), &lon2, &lat2);
  EXPECT_NEAR(Distance(lon1, lat1, lon2, lat2), 166274.1516, 0.00005);
  EXPECT_NEAR(Distance(10, 0, 10, 1), 111226.30, 0.01);  // one degree along a meridian
}

TEST(GeoHash, TheSearchAreaCoversTheShape) {
  Shape s;
  s.lon = 15;
  s.lat = 37;
  s.radius = 200;
  s.to_meters = 1000;
  const Area a = SearchArea(s);
  EXPECT_FALSE(a.cells[0].zero());
  // Palermo, about 190 km away, is in one of the cells scanned, and within the circle.
  const double p = static_cast<double>(Score(13.361389, 38.115556));
  bool covered = false;
  for (const Bits& cell : a.cells) {
    if (cell.zero()) continue;
    uint64_t min, max;
    CellRange(cell, &min, &max);
    covered = covered || (p >= static_cast<double>(min) && p < static_cast<double>(max));
  }
  EXPECT_TRUE(covered);
  double lon, lat, d;
  EXPECT_TRUE(Within(s, p, &lon, &lat, &d));
  EXPECT_NEAR(d, 190484.0, 1000);
  s.radius = 100;
  EXPECT_FALSE(Within(s, p, &lon, &lat, &d));
  s.box = true;
  s.width = 400;
  s.height = 400;
  EXPECT_TRUE(Within(s, p, &lon, &lat, &d));
  s.height = 100;  // Palermo is about 120 km north
  EXPECT_FALSE(Within(s, p, &lon, &lat, &d));
}

}  // namespace
}  // namespace deadbolt::shard::geo
