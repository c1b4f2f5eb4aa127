"""What a signed cell may name: plain ids and model names, 40-hex commits, paths that stay in
{out}, repositories in an allow-list (jobs/spec/confine.py, jobs/spec/envelope.py,
jobs/spec/recipes.py)."""

import pytest

from jobs.errors import UserError
from jobs.spec.confine import commit_problem, inside, name_problem, repo_allowed, repo_problem
from jobs.spec.envelope import BadEnvelope, decode, encode
from jobs.spec.recipes import Catalogue, Recipe, env_problems, invocation
from jobs.spec.specfile import load
from jobs.spec.sweep import Sweep, catalogue_problems
from jobs.strict import replaced
from tests.support.samples import SWEEP

SHA = "a" * 40


@pytest.mark.parametrize("name", ["../x", "..", ".", "/etc", "a/b", "", "-rf", "a b", "x\n"])
def test_names_that_could_leave_their_directory_are_refused(name: str) -> None:
    assert name_problem(name, "cell id")


@pytest.mark.parametrize("name", ["demo-20261201-093447-ab12", "tinymoe-a3", "qwen3-30b.a3b_4bit"])
def test_plain_names_pass(name: str) -> None:
    assert name_problem(name, "cell id") is None


def test_commit_must_be_a_resolved_sha() -> None:
    assert commit_problem(SHA) is None
    for bad in ("main", "--upload-pack=touch /tmp/x", "A" * 40, SHA + "0"):
        assert commit_problem(bad)


@pytest.mark.parametrize(("path", "expected"), [
    ("decode.dot", "/w/out/decode.dot"), ("a/../b.dot", "/w/out/b.dot"),
    ("/w/out/x", "/w/out/x"), ("../../etc/x", None), ("/etc/passwd", None),
    ("a/../../x", None), ("/w/outside", None)])
def test_inside_is_lexical_and_exact(path: str, expected: str | None) -> None:
    assert inside(path, "/w/out") == expected


@pytest.mark.parametrize("repo", ["ext::sh -c touch% /tmp/pwned", "-uhttps://x", "fd::17",
                                  "https://github.com/lablup/mlxcel/../evil", "relative/dir",
                                  "/srv/../etc", "https://x/a b"])
def test_repositories_a_worker_would_not_clone(repo: str) -> None:
    assert repo_problem(repo)


def test_allow_list_matches_exactly_or_by_glob_and_empty_allows_nothing() -> None:
    allowed = ["https://github.com/lablup/mlxcel", "/srv/git/*"]
    assert repo_allowed("https://github.com/lablup/mlxcel.git", allowed)
    assert repo_allowed("https://github.com/lablup/mlxcel/", allowed)
    assert repo_allowed("/srv/git/tinymoe", allowed)
    assert not repo_allowed("https://github.com/lablup/mlxcel-fork", allowed)
    assert not repo_allowed("/srv/other", allowed)
    assert not repo_allowed("/srv/git/tinymoe", [])
    for repo in ("https://github.com/lablup/mlxcel", "git@github.com:lablup/mlxcel.git",
                 "ssh://git@host/x", "/srv/git/tinymoe", "file:///srv/git/x"):
        assert repo_problem(repo) is None, repo


def _cell_envelope(**cell: object) -> bytes:
    sweep, _ = load(Sweep, SWEEP, "unit.yaml")
    from jobs.spec.cells import expand

    pinned = sweep.model_copy(update={"target": sweep.target.model_copy(
        update={"commits": [SHA]})})
    first = replaced(expand(pinned)[0], **cell)
    return encode(cell.pop("sweep_id", "unit-20261201-000000-0000"), 0, "spec", first)  # type: ignore[arg-type]


def test_an_envelope_naming_a_path_is_not_an_envelope() -> None:
    assert decode(_cell_envelope()).cell.commit == SHA
    for change, message in [({"model": "../../etc"}, "model name '../../etc'"),
                            ({"id": "../x"}, "cell id '../x'"),
                            ({"commit": "main"}, "commit 'main' is not a 40-hex sha")]:
        with pytest.raises(BadEnvelope, match=message):
            decode(_cell_envelope(**change))
    sweep_data = encode("../../escape", 0, "spec", decode(_cell_envelope()).cell)
    with pytest.raises(BadEnvelope, match="sweep id '../../escape'"):
        decode(sweep_data)


def _dot_recipe() -> Recipe:
    return Recipe.model_validate({
        "kind": "bench", "parser": "mlxcel-bench-decode", "command": ["{build}/bench"],
        "allow_env": ["MLXCEL_FUSED_MOE", "MLXCEL_EXPORT_DECODE_DOT"],
        "path_env": ["MLXCEL_EXPORT_DECODE_DOT"]})


def test_path_env_lands_in_out_or_is_refused() -> None:
    builtins = {"build": "/b", "out": "/w/attempt/out"}
    call = invocation(_dot_recipe(), "cuda", {}, {"MLXCEL_EXPORT_DECODE_DOT": "d/decode.dot"},
                      builtins)
    assert call.env["MLXCEL_EXPORT_DECODE_DOT"] == "/w/attempt/out/d/decode.dot"
    for value in ("../../etc/x", "/etc/x", "d/../../x"):
        with pytest.raises(UserError, match="names a path outside the cell's {out}"):
            invocation(_dot_recipe(), "cuda", {}, {"MLXCEL_EXPORT_DECODE_DOT": value}, builtins)
        assert env_problems(_dot_recipe(), {"MLXCEL_EXPORT_DECODE_DOT": value})
    assert env_problems(_dot_recipe(), {"MLXCEL_EXPORT_DECODE_DOT": "decode.dot"}) == []


def test_shipped_mlxcel_recipes_confine_the_dot_export(catalogue) -> None:  # type: ignore[no-untyped-def]
    for name in ("mlxcel-bench-decode", "mlxcel-metal-trace", "tinymoe-bench-decode"):
        assert catalogue.recipes[name].path_valued("MLXCEL_EXPORT_DECODE_DOT"), name
    text = SWEEP.replace('env: {MLXCEL_FUSED_MOE: "0"}',
                         'env: {MLXCEL_EXPORT_DECODE_DOT: "../../etc/x"}')
    sweep, _ = load(Sweep, text, "unit.yaml")
    problems = catalogue_problems(sweep, catalogue)
    assert any("outside the cell's {out}" in p for _, p in problems), problems


def test_a_recipe_admits_env_names_one_by_one() -> None:
    base = {"kind": "bench", "parser": "mlxcel-bench-decode", "command": ["{build}/bench"]}
    with pytest.raises(ValueError, match="'MLXCEL_\\*' is not one variable's name"):
        Recipe.model_validate({**base, "allow_env": ["MLXCEL_*"]})
    with pytest.raises(ValueError, match="MLXCEL_LOG_FILE reads like a path; list it in "
                                         "path_env"):
        Recipe.model_validate({**base, "allow_env": ["MLXCEL_LOG_FILE"]})
    ok = Recipe.model_validate({**base, "allow_env": ["MLXCEL_LOG_FILE"],
                                "path_env": ["MLXCEL_LOG_FILE"]})
    assert ok.env_allowed("MLXCEL_LOG_FILE") and ok.path_valued("MLXCEL_LOG_FILE")
    assert not ok.env_allowed("MLXCEL_OTHER")


def test_the_shipped_catalogue_refuses_a_log_file_outside_out(catalogue: Catalogue) -> None:
    for recipe in catalogue.recipes.values():
        assert not recipe.env_allowed("MLXCEL_LOG_FILE")
        assert all(not set(name) & set("*?[") for name in recipe.allow_env)
