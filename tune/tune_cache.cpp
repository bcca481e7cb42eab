#include "tune/tune_cache.h"

#include <sqlite3.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <memory>

#include "ir/error.h"

namespace tgc {

std::string TuneCache::default_path() {
  namespace fs = std::filesystem;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  fs::path base = xdg && *xdg ? fs::path(xdg) : fs::path(home && *home ? home : ".") / ".cache";
  return (base / "tgc" / "tune.sqlite").string();
}

TuneCache::TuneCache(const std::string& path) : path_(path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::path parent = fs::path(path).parent_path(); !parent.empty()) fs::create_directories(parent, ec);
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK) {
    std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw Error("tuning cache " + path + ": " + why);
  }
  sqlite3_busy_timeout(db_, 10000);  // several compiles may share one cache
  try {
    exec(
        "CREATE TABLE IF NOT EXISTS tune ("
        " target TEXT NOT NULL, device TEXT NOT NULL, kernel_key TEXT NOT NULL,"
        " opts TEXT NOT NULL, time_us REAL NOT NULL, heuristic_us REAL NOT NULL,"
        " kernel_name TEXT NOT NULL, searched_at INTEGER NOT NULL,"
        " PRIMARY KEY (target, device, kernel_key))");
  } catch (const Error&) {
    sqlite3_close(db_);  // a corrupt file: no destructor runs for a constructor that throws
    throw;
  }
}

TuneCache::~TuneCache() { sqlite3_close(db_); }

void TuneCache::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string why = err ? err : "unknown error";
    sqlite3_free(err);
    throw Error("tuning cache " + path_ + ": " + why);
  }
}

// A statement of `sql` with the key (target, device, kernel_key) bound to ?1, ?2, ?3.
TuneCache::Stmt TuneCache::keyed(const char* sql, const std::string& target, const std::string& device,
                                 const std::string& key) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db_, sql, -1, &raw, nullptr) != SQLITE_OK)
    throw Error("tuning cache " + path_ + ": " + sqlite3_errmsg(db_));
  Stmt st(raw, sqlite3_finalize);
  sqlite3_bind_text(raw, 1, target.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(raw, 2, device.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(raw, 3, key.c_str(), -1, SQLITE_TRANSIENT);
  return st;
}

std::optional<TuneEntry> TuneCache::find(const std::string& target, const std::string& device, const std::string& key) {
  Stmt st = keyed("SELECT opts, time_us, heuristic_us FROM tune WHERE target = ?1 AND device = ?2 AND kernel_key = ?3",
                  target, device, key);
  sqlite3_stmt* raw = st.get();
  int rc = sqlite3_step(raw);
  if (rc == SQLITE_DONE) return std::nullopt;
  if (rc != SQLITE_ROW) throw Error("tuning cache " + path_ + ": " + sqlite3_errmsg(db_));
  const unsigned char* opts = sqlite3_column_text(raw, 0);
  return TuneEntry{opts ? reinterpret_cast<const char*>(opts) : "", sqlite3_column_double(raw, 1),
                   sqlite3_column_double(raw, 2)};
}

void TuneCache::store(const std::string& target, const std::string& device, const std::string& key, const TuneEntry& e,
                      const std::string& kernel_name) {
  Stmt st = keyed(
      "INSERT OR REPLACE INTO tune (target, device, kernel_key, opts, time_us, heuristic_us, kernel_name, searched_at)"
      " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
      target, device, key);
  sqlite3_stmt* raw = st.get();
  sqlite3_bind_text(raw, 4, e.opts.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_double(raw, 5, e.us);
  sqlite3_bind_double(raw, 6, e.heuristic_us);
  sqlite3_bind_text(raw, 7, kernel_name.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(raw, 8, int64_t(std::time(nullptr)));
  if (sqlite3_step(raw) != SQLITE_DONE) throw Error("tuning cache " + path_ + ": " + sqlite3_errmsg(db_));
}

}  // namespace tgc
