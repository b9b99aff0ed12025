"""The analytic model of data-parallel training, apart from the process-cluster runtime (:mod:`repro.cluster`).

* :mod:`.hardware` (``hardware.yaml``): hardware profiles, the emulated clusters' and a user's own;
* :mod:`.overlap` (``layers.csv``): when each layer's gradients are ready, fusion buffers and cycles;
* :mod:`.perfmodel`: one step's compute and exposed communication, images/s and scaling efficiency;
* :mod:`.measured` (``measurements.csv``, ``measurements_extra.csv``, ``links.yaml``): published measurements
  and the model against them; :mod:`.loso`: leave one source out, prediction intervals, issue 58's goals per
  regime; :mod:`.correction`: a learned correction of the residuals, checked beside the model (not used by it);
* :mod:`.billing` (``prices.yaml``): what a cluster costs.

``repro predict`` is its command line. Errors are :data:`.errors.PredictError` (the package's ``BadInput``),
one line each. Nothing here imports :mod:`repro.cluster`, and the runtime imports nothing from here
(an import-linter contract in ``pyproject.toml``).
"""
