#include "cli/storage_fault.h"

#include <gtest/gtest.h>

namespace edgetrain::cli {
namespace {

TEST(StorageFaultTest, WhatTheFileSystemSaidAndWhatToDoFirst) {
  EXPECT_EQ(StorageAtFault("cannot write /out/checkpoint.bin.tmp-Ab12Cd: No space left on device", "/out",
                           "/no/such/checkpoint.bin"),
            "/out's file system is full; free room there, or give another --output, then ");
  EXPECT_EQ(StorageAtFault("cannot write x: Disk quota exceeded", "/out", "/no/such"),
            "/out's file system is full; free room there, or give another --output, then ");
  EXPECT_EQ(StorageAtFault("cannot write x: File too large", "/out", "/no/such"),
            "a file in /out is larger than this process may write (its file size limit, ulimit -f); raise the "
            "limit, then ");
  EXPECT_EQ(StorageAtFault("cannot rename x: Read-only file system", "/out", "/no/such"),
            "/out cannot be written now (Read-only file system); once it can, ");
  EXPECT_EQ(StorageAtFault("the training loss is NaN at step 3", "/out", "/no/such"), "");
}

}  // namespace
}  // namespace edgetrain::cli
