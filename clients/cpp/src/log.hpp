// The kit's log: one line per event on standard error, as the other kits write it.
#pragma once
#include <string>

namespace craits::bot::log {
constexpr int kDebug = 10, kInfo = 20, kWarn = 30, kError = 40;
void set_level(int level);
bool enabled(int level);
void debug(const std::string& message);
void info(const std::string& message);
void warn(const std::string& message);
void error(const std::string& message);
}  // namespace craits::bot::log
