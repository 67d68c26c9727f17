"""The registry: registration rules, lookups, parameters, entry-point plugins."""

from __future__ import annotations

import pickle
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import rewardkit
from rewardkit import ColumnError, Reward, RewardError, UnknownRewardError, Verdict, registry
from rewardkit.core import ItemReward

pytestmark = pytest.mark.usefixtures("scratch_registry")


def exclaim(completions: list[str], *, bonus: float = 1.0, **kwargs: Any) -> list[float]:
    """Reward exclamation marks. Module level, so it pickles."""
    return [bonus if c.endswith("!") else 0.0 for c in completions]


def test_builtins_are_listed_with_columns_params_and_descriptions() -> None:
    infos = {i.name: i for i in rewardkit.list_rewards()}
    assert {"countdown", "format", "r1v_acc"} <= set(infos)
    assert infos["countdown"].columns == ("target", "nums")
    assert infos["countdown"].params == {"format_score": None, "correct": 1.0, "wrong": 0.0}
    assert infos["format"].params == {
        "tags": ("think", "answer"),
        "think_prefilled": False,
        "correct": 1.0,
        "wrong": 0.0,
    }
    assert infos["r1v_acc"].columns == ("solution",)
    assert all(i.description for i in infos.values())
    assert infos["format"].as_dict()["params"]["tags"] == ["think", "answer"]


def test_register_function_infers_params_and_binds_them() -> None:
    rewardkit.register("exclaim", columns=[])(exclaim)
    info = registry.info("exclaim")
    assert info.params == {"bonus": 1.0}
    assert info.description.startswith("Reward exclamation marks")
    reward = rewardkit.get("exclaim", bonus=0.5)
    assert reward.__name__ == "exclaim"
    assert reward(["hi!", "hi"], unrelated=[1, 2]) == [0.5, 0.0]
    assert pickle.loads(pickle.dumps(reward))(["yo!"]) == [0.5]


def test_register_returns_the_function_unchanged() -> None:
    decorated = rewardkit.register("exclaim2")(exclaim)
    assert decorated is exclaim
    assert decorated(["a!"]) == [1.0]


def test_function_columns_are_inferred_and_checked() -> None:
    @rewardkit.register("needs_solution")
    def needs_solution(completions: list[str], solution: list[str], **kwargs: Any) -> list[float]:
        return [float(c == s) for c, s in zip(completions, solution, strict=True)]

    assert registry.info("needs_solution").columns == ("solution",)
    assert rewardkit.get("needs_solution")(["a", "b"], solution=["a", "c"]) == [1.0, 0.0]
    with pytest.raises(ColumnError, match="needs_solution.*solution.*2 completions"):
        rewardkit.get("needs_solution")(["a", "b"], solution=["a"])


def test_duplicate_name_is_rejected() -> None:
    rewardkit.register("dup")(exclaim)
    with pytest.raises(ValueError, match="already registered"):
        rewardkit.register("dup")(exclaim)
    with pytest.raises(ValueError, match="already registered"):
        rewardkit.register("countdown")(exclaim)


def test_callable_without_kwargs_is_rejected() -> None:
    def strict(completions: list[str]) -> list[float]:
        return [0.0] * len(completions)

    with pytest.raises(ValueError, match=r"\*\*kwargs"):
        rewardkit.register("strict")(strict)
    with pytest.raises(UnknownRewardError):
        rewardkit.get("strict")


def test_required_parameter_that_is_not_a_column_is_rejected() -> None:
    def needs(completions: list[str], solution: list[str], **kwargs: Any) -> list[float]:
        return [0.0] * len(completions)

    with pytest.raises(ValueError, match="solution.*no default"):
        rewardkit.register("needs", columns=[])(needs)


@pytest.mark.parametrize("bad", ["", "1abc", "with space", "name#2", "name:x", None])
def test_bad_names_are_rejected(bad: Any) -> None:
    with pytest.raises(ValueError, match="invalid reward name"):
        rewardkit.register(bad)


def test_non_reward_class_is_rejected() -> None:
    class NotAReward:
        pass

    with pytest.raises(ValueError, match="not a rewardkit.Reward"):
        rewardkit.register("nope")(NotAReward)


def test_register_reward_class() -> None:
    @rewardkit.register("min_length", columns=["minimum"])
    @dataclass(frozen=True)
    class MinLength(ItemReward):
        """Long enough."""

        scale: float = 1.0

        def score_one(self, text: str, *values: Any) -> Verdict:
            (minimum,) = values
            if minimum is None:
                return Verdict(None, "no_minimum")
            return Verdict(self.scale if len(text) >= minimum else 0.0)

    with pytest.raises(ValueError, match="already registered as 'min_length'; subclass it"):
        rewardkit.register("min_length_alias", columns=["minimum"])(MinLength)

    reward = rewardkit.get("min_length", scale=2.0)
    scored = reward.score_detailed(["abc", "a", "x"], minimum=[2, 2, None])
    assert scored.values == [2.0, 0.0, None]
    assert scored.reasons == [None, None, "no_minimum"]
    assert registry.info("min_length").params == {"scale": 1.0}


