#pragma once
// Subnormal floats (below 1.2e-38 in magnitude) flushed to zero, on the
// calling thread and on every thread it starts after (a new thread takes its
// creator's floating-point control register).
//
// Why: training makes subnormals (the likeliest source, Adam's first moment
// of a weight whose gradient has become exactly 0, a ReLU unit that no longer
// fires, shrinks by beta1, 0.9, every step, from 1e-4 to subnormal in about
// 740), and x86 and ARM cores take tens to hundreds of cycles for an
// operation on a subnormal, where a normal one takes a few. The MLP's first pipeline stage went from
// 1.3 times its profiled step to 2.1 times at about step 700, whatever the
// batch, and the team's samples a second fell by a quarter, for the rest of
// the run (bench/recovery, 2026-12-05): a re-plan after an early loss
// predicted 1.15-1.49 times what the devices then trained. Values that small
// change nothing a model learns.
//
// Returns false where the processor has no such mode (neither x86-64 nor
// AArch64): subnormals are then computed as they come.
//
// Not on OpenBLAS's own pool of threads, which it starts as it loads, before
// main, where OPENBLAS_NUM_THREADS is over 1 (edgetrain run --threads):
// stopped at once so that it started again from a thread that flushes
// (blas_thread_shutdown_), it cost 9% of a job of one's samples a second at
// --threads 2 (median of five runs each, 31,431 against 34,471), where
// subnormals reach its matrix products rarely: Adam's moments, where they
// arise, are edgetrain's own (core/row_optimizer.h), stepped on the agents'
// threads, which flush.
namespace edgetrain::agent {

bool FlushSubnormalsToZero();

}  // namespace edgetrain::agent
