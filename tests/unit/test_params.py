"""Profiles and parameter validation: one-line errors naming the parameter."""


import pytest

from repro.core import params
from repro.core.params import ParameterError, ParamSpec


def test_profiles_resolve_to_their_values():
    spec = params.spec("mnist_cnn")
    smoke = spec.resolve("smoke")
    assert smoke.epochs == 2 and smoke.dataset == "mnist_subset"
    assert spec.resolve("paper").epochs == 12
    assert spec.resolve("paper").dataset == "mnist"
    assert spec.resolve(None) == smoke  # default profile


def test_overrides_apply_and_are_validated():
    spec = params.spec("mnist_cnn")
    assert spec.resolve("smoke", {"epochs": 5}).epochs == 5
    assert spec.resolve("smoke", {"learning_rate": 1}).learning_rate == 1.0  # ints accepted for floats
    with pytest.raises(ParameterError, match=r"^parameter 'epochs': expected an integer \(>= 1; <= 1000\), got 0$"):
        spec.resolve("smoke", {"epochs": 0})
    with pytest.raises(ParameterError, match="parameter 'dataset'.*one of mnist, mnist_subset, fashion_mnist"):
        spec.resolve("smoke", {"dataset": "imagenet"})
    with pytest.raises(ParameterError, match="parameter 'epochs'"):
        spec.resolve("smoke", {"epochs": True})  # bool is not an int
    with pytest.raises(ParameterError, match="parameter 'learning_rate'"):
        spec.resolve("smoke", {"learning_rate": "fast"})


def test_unknown_names_are_one_line_errors():
    spec = params.spec("mnist_cnn")
    with pytest.raises(ParameterError, match="unknown parameter 'epoch' .*did you mean 'epochs'"):
        spec.resolve("smoke", {"epoch": 3})
    with pytest.raises(ParameterError, match="unknown profile 'fast' for experiment 'mnist_cnn'; choose from: smoke, cpu, paper"):
        spec.resolve("fast")
    with pytest.raises(ParameterError, match="unknown experiment 'nope'; choose from: .*mnist_cnn"):
        params.spec("nope")
    for exc in (ParameterError("x"),):
        assert "\n" not in str(exc)


def test_command_line_strings_are_parsed_by_type():
    spec = params.spec("mnist_cnn")
    assert spec.parse_overrides(["epochs=3", "learning_rate=1e-3", "dataset=fashion_mnist"]) == {
        "epochs": 3, "learning_rate": 0.001, "dataset": "fashion_mnist"}
    with pytest.raises(ParameterError, match="parameter 'epochs'.*got 'three'"):
        spec.parse_overrides(["epochs=three"])
    with pytest.raises(ParameterError, match="must look like name=value"):
        spec.parse_overrides(["epochs"])


def test_list_and_bool_parameters():
    ints = ParamSpec(name="cores", type="list[int]", min=1, max=4)
    assert ints.parse("1,2, 4") == [1, 2, 4]
    assert ints.check((1, 2)) == [1, 2]
    assert ints.parse("1,8") == [1, 8]  # parsed by type; the range is checked with the rest when the run starts
    with pytest.raises(ParameterError, match="parameter 'cores': expected a non-empty list of integers"):
        ints.check(ints.parse("1,8"))
    with pytest.raises(ParameterError):
        ints.check([])
    flag = ParamSpec(name="resume", type="bool")
    assert flag.parse("true") is True and flag.parse("0") is False
    with pytest.raises(ParameterError):
        flag.parse("maybe")
    opt = ParamSpec(name="limit", type="int", nullable=True)
    assert opt.parse("none") is None and opt.check(None) is None


def test_every_profile_of_every_experiment_is_valid():
    for spec in params.experiments().values():
        assert {"smoke", "paper"} <= set(spec.profiles), spec.name
        for name in spec.profiles:
            spec.resolve(name)  # raises if a stored profile is out of its own schema


