"""The error family of the analytic model: what a user gives it (a hardware profile, a measurements file, a
model, a method) is wrong. It is the package's :class:`repro.core.errors.BadInput`, the one thing
:mod:`repro.predict` shares with the process-cluster runtime of :mod:`repro.cluster`."""

from repro.core.errors import BadInput

PredictError = BadInput
