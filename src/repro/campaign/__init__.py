"""The GPU campaign: the paper-scale runs of optimizers, cost_study and mnist_cnn, and the thread staleness on the
host's cores, on a lent GPU machine (one H100
or H200, 16 cores, Python 3.12 with JAX but no TensorFlow, no package registry, <= 64 MiB carried with the tree,
<= 10 min per command), through Keras 3's JAX backend. ``tools/gpu_campaign.sh`` is its thin entry (it finds
the interpreter and the tree's ``src``); everything else is here, in Python, and only the standard library is
imported before the carried wheels are in place (the lent machine has no pydantic until then)::

    python -m repro.campaign prepare          here: .carry/ = wheels for Python 3.12 that the GPU machine lacks
                                              + Fashion-MNIST's idx files (the optimizers' stand-in) + the commit;
                                              says the tree's and .carry's sizes (together <= 63 of the 64 MiB)
    python -m repro.campaign plan             here or there: the steps, each one's estimated time (measured on
                                              a lent H100 and H200) and what fits DEADLINE_S; `run` prints it first
    python -m repro.campaign run              on the GPU machine: optimizers, mnist, cost, threads (STEPS; and
                                              bench: fused_training.py, a float32 trace), work ending
                                              DEADLINE_S (575) s after the start; a probe first only if PROBE_S
                                              > 0. Into $OUT: campaign.log, probe.json, gpu.csv, each finished
                                              run as <step>.tar.gz as it finishes (threads: two independent runs,
                                              threads.tar.gz and threads-2.tar.gz), a run cut at the deadline as
                                              <step>-state.tar.gz (its checkpoints and the JAX compilation
                                              cache). Exit 0: all finished; 3: not all (campaign.log says why)
    python -m repro.campaign resume TAR...    here, before a second call: .carry/state becomes what an earlier
                                              call's tarballs hold: the second `run` resumes the cut run and
                                              skips the finished ones
    python -m repro.campaign collect TAR...   here: finished runs into published/gpu-<model>/ (PUBLISHED=DIR for
                                              another root; earlier runs of the same parameters stay beside
                                              them), their notebooks rendered, that book built
    python -m repro.campaign --rehearse [DIR] here, no GPU: `run` as the GPU machine runs it (pyenv's Python 3.12
                                              with the GPU image's packages in a venv cached under
                                              ~/.cache/repro, only .carry's wheels, TensorFlow and PyTorch
                                              blocked) on the tiny `rehearse` profiles, cut after one epoch,
                                              `resume`d, run again, collected into DIR (default: a temp dir)
    python -m repro.campaign rehearse-env     here: create (or find) the rehearsal's venv; prints its python

Environment (:class:`repro.campaign.settings.Settings`): PYTHON (the interpreter of the steps), STEPS,
STEP_PROFILE (gpu-h100), DEADLINE_S, STOP_MARGIN_S, MIN_STEP_S, PROBE_S, PROBE_ARGS, CARRY, STATE, OUT (set by
the device tool), SITE, INSTALL_WHEELS, WHEEL_INSTALL, CACHE_MAX_MIB, PUBLISHED, REHEARSE_WORK, THREADS_RUNS
(2), BENCH_N_TRAIN, BENCH.
"""
