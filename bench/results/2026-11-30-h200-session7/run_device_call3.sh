#!/usr/bin/env bash
# Session 7, call 3: the same-process harness by stream INSTANCE (is the ~0.1 us of the 1Mi cold
# event window a property of the hardware queue a stream lands on?), and 256Mi with the new
# streaming stores against the plain ones and CUB.
cd "$(dirname "$0")"
S="default,per_thread,nonblocking#0,nonblocking#1,nonblocking#2,nonblocking#3,nonblocking#4,nonblocking#5,nonblocking#6,nonblocking#7,blocking#0,blocking#1"
WORK=$OUT/call3 STEPS=small,large BUDGET_S=${BUDGET_S:-200} \
  SMALL_ARGS="--kernels=torch,add_{d}_tuned --holds=blocking --flushes=read --buffers=cudamalloc --streams=$S --rounds=5 --cold_reps=300" \
  LARGE_ARGS="--streams=default,nonblocking#0,nonblocking#1" \
  bash bench/run_device_same_process.sh
tar czf "$OUT/call3.tar.gz" -C "$OUT" call3
