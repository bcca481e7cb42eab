// The tuning cache: a SQLite file mapping (target, device, kernel tuning key) to the actions the
// search found fastest, so later compiles (and other users, if the file is shipped next to a
// project) skip the search. Entries never expire; delete the file to tune again.
#pragma once
#include <memory>
#include <optional>
#include <string>

struct sqlite3;
struct sqlite3_stmt;

namespace tgc {

struct TuneEntry {
  std::string opts;         // opts_str() text
  double us = 0;            // measured time of those actions
  double heuristic_us = 0;  // and of the heuristic's (-1 when it failed)
};

class TuneCache {
 public:
  explicit TuneCache(const std::string& path);  // creates the file and its folder as needed
  ~TuneCache();
  TuneCache(const TuneCache&) = delete;
  TuneCache& operator=(const TuneCache&) = delete;

  // $XDG_CACHE_HOME/tgc/tune.sqlite, else ~/.cache/tgc/tune.sqlite.
  static std::string default_path();

  std::optional<TuneEntry> find(const std::string& target, const std::string& device, const std::string& key);
  void store(const std::string& target, const std::string& device, const std::string& key, const TuneEntry& e,
             const std::string& kernel_name);
  const std::string& path() const { return path_; }

 private:
  using Stmt = std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)>;
  void exec(const char* sql);
  Stmt keyed(const char* sql, const std::string& target, const std::string& device, const std::string& key);
  std::string path_;
  sqlite3* db_ = nullptr;
};

}  // namespace tgc
