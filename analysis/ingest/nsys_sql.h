// Every SQL statement the nsys reader runs, in one place. Column lists are assembled from
// what PRAGMA table_info reports (nsys adds and renames columns between versions), so the
// queries below are templates: `selectColumns` fills in present columns and NULL for the rest.
#pragma once

#include <string>
#include <vector>

#include "analysis/ingest/sqlite.h"

namespace sightline::ingest::nsys_sql {

struct Column {
  const char* name;
  bool required;
};

// "SELECT a, b, NULL, ... FROM table [suffix]" or "" when a required column is missing
// (then `missing` names it).
std::string selectColumns(const Database& db, const std::string& table, const std::vector<Column>& columns,
                          const std::string& suffix, std::string& missing);

inline const std::vector<Column> kStringIds = {{"id", true}, {"value", true}};
inline const std::vector<Column> kRuntime = {{"start", true},          {"end", true},    {"globalTid", true},
                                             {"correlationId", false}, {"nameId", true}, {"eventClass", false}};
inline const std::vector<Column> kKernel = {
    {"start", true},          {"end", true},       {"globalPid", false}, {"correlationId", false}, {"shortName", false},
    {"demangledName", false}, {"deviceId", false}, {"streamId", false},  {"gridX", false},         {"gridY", false},
    {"gridZ", false},         {"blockX", false},   {"blockY", false},    {"blockZ", false}};
inline const std::vector<Column> kMemcpy = {
    {"start", true},     {"end", true},    {"globalPid", false}, {"correlationId", false}, {"deviceId", false},
    {"streamId", false}, {"bytes", false}, {"copyKind", false},  {"srcKind", false},       {"dstKind", false}};
inline const std::vector<Column> kMemset = {{"start", true},          {"end", true},       {"globalPid", false},
                                            {"correlationId", false}, {"deviceId", false}, {"streamId", false},
                                            {"bytes", false}};
inline const std::vector<Column> kGraph = {{"start", true},          {"end", true},       {"globalPid", false},
                                           {"correlationId", false}, {"deviceId", false}, {"streamId", false},
                                           {"graphId", false}};
inline const std::vector<Column> kNvtx = {{"start", true},      {"end", false},       {"eventType", true},
                                          {"globalTid", false}, {"text", false},      {"textId", false},
                                          {"domainId", false},  {"binaryData", false}};
inline const std::vector<Column> kSchemas = {
    {"domainId", false}, {"schemaId", true}, {"name", false}, {"payloadSize", false}};
inline const std::vector<Column> kSchemaEntries = {{"domainId", false}, {"schemaId", true}, {"idx", false},
                                                   {"type", true},      {"name", false},    {"offset", false}};

inline constexpr const char* kGpuNames = "SELECT name FROM TARGET_INFO_GPU ORDER BY id";
inline constexpr const char* kGpuUuids = "SELECT uuid FROM TARGET_INFO_GPU ORDER BY id";
inline constexpr const char* kHostName = "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname' LIMIT 1";
// Export metadata: META_DATA_EXPORT since 2022.2, EXPORT_META_DATA before. `name` is one of our
// constants (EXPORT_PRODUCT_VERSION, ...), never input text.
inline std::string metaValue(const std::string& table, const char* name) {
  return "SELECT value FROM " + table + " WHERE name = '" + name + "'";
}
// Suffixes for the NVTX_EVENTS select: domain registrations, and marks plus ranges.
inline constexpr const char* kNvtxDomainRows = " WHERE eventType = 75";
inline constexpr const char* kNvtxEventRows = " WHERE eventType IN (34, 59, 60)";

}  // namespace sightline::ingest::nsys_sql
