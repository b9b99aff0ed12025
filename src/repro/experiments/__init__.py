"""One folder per experiment, discovered by :func:`repro.core.params.experiments`.

Each folder holds ``profile.yaml`` (parameters and named profiles), ``claims.yaml`` (the papers'
claims, as data) and ``experiment.py`` (its run, measurements and verdicts); an experiment imports
``repro.core``, ``repro.ml``, ``repro.cluster`` and ``repro.book``, never another experiment.
"""
