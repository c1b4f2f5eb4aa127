"""The baseline's child: the same model decoded the plain way an mlx-lm script would (gather
path, greedy, one synchronous step at a time), reporting one `RESULT {json}` line.

It fails with `ERROR warmup: ...` or `ERROR bench: ...` on stdout and exit status 1, so the
driver can tell which run failed."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import mlx.core as mx

from .config import load_config
from .generate import prompt_ids
from .model import Decoder, arrays_in
from .moe_detail import MoeDetail

# The matched shape of the text path: a deterministic 512-token prompt, EOS suppressed.
TEXT_PROMPT = "The quick brown fox jumps over the lazy dog. "
TEXT_PROMPT_TOKENS = 512
VLM_PROMPT = "What is in this image?"


def generate(model: Decoder, ids: list[int], max_tokens: int,
             stop_at: int | None) -> tuple[float, float, list[int]]:
    """(prefill seconds, decode seconds, tokens)."""
    cache = model.new_cache(len(ids) + max_tokens + 1)
    start = time.perf_counter()
    token = mx.argmax(model(mx.array(ids, dtype=mx.int32), cache, 0), axis=-1)
    mx.eval(token)
    prefill_s = time.perf_counter() - start
    tokens: list[int] = []
    start = time.perf_counter()
    for i in range(max_tokens):
        token = mx.argmax(model(token.astype(mx.int32), cache, len(ids) + i), axis=-1)
        tokens.append(int(token.item()))
        if tokens[-1] == stop_at:
            break
    return prefill_s, time.perf_counter() - start, tokens


def run(args: argparse.Namespace) -> dict[str, object]:
    config = load_config(Path(args.model))
    dtype = mx.float32 if mx.default_device() == mx.cpu else getattr(mx, config.dtype)
    model = Decoder.build(config, dtype, fused=False, detail=MoeDetail())
    mx.eval(arrays_in(model))
    if args.vlm:
        if not Path(args.image).is_file():
            raise FileNotFoundError(f"image {args.image} does not exist")
        ids = prompt_ids(VLM_PROMPT, True, None, config.vocab)
        stop_at: int | None = config.eos_token_id
    else:
        ids = prompt_ids(TEXT_PROMPT, False, TEXT_PROMPT_TOKENS, config.vocab)
        stop_at = None
    generate(model, ids, args.warmup_tokens, stop_at)
    args.phase = "bench"
    prefill_s, decode_s, tokens = generate(model, ids, args.max_tokens, stop_at)
    result: dict[str, object] = {"prompt_tokens": len(ids), "prefill_tps": len(ids) / prefill_s,
                                 "gen_tokens": len(tokens),
                                 "decode_tps": len(tokens) / decode_s if decode_s else 0.0}
    if not args.vlm:
        result["finish_reason"] = "length" if len(tokens) == args.max_tokens else "stop"
    return result


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="pylm-child")
    p.add_argument("model")
    p.add_argument("--max-tokens", type=int, required=True)
    p.add_argument("--warmup-tokens", type=int, required=True)
    p.add_argument("--vlm", action="store_true")
    p.add_argument("--image", default="tests/fixtures/test_image.png")
    args = p.parse_args(argv)
    args.phase = "warmup"
    try:
        result = run(args)
    except Exception as e:  # any failure is reported to the driver by phase, never raised
        print(f"ERROR {args.phase}: {type(e).__name__}: {e}", flush=True)
        return 1
    print(f"RESULT {json.dumps(result)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