def test_the_flat_names_of_before_the_nesting_read_through_one_adapter():
    """``-p emulate_models=...`` (for one release) and stored runs' flat names (``emulate`` for ``emulate.hardware``)
    map to the dotted names through ``ExperimentSpec.dotted``; nested and dotted mappings read the same."""
    spec = params.spec("distributed")
    assert spec.parse_overrides(["emulate_models=vgg16", "emulate=null", "dilation_check=2"]) == {
        "emulate.models": ["vgg16"], "emulate.hardware": None, "dilation_check.factor": 2.0}
    flat = {"emulate": "k80-p2.16xlarge", "emulate_repeats": 2, "ps": 1}
    nested = {"emulate": {"hardware": "k80-p2.16xlarge", "repeats": 2}, "ps": 1}
    assert spec.dotted(flat) == spec.dotted(nested) == {"emulate.hardware": "k80-p2.16xlarge", "emulate.repeats": 2,
                                                        "ps": 1}
    assert spec.resolve("smoke", flat) == spec.resolve("smoke", nested)
    assert params.nest(spec.dotted(flat)) == nested


def test_profiles_state_only_what_they_change_from_the_defaults():
    for spec in params.experiments().values():
        assert set(spec.defaults) == set(spec.params), spec.name  # every parameter has a default
        for prof in spec.profiles.values():
            assert spec.dotted(spec.validate({**spec.defaults, **prof.changes}).model_dump()) == prof.values, \
                (spec.name, prof.name)
            assert all(spec.defaults[k] != v for k, v in prof.changes.items()), (spec.name, prof.name)
    speedup = params.spec("speedup")
    assert speedup.resolve("paper").emulate.hardware is None  # null, not a "none" sentinel
    assert speedup.resolve("smoke").emulate.hardware == "gtx970-1gbit"


def test_parameters_are_one_nested_pydantic_model_and_none_reads_as_null():
    spec = params.spec("distributed")
    fields = spec.model.model_fields
    assert set(fields) == {name.split(".")[0] for name in spec.params}
    assert set(fields["emulate"].annotation.model_fields) == {n.split(".")[1] for n in spec.params if n.startswith("emulate.")}
    p = spec.resolve("smoke", {"emulate": {"hardware": "none"}, "sweep.bandwidths": ["none"], "audit_models": None})
    assert (p.emulate.hardware, p.sweep.bandwidths, p.audit_models) == (None, None, None)
    assert spec.parse_overrides(["emulate.hardware=null", "sweep.bandwidths=none"]) == {
        "emulate.hardware": None, "sweep.bandwidths": None}
    with pytest.raises(ParameterError, match=r"^parameter 'emulate.repeats': expected an integer \(>= 1; <= 100\), got 0$"):
        spec.resolve("smoke", {"emulate": {"repeats": 0}})  # a nested field named by its dotted path
    with pytest.raises(ParameterError, match=r"^unknown parameter 'emulate.repeat' .*did you mean 'emulate.repeats'"):
        spec.parse_overrides(["emulate.repeat=2"])
    with pytest.raises(ParameterError, match=r"^parameter 'audit_models': expected a non-empty list of strings \(one of vgg16"):
        spec.resolve("smoke", {"audit_models": ["none", "vgg16"]})
    with pytest.raises(ParameterError, match=r"^parameter 'workers': .*got \(1, 0\)$"):
        spec.resolve("smoke", {"workers": (1, 0)})


PROFILE = {
    "title": "t", "notebook": "99_t.ipynb",
    "parameters": {"epochs": {"type": "int", "min": 1}, "rate": {"type": "float", "nullable": True}},
    "defaults": {"epochs": 3, "rate": None},
    "profiles": {"smoke": {"cost": "0 s", "description": "d", "values": {"epochs": 1}}, "paper": {}},
}


