#pragma once
// The median of measured times: what a profile, a transport probe and a
// pace's drift take of repeated timings, so that one slow outlier moves
// nothing. One definition: four copies had disagreed on an even count (the
// upper of the middle two in three, their mean in one).

#include <vector>

namespace edgetrain {

// The middle value of `values`, the mean of the middle two for an even count;
// 0 for none.
double Median(std::vector<double> values);

}  // namespace edgetrain
