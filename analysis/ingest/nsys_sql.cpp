// Query assembly from probed columns.
#include "analysis/ingest/nsys_sql.h"

namespace sightline::ingest::nsys_sql {

std::string selectColumns(const Database& db, const std::string& table, const std::vector<Column>& columns,
                          const std::string& suffix, std::string& missing) {
  if (!db.hasTable(table)) {
    missing = "table " + table;
    return {};
  }
  std::string sql = "SELECT ";
  for (size_t i = 0; i < columns.size(); ++i) {
    if (i) sql += ", ";
    if (db.hasColumn(table, columns[i].name)) {
      sql += "\"" + std::string(columns[i].name) + "\"";
    } else if (columns[i].required) {
      missing = table + "." + columns[i].name;
      return {};
    } else {
      sql += "NULL";
    }
  }
  return sql + " FROM " + table + (suffix.empty() ? "" : " " + suffix);
}

}  // namespace sightline::ingest::nsys_sql
