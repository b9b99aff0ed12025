"""Names shared by the modules of the distributed experiment (no imports of its own modules)."""

from __future__ import annotations

NAME = "distributed"
PAPER = "polishchuk2019"
METHODS = ("ring", "ps_async", "ps_sync", "horovod")
ALLREDUCE = ("ring", "horovod")  # every worker runs the program; no PS, no chief
LABELS = {"ring": "ring all-reduce (MWMS)", "ps_async": "PS asynchronous", "ps_sync": "PS synchronous",
          "horovod": "Horovod"}
_PROGRAMS = "repro.experiments.distributed.programs"
PROGRAMS = {"ring": f"{_PROGRAMS}:ring", "ps_async": f"{_PROGRAMS}:parameter_server",
            "ps_sync": f"{_PROGRAMS}:parameter_server", "horovod": f"{_PROGRAMS}:horovod",
            "ps_fault": f"{_PROGRAMS}:ps_fault"}
HOROVOD_NOT_INSTALLED = "Horovod not installed: tools/install_horovod.sh"
# Table 1 of the paper: our model -> the paper's row id (inception_v4: built by .inception_v4)
TABLE1 = {"vgg16": "vgg16", "vgg19": "vgg19", "resnet50": "resnet50", "inception_v4": "inception4"}
# the audit's rows the paper's Table 1 does not have, and what they are
NOT_IN_TABLE1 = {"inception_v3": "the throughput grids' stand-in for Inception4; Table 1's Inception4 is inception_v4",
                 "resnet152": "not in the paper's Table 1"}
AUDITED = ("vgg16", "vgg19", "resnet50", "inception_v4", "inception_v3", "resnet152")  # the audit's row order
# the findings of digest §2 (claim ids of claims.yaml, in the findings table's order)
FINDINGS = ("async_vs_sync", "ring_vs_ps", "horovod", "ring_scaling", "vgg_worst", "ps_efficiency",
            "fault_tolerance")
# the paper's explanation of PS's lower efficiency, judged from the bandwidth sweep's byte counts
PS_BYTES = "ps_extra_data"
# the seed's statements added on 2026-11-28 (issue 47), after the model's in the findings table
SEED_FINDINGS = ("ps_no_speedup", "ps_bandwidth", "async_equal_start", "table1_top5",
                 # the conclusions' statements, added on 2026-11-28 (issue 55, item 5)
                 "ring_scales_best", "distribution_improved_most", "ps_easier_to_deploy",
                 "no_method_best_in_all_aspects", "choice_by_model_size", "choice_tradeoff_scaling_failure")
# the same findings at the paper's process counts, judged on the analytic model of its hardware (basis model)
MODEL_FINDINGS = ("model_horovod", "model_ring_scaling", "model_vgg_worst", "model_ps_efficiency")
# the paper's Table 2: PS to 10 processes, Horovod to 20 (and one process, the base of scaling efficiency)
PAPER_PROCESSES = {"horovod": (1, 2, 4, 6, 8, 10, 12, 16, 20), "ps_sync": (1, 2, 4, 6, 8, 10)}
FAULT_COLUMNS = ["trial", "method", "workers", "model", "killed", "outcome", "scheduled", "completed", "lost",
                 "updates", "error", "seconds", "orphans"]


def horovod_available() -> bool:
    """Whether ``horovod.tensorflow`` imports here (installed by ``tools/install_horovod.sh``)."""
    import importlib.util

    try:
        return importlib.util.find_spec("horovod.tensorflow") is not None
    except (ImportError, ValueError):
        return False
