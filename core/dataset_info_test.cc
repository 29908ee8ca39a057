#include "core/dataset_info.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

// A batch larger than what a worker holds is said, in the samples it holds.
TEST(DatasetInfoTest, ABatchOverAWorkersShareIsSaidInItsSamples) {
  EXPECT_EQ(BatchOverShareWarning(100, 2, 50), "");
  EXPECT_EQ(BatchOverShareWarning(1, 1, 32),
            "the job holds 1 training sample, fewer than its batch of 32: every step takes all 1, a batch of 1");
  EXPECT_EQ(BatchOverShareWarning(3, 3, 2),
            "each worker holds 1 training sample, fewer than its batch of 2: every step repeats samples "
            "(spec.data.batchSize 1 or less does not)");
  EXPECT_EQ(BatchOverShareWarning(5, 2, 4),
            "each worker holds 2 or 3 training samples, fewer than its batch of 4: every step repeats samples "
            "(spec.data.batchSize 2 or less does not)");
}

}  // namespace
}  // namespace edgetrain
