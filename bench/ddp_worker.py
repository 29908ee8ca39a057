#!/usr/bin/python3
"""One rank of the PyTorch DistributedDataParallel peer for bench/dp-links.

Trains the same model (the TrainingJob's MLP), on the same data partition
(`edgetrain partition`), with the same optimizer and batch size as edgetrain's
modes, through the same kernel-shaped links (`edgetrain netns-run` sets RANK,
WORLD_SIZE, MASTER_ADDR, MASTER_PORT and GLOO_SOCKET_IFNAME). Rank 0 prints one
JSON line per evaluation ({"eval": ...}) and a final {"result": ...} line.

An emulated slower device sleeps (slowdown - 1) times its measured compute time
per step, as edgetrain's workers do. Stall is the rest of each step's time: the
all-reduce that DDP runs during the backward pass, waiting on the links.
Every rank prints, as it ends, when it waited: {"stall_trace": ...}, its
training and stall seconds so far every tenth of a second of its links'
clock (EDGETRAIN_LINKS_STARTED, from netns-run), so that the bench can tell
its stall inside its link's outages from its stall outside them.
"""
import argparse
import datetime
import gzip
import json
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel


# How often a rank notes its stall against its link's clock: a tenth of a
# second, short beside the traces' outages (seconds), so that an interval's
# stall is judged inside or outside one by the link's state over it.
STALL_TRACE_EVERY = 0.1


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load_fashion(root="/usr/share/datasets/fashion-mnist"):
    def images(name):
        return torch.from_numpy(read_idx(os.path.join(root, name)).astype(np.float32) / 255.0).unsqueeze(1)

    def labels(name):
        return torch.from_numpy(read_idx(os.path.join(root, name)).astype(np.int64))

    return (images("train-images-idx3-ubyte.gz"), labels("train-labels-idx1-ubyte.gz"),
            images("t10k-images-idx3-ubyte.gz"), labels("t10k-labels-idx1-ubyte.gz"))