def test_unknown_reward_lists_registered_ones() -> None:
    with pytest.raises(UnknownRewardError, match="unknown reward 'nope'.*countdown.*format.*r1v_acc"):
        rewardkit.get("nope")
    assert issubclass(UnknownRewardError, ValueError)


def test_bad_parameters_fail_at_construction() -> None:
    with pytest.raises(ValueError, match="no parameter.*formatscore.*format_score"):
        rewardkit.get("countdown", formatscore=0.1)
    with pytest.raises(ValueError, match="format_score"):
        rewardkit.get("countdown", format_score="high")
    with pytest.raises(ValueError, match="format_score"):
        rewardkit.get("countdown", format_score=True)
    with pytest.raises(ValueError, match="tags"):
        rewardkit.get("format", tags="think")
    with pytest.raises(ValueError, match="distinct"):
        rewardkit.get("format", tags=["a", "a"])
    with pytest.raises(ValueError, match="think_prefilled"):
        rewardkit.get("format", think_prefilled="yes")


def test_user_reward_that_returns_the_wrong_length_is_an_error() -> None:
    @rewardkit.register("short")
    def short(completions: list[str], **kwargs: Any) -> list[float]:
        return [1.0]

    with pytest.raises(RewardError, match="'short' returned 1 values for 2 completions"):
        rewardkit.get("short")(["a", "b"])


def test_user_reward_non_numbers_are_an_error_and_nan_is_not_applicable() -> None:
    @rewardkit.register("odd")
    def odd(completions: list[str], **kwargs: Any) -> list[Any]:
        return [float("nan") if c == "nan" else c for c in completions]

    assert rewardkit.get("odd").score_detailed(["nan"]).reasons == ["non_finite"]
    with pytest.raises(RewardError, match="returned str for item 0"):
        rewardkit.get("odd")(["text"])


def test_item_errors_get_a_defined_reward_and_a_reason() -> None:
    @rewardkit.register("fragile", columns=["x"])
    @dataclass(frozen=True)
    class Fragile(ItemReward):
        def score_one(self, text: str, *values: Any) -> Verdict:
            return Verdict(1.0 / values[0])

    reward = rewardkit.get("fragile")
    scored = reward.score_detailed(["a", "b", "c"], x=[1, 0, 2])
    assert scored.values == [1.0, 0.0, 0.5]
    assert scored.reasons == [None, "internal_error:ZeroDivisionError", None]
    with pytest.raises(ZeroDivisionError):
        reward.score_detailed(["b"], x=[0], raise_on_error=True)
    assert isinstance(reward, Reward)


def _install_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: str, module_source: str) -> None:
    """A real installed distribution on sys.path: a module plus a dist-info with entry_points.txt."""
    (tmp_path / "rk_plugin_demo.py").write_text(textwrap.dedent(module_source))
    dist = tmp_path / "rk_plugin_demo-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: rk-plugin-demo\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[rewardkit.rewards]\n{entry}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "rk_plugin_demo", raising=False)


def test_entry_point_function_is_registered_under_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install_plugin(
        tmp_path,
        monkeypatch,
        "shouting = rk_plugin_demo:shouting",
        """
        def shouting(completions, *, factor=1.0, **kwargs):
            '''Upper-case share.'''
            return [factor * float(c.isupper()) for c in completions]
        """,
    )
    registry.reload_entry_points()
    assert registry.info("shouting").description == "Upper-case share."
    assert rewardkit.get("shouting", factor=2.0)(["HI", "hi"]) == [2.0, 0.0]


