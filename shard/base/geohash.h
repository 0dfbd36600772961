#pragma once
// Geohashes as Redis's GEO commands use them: a position is a sorted-set score, the 52-bit
// interleaving of its longitude (odd bits) and latitude (even bits) cells at 26 steps, latitudes
// limited to the Web Mercator range. Searches (GEOSEARCH, GEORADIUS) scan the score ranges of the
// cell that holds the center and its eight neighbours, at a step chosen from the radius, and keep
// the points inside the shape. Each step below is Redis's (geohash.c, geohash_helper.c, geo.c),
// with the same floating-point operations, so that positions, distances, hashes and the order of
// unsorted results come out the same.
//
// Pure functions: any thread.

#include <cstdint>
#include <string>

namespace deadbolt::shard::geo {

inline constexpr int kStepMax = 26;
inline constexpr double kLatMin = -85.05112878;
inline constexpr double kLatMax = 85.05112878;
inline constexpr double kLonMin = -180;
inline constexpr double kLonMax = 180;

struct Bits {
  uint64_t bits = 0;
  uint8_t step = 0;
  bool zero() const { return bits == 0 && step == 0; }
};

// Whether a position may be stored (GEOADD's range check).
bool ValidLonLat(double lon, double lat);
// The score of a position (GEOADD), and the position a score stands for (its cell's center);
// false for a score that decodes outside the world.
uint64_t Score(double lon, double lat);
bool Decode(double score, double* lon, double* lat);
// GEOHASH's 11-character standard geohash of a score.
bool StandardHash(double score, std::string* out);

// The great-circle distance in meters (haversine on Redis's earth radius).
double Distance(double lon1, double lat1, double lon2, double lat2);

// A search's shape: a circle (radius) or a box (width x height), in the unit `to_meters` converts.
struct Shape {
  bool box = false;
  double lon = 0, lat = 0;
  double radius = 0, width = 0, height = 0;
  double to_meters = 1;
};
// The nine cells to scan, center first, then north, south, east, west, north-east, north-west,
// south-east, south-west; cells that cannot hold a match are zero().
struct Area {
  Bits cells[9];
};
Area SearchArea(const Shape& shape);
// The score range [*min, *max) of a cell.
void CellRange(Bits cell, uint64_t* min, uint64_t* max);
// Whether the point of `score` lies in the shape; its distance from the center (meters) then.
bool Within(const Shape& shape, double score, double* lon, double* lat, double* distance);

}  // namespace deadbolt::shard::geo