def mlp(hidden):
    layers, width = [nn.Flatten()], 28 * 28
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    layers.append(nn.Linear(width, 10))
    return nn.Sequential(*layers)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--partition", required=True, help="JSON from `edgetrain partition`")
    p.add_argument("--hidden", default="128,64")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.001)
    p.add_argument("--slowdown", type=float, default=1.0)
    p.add_argument("--budget", type=float, required=True, help="wall-clock seconds")
    p.add_argument("--eval-every", type=float, default=2.0, help="seconds")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--target", type=float, default=None,
                   help="stop once the mean of the last 5 evaluations reaches it, as bench/dp-links stops every mode")
    p.add_argument("--at-least", type=float, default=0.0,
                   help="but not before this many seconds of training: the accuracy at a budget is then measured")
    p.add_argument("--watts", default="15,7,5", help="compute,communicate,idle for the energy model")
    a = p.parse_args()

    torch.set_num_threads(1)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    # Collectives give up after the budget and two minutes more rather than
    # gloo's half hour: a peer behind a link near 0 must not hang the benchmark.
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=a.budget + 120))
    torch.manual_seed(a.seed)
    x_train, y_train, x_test, y_test = load_fashion()
    mine = torch.tensor(json.load(open(a.partition))["parts"][rank], dtype=torch.int64)
    model = DistributedDataParallel(mlp([int(h) for h in a.hidden.split(",")]))
    optimizer = torch.optim.Adam(model.parameters(), lr=a.lr)
    model_bytes = sum(p.numel() * 4 for p in model.parameters())
    generator = torch.Generator().manual_seed(a.seed * 7919 + rank)

    def batches():
        while True:
            order = mine[torch.randperm(len(mine), generator=generator)]
            for first in range(0, len(order) - a.batch + 1, a.batch):
                yield order[first:first + a.batch]

    def evaluate():
        model.eval()
        with torch.no_grad():
            correct = (model.module(x_test).argmax(1) == y_test).sum().item()
        model.train()
        return correct / len(y_test)

    # The step's compute time, without the all-reduce, for the emulated
    # slowdown: on this thread's CPU clock (one intra-op thread, above), as
    # edgetrain's workers count theirs, not the wall clock, which counted the
    # waits for one of the 2 cores that 4 workers share; and the lower
    # quartile of 16 steps, as edgetrain costs a pass (core/pass_costs.h),
    # since the 4 ranks probe at once and a step's CPU time grows by about
    # half beside the others' (their mean of 5 was so, until 2026-12-03).
    stream = batches()
    probes = []
    for _ in range(16):
        idx = next(stream)
        probe = time.thread_time()
        with model.no_sync():
            F.cross_entropy(model(x_train[idx]), y_train[idx]).backward()
        probes.append(time.thread_time() - probe)
        optimizer.zero_grad()
    compute_s = sorted(probes)[len(probes) // 4]
    watts = [float(w) for w in a.watts.split(",")]

    # The links' clock, on which their traces' outages are: the traces' time 0
    # as netns-run started them, on CLOCK_MONOTONIC (time.monotonic()).
    links_started = float(os.environ["EDGETRAIN_LINKS_STARTED"]) if "EDGETRAIN_LINKS_STARTED" in os.environ else None
    stall_trace = []  # [links' clock, training seconds, stall seconds], every STALL_TRACE_EVERY

    dist.barrier()
    start = time.perf_counter()
    last_eval, iteration, stall_s, busy_s = start, 0, 0.0, 0.0
    recent = []  # rank 0's last evaluations, for the sustained target
    # The team's times as of the last exchange (every 10 steps), and rank 0's
    # own then, for the energy an evaluation reports: every worker's, not
    # rank 0's times four; since the exchange, rank 0's for each.
    team = {"stall": 0.0, "busy": 0.0, "wall": 0.0}
    mine_then = {"stall": 0.0, "busy": 0.0, "wall": 0.0}

    def energy_of(stall, busy, wall):
        # docs/energy.md: computing, communicating, and idle the rest.
        return busy * watts[0] + stall * watts[1] + max(0.0, wall - busy - stall) * watts[2]
    while True:
        step = time.perf_counter()
        idx = next(stream)
        optimizer.zero_grad()
        F.cross_entropy(model(x_train[idx]), y_train[idx]).backward()  # all-reduce inside
        optimizer.step()
        took = time.perf_counter() - step
        if a.slowdown > 1:
            time.sleep(compute_s * (a.slowdown - 1))
        busy_s += compute_s * a.slowdown
        stall_s += max(0.0, took - compute_s)
        iteration += 1
        if links_started is not None:
            links_t = time.monotonic() - links_started
            if not stall_trace or links_t - stall_trace[-1][0] >= STALL_TRACE_EVERY:
                stall_trace.append([links_t, time.perf_counter() - start, stall_s])
        now = time.perf_counter()
        if rank == 0 and now - last_eval >= a.eval_every:
            elapsed = now - start
            since = {"stall": stall_s - mine_then["stall"], "busy": busy_s - mine_then["busy"],
                     "wall": elapsed - mine_then["wall"]}
            energy = energy_of(*(team[k] + world * since[k] for k in ("stall", "busy", "wall")))
            evaluating = time.perf_counter()
            accuracy = evaluate()
            # Off the training clock: rank 0 evaluates inline, the others
            # waiting at the next all-reduce, where edgetrain's coordinator
            # evaluates beside its team, holding it only to copy the
            # parameters; DDP's time to target had counted every evaluation
            # (an audit). The others' wait still counts as their stall.
            start += time.perf_counter() - evaluating
            recent = (recent + [accuracy])[-5:]
            print(json.dumps({"eval": {"seconds": elapsed, "iteration": iteration,
                                       "samples": iteration * a.batch * world, "accuracy": accuracy,
                                       "energy_joules": energy}}), flush=True)
            last_eval = time.perf_counter()
        if iteration % 10 == 0:  # everyone stops at the same step
            wall = time.perf_counter() - start
            held = a.target is not None and len(recent) == 5 and sum(recent) / 5 >= a.target and wall >= a.at_least
            shared = torch.tensor([1.0 if held or wall >= a.budget else 0.0, stall_s, busy_s, wall])
            dist.all_reduce(shared)  # summed: any worker's stop stops all
            stop, team["stall"], team["busy"], team["wall"] = shared.tolist()
            mine_then.update(stall=stall_s, busy=busy_s, wall=wall)
            if stop > 0:
                break
    wall = time.perf_counter() - start
    if links_started is not None:
        stall_trace.append([time.monotonic() - links_started, wall, stall_s])
        print(json.dumps({"stall_trace": {"rank": rank, "points": stall_trace}}), flush=True)
    totals = torch.tensor([stall_s, wall, busy_s])
    dist.all_reduce(totals)
    if rank == 0:
        accuracy = evaluate()
        stall, wall_sum, busy = totals.tolist()
        print(json.dumps({"result": {
            "accuracy": accuracy, "iterations": iteration, "samples": iteration * a.batch * world,
            "wall_s": wall, "stall_fraction": stall / wall_sum,
            # A ring all-reduce sends 2 (N-1)/N of the gradient per worker per step.
            "bytes_sent": int(iteration * world * 2 * (world - 1) / world * model_bytes),
            "energy_joules": energy_of(stall, busy, wall_sum),
            "compute_s_per_step": compute_s}}), flush=True)
    # Not dist.destroy_process_group(): its teardown waited on peers that had
    # already left (a straggler on a 0.1 Mbit/s link) for minutes. All is said.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
