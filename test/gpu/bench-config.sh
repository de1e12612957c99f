# What the GPU benchmarks compile (test/gpu/bundle.sh, here) and run
# (test/gpu/bringup.sh, there): sourced by both, so the two agree.

# The pad-skipping benchmark's model (test/bench/pad_skip_bench.py).
PAD_ARGS="--batch 16 --seq 512 --hidden 768 --heads 12 --layers 12 --vocab 8192 --steps 15"

# GPT-2 124M variants beside the plain fp32 and bf16 runs, one per line:
# PRECISION FLAG BASELINES (gpt_bench.py's --precision, one more option,
# --baselines; "none" runs tcc alone, beside the plain run's tcc).
# --memory-budget=half-arena is issue 16's goal on a GPU: half the
# activation memory at most 5% slower. In bf16 @eval_step's arena (its
# f32 logits) is the floor above half: 4,215,746,696 bytes, 72% of the
# unbudgeted 5,832,650,888.
EXTRA_BENCHES="fp32 --memory-budget=half-arena none
bf16 --memory-budget=4216MB none
bf16 --accum=2 eager"

# An extra benchmark's work directory, from its PRECISION and FLAG.
extra_work() { echo "build-bench/gpt2-124m-$1$(echo "$2" | tr -cs 'a-z0-9' '-' | sed 's/-*$//')"; }
