#pragma once
// What changed in a job's manifest between the run that wrote a checkpoint
// and the run that resumes from it. Resuming under another learning rate or
// budget is allowed (training on for longer is the common case), but not
// silently: the resumed run says what it now trains under.

#include <string>
#include <string_view>
#include <vector>

namespace edgetrain {

// Each field whose value differs between two specs as JSON (JobPlan's
// spec_json), by its manifest path, sorted by path:
// "spec.optimizer.learningRate: 0.001 -> 0.002",
// "spec.budget.epochs: 3 -> (none)". A list differs as a whole value. Empty
// when either is empty or not JSON (a checkpoint written before specs were
// kept in it says nothing of its spec).
std::vector<std::string> SpecChanges(std::string_view before, std::string_view after);

}  // namespace edgetrain
