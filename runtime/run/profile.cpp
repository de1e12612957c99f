#include "run/profile.h"

#include "plan/library_ops.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>

namespace tcc::run {

namespace {

std::string format(const char *fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

/// The table's time unit: microseconds for steps under 10 ms (a small
/// model's or a GPU's steps take a few), so three decimals resolve them.
struct Unit {
  const char *name;
  double perMs;
};
Unit unitFor(const StepProfile &p) {
  return p.wallMs < 10 ? Unit{"us", 1000} : Unit{"ms", 1};
}

/// Without trailing blanks (the last column may be empty).
std::string trimRight(std::string s) {
  s.erase(s.find_last_not_of(' ') + 1);
  return s;
}

/// "12.5%" of the step's wall time.
std::string percent(double ms, double wallMs) {
  return format("%.1f%%", wallMs > 0 ? 100.0 * ms / wallMs : 0.0);
}

double stepsMs(const StepProfile &p) {
  double sum = 0;
  for (const tcc_profile_record &r : p.records)
    sum += r.ms;
  return sum;
}

const char *kindName(const tcc_profile_record &r) {
  switch (r.kind) {
  case TCC_PROFILE_KERNEL:
    return "kernel";
  case TCC_PROFILE_COLLECTIVE:
    return "collective";
  default:
    return "call";
  }
}

/// `text` left-aligned in `width` columns.
std::string pad(const std::string &text, size_t width) {
  return text + std::string(width > text.size() ? width - text.size() : 0, ' ');
}

void printFamilies(std::ostream &out, const StepProfile &p) {
  std::vector<FamilyTime> families = familyTimes(p);
  const std::string sum = "sum of the steps", total = "total (wall time)";
  size_t width = total.size();
  for (const FamilyTime &f : families)
    width = std::max(width, f.family.size());
  Unit unit = unitFor(p);
  char line[256];
  std::snprintf(line, sizeof line, "  %s %12s %7s %6s",
                pad("family", width).c_str(), unit.name, "% step", "count");
  out << line << "\n";
  auto row = [&](const std::string &label, double ms, const std::string &count) {
    std::snprintf(line, sizeof line, "  %s %12.3f %7s %6s",
                  pad(label, width).c_str(), ms * unit.perMs,
                  percent(ms, p.wallMs).c_str(), count.c_str());
    out << trimRight(line) << "\n";
  };
  for (const FamilyTime &f : families)
    row(f.family, f.ms, std::to_string(f.count));
  row(sum, stepsMs(p), std::to_string(p.records.size()));
  row(total, p.wallMs, "");
  // Pad-skipping: the steps over packed token rows, as one more view.
  double packedMs = 0;
  size_t packed = 0;
  for (const tcc_profile_record &r : p.records)
    if (r.token_rows > 0)
      packedMs += r.ms, ++packed;
  if (packed)
    out << "  of which over packed token rows: " << packed << " steps, "
        << format("%.3f", packedMs * unit.perMs) << " " << unit.name << " ("
        << percent(packedMs, p.wallMs) << ")\n";
}

void printSlowest(std::ostream &out, const StepProfile &p, size_t top) {
  std::vector<const tcc_profile_record *> order;
  for (const tcc_profile_record &r : p.records)
    order.push_back(&r);
  std::stable_sort(order.begin(), order.end(),
                   [](const tcc_profile_record *a,
                      const tcc_profile_record *b) { return a->ms > b->ms; });
  size_t shown = std::min(top, order.size());
  size_t width = 4;
  for (size_t i = 0; i < shown; ++i)
    width = std::max(width, std::strlen(order[i]->name));
  Unit unit = unitFor(p);
  char line[512];
  std::snprintf(line, sizeof line, "  %5s  %-6s  %s %12s %7s\n", "step",
                "kind", pad("name", width).c_str(), unit.name, "% step");
  out << line;
  for (size_t i = 0; i < shown; ++i) {
    const tcc_profile_record &r = *order[i];
    std::snprintf(line, sizeof line, "  %5d  %-6s  %s %12.3f %7s%s\n", r.step,
                  kindName(r), pad(r.name, width).c_str(), r.ms * unit.perMs,
                  percent(r.ms, p.wallMs).c_str(),
                  r.token_rows > 0 ? "  packed" : "");
    out << line;
  }
  if (shown == order.size())
    return;
  double rest = 0;
  for (size_t i = shown; i < order.size(); ++i)
    rest += order[i]->ms;
  out << "  ... " << order.size() - shown << " more steps, "
      << format("%.3f", rest * unit.perMs) << " " << unit.name << " ("
      << percent(rest, p.wallMs) << ")\n";
}

} // namespace

std::string profileFamily(const tcc_profile_record &r) {
  if (r.kind == TCC_PROFILE_KERNEL)
    return rt::kKernelFamily;
  if (r.kind == TCC_PROFILE_COLLECTIVE)
    return rt::kCollectiveFamily;
  // A library call's family is its op's (dialects/tcc, callFamily).
  rt::Op op;
  return rt::parseOp(r.name, op) ? rt::opSchema(op).family : r.name;
}

std::vector<FamilyTime> familyTimes(const StepProfile &p) {
  std::map<std::string, FamilyTime> byName;
  for (const tcc_profile_record &r : p.records) {
    std::string name = profileFamily(r);
    FamilyTime &f = byName[name];
    f.family = name;
    f.ms += r.ms;
    ++f.count;
  }
  std::vector<FamilyTime> out;
  for (auto &entry : byName)
    out.push_back(entry.second);
  // Ties (e.g. all zero) keep the map's alphabetical order: stable output.
  std::stable_sort(out.begin(), out.end(),
                   [](const FamilyTime &a, const FamilyTime &b) {
                     return a.ms > b.ms;
                   });
  return out;
}

void printProfile(std::ostream &out, const StepProfile &p, size_t top) {
  out << "profile of step " << p.step << " (train_step, backend "
      << p.backend << "): " << p.records.size() << " plan steps, "
      << format("%.3f", p.wallMs) << " ms wall time\n";
  out << p.notes;
  printFamilies(out, p);
  out << "slowest steps\n";
  printSlowest(out, p, top);
}

void writeProfileJson(std::ostream &out, const StepProfile &p) {
  nlohmann::ordered_json j;
  j["backend"] = p.backend;
  j["function"] = "train_step";
  j["step"] = p.step;
  j["wall_ms"] = p.wallMs;
  j["steps_ms"] = stepsMs(p);
  j["notes"] = nlohmann::ordered_json::array(); // tcc_backend_notes, a line each
  for (size_t at = 0; at < p.notes.size();) {
    size_t end = p.notes.find('\n', at);
    if (end == std::string::npos)
      end = p.notes.size();
    if (end > at)
      j["notes"].push_back(p.notes.substr(at, end - at));
    at = end + 1;
  }
  j["families"] = nlohmann::ordered_json::array();
  for (const FamilyTime &f : familyTimes(p))
    j["families"].push_back(
        {{"family", f.family}, {"ms", f.ms}, {"count", f.count}});
  j["steps"] = nlohmann::ordered_json::array();
  for (const tcc_profile_record &r : p.records)
    j["steps"].push_back({{"step", r.step},
                          {"kind", kindName(r)},
                          {"name", r.name},
                          {"family", profileFamily(r)},
                          {"ms", r.ms},
                          {"token_rows", r.token_rows}});
  out << j.dump(1) << "\n";
}

bool readProfileJson(const std::string &path, std::vector<double> &ms,
                     std::string &error) {
  std::ifstream in(path);
  if (!in) {
    error = path + ": cannot open (" + std::strerror(errno) + ")";
    return false;
  }
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("steps") ||
      !j["steps"].is_array() || j.value("function", "") != "train_step") {
    error = path + ": not a train_step profile (tcc run --profile-json FILE)";
    return false;
  }
  ms.assign(j["steps"].size(), -1.0);
  for (const nlohmann::json &r : j["steps"]) {
    int64_t step = -1;
    double t = -1;
    if (r.is_object() && r.contains("step") && r["step"].is_number_integer() &&
        r.contains("ms") && r["ms"].is_number()) {
      step = r["step"].get<int64_t>();
      t = r["ms"].get<double>();
    }
    if (step < 0 || step >= int64_t(ms.size()) || !(t >= 0) ||
        ms[size_t(step)] >= 0) {
      error = path + ": step records must number the plan steps 0.." +
              std::to_string(ms.size() - 1) + " once each, with ms >= 0";
      return false;
    }
    ms[size_t(step)] = t;
  }
  return true;
}

bool profileStep(tcc_session *session, const std::vector<data::Array> &batch,
                 double &loss, StepProfile &profile, std::string &error) {
  size_t count = 0;
  if (tcc_profile_step(session, nullptr, nullptr, 0, &count) != TCC_OK) {
    error = tcc_last_error();
    return false;
  }
  for (const data::Array &a : batch)
    if (tcc_bind_input(session, a.name.c_str(), a.bytes.data(),
                       a.bytes.size()) != TCC_OK) {
      error = tcc_last_error();
      return false;
    }
  profile.records.resize(count);
  auto start = std::chrono::steady_clock::now();
  if (tcc_profile_step(session, &loss, profile.records.data(), count,
                       &count) != TCC_OK) {
    error = tcc_last_error();
    return false;
  }
  profile.wallMs = std::chrono::duration<double, std::milli>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  profile.step = tcc_steps_done(session);
  profile.notes = tcc_backend_notes(session);
  return true;
}

bool Profiler::open(const std::string &path, std::string &error) {
  jsonPath = path;
  if (path.empty())
    return true;
  errno = 0;
  json.open(path, std::ios::trunc);
  if (!json) {
    error = "--profile-json " + path + ": cannot open for writing" +
            (errno ? std::string(": ") + std::strerror(errno) : "");
    return false;
  }
  return true;
}

std::function<bool(std::vector<data::Array>, double &, std::string &)>
Profiler::lastStep(tcc_session *session, const std::string &backend) {
  return [this, session, backend](std::vector<data::Array> batch,
                                  double &loss, std::string &error) {
    profile.emplace();
    profile->backend = backend;
    return profileStep(session, batch, loss, *profile, error);
  };
}

bool Profiler::report(std::ostream &out, std::string &error) {
  if (!profile) {
    if (json.is_open()) { // nothing to write: leave no empty file behind
      json.close();
      std::error_code ec;
      std::filesystem::remove(jsonPath, ec);
    }
    error = "--profile: no step was run to profile (the run was already at "
            "--steps)";
    return false;
  }
  printProfile(out, *profile, 25);
  if (!json.is_open())
    return true;
  writeProfileJson(json, *profile);
  json.close();
  if (!json) {
    error = "--profile-json " + jsonPath + ": cannot write";
    return false;
  }
  return true;
}

} // namespace tcc::run
