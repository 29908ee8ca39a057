// Precompiled for every translation unit of agent/torch: <torch/torch.h> costs
// 22-31 s per file without it on this class of machine, 7-10 s with it.
#pragma once
#include <torch/torch.h>
