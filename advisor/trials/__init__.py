"""Running trials: one child process per setting, started, supervised, killed and read.

May import: ``advisor.calibrate`` (the spec types), ``advisor.probe``, ``advisor.models`` and
``advisor.errors``; never TensorFlow. What runs inside the child (and imports TensorFlow) is
``advisor.trials.child``: the parent starts it as a program, it never imports it.
"""
