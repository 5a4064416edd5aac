#include "analysis/features/units.h"

#include <cmath>
#include <cstdio>

namespace sightline::features {

std::string formatFixed(double x, int digits) {
  if (!std::isfinite(x)) return x != x ? "nan" : x > 0 ? "inf" : "-inf";
  digits = digits < 0 ? 0 : digits > 9 ? 9 : digits;
  double scale = std::pow(10.0, digits);  // exact for these powers
  double scaled = x * scale;
  // An exact tie (x * 10^digits is exactly n + 0.5, no rounding in the product): away from zero.
  if (std::abs(scaled) < 1e15 && std::fma(x, scale, -scaled) == 0 && std::abs(scaled - std::trunc(scaled)) == 0.5)
    x = (x > 0 ? std::ceil(scaled) : std::floor(scaled)) / scale;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return buf;
}

std::string formatMilliseconds(double ns) {
  double ms = ns / 1e6;
  double a = std::abs(ms);
  return formatFixed(ms, a >= 100 ? 0 : a >= 10 ? 1 : 2);
}

std::string formatBytes(int64_t n) {
  double v = std::fabs(static_cast<double>(n));
  std::string sign = n < 0 ? "-" : "";
  if (v >= 1024.0 * 1024 * 1024) return sign + formatFixed(v / (1024.0 * 1024 * 1024), 2) + " GiB";
  if (v >= 1024.0 * 1024) return sign + formatFixed(v / (1024.0 * 1024), 1) + " MiB";
  if (v >= 1024) return sign + formatFixed(v / 1024, 1) + " KiB";
  return sign + formatFixed(v, 0) + " B";
}

std::string formatShare(double share) { return formatFixed(share * 100, share >= 0.095 ? 0 : 1) + "%"; }

std::string formatMicroseconds(double ns) {
  if (std::abs(ns) < 999.95e3) return formatFixed(ns / 1e3, 1) + " µs";
  return formatMilliseconds(ns) + " ms";
}

std::string formatDelta(double delta_ns) {
  return (delta_ns > 0 ? "▲ +" : "▼ −") + formatMilliseconds(std::abs(delta_ns)) + " ms";
}

std::string formatSignedBytes(int64_t n) { return (n > 0 ? "+" : "") + formatBytes(n); }

std::string formatSeconds(double seconds) { return formatFixed(seconds, 1) + " s"; }

}  // namespace sightline::features
