"""Typed verdicts and the basis rules (repro.core.verdicts)."""

import pytest

from repro.core import verdicts as V
from repro.core.verdicts import Basis, Category, VerdictError


def test_constructors_build_typed_verdicts_and_gates_need_a_reason():
    assert str(V.reproduced()) == "reproduced"
    assert str(V.not_comparable("stand-in data")) == "not comparable (stand-in data)"
    assert V.partly("x").category is Category.PARTLY and V.partly("x").decisive
    assert not V.not_measured("x").decisive and not V.not_testable("x").decisive
    for make in (V.inconsistent, V.partly, V.differs, V.not_comparable, V.not_testable, V.not_measured):
        with pytest.raises(VerdictError, match="needs its reason"):
            make("  ")
    assert str(V.differs("a").with_note("b")) == "differs (a; b)"
    assert str(V.consistent().with_note("b")) == "consistent (b)"
    with pytest.raises(AttributeError):
        V.reproduced().category = Category.DIFFERS  # frozen


def test_outcome_speaks_the_language_of_its_basis():
    assert V.outcome(True, "measured", "no").category is Category.REPRODUCED
    assert V.outcome(False, "measured", "no") == V.differs("no")
    for basis in ("equations", "emulated", "model"):
        assert V.outcome(True, basis, "no").category is Category.CONSISTENT
        assert V.outcome(False, basis, "no") == V.inconsistent("no")
    with pytest.raises(VerdictError, match="no measurement"):
        V.outcome(True, "none", "no")


@pytest.mark.parametrize("basis", ["equations", "emulated", "model", "none"])
def test_observed_categories_need_basis_measured(basis):
    for v in (V.reproduced(), V.differs("x"), V.partly("y")):
        with pytest.raises(VerdictError, match="needs basis measured"):
            V.settle(v, basis, 2, stochastic=False)


@pytest.mark.parametrize("basis", ["measured", "none"])
def test_checked_categories_need_a_check_basis(basis):
    for v in (V.consistent(), V.inconsistent("x")):
        with pytest.raises(VerdictError, match="equations, emulated or model"):
            V.settle(v, basis, 0, stochastic=False)


def test_one_run_of_a_stochastic_quantity_decides_nothing():
    for v in (V.reproduced(), V.differs("x"), V.partly("y")):
        one = V.settle(v, "measured", 1, stochastic=True)
        assert one == V.not_comparable("1 run of a stochastic quantity; a verdict needs >= 2 independent "
                                       f"runs; the one run: {v}")
        assert V.settle(v, "measured", 2, stochastic=True) == v
        assert V.settle(v, "measured", 1, stochastic=False) == v
    # an emulation's timings vary from run to run too; equations and a model do not
    assert V.settle(V.consistent(), Basis.EMULATED, 1, stochastic=True).category is Category.NOT_COMPARABLE
    assert V.settle(V.inconsistent("x"), Basis.EMULATED, 2, stochastic=True) == V.inconsistent("x")
    assert V.settle(V.consistent(), Basis.MODEL, 0, stochastic=True) == V.consistent()
    assert V.settle(V.not_testable("z"), "none", 0, stochastic=True) == V.not_testable("z")


def test_settle_refuses_untyped_verdicts_and_unknown_bases():
    with pytest.raises(VerdictError, match="built by repro.core.verdicts"):
        V.settle("reproduced", "measured", 2, stochastic=False)
    with pytest.raises(VerdictError, match="basis 'guess'"):
        V.settle(V.reproduced(), "guess", 2, stochastic=False)
    with pytest.raises(VerdictError, match="runs must be"):
        V.settle(V.reproduced(), "measured", -1, stochastic=False)


def test_a_verdict_given_its_category_as_text_is_typed_and_decides_like_one():
    v = V.Verdict("differs", "x")
    assert v.category is Category.DIFFERS and v.decisive and str(v) == "differs (x)"
    assert V.Verdict("not measured", "y").decisive is False
    with pytest.raises(ValueError):
        V.Verdict("maybe")


def test_verdict_errors_name_what_was_wrong():
    with pytest.raises(VerdictError, match=r"^a verdict's detail is text, got int$"):
        V.Verdict(Category.DIFFERS, 3)
    with pytest.raises(VerdictError, match=r"not given as str: 'reproduced'$"):
        V.settle("reproduced", "measured", 2, stochastic=False)
    with pytest.raises(VerdictError, match=r"^basis 'guess' is not one of: measured, emulated, model, equations, none$"):
        V.settle(V.reproduced(), "guess", 2, stochastic=False)
    with pytest.raises(VerdictError, match=r"does not start with one of: reproduced, consistent, inconsistent, "
                                           r"partly, differs, not comparable, not testable here, "
                                           r"not testable with this selection, not measured, "
                                           r"rule changed after the data, unstable$"):
        V.category_of("probably")


def test_a_claim_the_selection_leaves_out_names_the_parameter_and_is_decided_by_nobody():
    v = V.needs_selection("optimizers", ["sgd", "nadam", "adam"], ["sgd", "adam"], "the claim ranks all seven")
    assert str(v) == ("not testable with this selection (needs optimizers to include nadam (the claim ranks all "
                      "seven); this run's optimizers: sgd, adam)")
    assert not v.decisive and V.parse(str(v)) == v and V.category_of(str(v)) is V.Category.NOT_SELECTED
    assert V.settle(v, "none", 0, stochastic=True) == v
    with pytest.raises(VerdictError, match="needs its reason"):
        V.not_selected(" ")