@pytest.mark.parametrize("change, message", [
    (lambda d: d["profiles"]["smoke"]["values"].update(epoch=2),
     r"^t/profile.yaml: profile smoke: unknown parameter 'epoch' for experiment 't' \(did you mean 'epochs'\?\)"),
    (lambda d: d["defaults"].update(epochs=0),
     r"^t/profile.yaml: defaults: parameter 'epochs': expected an integer \(>= 1\), got 0$"),
    (lambda d: d["defaults"].pop("rate"), r"^t/profile.yaml: profile smoke: no value for rate \(give it in defaults\)$"),
    (lambda d: d["parameters"]["rate"].update(type="double"), r"^t/profile.yaml: parameters.rate.type: Input should be"),
    (lambda d: d["parameters"]["rate"].update(maximum=3), r"^t/profile.yaml: parameters.rate.maximum: unknown field$"),
    (lambda d: d.pop("notebook"), r"^t/profile.yaml: needs 'notebook'$"),
    (lambda d: d.update(default_profile="cpu"), r"^t/profile.yaml: default_profile 'cpu' is not one of smoke, paper$"),
    (lambda d: d["profiles"]["paper"].update(extends="cpu"),
     r"^t/profile.yaml: profile paper: extends 'cpu', which is not a profile declared above it$"),
    (lambda d: d["profiles"]["paper"].update(extends="smoke", values={"epochs": 1}),
     r"^t/profile.yaml: profile paper: epochs: the same as in 'smoke', which it extends$"),
])
def test_a_malformed_profile_file_is_one_line_naming_file_and_entry(change, message):
    import copy

    good = params._build("t", copy.deepcopy(PROFILE))
    assert good.profiles["smoke"].values == {"epochs": 1, "rate": None} and good.profiles["paper"].changes == {}
    raw = copy.deepcopy(PROFILE)
    change(raw)
    with pytest.raises(ParameterError, match=message) as err:
        params._build("t", raw)
    assert "\n" not in str(err.value)


def test_a_profile_extends_the_changes_of_one_above_it():
    import copy

    raw = copy.deepcopy(PROFILE)
    raw["profiles"]["paper"] = {"extends": "smoke", "values": {"rate": 0.5}}
    raw["profiles"]["back"] = {"extends": "smoke", "values": {"epochs": 3}}  # smoke's change set back to the default
    spec = params._build("t", raw)
    assert spec.profiles["paper"].values == {"epochs": 1, "rate": 0.5}
    assert spec.profiles["paper"].changes == {"epochs": 1, "rate": 0.5}
    assert spec.profiles["back"].values == {"epochs": 3, "rate": None} and spec.profiles["back"].changes == {}
    # the staleness experiment's campaign profiles are its threads profile with a few changes
    st = params.spec("staleness")
    threads, gpu = st.profiles["threads"].values, st.profiles["gpu-h100"].values
    assert {k for k in threads if threads[k] != gpu[k]} == {"thread.workers", "thread.seeds"}


def test_repro_list_shows_each_profiles_changes(capsys):
    from repro import cli

    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert "changes from the defaults: emulate.hardware=gtx970-1gbit" in out
    assert "changes from the defaults: none (the defaults)" in out  # speedup's cpu profile is its defaults


def test_hardware_profiles_and_user_files_are_validated(tmp_path):
    from repro.cluster import ClusterError
    from repro.predict import hardware

    good = tmp_path / "mine.yaml"
    good.write_text("link: 1gbit\nbatch: 32\nimages_per_s: {resnet50: 64}\n")
    prof = hardware.load_file(good)
    assert (prof.name, prof.t_grad("resnet50"), prof.source) == ("mine", 0.5, str(good))
    for text, message in [
        ("link: 1 gbit\nt_grad_s: {a: 1}\n", "link: rate '1 gbit' is not in tc syntax"),
        ("link: 1gbit\nimages_per_s: {a: 10}\n", "images_per_s needs the batch it was measured at"),
        ("link: 1gbit\nt_grad_s: {a: 1}\nlatncy_s: 3\n", "latncy_s: unknown field"),
        ("link: 1gbit\nt_grad_s: {a: -1}\n", "t_grad_s.a: Input should be greater than 0"),
        ("link: 1gbit\nt_grad_s: {a: 1}\ninstance: {provider: p, name: n, processes: 0}\n", "instance.processes:"),
    ]:
        bad = tmp_path / "bad.yaml"
        bad.write_text(text)
        with pytest.raises(ClusterError, match=f"^hardware file {bad}: ") as err:
            hardware.load_file(bad)
        assert message in str(err.value) and "\n" not in str(err.value)
    assert hardware.check_param(None, ["resnet50"]) is None  # null: no emulation
