// The step of a run without any profiler, read from a file: `sightline capture`'s steps file
// (NAME.steps.json beside the profile it made: each rank's steps timed with CUDA events before
// the profiler started; docs/capture.md gives the schema) or the script's own log (--step-log).
// Both become a model::StepMeasurement, the verdict's headline.
#pragma once

#include <optional>
#include <string>

#include "analysis/model/step_measurement.h"

namespace sightline::server {

// The steps file a profile would have beside it: run.sqlite, run.nsys-rep -> run.steps.json;
// run.rank3.pt.trace.json.gz -> run.steps.json.
std::string stepsFileFor(const std::string& profile_path);

// Reads a steps file; nullopt with `error` saying why (not one, no timed steps, values out of range).
std::optional<model::StepMeasurement> readStepsFile(const std::string& path, std::string& error);

// The steps file beside `profile_path`, when there is one: nullopt with `error` empty when none
// is there, set when one is there and cannot be read.
std::optional<model::StepMeasurement> findStepsFile(const std::string& profile_path, std::string& error);

// A training log's step (ingest/step_log.h); nullopt with `error` saying what was looked for when
// the file cannot be read or no line of it gives a step's time.
std::optional<model::StepMeasurement> readStepLog(const std::string& path, std::string& error);

}  // namespace sightline::server
