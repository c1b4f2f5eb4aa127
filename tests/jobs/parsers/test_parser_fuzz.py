"""Whatever a command prints, a parser returns a reading or a failure with a reason."""

from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.parsers import PARSERS, PROFILE_PARSERS
from jobs.parsers.readings import Failure, ProfileInput, RunOutput

# Arbitrary text, and text built from the pieces real output is made of.
PIECES = ["[Profile Results]\n", "  Decode:           ", "  Prefill:          ", "ms (",
          " tok/s)\n", "  Prompt tokens:    ", "  Generated tokens: ", "RESULT {", "}\n",
          "Error: ", "\x1b[31m", "\r", "Name,Instances,Total Time (ns)\n", "1e309", "-1",
          "nan", "999999999999999999999", "\n", ",", '"', "\ufffd", "GB\n", "out of memory"]
texts = st.one_of(st.text(max_size=300),
                  st.lists(st.sampled_from(PIECES) | st.text(max_size=8), max_size=40)
                  .map("".join))
runs = st.builds(RunOutput, stdout=texts, stderr=texts,
                 exit_code=st.sampled_from([0, 0, 0, 1, 2, 124, 137, 255]),
                 timed_out=st.booleans())


@settings(max_examples=300, deadline=None)
@given(runs)
def test_bench_parsers_never_raise(run: RunOutput) -> None:
    for parse in PARSERS.values():
        parsed = parse(run)
        assert isinstance(parsed, Failure) or parsed.decode_tps is not None
        if isinstance(parsed, Failure):
            assert parsed.reason


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["long", "short", "long-stats", "short-stats", "trace",
                                        "dot"]), runs, max_size=6),
       st.dictionaries(st.sampled_from(["decode.dot", "x.csv"]), texts, max_size=2))
def test_profile_parsers_never_raise(steps: dict[str, RunOutput], files: dict[str, str]
                                     ) -> None:
    for parse in PROFILE_PARSERS.values():
        parsed = parse(ProfileInput(steps=steps, files=files))
        assert not isinstance(parsed, Failure) or parsed.reason
