#pragma once
// A test accuracy no better than guessing: said beside the figure, where it
// read as a score like any other (a new user's trial asked for it, of a run
// and of a saved model evaluated on classes it was not trained on).

namespace edgetrain {

// Whether `accuracy` on `classes` classes is about what guessing scores
// (under 1.2 in `classes`). Of 3 classes or more only: of 2, chance is too
// near what a weak model scores to tell them apart.
inline bool AboutWhatGuessingScores(double accuracy, int classes) {
  return classes >= 3 && accuracy < 1.2 / classes;
}

}  // namespace edgetrain
