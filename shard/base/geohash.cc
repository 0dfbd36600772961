#include "shard/base/geohash.h"

#include <cmath>

namespace deadbolt::shard::geo {

namespace {

constexpr double kEarthRadius = 6372797.560856;  // meters
constexpr double kMercatorMax = 20037726.37;
constexpr double kDegToRad = M_PI / 180.0;

struct Range {
  double min, max;
};
struct Cell {
  Range lon, lat;
};

double DegRad(double d) { return d * kDegToRad; }
double RadDeg(double r) { return r / kDegToRad; }

// Spreads the 32 bits of v over the even bits of a 64-bit word.
uint64_t Spread(uint32_t v) {
  uint64_t x = v;
  x = (x | (x << 16)) & 0x0000FFFF0000FFFFULL;
  x = (x | (x << 8)) & 0x00FF00FF00FF00FFULL;
  x = (x | (x << 4)) & 0x0F0F0F0F0F0F0F0FULL;
  x = (x | (x << 2)) & 0x3333333333333333ULL;
  x = (x | (x << 1)) & 0x5555555555555555ULL;
  return x;
}
// The even bits of x, packed.
uint32_t Squash(uint64_t x) {
  x &= 0x5555555555555555ULL;
  x = (x | (x >> 1)) & 0x3333333333333333ULL;
  x = (x | (x >> 2)) & 0x0F0F0F0F0F0F0F0FULL;
  x = (x | (x >> 4)) & 0x00FF00FF00FF00FFULL;
  x = (x | (x >> 8)) & 0x0000FFFF0000FFFFULL;
  x = (x | (x >> 16)) & 0x00000000FFFFFFFFULL;
  return static_cast<uint32_t>(x);
}

// The cell of (lon, lat) at `step` in the given ranges; false outside them.
bool Encode(Range lon_r, Range lat_r, double lon, double lat, int step, Bits* out) {
  if (lon > kLonMax || lon < kLonMin || lat > kLatMax || lat < kLatMin) return false;
  if (lat < lat_r.min || lat > lat_r.max || lon < lon_r.min || lon > lon_r.max) return false;
  double lat_offset = (lat - lat_r.min) / (lat_r.max - lat_r.min);
  double lon_offset = (lon - lon_r.min) / (lon_r.max - lon_r.min);
  lat_offset *= static_cast<double>(1ULL << step);
  lon_offset *= static_cast<double>(1ULL << step);
  out->bits =
      Spread(static_cast<uint32_t>(lat_offset)) | (Spread(static_cast<uint32_t>(lon_offset)) << 1);
  out->step = static_cast<uint8_t>(step);
  return true;
}

Cell DecodeCell(Range lon_r, Range lat_r, Bits h) {
  const uint32_t ilat = Squash(h.bits);
  const uint32_t ilon = Squash(h.bits >> 1);
  const double lat_scale = lat_r.max - lat_r.min;
  const double lon_scale = lon_r.max - lon_r.min;
  const double cells = static_cast<double>(1ULL << h.step);
  Cell c;
  c.lat.min = lat_r.min + (ilat * 1.0 / cells) * lat_scale;
  c.lat.max = lat_r.min + ((ilat + 1) * 1.0 / cells) * lat_scale;
  c.lon.min = lon_r.min + (ilon * 1.0 / cells) * lon_scale;
  c.lon.max = lon_r.min + ((ilon + 1) * 1.0 / cells) * lon_scale;
  return c;
}

constexpr Range kWorldLon{kLonMin, kLonMax};
constexpr Range kWorldLat{kLatMin, kLatMax};

// One cell east/west (dx) or north/south (dy) at the same step, wrapping.
void MoveX(Bits* h, int d) {
  if (d == 0) return;
  uint64_t x = h->bits & 0xaaaaaaaaaaaaaaaaULL;
  const uint64_t y = h->bits & 0x5555555555555555ULL;
  const uint64_t zz = 0x5555555555555555ULL >> (64 - h->step * 2);
  if (d > 0) {
    x = x + (zz + 1);
  } else {
    x = x | zz;
    x = x - (zz + 1);
  }
  x &= (0xaaaaaaaaaaaaaaaaULL >> (64 - h->step * 2));
  h->bits = x | y;
}
void MoveY(Bits* h, int d) {
  if (d == 0) return;
  const uint64_t x = h->bits & 0xaaaaaaaaaaaaaaaaULL;
  uint64_t y = h->bits & 0x5555555555555555ULL;
  const uint64_t zz = 0xaaaaaaaaaaaaaaaaULL >> (64 - h->step * 2);
  if (d > 0) {
    y = y + (zz + 1);
  } else {
    y = y | zz;
    y = y - (zz + 1);
  }
  y &= (0x5555555555555555ULL >> (64 - h->step * 2));
  h->bits = x | y;
}
Bits Moved(Bits h, int dx, int dy) {
  MoveX(&h, dx);
  MoveY(&h, dy);
  return h;
}

// A step coarse enough that the center cell and its neighbours cover the radius.
int StepsForRadius(double meters, double lat) {
  if (meters == 0) return kStepMax;
  int step = 1;
  while (meters < kMercatorMax) {
    meters *= 2;
    step++;
  }
  step -= 2;
  if (lat > 66 || lat < -66) {
    step--;
    if (lat > 80 || lat < -80) step--;
  }
  if (step < 1) step = 1;
  if (step > kStepMax) step = kStepMax;
  return step;
}

// A score's bits as Redis's (uint64_t) cast gives them on x86-64, without its undefined cases:
// any sorted set may be read as a geo set, whatever its scores.
uint64_t ScoreBits(double score) {
  constexpr double k2To63 = 9223372036854775808.0;
  if (score >= 0) return score < 2 * k2To63 ? static_cast<uint64_t>(score) : 0;
  if (score >= -k2To63) return static_cast<uint64_t>(static_cast<int64_t>(score));
  return uint64_t{1} << 63;
}

double LatDistance(double lat1, double lat2) {
  return kEarthRadius * std::fabs(DegRad(lat2) - DegRad(lat1));
}

}  // namespace

bool ValidLonLat(double lon, double lat) {
  return !(lon < kLonMin || lon > kLonMax || lat < kLatMin || lat > kLatMax);
}

uint64_t Score(double lon, double lat) {
  Bits h;
  Encode(kWorldLon, kWorldLat, lon, lat, kStepMax, &h);
  return h.bits << (52 - kStepMax * 2);
}

bool Decode(double score, double* lon, double* lat) {
  const Bits h{ScoreBits(score), kStepMax};
  if (h.zero()) return false;
  const Cell c = DecodeCell(kWorldLon, kWorldLat, h);
  *lon = (c.lon.min + c.lon.max) / 2;
  if (*lon > kLonMax) *lon = kLonMax;
  if (*lon < kLonMin) *lon = kLonMin;
  *lat = (c.lat.min + c.lat.max) / 2;
  if (*lat > kLatMax) *lat = kLatMax;
  if (*lat < kLatMin) *lat = kLatMin;
  return true;
}

bool StandardHash(double score, std::string* out) {
  double lon, lat;
  if (!Decode(score, &lon, &lat)) return false;
  // Re-encoded over the standard ranges (latitudes to +-90).
  Bits h;
  Encode({-180, 180}, {-90, 90}, lon, lat, kStepMax, &h);
  static const char kAlphabet[] = "0123456789bcdefghjkmnpqrstuvwxyz";
  out->assign(11, '0');
  for (int i = 0; i < 11; i++) {
    // 52 bits make ten characters; the eleventh is written as 0, as Redis does.
    const int idx = i == 10 ? 0 : static_cast<int>((h.bits >> (52 - ((i + 1) * 5))) & 0x1f);
    (*out)[i] = kAlphabet[idx];
  }
  return true;
}

double Distance(double lon1, double lat1, double lon2, double lat2) {
  const double lon1r = DegRad(lon1);
  const double lon2r = DegRad(lon2);
  const double v = std::sin((lon2r - lon1r) / 2);
  if (v == 0.0) return LatDistance(lat1, lat2);  // the same meridian
  const double lat1r = DegRad(lat1);
  const double lat2r = DegRad(lat2);
  const double u = std::sin((lat2r - lat1r) / 2);
  const double a = u * u + std::cos(lat1r) * std::cos(lat2r) * v * v;
  return 2.0 * kEarthRadius * std::asin(std::sqrt(a));
}

Area SearchArea(const Shape& s) {
  // The shape's bounding box.
  const double height = s.to_meters * (s.box ? s.height / 2 : s.radius);
  const double width = s.to_meters * (s.box ? s.width / 2 : s.radius);
  const double lat_delta = RadDeg(height / kEarthRadius);
  const double lon_delta_top = RadDeg(width / kEarthRadius / std::cos(DegRad(s.lat + lat_delta)));
  const double lon_delta_bottom =
      RadDeg(width / kEarthRadius / std::cos(DegRad(s.lat - lat_delta)));
  const bool south = s.lat < 0;
  const double min_lon = south ? s.lon - lon_delta_bottom : s.lon - lon_delta_top;
  const double max_lon = south ? s.lon + lon_delta_bottom : s.lon + lon_delta_top;
  const double min_lat = s.lat - lat_delta;
  const double max_lat = s.lat + lat_delta;

  double radius =
      s.box ? std::sqrt((s.width / 2) * (s.width / 2) + (s.height / 2) * (s.height / 2)) : s.radius;
  radius *= s.to_meters;
  int steps = StepsForRadius(radius, s.lat);

  Bits center;
  Bits n[8];  // north, south, east, west, north-east, north-west, south-east, south-west
  Cell area;
  auto at_step = [&](int step) {
    Encode(kWorldLon, kWorldLat, s.lon, s.lat, step, &center);
    n[0] = Moved(center, 0, 1);
    n[1] = Moved(center, 0, -1);
    n[2] = Moved(center, 1, 0);
    n[3] = Moved(center, -1, 0);
    n[4] = Moved(center, 1, 1);
    n[5] = Moved(center, -1, 1);
    n[6] = Moved(center, 1, -1);
    n[7] = Moved(center, -1, -1);
    area = DecodeCell(kWorldLon, kWorldLat, center);
  };
  at_step(steps);
  // Near a cell's edge the neighbours may not reach the whole box: one step coarser then.
  const Cell north = DecodeCell(kWorldLon, kWorldLat, n[0]);
  const Cell south_c = DecodeCell(kWorldLon, kWorldLat, n[1]);
  const Cell east = DecodeCell(kWorldLon, kWorldLat, n[2]);
  const Cell west = DecodeCell(kWorldLon, kWorldLat, n[3]);
  const bool decrease = north.lat.max < max_lat || south_c.lat.min > min_lat ||
                        east.lon.max < max_lon || west.lon.min > min_lon;
  if (steps > 1 && decrease) at_step(--steps);
  // Neighbours on a side the box does not reach are left out.
  if (steps >= 2) {
    if (area.lat.min < min_lat) n[1] = n[7] = n[6] = Bits{};
    if (area.lat.max > max_lat) n[0] = n[4] = n[5] = Bits{};
    if (area.lon.min < min_lon) n[3] = n[7] = n[5] = Bits{};
    if (area.lon.max > max_lon) n[2] = n[6] = n[4] = Bits{};
  }
  Area out;
  out.cells[0] = center;
  for (int i = 0; i < 8; i++) out.cells[i + 1] = n[i];
  return out;
}

void CellRange(Bits cell, uint64_t* min, uint64_t* max) {
  *min = cell.bits << (52 - cell.step * 2);
  *max = (cell.bits + 1) << (52 - cell.step * 2);
}

bool Within(const Shape& s, double score, double* lon, double* lat, double* distance) {
  if (!Decode(score, lon, lat)) return false;
  if (!s.box) {
    *distance = Distance(s.lon, s.lat, *lon, *lat);
    return *distance <= s.radius * s.to_meters;
  }
  if (LatDistance(*lat, s.lat) > s.height * s.to_meters / 2) return false;
  if (Distance(*lon, *lat, s.lon, *lat) > s.width * s.to_meters / 2) return false;
  *distance = Distance(s.lon, s.lat, *lon, *lat);
  return true;
}

}  // namespace deadbolt::shard::geo