def test_entry_point_module_registers_with_decorators(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install_plugin(
        tmp_path,
        monkeypatch,
        "demo = rk_plugin_demo",
        """
        import rewardkit

        @rewardkit.register("demo_len", columns=[])
        def demo_len(completions, **kwargs):
            '''Length.'''
            return [float(len(c)) for c in completions]
        """,
    )
    registry.reload_entry_points()
    assert rewardkit.get("demo_len")(["abc"]) == [3.0]
    assert "demo" not in {i.name for i in rewardkit.list_rewards()}


def test_broken_entry_point_warns_and_keeps_builtins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _install_plugin(tmp_path, monkeypatch, "broken = rk_plugin_demo:missing_name", "x = 1\n")
    with pytest.warns(RuntimeWarning, match="could not load reward plugin 'broken'"):
        registry.reload_entry_points()
    assert rewardkit.get("countdown").__name__ == "countdown"


def test_one_function_under_two_names_keeps_each_registration() -> None:
    def echo(completions: list[str], **kwargs: Any) -> list[float]:
        return [float(len(kwargs)) for _ in completions]

    rewardkit.register("echo_a", columns=["a"])(echo)
    rewardkit.register("echo_b", columns=["b", "c"])(echo)
    assert rewardkit.get("echo_a").required_columns == ("a",)
    assert rewardkit.get("echo_b").required_columns == ("b", "c")
    assert rewardkit.get("echo_a")(["x"], a=[1], unused=[2]) == [1.0]  # only declared columns reach it


def test_failed_class_registration_leaves_the_class_untouched() -> None:
    @dataclass(frozen=True)
    class Twin(ItemReward):
        def score_one(self, text: str, *values: Any) -> Verdict:
            return Verdict(1.0)

    with pytest.raises(ValueError, match="already registered"):
        rewardkit.register("format")(Twin)
    assert Twin.name == ""
    rewardkit.register("twin")(Twin)
    assert rewardkit.get("twin")(["a"]) == [1.0]


def test_get_alias_and_columns_configure_one_instance() -> None:
    acc = rewardkit.get("math", alias="gsm8k_acc", columns={"solution": "answer"})
    assert acc.__name__ == "gsm8k_acc" and acc.reward_name == "math"
    assert acc(["#### 42", "#### 41"], answer=["42", "42"]) == [1.0, 0.0]
    assert acc.caller_columns() == (("answer",), ("choices",))
    with pytest.raises(rewardkit.ColumnError, match="'answer' \\(read as 'solution'\\) is missing"):
        acc(["#### 42"], solution=["42"])
    again = pickle.loads(pickle.dumps(acc))  # trainers ship rewards to workers
    assert again.__name__ == "gsm8k_acc" and again(["#### 7"], answer=["7"]) == [1.0]
    fmt = rewardkit.get("format", alias="fmt_strict")
    assert pickle.loads(pickle.dumps(fmt)).__name__ == "fmt_strict"
    assert rewardkit.get("format").__name__ == "format"  # other instances keep the registry name


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"alias": "2bad"}, "alias must be"),
        ({"alias": "x" * 65}, "alias must be"),
        ({"alias": "a b"}, "alias must be"),
        ({"columns": {"nope": "answer"}}, "reads no column"),
        ({"columns": {"solution": 3}}, "columns must map"),
        ({"columns": ["solution"]}, "columns must map"),
    ],
)
def test_bad_alias_or_columns_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(rewardkit.RewardError, match=message):
        rewardkit.get("math", **kwargs)


@pytest.mark.parametrize("reserved", ["alias", "columns"])
def test_registration_refuses_reserved_parameter_names(reserved: str) -> None:
    def reward(completions: list[str], **kwargs: Any) -> list[float]:
        return [0.0] * len(completions)

    namespace: dict[str, Any] = {}
    exec(f"def f(completions, *, {reserved}=None, **kwargs):\n    return [0.0] * len(completions)", namespace)
    with pytest.raises(ValueError, match=f"{reserved} is reserved"):
        rewardkit.register("reserved_test")(namespace["f"])
    assert "reserved_test" not in {i.name for i in rewardkit.list_rewards()}
    rewardkit.register("reserved_ok")(reward)
    rewardkit.registry.unregister("reserved_ok")


def test_aliases_key_the_engine_results() -> None:
    from rewardkit.engine import FuncSpec, score_batch

    result = score_batch(
        [FuncSpec("format", alias="fmt"), FuncSpec("format", {"think_prefilled": True}, alias="fmt_pre")],
        ["<think>a</think><answer>4</answer>", "a</think><answer>4</answer>"],
        {},
    )
    assert result.scores == {"fmt": [1.0, 0.0], "fmt_pre": [0.0, 1.0]}
    assert result.names == {"fmt": "format", "fmt_pre": "format"}


def test_your_own_rewards_says_how_a_served_reward_declares_caller_parameters() -> None:
    """Issue 34.5: rewardkit/README.md's "Your own rewards" did not say how a reward served by `rewardkit
    serve` lets callers set a parameter; its doctested example (run with the README) declares one with
    ``caller_params`` and shows a server setting refused."""
    readme = (Path(__file__).parent.parent / "rewardkit" / "README.md").read_text()
    section = readme.split("\n## Your own rewards\n")[1].split("\n## ")[0]
    assert 'caller_params={"limit": CallerParam(cap=100_000)}' in section
    assert "is a server setting; a caller cannot set it" in section


def test_a_misspelt_reward_name_suggests_the_closest_everywhere() -> None:
    """Issue 34: the library, a server's policy check and a client checking against a server's table say
    the closest names, as the CLI does; a name close to nothing gets no guess."""
    from rewardkit.spec import RewardSpec, check

    with pytest.raises(UnknownRewardError, match="unknown reward 'maht'; did you mean 'math'"):
        rewardkit.get("maht")
    with pytest.raises(UnknownRewardError) as nothing_close:
        rewardkit.get("zzzzzz")
    assert "did you mean" not in str(nothing_close.value)
    table: dict[str, Any] = {"format": {}, "math": {}}
    with pytest.raises(UnknownRewardError, match="has no reward 'Fromat'; did you mean 'format'"):
        check(table, RewardSpec("Fromat"), server="http://127.0.0.1:8000")
    with pytest.raises(UnknownRewardError, match="unknown reward 'fromat'; did you mean 'format'"):
        check(table, RewardSpec("fromat"))
